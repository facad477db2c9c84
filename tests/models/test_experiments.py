"""models/apps/experiments.py (and the experiment modules it gathers: ln_grad_experiment,
warmup_experiment, score_scale_experiment): the LN-placement inequalities of Xiong et al. 2020 on
small sizes.

The numbers are deterministic (fixed seeds); the inequalities were checked to hold for 10 of
10 seeds at these sizes (averaged here over 3), so they are not a lucky draw.
"""
import csv

import numpy as np
import pytest

from tinygradx.models.apps import experiments as E
from tinygradx.models.apps import ln_grad_experiment, pictures, score_scale_experiment
from tinygradx.models.apps import warmup_experiment

# each experiment module took figure_class and save_figure from figures.py at import
PLOTTING = (ln_grad_experiment, score_scale_experiment, warmup_experiment)

SMALL = dict(d_model=32, seeds=(0, 1, 2), batch=4, seq_len=8)


@pytest.fixture(scope="module")
def small():
    return E.ln_grad_experiment((2, 6), **SMALL)


def test_ln_grad_norms_shapes():
    r = E.ln_grad_norms("pre", 3, d_model=16, seed=0, batch=2, seq_len=4)
    assert set(r["grad"]) == set(E.MATRICES)
    assert all(v.shape == (3,) and np.all(v > 0) for v in r["grad"].values())
    assert r["x_norm2"].shape == (4,)
    assert np.isfinite(r["loss"])
    # the same seed gives the same numbers; another seed other weights
    again = E.ln_grad_norms("pre", 3, d_model=16, seed=0, batch=2, seq_len=4)
    np.testing.assert_array_equal(again["grad"]["W_2"], r["grad"]["W_2"])
    other = E.ln_grad_norms("pre", 3, d_model=16, seed=1, batch=2, seq_len=4)
    assert not np.allclose(other["grad"]["W_2"], r["grad"]["W_2"])


def test_gpt_variant_runs():
    r = E.ln_grad_norms("post", 2, d_model=16, seed=0, model="gpt", batch=2, seq_len=4)
    assert all(v.shape == (2,) for v in r["grad"].values())


def test_post_ln_gradients_grow_toward_the_output_more_than_pre_ln(small):
    s = small["summary"]
    assert np.all(s["ratio"]["post"] > s["ratio"]["pre"])
    assert s["ratio"]["post"][-1] > 2.0                      # Post-LN at L=6: 3.7x top/bottom
    assert 0.3 < s["ratio"]["pre"][-1] < 1.0                 # Pre-LN: within a small factor


def test_encoder_alone_shows_the_same_ordering():
    r = E.ln_grad_experiment((2, 6), model="encoder", **SMALL)
    s = r["summary"]
    assert np.all(s["ratio"]["post"] > s["ratio"]["pre"])
    assert s["last"]["pre"][1] < s["last"]["pre"][0]
    assert s["growth"]["post"][1] > s["growth"]["pre"][1]


def test_pre_ln_last_layer_shrinks_with_depth_post_ln_does_not(small):
    s = small["summary"]
    pre, post = s["last"]["pre"], s["last"]["post"]
    assert pre[1] < pre[0]                                   # Pre-LN: smaller when deeper
    assert post[1] / post[0] > 0.8                           # Post-LN: about the same
    assert post[1] / post[0] > pre[1] / pre[0]
    assert all(s["checks"].values())


def test_pre_ln_hidden_state_grows_post_ln_stays_normalised(small):
    x_pre = small["mean"]["pre", 6]["x_norm2"]
    x_post = small["mean"]["post", 6]["x_norm2"]
    assert np.all(np.diff(x_pre) > 0)                        # Lemma: grows with l
    assert x_pre[-1] > 2 * x_pre[1]                          # ~linearly: 3.2 -> 10.4
    np.testing.assert_allclose(x_post[1:], 1.0, atol=1e-3)   # every block ends in a LayerNorm


