"""H3's decisive tier (issue 38 item 3): cells of independent replicates per width, assembled into ``run_h3``'s
layout and judged by H3's current criterion with its near control (the analytic kernels 3 % off)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from ntkrepro import decisive
from ntkrepro.hron2020 import claims  # noqa: F401  (registers H3's criterion)
from ntkrepro.hron2020.convergence import aggregate_h3

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


class _Ctx:
    def use_data(self, p):
        return p


def _tiny(tmp_path):
    spec = copy.deepcopy(decisive.load_plan(ROOT / "config" / "decisive.yaml")["claims"]["H3"])
    sec = spec["section"]
    sec.update(n_inputs=3, widths=[8, 16], n_heads=[1, 2], n_samples=2, n_replicates=4, replicates_per_chunk=2,
               chunks=[0, 1], arch={**sec["arch"], "n_out": 4}, data={**sec["data"], "root": str(DATA)})
    return spec


@pytest.mark.skipif(not (DATA / "cifar-10-python-subset.tar.gz").exists(), reason="shared data not present")
def test_tiny_plan_cells_archive_aggregate_and_judge(tmp_path):
    spec = _tiny(tmp_path)
    arch = tmp_path / "archive"
    written = decisive.fill("H3", spec, arch, log=lambda *a: None)
    assert len(written) == 4
    cells = []
    for p in written:
        v = decisive.verify_cell(p, "H3")
        assert not v["stale"] and v["data"]["cpu_seconds"] > 0
        cells.append(v["data"])
    # the chunks of a width are independent draws, not copies
    by = {(c["cell"]["width"], c["cell"]["chunk"]): c["nngp_distance"] for c in cells}
    assert by[(8, 0)] != by[(8, 1)]
    out = aggregate_h3({**spec["section"], "shard_files": written}, _Ctx())
    assert [r["width"] for r in out["per_width"]] == [8, 16]
    assert [len(r["ntk_distance"]) for r in out["per_width"]] == [4, 4] and out["n_replicates"] == 4
    ctrl = out["controls"]["kernel_3pct_off"]
    assert abs(ctrl["analytic_offset"]["nngp"] - 0.03 / 1.03) < 1e-6
    assert ctrl["per_width"][0]["nngp_distance"] != out["per_width"][0]["nngp_distance"]
    rec = decisive.judge("H3", spec, arch)
    assert rec["state"] == decisive.COMPLETE
    ev = rec["evaluation"]
    assert ev["verdict"] in ("reproduced", "not_reproduced", "inconclusive")
    assert {c["name"] for c in ev["controls"]} == {"kernel_3pct_off"}
    # a missing chunk is refused, naming the cells
    with pytest.raises(ValueError, match="do not match the plan"):
        aggregate_h3({**spec["section"], "shard_files": written[:-1]}, _Ctx())


def test_cell_refuses_a_width_outside_the_plan_and_inconsistent_chunks():
    from ntkrepro.hron2020.convergence import run_h3_cell

    sec = dict(decisive.load_plan(ROOT / "config" / "decisive.yaml")["claims"]["H3"]["section"])
    with pytest.raises(ValueError, match="replicates_per_chunk"):
        run_h3_cell({**sec, "width": 1024, "chunk": 0, "replicates_per_chunk": 3}, _Ctx())
    with pytest.raises(ValueError, match="width 100 is not one of widths"):
        run_h3_cell({**sec, "width": 100, "chunk": 0}, _Ctx())


# --------------------------------------------------------------------------------------------------------------
# H3's second plan (config/decisive.yaml `H3.dk`, issue 38 item 3): 32 heads at every width (key/query and value
# dimension width/32), NNGP with the readout integrated; its own archive folder and compute code.

def _tiny_dk():
    spec = copy.deepcopy(decisive.load_plan(ROOT / "config" / "decisive.yaml")["claims"]["H3.dk"])
    sec = spec["section"]
    sec.update(n_inputs=3, widths=[8, 16], n_heads=[2, 2], n_samples=2, n_replicates=4, replicates_per_chunk=2,
               chunks=[0, 1], data={**sec["data"], "root": str(DATA)})
    return spec


def test_dk_plan_is_its_own_plan_of_h3():
    plan = decisive.load_plan(ROOT / "config" / "decisive.yaml")
    spec, first = plan["claims"]["H3.dk"], plan["claims"]["H3"]
    assert decisive.claim_of("H3.dk") == "H3" and decisive.claim_of("H3") == "H3"
    assert spec["results_stem"] == first["results_stem"] and spec["aggregate_function"] == first["aggregate_function"]
    sec = spec["section"]
    # the key/query dimension grows with the width (the first plan: 32 at every width)
    dk = [w // h for w, h in zip(sec["widths"], sec["n_heads"])]
    assert dk == sorted(dk) and len(set(dk)) == len(dk) and "n_out" not in sec["arch"]
    assert len(sec["chunks"]) * sec["replicates_per_chunk"] == sec["n_replicates"]
    # a separate compute code: the first plan's hash (and so its archived cells) is untouched by H3.dk's code
    assert decisive.compute_code_hash("H3.dk") != decisive.compute_code_hash("H3")
    assert not any("convergence_dk" in ref for ref in decisive.COMPUTE_CODE["H3"])


@pytest.mark.skipif(not (ROOT / "archive" / "decisive" / "H3" / "cells").is_dir(), reason="no H3 archive")
def test_first_h3_plan_cells_stay_current():
    cells = decisive.archived_cells(ROOT / "archive" / "decisive", "H3")
    assert len(cells) == 12
    for p in cells:
        assert not decisive.verify_cell(p, "H3")["stale"], p


def test_feature_net_is_attention_net_without_its_readout():
    import jax
    import numpy as np

    from ntkrepro.hron2020.convergence import attention_net
    from ntkrepro.hron2020.convergence_dk import feature_net

    arch = {"W_std": 1.4142, "b_std": 0.05, "attention_mechanism": "SOFTMAX", "readout_W_std": 1.3}
    x = jax.random.normal(jax.random.PRNGKey(3), (3, 4, 4, 3))
    init, apply, _ = attention_net(16, 2, arch, 5)
    _, params = init(jax.random.PRNGKey(4), x.shape)
    phi = feature_net(16, 2, arch)[1](params[:5], x)
    w, _b = params[5]
    np.testing.assert_allclose(apply(params, x), phi @ w * 1.3 / 16 ** 0.5, rtol=2e-5, atol=1e-6)


@pytest.mark.skipif(not (DATA / "cifar-10-python-subset.tar.gz").exists(), reason="shared data not present")
def test_dk_tiny_plan_cells_equal_one_direct_run_and_judge(tmp_path):
    import jax

    from ntkrepro.hron2020.convergence import _replicates, _setup
    from ntkrepro.hron2020.convergence_dk import make_estimator_exact_readout

    spec = _tiny_dk()
    arch = tmp_path / "archive"
    written = decisive.fill("H3.dk", spec, arch, log=lambda *a: None)
    assert len(written) == 4 and all(p.parent == arch / "H3.dk" / "cells" for p in written)
    for p in written:
        v = decisive.verify_cell(p, "H3.dk")
        assert not v["stale"] and v["data"]["claim"] == "H3" and v["data"]["plan"] == "H3.dk"
        # a cell of one plan is refused under the other's name
        with pytest.raises(decisive.ArchiveError, match="archived under H3"):
            decisive.verify_cell(p, "H3")
    out = aggregate_h3({**spec["section"], "shard_files": written}, _Ctx())
    assert out["nngp_estimator"].startswith("readout integrated") and out["key_dims"] == {"8": 4, "16": 8}
    # one direct run with the cells' keys gives the same distances, in the same order
    sec = spec["section"]
    setup = _setup(sec, _Ctx())
    for row in out["per_width"]:
        w = row["width"]
        est = make_estimator_exact_readout(setup["x"], w, 2, setup["base"]["arch"], sec["n_samples"])
        direct = []
        for chunk in sec["chunks"]:
            key = jax.random.fold_in(jax.random.PRNGKey(int(sec["seed"])), 1000 * w + chunk)
            direct += _replicates(est, key, sec["replicates_per_chunk"], setup)[1]["nngp_distance"]
        assert row["nngp_distance"] == pytest.approx(direct, rel=1e-6)
    rec = decisive.judge("H3.dk", spec, arch)
    assert rec["state"] == decisive.COMPLETE and rec["id"] == "H3" and rec["plan"] == "H3.dk"
    assert rec["evaluation"]["verdict"] in ("reproduced", "not_reproduced", "inconclusive")
    with pytest.raises(ValueError, match="n_out"):
        from ntkrepro.hron2020.convergence_dk import run_h3dk_cell
        run_h3dk_cell({**sec, "width": 8, "chunk": 0, "arch": {**sec["arch"], "n_out": 4}}, _Ctx())


def test_entry_shows_the_last_complete_plan(tmp_path):
    """decisive_cells.entry_plan: a claim's ledger entry (and the claims table's decisive column) shows its last
    plan in config order whose cells are all archived; while no plan is complete, its own plan if any cell of it
    is archived; nothing when none is. Cell files are only counted here (names), not read."""
    from ntkrepro.ledger.rows import table_cell

    plan = {"claims": {
        "H3": {"status": "run", "cell": ["widths"], "section": {"widths": [8, 16]}},
        "H3.dk": {"status": "run", "cell": ["widths"], "section": {"widths": [8, 16, 32]}},
        "H4": {"status": "run", "cell": ["parts"], "section": {"parts": [0]}},
        "H6": {"status": "gpu_only", "reason": "x"},
    }}
    arch = tmp_path / "archive"

    def put(key, names):
        d = arch / key / "cells"
        d.mkdir(parents=True, exist_ok=True)
        for n in names:
            (d / f"{n}.json").write_text("{}")

    names = {k: [c["name"] for c in decisive.cells(s)] for k, s in plan["claims"].items() if "cell" in s}
    assert decisive.entry_plan("H3", plan, arch) is None and decisive.entry_plan("H6", plan, arch) is None
    put("H3", names["H3"][:1])
    assert decisive.entry_plan("H3", plan, arch) == "H3"      # incomplete, its own plan
    put("H3.dk", names["H3.dk"][:2])
    assert decisive.entry_plan("H3", plan, arch) == "H3"      # the later plan is not complete yet
    put("H3", names["H3"])
    assert decisive.entry_plan("H3", plan, arch) == "H3"
    put("H3.dk", names["H3.dk"])
    assert decisive.entry_plan("H3", plan, arch) == "H3.dk"   # complete later plan supersedes, whatever the verdicts
    assert decisive.entry_plan("H4", plan, arch) is None
    # the table cell names the plan it shows
    rec = {"state": decisive.COMPLETE, "verdict": "inconclusive", "plan": "H3.dk", "cells_archived": 3,
           "cells_planned": 3, "scale": "default", "settings": "widened", "commits": ["a" * 40],
           "devices": ["cpu"], "dates": ["2026-12-06", "2026-12-07"]}
    assert "3/3 cells of plan H3.dk at the widened settings" in table_cell(rec)
    assert "of plan" not in table_cell({**rec, "plan": None})
    from ntkrepro.ledger.rows import decisive_short
    assert decisive_short(table_cell(rec)).startswith("inconclusive [plan H3.dk, widened settings] (CPU, 2026-12-07")
    assert decisive_short(table_cell({**rec, "plan": None})).startswith("inconclusive [widened settings] (")
