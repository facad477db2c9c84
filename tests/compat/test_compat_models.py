"""PyTorch model files (tests/compat_models/, plain `import torch` code) run on tinygradx through
tinygradx.compat, and, when PyTorch is installed, also on PyTorch, from the same weights and
inputs, with the results compared:

    gpt.py          a GPT: causal attention with a registered tril buffer, masked_fill(-inf),
                    GELU MLP, weight tying, nn.init via self.apply, AdamW, generate() with
                    temperature and top-k (torch.topk, boolean-mask assignment, multinomial)
    transformer.py  the encoder-decoder of the paper: sinusoidal positions written by slice
                    assignment into a buffer, embeddings * sqrt(d_model), Post-LN,
                    encoder-decoder attention, label smoothing (fill_, scatter_, KLDivLoss),
                    greedy decoding
    train_copy.py   a training script: the paper's rate through LambdaLR, driving Adam
    custom_op.py    a torch.autograd.Function with two outputs inside a model, gradcheck'd

The comparisons run in float64 (model.double()) with dropout 0, so the tolerances can be tight:
logits and losses to rtol 1e-12, gradients per parameter to rtol 1e-9 / atol 1e-12, parameters
after a few optimizer steps to rtol 1e-9 / atol 1e-12 (the encoder-decoder's W^K biases, whose
gradient is zero but for rounding, to 1e-7: see KEY_BIASES), learning rates to 1e-15; tokens
exactly. The differences seen: ~1e-16 in losses, ~1e-14 in gradients, up to ~1e-12 in
parameters after six Adam steps.
Weights go from PyTorch to tinygradx as numpy arrays (state_dict -> load_state_dict).

Sampling: the two sides have different random generators, so they cannot draw the same tokens
from the same probabilities. What is compared instead: (1) generate() with top_k=1, whose
probabilities are one-hot, so both sides must pick the same token whatever their generator;
(2) generate() with temperature and top_k=5 where `multinomial` is replaced on both sides by
the same inverse-CDF sampler fed the same uniform draws, which records the probabilities each
side passed to it: equal to 1e-12, and so are the tokens; (3) tinygradx's own multinomial,
through the look-alike, draws each token as often as its probability says (and never a
masked one). Without PyTorch the tinygradx runs still execute: training lowers the loss and
generation returns valid tokens; only the comparisons are skipped.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import tinygradx as tgx
import tinygradx.compat as compat
from tinygradx.graph import viz as viz

MODELS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "compat_models")
LOSS_RTOL = 1e-12
GRAD_TOL = dict(rtol=1e-9, atol=1e-12)
PARAM_TOL = dict(rtol=1e-9, atol=1e-12)
# The bias of W^K adds q.b_k to every score of a row, which softmax ignores: its gradient is
# zero but for rounding (~1e-17), different on each side. Adam with the paper's eps=1e-9 turns
# that noise into steps of about lr * 1e-8, so after a few steps these biases agree to ~1e-9
# only; they are compared to NOISE_ATOL, and their gradients are checked to be ~0.
KEY_BIASES = ("w_k.bias",)
NOISE_ATOL = 1e-7


def load(name, pytorch=False):
    """The model file loaded with tinygradx's look-alike as `torch` (or PyTorch itself)."""
    path = os.path.join(MODELS, name)
    if pytorch:
        try:
            return compat.load_module(path, pytorch=True)
        except ImportError:
            pytest.skip("PyTorch is not installed: the comparison with it is skipped")
    return compat.load_module(path)


def both(name):
    """(PyTorch's module, tinygradx's module) of one file; skips without PyTorch."""
    return load(name, pytorch=True), load(name)


def copy_weights(src, dst):
    """PyTorch model -> tinygradx model, through numpy; returns the keys tinygradx did not
    take (a tied weight is listed once in tinygradx's state_dict)."""
    state = {k: v.detach().numpy() for k, v in src.state_dict().items()}
    missing, unexpected = dst.load_state_dict(state, strict=False)
    assert list(missing) == []
    return list(unexpected)


def numpy_of(t):
    return t.detach().numpy()


def assert_same_params(theirs, mine, what="grad", tol=GRAD_TOL, noise=()):
    """Every parameter's gradient (what="grad") or value (what="data"), by name. Parameters
    whose name ends with one of `noise` are compared to NOISE_ATOL (see KEY_BIASES)."""
    t = dict(theirs.named_parameters())
    m = dict(mine.named_parameters())
    assert list(m) == list(t)
    for name in t:
        a, b = (t[name].grad, m[name].grad) if what == "grad" else (t[name], m[name])
        assert (a is None) == (b is None), f"{name}: a {what} on one side only"
        if a is not None:
            rule = dict(rtol=0, atol=NOISE_ATOL) if name.endswith(tuple(noise)) else tol
            np.testing.assert_allclose(numpy_of(b), numpy_of(a), err_msg=f"{what} of {name}",
                                       **rule)


