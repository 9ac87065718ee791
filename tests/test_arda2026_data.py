"""Arda et al. (2026): teacher, transport, sweeps' task lists, A2 fits, lag-L task."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkrepro.arda2026 import forecasting, scaling, teacher
from ntkrepro.arda2026.model import Params, init_params, ntk_parts


def test_inputs_norm_bounded_nested_and_deterministic():
    X = teacher.sample_inputs(jax.random.PRNGKey(0), 300, 8, 5)
    norms = jnp.linalg.norm(X, axis=1)
    assert float(norms.max()) <= 1.0 + 1e-6
    Y = teacher.sample_inputs(jax.random.PRNGKey(0), 700, 8, 5)
    np.testing.assert_array_equal(X, Y[:300])
    with pytest.raises(ValueError):
        teacher.sample_inputs(jax.random.PRNGKey(0), 0, 8, 5)


def test_transport_values_equal_kernel_formula_and_norm_bound():
    """<v(w), phi(X; w)> with |v| = nu, checked against the per-head NTK of a width-2 symmetric pair."""
    d, T = 3, 4
    tch = teacher.make_teacher(jax.random.PRNGKey(1), d, T, R=3, nu=2.0)
    X = teacher.sample_inputs(jax.random.PRNGKey(2), 5, d, T)
    p = init_params(jax.random.PRNGKey(3), 2, d)
    vals = teacher.transport_values(p.W[:1], p.U[:1], tch, X)  # (1, n)
    # single-head feature kernel = m * NTK of a 1-head model with c = +-1
    one = Params(p.W[:1], p.U[:1], jnp.ones(1))
    k = lambda A, B: sum(ntk_parts(one, A, B).values())  # noqa: E731
    kXA, kAA = k(X, tch.anchors), k(tch.anchors, tch.anchors)
    ref = 2.0 * (kXA @ tch.beta) / jnp.sqrt(tch.beta @ kAA @ tch.beta)
    np.testing.assert_allclose(vals[0], ref, rtol=2e-4, atol=1e-5)
    # at an anchor direction the value equals nu * |u| ... and |<v, phi>| <= nu |phi| (Cauchy-Schwarz)
    assert np.all(np.abs(np.asarray(vals[0])) <= 2.0 * np.sqrt(np.diag(np.asarray(k(X, X)))) + 1e-4)


def test_teacher_labels_deterministic_and_transport_error_shrinks():
    tch = teacher.make_teacher(jax.random.PRNGKey(0), 4, 6, R=4, nu=3.0)
    X = teacher.sample_inputs(jax.random.PRNGKey(1), 50, 4, 6)
    y1 = teacher.teacher_labels(jax.random.PRNGKey(2), tch, X, n_mc=1024)
    y2 = teacher.teacher_labels(jax.random.PRNGKey(2), tch, X, n_mc=1024)
    np.testing.assert_array_equal(y1, y2)
    assert float(jnp.std(y1)) > 0.01
    errs = []
    for m in (8, 512):
        e = []
        for s in range(4):
            p = init_params(jax.random.PRNGKey(10 + s), m, 4)
            e.append(float(jnp.max(jnp.abs(teacher.transport_prediction(p.W, p.U, tch, X) - y1))))
        errs.append(np.median(e))
    assert errs[1] < 0.5 * errs[0]  # Monte Carlo error ~ m^-1/2: 64x width -> ~8x smaller


def test_tasks_and_shards_cover_every_point_and_seed_once():
    sec = {"widths": [8, 16, 32], "seeds": [1, 2, 3, 4, 5], "seeds_per_job": 2, "jobs": 4, "n": 100, "T": 4}
    all_tasks = scaling.tasks(sec, "A1")
    assert len(all_tasks) == 9
    K = scaling.n_shards(sec, "A1")
    got = [(t["m"], s) for k in range(K) for t in scaling.shard_tasks(sec, "A1", k) for s in t["seeds"]]
    assert sorted(got) == sorted((m, s) for m in sec["widths"] for s in sec["seeds"])
    assert scaling.n_shards(dict(sec, jobs=100), "A1") == 9
    with pytest.raises(ValueError):
        scaling.shard_tasks(sec, "A1", K)


def test_width_for_target_and_growth_fits():
    x = np.array([8, 32, 128, 512], float)
    med = 2.0 * x**-0.5
    assert abs(scaling.width_for_target(x, med, 2.0 / 10) - 100.0) < 1e-6
    assert scaling.width_for_target(x, x**0.1, 0.5) == float("inf")
    n = np.array([100, 1000, 10000, 100000], float)
    f = scaling.growth_fits(n, 5 * np.log(n) + 3)
    assert f["rss_log"] < 1e-12 < f["rss_pow"] and abs(f["log_a"] - 5) < 1e-9
    g = scaling.growth_fits(n, 2 * n**0.7)
    assert g["rss_pow"] < g["rss_log"] and abs(g["pow_p"] - 0.7) < 1e-3


def test_lag_series_recursion_windows_and_positional_channels():
    rng = np.random.default_rng(0)
    s = forecasting.lag_series(rng, 3000, 5, burn_in=800)
    assert abs(s.mean()) < 1e-9 and abs(s.std() - 1) < 1e-9
    # lag-5 autocorrelation ~ 0.9, lag-1 ~ 0
    assert abs(np.corrcoef(s[5:], s[:-5])[0, 1] - 0.9) < 0.05 and abs(np.corrcoef(s[1:], s[:-1])[0, 1]) < 0.1
    X, y = forecasting.lag_windows(s, 5, 100)
    assert X.shape == (100, 17, 6)
    np.testing.assert_allclose(y, s[6:106], rtol=1e-6)
    # the informative token (2nd of the window) is x_{t-L} for the target x_t
    np.testing.assert_allclose(X[:, 0, 1], s[1:101], rtol=1e-6)
    pe = forecasting.positional_channels(64)
    assert pe.shape == (16, 64)
    np.testing.assert_allclose(pe[:8] ** 2 + pe[8:] ** 2, 1.0)
    np.testing.assert_allclose(pe[0, 32], 0.0, atol=1e-12)  # period 32
    with pytest.raises(ValueError):
        forecasting.lag_windows(s[:50], 5, 100)


def test_block_max_mean():
    assert forecasting.block_max_mean(np.array([1, 3, 2, 5, 4]), 2) == pytest.approx((3 + 5 + 4) / 3)
    with pytest.raises(ValueError):
        forecasting.block_max_mean(np.ones(3), 0)


def test_linearisation_gap_second_order_and_edge():
    p0 = init_params(jax.random.PRNGKey(0), 8, 3)
    X = teacher.sample_inputs(jax.random.PRNGKey(1), 20, 3, 4)
    d = jax.tree_util.tree_map(lambda a: jax.random.normal(jax.random.PRNGKey(2), a.shape), p0)
    e = scaling._edge(d, 8, 2.0)
    r = 2.0 / np.sqrt(8)
    np.testing.assert_allclose(jnp.linalg.norm(e.U, axis=1), r, rtol=1e-5)
    np.testing.assert_allclose(jnp.abs(e.c), r, rtol=1e-6)
    g1 = jnp.mean(jnp.abs(scaling.linearisation_gap(p0, jax.tree_util.tree_map(lambda a: 1e-2 * a, e), X)))
    g2 = jnp.mean(jnp.abs(scaling.linearisation_gap(p0, jax.tree_util.tree_map(lambda a: 2e-2 * a, e), X)))
    assert 3.0 < float(g2 / g1) < 5.0  # quadratic in the perturbation size
    w1 = scaling.worst_case_linearisation_error(jax.random.PRNGKey(3), p0, X, 2.0, 1)
    w5 = scaling.worst_case_linearisation_error(jax.random.PRNGKey(3), p0, X, 2.0, 5)
    assert 0 < w1 <= w5  # same start; the search keeps the largest gap seen


def test_aggregations_on_synthetic_shards(tmp_path):
    """Aggregators recover a planted m^-1/2 law and a planted log n growth, and reject missing seeds."""
    from ntkrepro.io import write_json
    from ntkrepro.run import RunContext

    rng = np.random.default_rng(0)
    widths, seeds = [8, 16, 32, 64, 128], [1, 2, 3, 4]
    rows = [{"m": m, "n": 100, "T": 4, "seeds": seeds, "label_std": 0.3,
             **{k: list(2.0 * m**-0.5 * np.exp(0.01 * rng.normal(size=4)))
                for k in ("train_loss", "approx_error", "lin_error", "initial_loss")}} for m in widths]
    files = []
    for k in range(2):
        f = tmp_path / f"a1_{k}.json"
        write_json(f, {"tasks": rows[k::2]})
        files.append(str(f))
    out = scaling.aggregate_a1({"shard_files": files, "n_boot": 200}, RunContext(scale="smoke"))
    for metric in scaling.METRICS_A1:
        s = out["metrics"][metric]["slope"]
        assert s["ci_low"] < -0.5 < s["ci_high"]
    write_json(tmp_path / "bad.json", {"tasks": [dict(rows[0], seeds=[1, 2, 3, 5])]})
    with pytest.raises(ValueError):
        scaling.aggregate_a1({"shard_files": files + [str(tmp_path / "bad.json")], "n_boot": 200},
                             RunContext(scale="smoke"))
    # A2: error = sqrt(log n / m) (union bound) -> m* grows like log n
    ns, ws = [100, 400, 1600, 6400], [8, 16, 32, 64, 128, 256]
    rows2 = [{"n": n, "m": m, "T": 4, "seeds": seeds, "label_std": 0.3,
              "approx_error": list(np.sqrt(np.log(n) / m) * np.exp(0.01 * rng.normal(size=4)))}
             for n in ns for m in ws]
    write_json(tmp_path / "a2.json", {"tasks": rows2})
    a2 = scaling.aggregate_a2({"shard_files": [str(tmp_path / "a2.json")], "n_boot": 200}, RunContext(scale="smoke"))
    assert a2["fits"]["rss_log"] < a2["fits"]["rss_pow"]
    assert a2["exponent_p"]["ci_high"] < 0.5
    np.testing.assert_allclose(np.array(a2["m_star"]) / np.log(ns), a2["m_star"][0] / np.log(100), rtol=0.05)
