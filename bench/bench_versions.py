"""Two revisions of tinygradx in one process: the training step of this checkout against the
same step of another git revision, interleaved round by round, with the numpy floor between.

    python bench/bench_versions.py --rev 5e09b39 --configs gpt-cpu encdec --pairs 10
    python bench/bench_versions.py --rev HEAD~3 --configs gpt-cpu --pairs 10 --rss

The other revision is exported with `git archive` into a temporary folder and renamed to its own
package (`tinygradx` -> `tgx_rev`, its models/ inside it), so both engines load side by side and
share the machine's state at each moment: the A/B compares code, not the load of the minute.
`--rss` runs each arm alone in a child process for its peak RSS. Timings are printed, never
asserted.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

import _blas_env  # noqa: F401  (before numpy: see bench/_blas_env.py)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import bench_floor as bf                              # noqa: E402
from harness import ab_compare, machine_facts, peak_rss_mb  # noqa: E402

PKG = "tgx_rev"


def export_revision(rev, dest):
    """Lay revision `rev` out under dest/tgx_rev (engine) and dest/tgx_rev/models, with every
    `tinygradx` in its Python sources renamed to tgx_rev. Returns the short commit hash."""
    commit = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    archive = os.path.join(dest, "rev.tar")
    subprocess.run(["git", "archive", "-o", archive, commit, "tinygradx", "models"], cwd=ROOT,
                   check=True)
    src = os.path.join(dest, "src")
    with tarfile.open(archive) as tar:
        tar.extractall(src, filter="data")
    pkg = os.path.join(dest, PKG)
    os.rename(os.path.join(src, "tinygradx"), pkg)
    os.rename(os.path.join(src, "models"), os.path.join(pkg, "models"))
    for dirpath, _, files in os.walk(pkg):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                with open(path, "w", encoding="utf-8") as f:
                    f.write(re.sub(r"\btinygradx\b", PKG, text))
    sys.path.insert(0, dest)
    # child processes too: the revision's kernels are built by `python -m tgx_rev.kernels_build`
    # (without this the build failed and the revision's arm ran with its kernels off)
    os.environ["PYTHONPATH"] = os.pathsep.join([dest] + [p for p in [os.environ.get(
        "PYTHONPATH")] if p])
    return commit


def step_fns(config, rev_label, impls):
    spec = bf.CONFIGS[config]
    params, batch = bf.init_params(spec), bf.make_batch(spec)
    adapters = {"numpy": bf._numpy_adapter, "this": bf._tinygradx_adapter,
                rev_label: functools.partial(bf._tinygradx_adapter, pkg=PKG)}
    return {n: adapters[n](spec, params, batch) for n in impls}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", required=True, help="the other git revision (e.g. a commit hash)")
    ap.add_argument("--configs", nargs="+", default=["gpt-cpu", "encdec"], choices=list(bf.CONFIGS))
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rss", action="store_true", help="peak RSS of each arm (child processes)")
    ap.add_argument("--rss-child", nargs=2, metavar=("CONFIG", "ARM"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        commit = export_revision(args.rev, tmp)
        label = f"rev {commit}"
        if args.rss_child:
            config, arm = args.rss_child
            fn = step_fns(config, label, [label if arm == "rev" else arm])
            fn = next(iter(fn.values()))
            for _ in range(4):
                fn()
            print(json.dumps({"peak_rss_mb": peak_rss_mb()}))
            return 0
        print(machine_facts(torch_info=False))
        for config in args.configs:
            fns = step_fns(config, label, ["numpy", "this", label])
            first = {n: f() for n, f in fns.items()}
            res = ab_compare(fns, pairs=args.pairs, warmup=args.warmup, baseline=label)
            print(f"\n{bf.CONFIGS[config]['title']}: {args.pairs} rounds, first-step losses "
                  + ", ".join(f"{n} {v:.4f}" for n, v in first.items()))
            for n in fns:
                rs = [a / b for a, b in zip(res["times"][n], res["times"][label], strict=True)]
                rs.sort()
                st = res["stats"][n]
                line = (f"  {n:>14}: median {st['median'] * 1e3:7.1f} ms; / {label}: median "
                        f"{rs[len(rs) // 2]:.3f} [{rs[0]:.3f}, {rs[-1]:.3f}]")
                if args.rss and n != "numpy":
                    arm = "rev" if n == label else n
                    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--rev",
                                          args.rev, "--rss-child", config, arm],
                                         capture_output=True, text=True, check=True)
                    peak = json.loads(out.stdout.splitlines()[-1])["peak_rss_mb"]
                    line += f"; peak RSS {peak:.0f} MB"
                print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
