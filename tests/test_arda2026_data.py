"""Arda et al. (2026): inputs, sweeps' task lists, aggregation, A2 fits, lag-L task, IndRNN init."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ntkrepro.arda2026 import forecasting, scaling, teacher
from ntkrepro.arda2026.model import init_params


def test_inputs_norm_bounded_nested_and_deterministic():
    X = teacher.sample_inputs(jax.random.PRNGKey(0), 300, 8, 5)
    norms = jnp.linalg.norm(X, axis=1)
    assert float(norms.max()) <= 1.0 + 1e-6
    Y = teacher.sample_inputs(jax.random.PRNGKey(0), 700, 8, 5)
    np.testing.assert_array_equal(X, Y[:300])
    with pytest.raises(ValueError):
        teacher.sample_inputs(jax.random.PRNGKey(0), 0, 8, 5)


def test_tasks_and_shards_cover_every_unit_once():
    t = {"kind": "authors", "R": 4, "nu": 3.0, "n_mc": 64}
    sec = {"widths": [8, 16, 32], "seeds": [1, 2, 3, 4, 5], "seeds_per_job": 2, "jobs": 4, "n": 100, "T": 4,
           "teacher": t, "compare_kinds": ["paper"]}
    all_tasks = scaling.tasks(sec, "A1")
    assert len(all_tasks) == 6 and {x["kind"] for x in all_tasks} == {"authors", "paper"}
    K = scaling.n_shards(sec, "A1")
    got = [(x["kind"], s) for k in range(K) for x in scaling.shard_tasks(sec, "A1", k) for s in x["seeds"]]
    assert sorted(got) == sorted((k, s) for k in ("authors", "paper") for s in sec["seeds"])
    assert scaling.n_shards(dict(sec, jobs=100), "A1") == 6
    with pytest.raises(ValueError):
        scaling.shard_tasks(sec, "A1", K)
    a3 = {"T_values": [4, 16, 64], "teacher_seeds": [1, 2, 3, 4], "teachers_per_job": 2, "seeds": [1, 2],
          "jobs": 3, "teacher": t, "compare_kinds": []}
    got = [(x["T"], tch) for k in range(scaling.n_shards(a3, "A3")) for x in scaling.shard_tasks(a3, "A3", k)
           for tch in x["teachers"]]
    assert sorted(got) == sorted((T, tch) for T in a3["T_values"] for tch in a3["teacher_seeds"])
    assert scaling.teacher_kinds({"teacher": t, "compare_kinds": ["authors", "paper"]}) == ["authors", "paper"]


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
    """Aggregators recover a planted m^-1/2 law (per teacher kind) and a planted log n growth, and reject
    missing or duplicated units."""
    from ntkrepro.io import write_json
    from ntkrepro.run import RunContext

    rng = np.random.default_rng(0)
    t = {"kind": "authors", "R": 4, "nu": 3.0, "n_mc": 64}
    widths, seeds = [8, 16, 32, 64, 128], [1, 2, 3, 4]
    rows = []
    for kind, level in (("authors", 1e-3), ("paper", 4e-3)):
        for s in seeds:
            teacher_level = level * np.exp(rng.normal())
            for m in widths:
                row = {"kind": kind, "seed": s, "m": m, "n": 100, "T": 4,
                       "label_stats": {"mean_y2": level, "var": level},
                       **{k: float(teacher_level * m**-0.5 * np.exp(0.01 * rng.normal()))
                          for k in ("min_train_loss", "final_train_loss", "approx_error", "initial_loss", "val_loss")}}
                if kind == "authors":
                    row["lin_error"] = float(m**-0.5 * np.exp(0.01 * rng.normal()))
                    # the width_fixed control: the width-8 model's numbers in every column, with draw noise
                    rows.append({"kind": kind, "control": "width_fixed", "seed": s, "m": m, "width_used": 8,
                                 **{k: float(teacher_level * 8**-0.5 * np.exp(0.05 * rng.normal()))
                                    for k in ("min_train_loss", "final_train_loss", "approx_error", "initial_loss",
                                              "lin_error")}})
                rows.append(row)
    files = []
    for k in range(2):
        f = tmp_path / f"a1_{k}.json"
        write_json(f, {"rows": rows[k::2]})
        files.append(str(f))
    prm = {"shard_files": files, "n_boot": 200, "teacher": t, "compare_kinds": ["paper"]}
    out = scaling.aggregate_a1(prm, RunContext(scale="smoke"))
    for kind in ("authors", "paper"):
        for metric in scaling.METRICS_A1:
            s = out["kinds"][kind]["metrics"][metric]["slope"]
            assert s["ci_low"] < -0.5 < s["ci_high"] and s["ci_high"] - s["ci_low"] < 0.05
    assert out["kinds"]["paper"]["mean_y2"] == pytest.approx(4e-3)
    ctrl = out["controls"]["width_fixed"]
    assert list(ctrl["kinds"]) == ["authors"] and ctrl["widths"] == widths
    for metric in scaling.METRICS_A1:   # fixed width: slope 0 within draw noise, far from -1/2
        s = ctrl["kinds"]["authors"]["metrics"][metric]["slope"]
        assert -0.2 < s["ci_low"] <= s["ci_high"] < 0.2
    write_json(tmp_path / "dup.json", {"rows": rows[:1]})
    with pytest.raises(ValueError, match="duplicate"):
        scaling.aggregate_a1(dict(prm, shard_files=files + [str(tmp_path / "dup.json")]), RunContext(scale="smoke"))
    write_json(tmp_path / "short.json", {"rows": rows[1:]})
    with pytest.raises(ValueError, match="missing"):
        scaling.aggregate_a1(dict(prm, shard_files=[str(tmp_path / "short.json")]), RunContext(scale="smoke"))
    # A2: error = sqrt(log n / m) (union bound) -> m* grows like log n
    ns, ws = [100, 400, 1600, 6400], [8, 16, 32, 64, 128, 256]
    rows2 = [{"kind": "authors", "n": n, "m": m, "T": 4, "seed": s,
              "approx_error": float(np.sqrt(np.log(n) / m) * np.exp(0.01 * rng.normal()))}
             for n in ns for m in ws for s in seeds]
    write_json(tmp_path / "a2.json", {"rows": rows2, "label_stats": {"authors:1": {"mean_y2": 1e-3}}})
    a2 = scaling.aggregate_a2({"shard_files": [str(tmp_path / "a2.json")], "n_boot": 200, "boot_seed": 0, "teacher": t,
                               "compare_kinds": []}, RunContext(scale="smoke"))["kinds"]["authors"]
    assert a2["fits"]["rss_log"] < a2["fits"]["rss_pow"]
    assert a2["exponent_p"]["ci_high"] < 0.5 and a2["label_stats"] == {"1": {"mean_y2": 1e-3}}
    np.testing.assert_allclose(np.array(a2["m_star"]) / np.log(ns), a2["m_star"][0] / np.log(100), rtol=0.05)
    a2_all = scaling.aggregate_a2({"shard_files": [str(tmp_path / "a2.json")], "n_boot": 200, "boot_seed": 0,
                                   "teacher": t, "compare_kinds": []}, RunContext(scale="smoke"))
    assert a2["curvature"]["ci_high"] < 1 / 16                    # a log law is not convex in log n
    pg = a2_all["controls"]["power_growth"]["kinds"]["authors"]     # the control: m* ~ n^0.4
    np.testing.assert_allclose(np.log(pg["m_star"]), np.log(pg["m_star"][0]) + 0.4 * np.log(np.array(ns) / 100),
                               atol=1e-6)
    assert pg["curvature"]["ci_low"] > 1 / 16 and -0.5 < pg["exponent_p"]["ci_low"] < pg["exponent_p"]["ci_high"] < 0.5


def test_indrnn_init_is_pairwise_symmetric():
    from ntkrepro.arda2026.indrnn import indrnn_forward, init_indrnn

    p = init_indrnn(jax.random.PRNGKey(0), 8, 5)
    np.testing.assert_array_equal(p.W_in[:4], p.W_in[4:])
    np.testing.assert_array_equal(p.u[:4], p.u[4:])
    np.testing.assert_array_equal(p.c[:4], -p.c[4:])
    assert set(np.abs(np.asarray(p.u)).tolist()) == {1.5}
    X = jax.random.normal(jax.random.PRNGKey(1), (6, 5, 7))
    np.testing.assert_allclose(indrnn_forward(p, X), 0.0, atol=1e-6)
    with pytest.raises(ValueError):
        init_indrnn(jax.random.PRNGKey(0), 7, 5)


# ---- issue 16 item 8: aggregate_a4 on known numbers; a sharded claim reruns identically ---------

def _a4_shards(tmp_path, Ls=(4, 16, 32), seeds=(1, 2, 3, 4)):
    """Two shards of A4 rows with known laws: IndRNN min-val MSE 0.2 + 0.01 L, transformer flat 0.2,
    gradient block maxima exp(0.05 L) (IndRNN) and 1 (transformer), small seed noise."""
    from ntkrepro.io import write_json

    rng = np.random.default_rng(5)
    rows = []
    for L in Ls:
        e = 1e-3 * rng.standard_normal(len(seeds))
        rows.append({"L": L, "seeds": list(seeds), "tf_min_val": list(0.2 + e), "rnn_min_val": list(0.2 + 0.01 * L + e),
                     "tf_grad_blockmax": list(1.0 + np.abs(e)), "rnn_grad_blockmax": list(np.exp(0.05 * L) + np.abs(e)),
                     "tf_final_train": list(0.1 + np.abs(e)), "rnn_final_train": list(0.1 + np.abs(e)),
                     "rnn_nonfinite": [0] * len(seeds)})
    files = []
    for k, part in enumerate((rows[:1], rows[1:])):
        files.append(str(tmp_path / f"A4_lag_forecasting_{k}.json"))
        write_json(files[-1], {"claim": "A4", "shard": k, "n_shards": 2, "tasks": part})
    return files


def test_aggregate_a4_recovers_the_known_slopes(tmp_path):
    from ntkrepro.run import RunContext

    out = forecasting.aggregate_a4({"shard_files": _a4_shards(tmp_path), "n_boot": 300}, RunContext(scale="smoke"))
    assert out["L_values"] == [4.0, 16.0, 32.0] and out["seeds"] == [1, 2, 3, 4]
    m = out["metrics"]
    rnn, tf = m["rnn_min_val"]["slope_linear"], m["tf_min_val"]["slope_linear"]
    assert rnn["ci_low"] < 0.01 < rnn["ci_high"] and rnn["ci_low"] > 0.009
    assert tf["ci_low"] < 0 < tf["ci_high"] and abs(tf["value"]) < 1e-4
    np.testing.assert_allclose(m["rnn_min_val"]["median"], [0.24, 0.36, 0.52], atol=3e-3)
    assert m["rnn_grad_blockmax"]["slope"]["value"] > m["tf_grad_blockmax"]["slope"]["value"]


def test_aggregate_a4_refuses_points_with_different_seeds(tmp_path):
    from ntkrepro.io import read_json, write_json
    from ntkrepro.run import RunContext

    files = _a4_shards(tmp_path)
    sh = read_json(files[1])
    sh["tasks"][0]["seeds"] = [1, 2, 3, 5]
    write_json(files[1], sh)
    with pytest.raises(ValueError, match="seeds"):
        forecasting.aggregate_a4({"shard_files": files, "n_boot": 100}, RunContext(scale="smoke"))


def test_a4_shard_reruns_identically():
    """Two runs of the same shard config give the same numbers on CPU (CONTRIBUTING: seed everything)."""
    from ntkrepro.run import RunContext

    params = {"L_values": [2, 4], "m": 4, "n": 40, "steps": 6, "lr": 0.05, "burn_in": 50, "grad_block": 2,
              "seeds": [1, 2], "seeds_per_job": 1, "jobs": 2, "n_boot": 100, "shard": 1}
    a = forecasting.run_a4_shard(params, RunContext(scale="smoke"))
    b = forecasting.run_a4_shard(dict(params), RunContext(scale="smoke"))
    assert a == b and a["tasks"] and all(np.isfinite(t["tf_min_val"]).all() for t in a["tasks"])


def test_sweep_table_names_existing_functions_and_shard_files():
    """The workflow's sweep table (ntkrepro.arda2026.sweeps) points at real shard/aggregate functions."""
    import importlib

    import yaml

    from ntkrepro.arda2026 import sweeps

    arda = yaml.safe_load(open("config/smoke.yaml"))["arda2026"]
    for claim, row in sweeps.SWEEPS.items():
        for step in ("shard", "aggregate"):
            mod, fn = sweeps.function(claim, step).split(":")
            assert callable(getattr(importlib.import_module(mod), fn)), (claim, step)
        files = sweeps.shard_files("R", arda, claim)
        assert files == [f"R/arda2026/shards/{claim}_{row['shard_name']}_{k}.json" for k in range(len(files))]
        assert row["sweep"] in arda[claim] and sweeps.size_text(arda, claim).startswith(row["sweep"])
    assert "teacher" in sweeps.section(arda, "A1") and "teacher" not in sweeps.section(arda, "A4")
    with pytest.raises(ValueError):
        sweeps.function("A1", "fit")


