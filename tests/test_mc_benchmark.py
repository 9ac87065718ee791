"""The Monte Carlo attention benchmark (issue 41 item 3, ``ntkrepro.hron2020.mc_benchmark``; an
extension beyond the papers) at tiny size: leave-one-out ridge selection against brute force, the
accuracy sweep's structure and its draw counts, the rule's config keys."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

from ntkrepro.hron2020 import mc_benchmark as mb  # noqa: E402


def test_loo_select_matches_brute_force_leave_one_out():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 5))
    k = x @ x.T / 5 + 0.1 * np.eye(12)
    y = np.eye(3)[rng.integers(0, 3, 12)]
    grid = [1e-3, 1e-1, 1.0]
    best, scores = mb.loo_select(k, y, grid)
    kbar = np.mean(np.diag(k))
    for s in scores:
        lam = s["diag_reg"]
        pred = []
        for i in range(12):
            keep = np.arange(12) != i
            kk = k[np.ix_(keep, keep)] + lam * kbar * np.eye(11)  # the full set's mean diagonal, as loo_select
            pred.append(k[i, keep] @ np.linalg.solve(kk, y[keep]))
        pred = np.asarray(pred)
        assert s["loo_mse"] == pytest.approx(np.mean((pred - y) ** 2), rel=1e-8)
        assert s["loo_accuracy"] == pytest.approx(np.mean(pred.argmax(1) == y.argmax(1)))
    top = max(scores, key=lambda s: (s["loo_accuracy"], -s["loo_mse"], -s["diag_reg"]))
    assert best in grid and best == top["diag_reg"]
    # scalar +-0.5 targets
    yb = np.where(rng.random(12) < 0.5, -0.5, 0.5)
    assert mb.loo_select(k, yb, grid)[0] in grid


def test_fit_scalar_targets_per_point_correctness_matches_accuracy():
    """+-0.5 targets of shape (n, 1) (IMDb): the per-point correctness behind the paired differences
    equals the accuracy (a bug once scored every (n, 1) label as class 0)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((20, 4))
    k = x @ x.T / 4 + 0.1 * np.eye(20)
    y = np.where(x[:, :1] > 0, 0.5, -0.5)
    f = mb.fit(k[:12, :12], k[12:, :12], y[:12], y[12:], [1e-2], 100, 0)
    assert f["correct"].mean() == pytest.approx(f["test_accuracy"]) and f["test_accuracy"] > 0.5


def test_accuracy_sweep_tiny_cifar_model():
    rng = np.random.default_rng(1)
    data = {"x_train": rng.standard_normal((10, 2, 2, 3)).astype(np.float32),
            "x_test": rng.standard_normal((10, 2, 2, 3)).astype(np.float32),
            "y_train": np.eye(10)[np.arange(10)], "y_test": np.eye(10)[rng.permutation(10)]}
    arch = {"width": 8, "W_std": 1.4, "b_std": 0.05, "W_qk_std": 1.0}
    out = mb.accuracy_sweep("tiny", lambda n, seed=0: mb.cifar_model(arch, n, seed), data, base_samples=2,
                            replicates=4, grid=[1e-2, 1.0], n_boot=100, seed=0)
    assert out["n_train"] == 10 and out["input_shape"] == [2, 2, 3]
    for g in ("nngp", "ntk"):
        rows = out[g]["monte_carlo"]
        assert [r["samples"] for r in rows] == [2, 4, 8] and [r["runs"] for r in rows] == [1, 2, 4]
        assert rows[-1]["relative_distance_to_largest_n"] == 0.0 and rows[0]["relative_distance_to_largest_n"] > 0
        assert "relative_se_median" not in rows[0] and rows[1]["relative_se_median"] > 0
        for r in rows + [out[g]["d_inverse"]]:
            lo, hi = r["test_accuracy_ci"]
            assert 0 <= lo <= r["test_accuracy"] <= hi <= 1
        d = rows[-1]["difference_to_d_inverse"]
        assert d["ci"][0] <= d["value"] <= d["ci"][1]
        # |difference| <= fraction of test points on which exactly one of the two kernels is right
        assert abs(d["value"]) <= d["discordant_fraction"] + 1e-12 and 0 <= d["discordant_fraction"] <= 1
        assert out[g]["difference_at_largest_n"] == {"samples": 8, **d}
        # the per-ridge diagnostic: the selected ridge's entry is the reported accuracy
        for r in rows + [out[g]["d_inverse"]]:
            sel = [b for b in r["by_diag_reg"] if b["diag_reg"] == r["diag_reg"]]
            assert len(sel) == 1 and sel[0]["test_accuracy"] == pytest.approx(r["test_accuracy"])
        same = {x["diag_reg"]: x for x in rows[-1]["difference_to_d_inverse_at_same_diag_reg"]}
        if rows[-1]["diag_reg"] == out[g]["d_inverse"]["diag_reg"]:
            assert same[rows[-1]["diag_reg"]]["value"] == pytest.approx(d["value"])
        assert out[g]["relative_distance_mc_largest_n_to_d_inverse"] > 0
    # the first run is the model's own seed: its kernel is what the layer computes with mc_seed = seed
    k1 = mb.compute_kernels(mb.cifar_model(arch, 2, 0), data["x_train"], data["x_test"], None)
    k1b = mb.compute_kernels(mb.cifar_model(arch, 2, 0), data["x_train"], data["x_test"], None)
    np.testing.assert_array_equal(k1["nngp_train"], k1b["nngp_train"])


def test_models_differ_only_in_the_attention_scaling():
    from ntkrepro.kernels._src.mc_replicates import mc_layers

    arch = {"width": 8, "W_std": 1.4, "b_std": 0.05, "W_qk_std": 1.0}
    lin, mcm = mb.cifar_model(arch, None), mb.cifar_model(arch, 4)
    assert not mc_layers(lin) and len(mc_layers(mcm)) == 1
    assert len(lin.layers) == len(mcm.layers)
    for a, b in zip(lin.layers, mcm.layers):
        assert type(a) is type(b)
    assert mb.imdb_model(9, 4, qk_std=4.0).layers[2].W_query_std == 4.0


def test_config_sections_validate_and_smoke_is_tiny():
    import copy
    from pathlib import Path

    import yaml
    from snakemake.utils import validate

    root = Path(__file__).resolve().parents[1]
    schema = str(root / "workflow/schemas/hron2020.schema.yaml")
    for name in ("smoke", "default", "paper"):
        cfg = yaml.safe_load((root / "config" / f"{name}.yaml").read_text())["hron2020"]
        validate(copy.deepcopy(cfg), schema)
        acc = cfg["mc_attention"]["accuracy"]
        draws = acc["base_samples"] * acc["replicates"]
        pairs = acc["cifar10"]["n_train"] * (acc["cifar10"]["n_train"] + acc["cifar10"]["n_test"])
        if name == "smoke":  # CI stays fast: a few thousand pair-draws at 16 positions
            assert draws * pairs <= 5000 and acc["cifar10"]["image_size"] <= 4
    for bad, needle in (({**acc, "surprise": 1}, "surprise"), ({**acc, "base_samples": 3}, "multiple")):
        broken = copy.deepcopy(cfg)
        broken["mc_attention"]["accuracy"] = bad
        with pytest.raises(Exception) as err:
            validate(broken, schema)
        assert needle in str(err.value)
