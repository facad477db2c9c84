"""Encoder-decoder decoding speed: the demo's held-out set, decoded by this checkout's cached,
batched greedy / beam search and by another revision's decoding functions, in one process.

    python bench/bench_decode.py --rev 5e09b39 --checkpoint runs/demo/checkpoint.npz
    python bench/bench_decode.py --rev 5e09b39 --steps 300     # train a dates model first

The other revision's `decoding` module is loaded from git (it only calls the model's public
methods, which both revisions share). Each arm decodes the same sentences in the batches its
revision's Trainer.translate uses (1,024 sentences here, 256 before this change; `--batch`
overrides this checkout's); the tokens of all arms are compared, and the times printed (never
asserted). With --rounds N the arms run N times each, interleaved (bench/harness.py's
ab_compare), and the speed-up is the median [min, max] of the per-round ratios.
With --base REV a fourth arm runs all of revision REV (engine, model and decoding, exported
as bench_versions.py does) on the same checkpoint: a before/after of the whole path.

    python bench/bench_decode.py --rev 5e09b39 --base main --checkpoint ... --rounds 7
    python bench/bench_decode.py --rev 5e09b39 --base 5e09b39 --base-batch 256 --checkpoint ...

The last is the whole path of the day issue 17 was filed (engine, model, decoding, and its
Trainer.translate's batches of 256) against this checkout's.
"""
from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
import tempfile
import time
import types

import _blas_env  # noqa: F401  (before numpy: see bench/_blas_env.py)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from harness import ab_compare, machine_facts               # noqa: E402
from tinygradx.models.nets import decoding                  # noqa: E402
from tinygradx.models.tasks import BOS, EOS, PAD, pad_batch  # noqa: E402
from tinygradx.models.training.trainer import Trainer, TrainConfig  # noqa: E402


def revision_decoding(rev):
    """The decoding module of git revision `rev` (models/decoding.py or models/nets/...)."""
    for path in ("models/nets/decoding.py", "models/decoding.py"):
        got = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True,
                             text=True)
        if got.returncode == 0:
            mod = types.ModuleType(f"decoding_{rev}")
            exec(compile(got.stdout, f"{rev}:{path}", "exec"), mod.__dict__)
            return mod
    raise SystemExit(f"no decoding module at revision {rev}")


def batches(trainer, n, size=256):
    pairs = trainer.task.encoded("test")[:n]
    return [pad_batch([(s or [PAD], [EOS]) for s, _ in pairs[i:i + size]])
            for i in range(0, len(pairs), size)]


_MAX_LEN = {}


def _max_len(trainer):
    """The task's longest target + 2, computed once per task (it reads the whole dataset)."""
    key = id(trainer.task)
    if key not in _MAX_LEN:
        _MAX_LEN[key] = trainer.task.max_lengths()[1] + 2
    return _MAX_LEN[key]


def timed(fn, bs, trainer, **kw):
    max_len = _max_len(trainer)           # the task's, computed once: not part of decoding
    start = time.perf_counter()
    out = []
    for b in bs:
        out += fn(trainer.model, b.src, b.src_key_padding, max_len, BOS, EOS, **kw)
    return time.perf_counter() - start, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", required=True, help="the revision to compare with")
    ap.add_argument("--checkpoint", help="a dates checkpoint (default: train one)")
    ap.add_argument("--steps", type=int, default=300, help="training steps without --checkpoint")
    ap.add_argument("--n", type=int, default=1000, help="held-out sentences (greedy)")
    ap.add_argument("--beam-n", type=int, default=200, help="held-out sentences (beam 4)")
    ap.add_argument("--batch", type=int, default=1024, help="this checkout's batch size")
    ap.add_argument("--rev-batch", type=int, default=256, help="the revision's batch size")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved timed rounds (greedy)")
    ap.add_argument("--beam-rounds", type=int, default=1, help="interleaved timed rounds (beam)")
    ap.add_argument("--save", help="keep the trained checkpoint at this path (with --steps)")
    ap.add_argument("--base", help="also run all of this revision, on the same weights")
    ap.add_argument("--base-batch", type=int, default=None,
                    help="the --base revision's batch size (default: --batch); 256 for "
                         "revisions whose Trainer.translate decoded 256 at a time (5e09b39)")
    args = ap.parse_args(argv)
    print(machine_facts(torch_info=False))
    if args.checkpoint:
        trainer = Trainer.from_checkpoint(args.checkpoint, log=lambda *a, **k: None)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            cfg = TrainConfig.for_task("dates", max_steps=args.steps, out_dir=args.save or tmp,
                                       progress=False, eval_interval=args.steps)
            trainer = Trainer(cfg, log=lambda *a, **k: None)
            trainer.train()
    old = revision_decoding(args.rev)
    with tempfile.TemporaryDirectory() as tmp:
        base = load_base(args.base, trainer, tmp) if args.base else None
        compare(args, trainer, old, base)
    return 0