def test_aggregate_a1_refuses_metrics_on_different_seed_grids(tmp_path):
    """The recorded seeds are those of every metric and kind (no silently overwritten last grid)."""
    from ntkrepro.io import write_json
    from ntkrepro.run import RunContext

    t = {"kind": "authors", "R": 4, "nu": 3.0, "n_mc": 64}
    rows = [{"kind": kind, "seed": s, "m": m, "n": 100, "T": 4, "label_stats": {"mean_y2": 1.0, "var": 1.0},
             **{k: float(m**-0.5) for k in ("min_train_loss", "final_train_loss", "approx_error", "initial_loss",
                                              "val_loss")},
             **({"lin_error": float(m**-0.5)} if kind == "authors" else {})}
            for kind, seeds in (("authors", (1, 2, 3)), ("paper", (1, 2))) for s in seeds for m in (8, 16, 32)]
    write_json(tmp_path / "a1.json", {"rows": rows})
    prm = {"shard_files": [str(tmp_path / "a1.json")], "n_boot": 100, "teacher": t, "compare_kinds": ["paper"]}
    with pytest.raises(ValueError, match="different"):
        scaling.aggregate_a1(prm, RunContext(scale="smoke"))
    out = scaling.aggregate_a1(dict(prm, compare_kinds=[]), RunContext(scale="smoke"))
    assert out["seeds"] == [1, 2, 3] and out["widths"] == [8, 16, 32]