# ------------------------------------------------------------------------------------------
# GPT
# ------------------------------------------------------------------------------------------

GPT_ARGS = dict(vocab_size=40, context=12, n_layer=2, n_head=2, d_model=16, dropout=0.0)


def gpt_batch(seed=0, batch=3):
    rng = np.random.default_rng(seed)
    seq = rng.integers(0, GPT_ARGS["vocab_size"], (batch, GPT_ARGS["context"] + 1))
    x, y = seq[:, :-1].copy(), seq[:, 1:].copy()
    y[0, :2] = -1                                    # ignore_index=-1 in the model's loss
    return x, y


def gpt_pair():
    """The same double-precision GPT on both sides: (pytorch module, model, tinygradx ...)."""
    tm, xm = both("gpt.py")
    tm.torch.manual_seed(0)
    theirs = tm.GPT(tm.GPTConfig(**GPT_ARGS)).double()
    tgx.manual_seed(0)
    mine = xm.GPT(xm.GPTConfig(**GPT_ARGS)).double()
    assert copy_weights(theirs, mine) == []   # head.weight: tok_emb.weight's other name (tied)
    return tm, theirs, xm, mine


def test_gpt_trains_and_generates_on_tinygradx():
    gpt = load("gpt.py")
    torch = gpt.torch
    assert torch is compat.torch
    torch.manual_seed(0)
    model = gpt.GPT(gpt.GPTConfig(**GPT_ARGS))
    # what the file's own initialisation did, through the look-alike's nn.init and apply()
    assert model.tok_emb.weight is model.head.weight
    assert isinstance(model, tgx.nn.Module) and isinstance(model.head, tgx.nn.Linear)
    assert abs(model.blocks[0].mlp.fc.weight.detach().numpy().std() - 0.02) < 0.003
    proj = model.blocks[0].mlp.proj.weight.detach().numpy()
    assert abs(proj.std() - 0.01) < 0.0015                                   # 0.02/sqrt(4)
    assert not model.blocks[1].attn.qkv.bias.detach().numpy().any()
    assert model.blocks[0].attn.tril.shape == (1, 1, 12, 12)
    opt = model.configure_optimizer(lr=1e-2, weight_decay=0.1)
    x, y = gpt_batch()
    x, y = torch.tensor(x), torch.tensor(y)
    losses = []
    for _ in range(15):
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.6 * losses[0], losses
    model.eval()
    prompt = x[:, :4]
    out = model.generate(prompt, max_new_tokens=10, temperature=0.8, top_k=5)
    assert out.shape == (3, 14) and out.dtype == torch.long
    assert (out[:, :4] == prompt).all().item()
    assert ((out >= 0) & (out < GPT_ARGS["vocab_size"])).all().item()


def test_gpt_sampling_draws_only_from_the_top_k():
    """Each sampled token is among the top_k of the logits at its step (tinygradx's own
    multinomial through the look-alike)."""
    gpt = load("gpt.py")
    torch = gpt.torch
    torch.manual_seed(1)
    model = gpt.GPT(gpt.GPTConfig(**GPT_ARGS)).eval()
    idx = torch.tensor(gpt_batch()[0][:, :3])
    out = model.generate(idx, max_new_tokens=8, temperature=1.5, top_k=3)
    for t in range(3, out.shape[1]):
        logits, _ = model(out[:, max(0, t - GPT_ARGS["context"]):t])
        top3 = np.argsort(-logits.detach().numpy()[:, -1], axis=-1)[:, :3]
        for row in range(out.shape[0]):
            assert out.numpy()[row, t] in top3[row]


def test_lookalike_multinomial_draws_by_probability():
    torch = compat.torch
    torch.manual_seed(0)
    probs = torch.tensor([[0.1, 0.2, 0.3, 0.4, 0.0], [0.0, 0.0, 1.0, 0.0, 0.0]])
    draws = np.concatenate([torch.multinomial(probs, num_samples=1).numpy()
                            for _ in range(4000)], axis=1)
    assert draws.shape == (2, 4000)
    freq = np.bincount(draws[0], minlength=5) / draws.shape[1]
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.3, 0.4, 0.0], atol=0.03)   # ~4 sigma
    assert (draws[1] == 2).all()


