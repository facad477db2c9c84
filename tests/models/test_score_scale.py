"""The score-scale experiment behind the walkthrough's section 4: without 1/sqrt(d_k) the gradient
reaching the queries is larger on average but tiny for about half of them."""
import numpy as np

from tinygradx.models.apps import experiments


def test_unscaled_scores_give_uneven_not_vanishing_query_gradients():
    grads = experiments.score_scale_grads(d_k=512, n_keys=10, n_queries=1000)
    s = experiments.score_scale_summary(grads)
    (mean_u, med_u, small_u), (mean_s, med_s, small_s) = s["unscaled"], s["scaled"]
    assert mean_u > 3 * mean_s                    # more gradient on average ...
    assert med_u < med_s / 100                    # ... but the typical query gets almost none
    assert 0.4 < small_u < 0.6 and small_s == 0.0
    assert np.all(grads["scaled"] > 1e-3)


def test_same_draws_for_both_runs_and_small_sizes():
    g = experiments.score_scale_grads(d_k=4, n_keys=3, n_queries=5, seed=1)
    assert g["scaled"].shape == g["unscaled"].shape == (5,)
    again = experiments.score_scale_grads(d_k=4, n_keys=3, n_queries=5, seed=1)
    assert np.array_equal(g["unscaled"], again["unscaled"])


def test_plot_writes_a_png(tmp_path):
    import pytest
    pytest.importorskip("matplotlib")
    g = experiments.score_scale_grads(d_k=64, n_keys=5, n_queries=50)
    path = experiments.plot_score_scale_grads(g, str(tmp_path / "h.png"), d_k=64)
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
