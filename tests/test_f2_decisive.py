"""F2's decisive tier (issue 38 item 3): per-width cells assembled into ``run_f2``'s layout equal one run over
every width, and the plan's cells archive, aggregate and judge with F2's near control."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ntkrepro import decisive
from ntkrepro.framework import claims  # noqa: F401  (registers F2's criterion)
from ntkrepro.framework.kernel_regime import aggregate_f2, run_f2

ROOT = Path(__file__).resolve().parents[1]


class _Ctx:
    def use_data(self, p):
        return p

    def progress(self, it, desc=None):
        return it


def _tiny():
    spec = copy.deepcopy(decisive.load_plan(ROOT / "config" / "decisive.yaml")["claims"]["F2"])
    spec["section"].update(d_in=4, seq_len=3, n_train=4, n_test=4, n_probe=2, n_heads=2, widths=[8, 16],
                           n_seeds=2, steps=5)
    return spec


def test_cells_equal_one_run_over_every_width_and_judge(tmp_path):
    spec = _tiny()
    arch = tmp_path / "archive"
    written = decisive.fill("F2", spec, arch, log=lambda *a: None)
    assert len(written) == 2
    for p in written:
        v = decisive.verify_cell(p, "F2")
        assert not v["stale"] and v["data"]["cpu_seconds"] > 0
    got = aggregate_f2({**spec["section"], "shard_files": written}, _Ctx())
    ref = run_f2(dict(spec["section"]), _Ctx())
    assert json.dumps(got, sort_keys=True) == json.dumps(json.loads(json.dumps(ref)), sort_keys=True)
    rec = decisive.judge("F2", spec, arch)
    assert rec["state"] == decisive.COMPLETE
    assert {c["name"] for c in rec["evaluation"]["controls"]} == {"single_draw_fluctuation"}
    with pytest.raises(ValueError, match="do not match the plan's widths"):
        aggregate_f2({**spec["section"], "shard_files": written[:1]}, _Ctx())