def test_gpt_matches_pytorch_forward_backward_and_adamw():
    tm, theirs, xm, mine = gpt_pair()
    x, y = gpt_batch()
    t_opt = theirs.configure_optimizer(lr=1e-2, weight_decay=0.1)
    m_opt = mine.configure_optimizer(lr=1e-2, weight_decay=0.1)
    for _ in range(3):
        t_logits, t_loss = theirs(tm.torch.tensor(x), tm.torch.tensor(y))
        m_logits, m_loss = mine(xm.torch.tensor(x), xm.torch.tensor(y))
        np.testing.assert_allclose(numpy_of(m_logits), numpy_of(t_logits), rtol=LOSS_RTOL,
                                   atol=1e-13)
        np.testing.assert_allclose(m_loss.item(), t_loss.item(), rtol=LOSS_RTOL)
        for opt, loss in ((t_opt, t_loss), (m_opt, m_loss)):
            opt.zero_grad()
            loss.backward()
        assert_same_params(theirs, mine, "grad")
        t_opt.step()
        m_opt.step()
        assert_same_params(theirs, mine, "data", PARAM_TOL)


def test_gpt_greedy_generation_matches_pytorch():
    """top_k=1 leaves one token with probability 1: multinomial must pick it on both sides."""
    tm, theirs, xm, mine = gpt_pair()
    prompt = gpt_batch()[0][:, :4]
    t_out = theirs.generate(tm.torch.tensor(prompt), max_new_tokens=12, temperature=0.7, top_k=1)
    m_out = mine.generate(xm.torch.tensor(prompt), max_new_tokens=12, temperature=0.7, top_k=1)
    np.testing.assert_array_equal(m_out.numpy(), t_out.numpy())
    assert m_out.shape == (3, 16)                  # past the context of 12: the window slides


def shared_sampler(backend, uniforms, seen):
    """multinomial(probs, 1) by inverse CDF from the given uniform draws, for either backend;
    records the probabilities it was given."""
    draws = iter(uniforms)

    def multinomial(probs, num_samples=1, replacement=False, generator=None):
        assert num_samples == 1
        p = np.array(numpy_of(probs), dtype=np.float64)
        seen.append(p)
        cdf = np.cumsum(p, axis=-1)
        u = next(draws) * cdf[:, -1:]
        return backend.tensor((cdf <= u).sum(axis=-1, keepdims=True), dtype=backend.long)
    return multinomial


def test_gpt_sampling_matches_pytorch_given_the_same_uniform_draws(monkeypatch):
    tm, theirs, xm, mine = gpt_pair()
    prompt = gpt_batch()[0][:, :4]
    uniforms = np.random.default_rng(7).random((10, 3, 1))
    t_seen, m_seen = [], []
    monkeypatch.setattr(tm.torch, "multinomial", shared_sampler(tm.torch, uniforms, t_seen))
    monkeypatch.setattr(tgx, "multinomial", shared_sampler(xm.torch, uniforms, m_seen))
    t_out = theirs.generate(tm.torch.tensor(prompt), max_new_tokens=10, temperature=0.8,
                            top_k=5)
    m_out = mine.generate(xm.torch.tensor(prompt), max_new_tokens=10, temperature=0.8, top_k=5)
    assert len(t_seen) == len(m_seen) == 10
    for a, b in zip(t_seen, m_seen, strict=True):
        assert ((a > 0).sum(axis=-1) == 5).all()       # top_k masked all but 5 tokens
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(m_out.numpy(), t_out.numpy())


# ------------------------------------------------------------------------------------------
# the encoder-decoder Transformer and its training script
# ------------------------------------------------------------------------------------------

VOCAB = 11
TF_ARGS = dict(n_layers=2, d_model=16, d_ff=32, n_heads=4, dropout=0.0)


def copy_data(seed, batch=4, length=7):
    """Sequences starting with BOS=1, tokens 2..VOCAB-1, PAD=0 at the end of some rows."""
    rng = np.random.default_rng(seed)
    data = rng.integers(2, VOCAB, (batch, length))
    data[:, 0] = 1
    data[1, -2:] = 0
    data[2, -1] = 0
    return data


def transformer_pair(pytorch_module, tinygradx_module):
    tm, xm = pytorch_module, tinygradx_module
    tm.torch.manual_seed(0)
    theirs = tm.Transformer(VOCAB, VOCAB, **TF_ARGS).double()
    tgx.manual_seed(0)
    mine = xm.Transformer(VOCAB, VOCAB, **TF_ARGS).double()
    assert copy_weights(theirs, mine) == []
    return theirs, mine


