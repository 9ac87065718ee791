"""H6's decisive tier (issue 37): length-sorted kernel blocks, and a tiny plan's cells archived,
aggregated into ``run_h6``'s layout and judged by H6's current criterion with both controls."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from ntkrepro import decisive
from ntkrepro.hron2020 import claims  # noqa: F401  (registers H6's criterion)
from ntkrepro.hron2020.imdb import model_kernel_fn
from ntkrepro.kernels.blocks import compute_kernel_blocks, compute_kernel_blocks_sorted

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
PARAMS = {"filter_size": 9, "W_pos_emb_std": 1.0, "kernel_backend": "fast"}


def _reviews(n: int, seed: int, length: int = 40, c: float = 100.0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, length + 4, 50)).astype(np.float32)
    lens = rng.integers(3, length + 1, n)
    for i, ln in enumerate(lens):
        x[i, ln:] = c
    return x, lens


@pytest.mark.parametrize("family,depth", [("cnn_gap", 1), ("struct", 1)])
def test_length_sorted_blocks_equal_the_kernel_in_review_order(tmp_path, family, depth):
    x1, l1 = _reviews(14, 0)
    x2, l2 = _reviews(9, 1)
    kfn = model_kernel_fn(family, depth, PARAMS)
    kw = dict(block_size=4, mask_constant=100.0, desc="t", backend="ntkrepro.kernels.fast")
    for a, la, b, lb in ((x1, l1, None, None), (x1, l1, x2, l2)):
        got = compute_kernel_blocks_sorted(kfn, a, la, b, lb, cache_dir=tmp_path / "s", get=("nngp", "ntk"), **kw)
        ref = compute_kernel_blocks(kfn, a, b, cache_dir=tmp_path / "r", get=("nngp", "ntk"), **kw)
        for g in ("nngp", "ntk"):
            scale = np.max(np.abs(ref[g]))
            assert np.max(np.abs(got[g] - ref[g])) / scale < 1e-5, g
        if b is None:
            assert np.allclose(got["nngp"], got["nngp"].T, rtol=1e-5, atol=1e-6 * scale)


@pytest.mark.skipif(not (DATA / "aclImdb-subset.tar.gz").exists(), reason="shared data not present")
def test_tiny_plan_cells_archive_aggregate_and_judge(tmp_path):
    spec = copy.deepcopy(decisive.load_plan(ROOT / "config" / "decisive.yaml")["claims"]["H6"])
    sec = spec["section"]
    sec.update(seq_len=24, n_train=40, n_valid=20, n_test=30, block_size=16, n_boot=50,
               train_resample={"n_boot": 8, "control_n_boot": 4, "curve_fractions": [0.5, 1.0], "curve_draws": 2},
               data={**sec["data"], "root": str(DATA)}, cache_dir=str(tmp_path / "cache"))
    arch = tmp_path / "archive"
    written = decisive.fill("H6", spec, arch, log=lambda *a: None)
    assert len(written) == len(sec["parts"])
    for p in written:
        v = decisive.verify_cell(p, "H6")
        assert not v["stale"] and v["data"]["cpu_seconds"] > 0
    assert not any((tmp_path / "cache" / "H6").glob("*/*")), "kernel blocks left behind"
    rec = decisive.judge("H6", spec, arch)
    assert rec["state"] == decisive.COMPLETE
    ev = rec["evaluation"]
    assert ev["verdict"] in ("reproduced", "not_reproduced", "inconclusive")
    assert {c["name"] for c in ev["controls"]} == {"permuted_labels", "same_family_two_draws"}
    assert any("3200/1600/1600" in s or "40/20/30" in s for s in ev["substitutes"])


def test_plan_states_a_cost_for_every_cell_and_a_cell_is_judged_whatever_the_rates():
    """Every H6 cell has a predicted CPU time from the plan's measured ``cost`` (printed before the cell,
    compared after it), proportional to the models' per-pair rates; and the rates are not a size of the cell:
    a cell computed before a re-measurement is still judged at the plan's sizes."""
    from ntkrepro.hron2020.h6_decisive import cell_pairs, predict_seconds

    sec = decisive.load_plan(ROOT / "config" / "decisive.yaml")["claims"]["H6"]["section"]
    assert cell_pairs(sec) == 3200 * 3201 // 2 + 3200 * 3200  # training pairs once, validation + test x training
    for p in sec["part_specs"]:
        pred = predict_seconds(sec, p, sec["cost"])
        assert 0 < pred["regression_cpu_s"] < pred["kernel_cpu_s"] < 2 * 3 * 3600
        doubled = {**sec["cost"], "pair_us": {k: 2 * v for k, v in sec["cost"]["pair_us"].items()}}
        assert predict_seconds(sec, p, doubled)["kernel_cpu_s"] == pytest.approx(2 * pred["kernel_cpu_s"], rel=1e-3)
    assert decisive._plan_value("cost", sec["cost"]) == decisive._plan_value("cost", None)
    assert decisive._plan_value("n_train", 3200) != decisive._plan_value("n_train", 1600)


def test_the_fill_script_prints_h6_predictions():
    import importlib.util

    spec_ = importlib.util.spec_from_file_location("decisive_fill", ROOT / "workflow" / "scripts" / "decisive_fill.py")
    mod = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(mod)
    spec = decisive.load_plan(ROOT / "config" / "decisive.yaml")["claims"]["H6"]
    preds = [mod._predict("H6", spec, {"part": p}) for p in spec["section"]["parts"]]
    assert all(p and p["total_cpu_s"] > 0 for p in preds)
    assert preds[3]["total_cpu_s"] > preds[2]["total_cpu_s"]  # two attention layers cost more than one