def test_ln_grad_main_writes_csv_and_summary(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(ln_grad_experiment, "figure_class", lambda: None)
    rc = E.main("ln-grad", str(tmp_path), layers="2,6", **SMALL)
    out = capsys.readouterr().out
    assert rc == 0
    assert "top/bottom layer" in out and "FAILED" not in out
    with open(tmp_path / "ln_grad.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["placement", "n_layers", "seed", "layer", "matrix", "grad_norm"]
    assert len(rows) == 1 + 2 * 3 * (2 + 6) * 6             # placements, seeds, layers, matrices
    assert (tmp_path / "ln_grad_mean.csv").exists()
    assert not (tmp_path / "ln_grad.png").exists()


@pytest.mark.skipif(not pictures.have_matplotlib(), reason="matplotlib not installed")
def test_ln_grad_png(tmp_path, small):
    paths = E.write_ln_grad(small, str(tmp_path))
    assert paths[-1].endswith("ln_grad.png")
    with open(paths[-1], "rb") as f:
        assert f.read(4) == b"\x89PNG"


def test_bad_arguments():
    with pytest.raises(ValueError, match="layers"):
        E.main("ln-grad", "unused", layers="2,x")
    with pytest.raises(ValueError, match="unknown experiment"):
        E.main("nope", "unused")
    with pytest.raises(ValueError, match="post"):
        E.ln_grad_norms("middle", 2)


def test_post_ln_without_warmup_trains_worse():
    """The warm-up inequality on a tiny run (40 steps, d_model 32): Post-LN at lr 1e-2 without
    warm-up stalls near the unigram loss; with 10 steps of warm-up it gets further. (Held for
    seeds 0, 1, 2; about 5 s.)"""
    curves = E.warmup_curves(steps=40, warmup=10, lr=1e-2, d_model=32, n_layer=2,
                             batch_size=16, seed=0, placements=("post",))
    assert set(curves) == {("post", 0), ("post", 10)}
    assert all(v.shape == (40,) and np.all(np.isfinite(v)) for v in curves.values())
    assert E.final_loss(curves["post", 0], 0.25) > E.final_loss(curves["post", 10], 0.25) + 0.1


def test_warmup_outputs(tmp_path, monkeypatch):
    monkeypatch.setattr(warmup_experiment, "figure_class", lambda: None)
    curves = {("post", 0): np.array([3.0, 2.5, np.nan]), ("post", 2): np.array([3.0, 2.0, 1.5]),
              ("pre", 0): np.array([3.0, 1.9, 1.4]), ("pre", 2): np.array([3.0, 2.1, 1.3])}
    assert E.warmup_checks(curves) == {"post_needs_warmup": True,
                                       "pre_trains_without_warmup": True}
    assert E.final_loss(curves["post", 0]) == float("inf")   # a diverged run ranks last
    assert "Post-LN" in E.format_warmup(curves)
    paths = E.write_warmup(curves, str(tmp_path), lr=1e-2)
    with open(paths[0], newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["step", "post_warmup0", "post_warmup2", "pre_warmup0", "pre_warmup2"]
    assert rows[3][1] == ""                                  # the NaN step is left empty


def _saved_texts(monkeypatch):
    """Collects (texts, lang) of each figure an experiment saves with save_figure, writing
    nothing."""
    from matplotlib.text import Text
    saved = []

    def save(fig, path, lang="en"):
        saved.append((sorted({t.get_text() for t in fig.findobj(Text) if t.get_text()}), lang))
        return path
    for module in PLOTTING:
        monkeypatch.setattr(module, "save_figure", save)
    return saved


@pytest.mark.skipif(not pictures.have_matplotlib(), reason="matplotlib not installed")
def test_experiment_pictures_write_their_labels_in_chinese(tmp_path, monkeypatch, small):
    saved = _saved_texts(monkeypatch)
    E.plot_ln_grad(small, str(tmp_path / "a.png"), lang="zh")
    E.plot_score_scale_grads(E.score_scale_grads(d_k=16, n_keys=4, n_queries=20),
                             str(tmp_path / "b.png"), d_k=16, lang="zh")
    curves = {("post", 0): np.array([3.0, 2.5]), ("post", 2): np.array([3.0, 2.0]),
              ("pre", 0): np.array([3.0, 1.9]), ("pre", 2): np.array([3.0, 2.1])}
    E.write_warmup(curves, str(tmp_path), lr=1e-2, lang="zh")
    E.plot_ln_grad(small, str(tmp_path / "c.png"))
    (ln, ln_lang), (score, _), (warm, _), (ln_en, en_lang) = saved
    assert ln_lang == "zh" and en_lang == "en"
    assert {"层数 L", "最后一层与深度", "Post-LN：初始化时的 W_2"} <= set(ln)
    assert "last layer vs depth" in ln_en and "last layer vs depth" not in ln
    assert {"Query 个数", "到达 Query 的梯度，d_k = 16，20 个 Query"} <= set(score)
    assert {"Post-LN, 无 warm-up", "Adam，lr=0.01：Post-LN 需要 warm-up"} <= set(warm)


def test_experiment_cli_takes_lang(monkeypatch):
    from tinygradx.models.apps import cli
    seen = {}
    monkeypatch.setattr(E, "main", lambda name, out, **kw: seen.update(kw) or 0)
    assert cli.main(["experiment", "ln-grad", "--out", "unused", "--lang", "zh"]) == 0
    assert seen["lang"] == "zh"