def label_smoothed_loss(module, model, src, tgt):
    criterion = module.LabelSmoothingLoss(VOCAB, padding_idx=module.PAD, smoothing=0.1)
    src, tgt = module.torch.tensor(src), module.torch.tensor(tgt)
    log_probs = model(src, tgt[:, :-1])
    target = tgt[:, 1:]
    n_tokens = (target != module.PAD).sum()
    return criterion(log_probs.reshape(-1, VOCAB), target.reshape(-1)) / n_tokens, log_probs


def test_transformer_trains_and_decodes_on_tinygradx():
    script = load("train_copy.py")
    torch = script.torch
    torch.manual_seed(0)
    model = script.Transformer(VOCAB, VOCAB, **TF_ARGS)
    pe = model.position.pe.numpy()
    np.testing.assert_allclose(pe[0, 3, 0::2], np.sin(3 / 10000 ** (np.arange(0, 16, 2) / 16)),
                               rtol=1e-5)
    np.testing.assert_allclose(pe[0, 3, 1::2], np.cos(3 / 10000 ** (np.arange(0, 16, 2) / 16)),
                               rtol=1e-5)
    criterion = script.LabelSmoothingLoss(VOCAB, smoothing=0.1)
    opt, sched = script.make_optimizer(model, d_model=16, warmup=20, factor=1.0)
    losses = []
    for step in range(60):
        src = torch.tensor(copy_data(step, batch=16))
        losses.append(script.train_step(model, criterion, opt, sched, src, src))
    assert np.mean(losses[-5:]) < 0.85 * np.mean(losses[:5]), losses       # 2.08 -> 1.63
    model.eval()
    out = script.greedy_decode(model, torch.tensor(copy_data(0)), max_len=7, bos=1)
    assert out.shape == (4, 7) and (out[:, 0] == 1).all().item()
    assert ((out >= 0) & (out < VOCAB)).all().item()


def test_transformer_matches_pytorch_loss_gradients_and_greedy_decoding():
    tm, xm = both("transformer.py")
    theirs, mine = transformer_pair(tm, xm)
    data = copy_data(0)
    t_loss, t_logp = label_smoothed_loss(tm, theirs, data, data)
    m_loss, m_logp = label_smoothed_loss(xm, mine, data, data)
    np.testing.assert_allclose(numpy_of(m_logp), numpy_of(t_logp), rtol=LOSS_RTOL, atol=1e-12)
    np.testing.assert_allclose(m_loss.item(), t_loss.item(), rtol=LOSS_RTOL)
    t_loss.backward()
    m_loss.backward()
    assert_same_params(theirs, mine, "grad")
    t_out = tm.greedy_decode(theirs, tm.torch.tensor(data), max_len=9, bos=1)
    m_out = xm.greedy_decode(mine, xm.torch.tensor(data), max_len=9, bos=1)
    np.testing.assert_array_equal(m_out.numpy(), t_out.numpy())


def paper_rate(step, d_model, warmup, factor):
    step = max(step, 1)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def test_training_script_matches_pytorch_losses_rates_and_parameters():
    """train_copy.py's own functions (LambdaLR over Adam, label smoothing) step by step."""
    ts, xs = both("train_copy.py")
    theirs, mine = transformer_pair(ts, xs)
    sides = []
    for s, model in ((ts, theirs), (xs, mine)):
        opt, sched = s.make_optimizer(model, d_model=16, warmup=3, factor=2.0)
        criterion = s.LabelSmoothingLoss(VOCAB, smoothing=0.1)
        sides.append((s, model, opt, sched, criterion))
    record = {0: [], 1: []}
    for step in range(6):
        data = copy_data(step)
        for i, (s, model, opt, sched, criterion) in enumerate(sides):
            lr = opt.param_groups[0]["lr"]
            src = s.torch.tensor(data)
            loss = s.train_step(model, criterion, opt, sched, src, src)
            record[i].append((loss, lr, sched.get_last_lr()[0]))
        assert_same_params(theirs, mine, "data", PARAM_TOL, noise=KEY_BIASES)
        for model in (theirs, mine):            # why they are compared more loosely
            for name, p in model.named_parameters():
                if name.endswith(KEY_BIASES):
                    assert np.abs(numpy_of(p.grad)).max() < 1e-14, name
    (t_rec, m_rec) = record[0], record[1]
    for step, ((tl, tlr, tnext), (ml, mlr, mnext)) in enumerate(zip(t_rec, m_rec, strict=True)):
        np.testing.assert_allclose(ml, tl, rtol=LOSS_RTOL)
        assert mlr == pytest.approx(tlr, rel=1e-15, abs=0)
        assert mnext == pytest.approx(tnext, rel=1e-15, abs=0)
        assert mlr == pytest.approx(paper_rate(step, 16, 3, 2.0), rel=1e-15, abs=0)
        assert mnext == pytest.approx(paper_rate(step + 1, 16, 3, 2.0), rel=1e-15, abs=0)
    t_out = ts.greedy_decode(theirs.eval(), ts.torch.tensor(copy_data(9)), max_len=7, bos=1)
    m_out = xs.greedy_decode(mine.eval(), xs.torch.tensor(copy_data(9)), max_len=7, bos=1)
    np.testing.assert_array_equal(m_out.numpy(), t_out.numpy())