def test_a4_batched_seeds_match_sequential():
    """Issue 29: the vmapped A4 path (all seeds of a task in one compiled program) gives the same
    per-seed numbers as the sequential reference path, to fp32 tolerance, for both models."""
    params = {"m": 8, "n": 60, "steps": 30, "lr": 0.05, "burn_in": 50, "grad_block": 10}
    seeds = [3, 1, 7]
    b = forecasting.run_point(params, 6, seeds, batched=False)
    for how in ("map", "vmap"):
        _check_same(forecasting.run_point(params, 6, seeds, batched=True, seed_map=how), b, seeds)
    one = forecasting.run_point(params, 6, [7], batched=True, seed_map="vmap")
    np.testing.assert_allclose(one["tf_min_val"], b["tf_min_val"][2:], rtol=2e-4)
    with pytest.raises(ValueError, match="map"):
        forecasting.run_point(params, 6, seeds, batched=True, seed_map="pmap")


def _check_same(a, b, seeds):
    assert a["seeds"] == b["seeds"] == seeds
    for k in ("tf_min_val", "tf_grad_blockmax", "rnn_min_val", "rnn_grad_blockmax", "tf_final_train",
              "rnn_final_train"):
        assert len(a[k]) == len(seeds)
        np.testing.assert_allclose(a[k], b[k], rtol=2e-4, atol=1e-6, err_msg=k)
    assert a["rnn_nonfinite"] == b["rnn_nonfinite"]
    # the seeds really differ (a batch that broadcast one seed to all would pass the comparison above
    # only if the sequential path did the same)
    assert len(set(np.round(a["tf_min_val"], 6))) == len(seeds)
