"""H4's decisive tier (issue 37): the sweep model, the weighted bootstrap refits, the cells and their judge.

- one ``build_sweep_model`` gives every family's kernel equal to its standalone model (fast backend)
  and to neural-tangents;
- ``weighted_refit`` equals the direct refit on the drawn rows (repeats included) in float64, and
  ``select_many`` equals ``select_diag_reg``;
- a tiny plan's cells, computed by ``decisive.fill``, aggregate into ``run_h4``'s layout and are judged
  by H4's current criterion with both controls.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from ntkrepro import decisive
from ntkrepro.hron2020 import claims  # noqa: F401  (registers H4's criterion)
from ntkrepro.hron2020.cifar10 import FAMILIES, build_sweep_model, jitted_kernel_fn
from ntkrepro.hron2020.h4_decisive import predict_seconds
from ntkrepro.kernels.fast import FastKernelFn
from ntkrepro.kernels.inference import kernel_regression, one_hot, select_diag_reg
from ntkrepro.kernels.resampling import select_many, subset_refit, weighted_refit

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
ARCH = {"width": 64, "W_std": 1.4142, "b_std": 0.05, "lap_window": 2, "attention_mechanism": "IDENTITY",
        "W_qk_std": 1.0, "pos_emb_length": 1.0, "W_pos_emb_std": 1.0, "n_heads": 1}


def _rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("depth", [1, 2])
def test_sweep_model_equals_each_family_alone(depth):
    rng = np.random.default_rng(depth)
    x1 = rng.standard_normal((5, 8, 8, 3)).astype(np.float32)
    x2 = rng.standard_normal((4, 8, 8, 3)).astype(np.float32)
    outs = FastKernelFn(build_sweep_model(FAMILIES, depth, ARCH))(x1, x2, ("nngp", "ntk"))
    assert len(outs) == len(FAMILIES)
    for fam, out in zip(FAMILIES, outs):
        alone = jitted_kernel_fn(fam, depth, ARCH, backend="fast")(x1, x2, ("nngp", "ntk"))
        for a, b in zip(out, alone):
            assert _rel(a, b) < 1e-6, fam
    # and neural-tangents, for the families whose readouts differ most
    for fam in ("gap", "struct", "residual"):
        ref = jitted_kernel_fn(fam, depth, ARCH, backend="nt")(x1, x2, ("nngp", "ntk"))
        for a, b in zip(outs[FAMILIES.index(fam)], ref):
            assert _rel(a, b) < 1e-5, fam


def test_sweep_model_one_family_is_the_model():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 8, 8, 3)).astype(np.float32)
    one = FastKernelFn(build_sweep_model(["lap"], 1, ARCH))(x, None, ("nngp", "ntk"))
    alone = jitted_kernel_fn("lap", 1, ARCH, backend="fast")(x, None, ("nngp", "ntk"))
    assert _rel(one.ntk, alone.ntk) < 1e-6  # one output: a Kernel, not a list


def _psd(n: int, seed: int) -> np.ndarray:
    a = np.random.default_rng(seed).standard_normal((n, n // 2))
    return a @ a.T / n + 0.05 * np.eye(n)


@pytest.mark.parametrize("lam", [1e-4, 1e-2, 1.0])
def test_weighted_refit_equals_direct_refit_on_drawn_rows(lam):
    n, m = 60, 17
    k = _psd(n + m, 3)
    k_tt, k_st = k[:n, :n], k[n:, :n]
    rng = np.random.default_rng(4)
    y1, y2 = one_hot(rng.integers(0, 10, n), 10), one_hot(rng.integers(0, 10, n), 10)
    for draw in range(5):
        rows = rng.integers(0, n, n)  # with repeats, as a bootstrap draw
        assert np.unique(rows).size < n
        preds, jitter = weighted_refit(k_tt, k_st, [y1, y2], rows, lam)
        assert jitter == 0.0
        for y, p in zip((y1, y2), preds):
            direct = kernel_regression(k_tt[np.ix_(rows, rows)], k_st[:, rows], y[rows], lam)
            assert _rel(p, direct) < 1e-9, draw


def test_weighted_refit_fails_where_the_weights_are_ignored():
    """A refit that drops the multiplicities (fits the distinct rows once) is not the bootstrap refit."""
    n = 50
    k = _psd(n + 10, 5)
    rows = np.random.default_rng(6).integers(0, n, n)
    y = one_hot(np.random.default_rng(7).integers(0, 10, n), 10)
    (p,), _ = weighted_refit(k[:n, :n], k[n:, :n], [y], rows, 1e-2)
    u = np.unique(rows)
    distinct_once = kernel_regression(k[np.ix_(u, u)], k[n:, u], y[u], 1e-2)
    assert _rel(p, distinct_once) > 1e-3
    with pytest.raises(ValueError, match="without repeats"):
        subset_refit(k[:n, :n], k[n:, :n], [y], rows, 1e-2)


def test_select_many_equals_select_diag_reg():
    n, m = 40, 20
    k = _psd(n + m, 8)
    rng = np.random.default_rng(9)
    grid = [1e-4, 1e-2, 1.0]
    yt = [one_hot(rng.integers(0, 10, n), 10) for _ in range(2)]
    yv = [one_hot(rng.integers(0, 10, m), 10) for _ in range(2)]
    many = select_many(k[:n, :n], k[n:, :n], yt, yv, grid)
    for (best, scores, pred), a, b in zip(many, yt, yv):
        best0, scores0 = select_diag_reg(k[:n, :n], k[n:, :n], a, b, grid)
        assert best == best0
        for s, s0 in zip(scores, scores0):
            assert s["accuracy"] == s0["accuracy"] and abs(s["mse"] - s0["mse"]) < 1e-12
        assert _rel(pred, kernel_regression(k[:n, :n], k[n:, :n], a, best)) < 1e-12


def _plan() -> dict:
    return decisive.load_plan(ROOT / "config" / "decisive.yaml")


def test_plan_states_h4_sizes_and_costs_before_the_run():
    spec = _plan()["claims"]["H4"]
    assert spec["status"] == "run"
    sec = spec["section"]
    assert int(sec["n_train"]) + int(sec["n_val"]) >= 10_000  # issue 37: >= 10,000 train + validation images
    assert sec["image_size"] == 8 and sorted(sec["families"]) == sorted(FAMILIES)
    stages = [p["stage"] for p in sec["part_specs"]]
    assert sorted(p["depth"] for p in sec["part_specs"] if p["stage"] == "sweep") == [1, 2, 3]
    assert sorted(f for p in sec["part_specs"] if p["stage"] == "final" for f in p["families"]) == sorted(FAMILIES)
    assert sec["parts"] == list(range(len(stages)))
    for p in sec["part_specs"]:  # every cell has a predicted cost, and none is planned over two hours
        assert 0 < predict_seconds(sec, p, sec["cost"])["total_cpu_s"] < 2 * 2 * 3600  # 2 cores


def _tiny_spec(tmp_path: Path) -> dict:
    spec = copy.deepcopy(_plan()["claims"]["H4"])
    sec = spec["section"]
    sec.update(n_train=40, n_val=20, n_test=30, block_size=20, n_boot=50,
               sweep={"n_train": 30, "n_val": 20}, train_resample={"n_boot": 8, "control_n_boot": 4,
                                                                   "curve_fractions": [0.5, 1.0], "curve_draws": 2},
               data={**sec["data"], "root": str(DATA), "archive": "cifar-10-python-subset.tar.gz",
                     "sha256": "5a851443c8aa3ac5f03e321688fcdcc6bfe88afb73aed1de7be00c509e5389d8"},
               cache_dir=str(tmp_path / "cache"))
    return spec


@pytest.mark.skipif(not (DATA / "cifar-10-python-subset.tar.gz").exists(), reason="shared data not present")
def test_tiny_plan_cells_archive_aggregate_and_judge(tmp_path):
    spec = _tiny_spec(tmp_path)
    arch = tmp_path / "archive"
    written = decisive.fill("H4", spec, arch, log=lambda *a: None)
    assert len(written) == len(spec["section"]["parts"])
    assert not any((tmp_path / "cache" / "H4").glob("*/*")), "kernel blocks left behind"
    for p in written:
        v = decisive.verify_cell(p, "H4")
        assert not v["stale"] and v["data"]["predicted_seconds"]["total_cpu_s"] > 0
        assert v["data"]["cpu_seconds"] > 0 and v["data"]["pairs_per_second"] > 0
    rec = decisive.judge("H4", spec, arch)
    assert rec["state"] == decisive.COMPLETE
    ev = rec["evaluation"]
    assert ev["verdict"] in ("reproduced", "not_reproduced", "inconclusive")
    assert {c["name"] for c in ev["controls"]} == {"permuted_labels", "same_family_two_draws"}
    assert all(c["verdict"] in ("reproduced", "not_reproduced", "inconclusive") for c in ev["controls"])
    assert any("depth sweep" in s for s in ev["substitutes"])
    # an incomplete set draws no verdict
    written[-1].unlink()
    part = decisive.judge("H4", spec, arch)
    assert part["state"] == decisive.INCOMPLETE and part["evaluation"] is None