def test_training_script_runs_as_a_script():
    """python -m tinygradx.compat train_copy.py --steps 3: argparse, the loop, the printout."""
    r = subprocess.run([sys.executable, "-m", "tinygradx.compat", "train_copy.py", "--steps",
                        "3", "--batch", "4"], cwd=MODELS, capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("step    0  loss ") and lines[1].startswith("step    2  loss ")
    assert len([s for s in lines if s.startswith("src [1, ")]) == 3


def run_custom_op(*command):
    r = subprocess.run([*command, "custom_op.py"], cwd=MODELS, capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_a_pytorch_style_function_in_a_model_file_runs_unchanged():
    """custom_op.py: a torch.autograd.Function with two outputs, ctx.needs_input_grad, a
    non-Tensor argument, checked by torch.autograd.gradcheck, trained five SGD steps and
    printed with f"{loss:.10f}": the same lines as under PyTorch."""
    mine = run_custom_op(sys.executable, "-m", "tinygradx.compat")
    assert mine[0] == "gradcheck True" and len(mine) == 6
    losses = [float(line.split()[3]) for line in mine[1:]]
    assert losses == sorted(losses, reverse=True)
    pytest.importorskip("torch")
    theirs = run_custom_op(sys.executable)
    assert mine[0] == theirs[0]
    for a, b in zip(mine[1:], theirs[1:], strict=True):     # loss and gradient norm per step
        np.testing.assert_allclose([float(v) for v in a.split()[3::2]],
                                   [float(v) for v in b.split()[3::2]], rtol=1e-8, atol=1e-10)


def test_the_custom_op_model_gives_torch_gradients_from_the_same_weights():
    tm, xm = both("custom_op.py")
    theirs, mine = tm.GatedNet(3, 5).double(), xm.GatedNet(3, 5).double()
    copy_weights(theirs, mine)
    for side, model in ((tm, theirs), (xm, mine)):
        x, y = side.data()
        pred, gate = model(x)
        (((pred - y) ** 2).mean() + gate.sum()).backward()
    assert_same_params(theirs, mine)


# ------------------------------------------------------------------------------------------
# drawing the compat-run models with tinygradx's graph tools
# ------------------------------------------------------------------------------------------

def test_draw_the_backward_graph_and_residual_path_of_the_compat_gpt(tmp_path):
    gpt = load("gpt.py")
    gpt.torch.manual_seed(0)
    model = gpt.GPT(gpt.GPTConfig(**GPT_ARGS))
    x, y = gpt_batch()
    _, loss = model(gpt.torch.tensor(x), gpt.torch.tensor(y))
    assert viz.residual_summary(loss) == (
        "Pre-LN: 1 LayerNorm on the identity path (ln_f); 4 skip adds between the output "
        "and embedding (tok_emb)")
    path = viz.residual_path(loss)
    assert path[0] is loss and path[-1]._ctx.name() == "embedding"
    loss.backward(retain_graph=True)
    dot = viz.to_dot(loss, params=model, highlight="residual")
    src = dot.source
    for name in ("blocks.0.attn", "blocks.1.mlp", "tok_emb.weight", "blocks.0.attn.qkv.weight"):
        assert name in src, name
    viz.render(dot, str(tmp_path / "gpt.dot"))
    assert (tmp_path / "gpt.dot").read_text().startswith("digraph")
    try:
        viz.render(dot, str(tmp_path / "gpt.svg"))
    except viz.RendererNotFound:
        pytest.skip("no Graphviz renderer (dot or the graphviz-pure wheel): DOT checked only")
    assert (tmp_path / "gpt.svg").read_text().lstrip().startswith(("<?xml", "<svg"))


def test_residual_summary_of_the_compat_post_ln_transformer():
    tf = load("transformer.py")
    tf.torch.manual_seed(0)
    model = tf.Transformer(VOCAB, VOCAB, **TF_ARGS)
    data = copy_data(0)
    loss, _ = label_smoothed_loss(tf, model, data, data)
    summary = viz.residual_summary(loss)
    assert summary.startswith("Post-LN: "), summary