def load_base(rev, trainer, tmp):
    """(label, trainer-like object, decoding module) of revision `rev`: its own engine and
    models, holding this trainer's weights (its checkpoint marker names its renamed package,
    so the weights are copied rather than read from the file)."""
    import dataclasses
    import importlib
    import importlib.util
    import types as pytypes
    from bench_versions import PKG, export_revision
    commit = export_revision(rev, tmp)
    # models/ was flat (models/transformer.py, models/decoding.py) before it had rooms
    nets = f"{PKG}.models.nets"
    if importlib.util.find_spec(nets) is None:
        nets = f"{PKG}.models"
    net = importlib.import_module(f"{nets}.transformer")
    model = net.EncoderDecoder(net.TransformerConfig(**dataclasses.asdict(trainer.model.config)))
    model.load_state_dict({k: v.numpy() for k, v in trainer.model.state_dict().items()})
    holder = pytypes.SimpleNamespace(task=trainer.task, model=model)
    return f"base {commit}", holder, importlib.import_module(f"{nets}.decoding")


def compare(args, trainer, old, base):
    print(f"\n{trainer.cfg.task}: {trainer.step} training steps; decoding {args.n} held-out "
          f"sentences greedily and {args.beam_n} with beam 4")
    for name, n, kw, rounds in (("greedy", args.n, {}, args.rounds),
                                ("beam 4", args.beam_n, {"beam_size": 4}, args.beam_rounds)):
        fn = decoding.greedy_decode if not kw else decoding.beam_search
        old_fn = getattr(old, fn.__name__)
        bs, old_bs = batches(trainer, n, args.batch), batches(trainer, n, args.rev_batch)
        _, new = timed(fn, bs, trainer, **kw)
        _, ref = timed(fn, bs, trainer, cached=False, **kw)
        _, was = timed(old_fn, old_bs, trainer, **kw)
        arms = {"this": functools.partial(timed, fn, bs, trainer, **kw),
                "reference": functools.partial(timed, fn, bs, trainer, cached=False, **kw),
                f"rev {args.rev}": functools.partial(timed, old_fn, old_bs, trainer, **kw)}
        if base is not None:
            label, base_trainer, base_dec = base
            base_fn = getattr(base_dec, fn.__name__)
            base_bs = batches(trainer, n, args.base_batch) if args.base_batch else bs
            _, got = timed(base_fn, base_bs, base_trainer, **kw)
            print(f"  {name}: same tokens as {label}: {got == new}")
            arms[label] = functools.partial(timed, base_fn, base_bs, base_trainer, **kw)
        res = ab_compare(arms, pairs=rounds, warmup=0, baseline="this")
        st, ratio = res["stats"], res["ratios"][f"rev {args.rev}"]
        times = ", ".join(f"{arm} {st[arm]['median']:.3f} s [{st[arm]['min']:.3f}, "
                          f"{st[arm]['max']:.3f}]" for arm in arms)
        print(f"  {name}: {times} -> {ratio['median']:.2f}x faster than rev {args.rev} "
              f"[{ratio['min']:.2f}, {ratio['max']:.2f}] ({rounds} rounds); same tokens "
              f"as the reference: {new == ref}, as rev {args.rev}: {new == was}")
        if base is not None:
            r = res["ratios"][base[0]]
            print(f"  {name}: {base[0]} / this per round: {r['median']:.2f} [{r['min']:.2f}, "
                  f"{r['max']:.2f}]")


if __name__ == "__main__":
    sys.exit(main())
