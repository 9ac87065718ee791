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
