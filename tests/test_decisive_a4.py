"""A4's decisive tier (issue 29 item 2; config/decisive.yaml A4, ntkrepro.arda2026.forecasting.run_a4_cell):
the pre-stated size, cells that aggregate exactly like the default run's shards and are judged by A4's
current criterion, and a stale, hand-edited or other-size A4 cell refused or labelled like A1's."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from ntkrepro import decisive, decisive_cells, ledger
from ntkrepro.arda2026 import forecasting
from ntkrepro.arda2026.scaling import seed_groups
from ntkrepro.io import TamperedFileError, read_json, write_json
from ntkrepro.run import RunContext, execute

ROOT = Path(__file__).resolve().parents[1]


def _plan_a4():
    return decisive.load_plan(ROOT / "config/decisive.yaml")["claims"]["A4"]


def test_a4_plan_is_the_default_settings_at_the_power_lines_seed_count():
    """Pre-stated: the power line (104-253 seeds) was measured at the default settings, so the decisive
    size is 256 seeds at exactly those settings, labelled scale `default` (not the paper's)."""
    a4 = _plan_a4()
    s = a4["section"]
    default = yaml.safe_load((ROOT / "config/default.yaml").read_text())["arda2026"]["A4"]
    for k, v in default.items():
        if k not in ("seeds", "seeds_per_job", "jobs"):
            assert s[k] == v, k
    assert s["seeds"] == list(range(1, 257)) and a4["scale"] == "default" and a4["scale"] in ledger.SCALES
    assert a4["cell_function"] == "ntkrepro.arda2026.forecasting:run_a4_cell"
    assert a4["aggregate_function"] == "ntkrepro.arda2026.forecasting:aggregate_a4"  # the default run's
    cs = decisive.cells(a4)
    assert [c["name"] for c in cs][:2] == ["chunk01", "chunk02"] and len(cs) == 32
    chunks = [forecasting.chunk_seeds(s, c["chunk"]) for c in cs]
    assert sum(chunks, []) == s["seeds"]  # a partition, in order
    # the default run's seeds 1-32 in its groups of 8 are the first four cells
    assert chunks[:4] == seed_groups(default["seeds"], default["seeds_per_job"])


def test_chunk_seeds_refuses_a_plan_whose_chunks_do_not_cover_the_seeds():
    s = {"seeds": [1, 2, 3, 4, 5], "seeds_per_cell": 2, "chunks": [1, 2, 3]}
    assert forecasting.chunk_seeds(s, 3) == [5]
    with pytest.raises(ValueError, match="chunks must be"):
        forecasting.chunk_seeds({**s, "chunks": [1, 2]}, 1)
    with pytest.raises(ValueError, match="not one of"):
        forecasting.chunk_seeds(s, 4)


# ---- tiny cells, computed for real ----------------------------------------------------------------

TINY = {"L_values": [2, 4], "m": 4, "n": 40, "steps": 6, "lr": 0.05, "burn_in": 50, "grad_block": 2,
        "seeds": [1, 2, 3, 4], "seeds_per_cell": 2, "chunks": [1, 2], "n_boot": 100}


def _spec():
    spec = copy.deepcopy(_plan_a4())
    spec["section"] = dict(TINY)
    return spec


@pytest.fixture(scope="module")
def tiny_archive(tmp_path_factory):
    """Both tiny cells through ntkrepro.run (sealed, with provenance), as `snakemake decide` writes them."""
    arch = tmp_path_factory.mktemp("a4") / "archive"
    spec = _spec()
    for c in decisive.cells(spec):
        execute(spec["cell_function"], decisive.cell_params(spec, c), decisive.cell_path(arch, "A4", c["name"]),
                scale="decisive")
    return arch


def _copy(arch, tmp_path):
    import shutil

    dst = tmp_path / "archive"
    shutil.copytree(arch, dst)
    return dst


def test_a4_cells_judged_like_the_default_path_on_the_same_seeds(tiny_archive):
    """The archived cells, aggregated and judged by A4's current criterion (decisive.judge), give the
    verdict and numbers the default path (run_a4_shard -> aggregate_a4 -> criterion) gives on the same seeds."""
    spec = _spec()
    rec = decisive.judge("A4", spec, tiny_archive)
    assert rec["state"] == decisive.COMPLETE and rec["cells_archived"] == 2 and not rec["cells_stale"]
    cell = read_json(decisive.cell_path(tiny_archive, "A4", "chunk02"))
    assert cell["cell"] == {"chunk": 2, "seeds": [3, 4]} and [t["L"] for t in cell["tasks"]] == [2, 4]
    assert cell["compute_code"] == decisive.compute_code_hash("A4") and cell["cpu_seconds"] > 0
    # the default path: its shards (seed groups of 2, as the cells), its aggregate, the same criterion
    section = {**{k: v for k, v in TINY.items() if k not in ("seeds_per_cell", "chunks")}, "seeds_per_job": 2,
               "jobs": 2}
    shards = []
    for k in range(forecasting.n_shards(section)):
        p = Path(rec["archive"]).parent / f"shard{k}.json"
        write_json(p, forecasting.run_a4_shard({**section, "shard": k}, RunContext(scale="default")))
        shards.append(str(p))
    agg = forecasting.aggregate_a4({**section, "shard_files": shards}, RunContext(scale="default"))
    agg["params"] = section
    ev = json.loads(json.dumps(ledger.make_evaluation("A4", {"A4_lag_forecasting": agg}, scale="default")))
    got = json.loads(json.dumps(rec["evaluation"]))
    assert got["measured"] == ev["measured"] and got["measured"]["n_seeds"] == 4
    assert got["verdict"] == ev["verdict"] == rec["verdict"] and got["reason"] == ev["reason"]
    assert [c["verdict"] for c in got["controls"]] == [c["verdict"] for c in ev["controls"]]
    assert got["scale"] == "default" and "at the default settings" in decisive.table_cell(
        {**rec, "headline": decisive.summary(rec)["headline"]})


def test_a4_stale_cell_is_labelled_and_never_used(tiny_archive, tmp_path, monkeypatch):
    arch = _copy(tiny_archive, tmp_path)
    # today's compute code differs from the code that computed the cells
    rec = decisive.judge("A4", _spec(), arch, code_hash="f" * 64)
    assert rec["state"] == decisive.STALE and rec["verdict"] is None and rec["evaluation"] is None
    assert rec["cells_stale"] == ["chunk01", "chunk02"] and decisive.table_cell(rec).startswith("STALE")
    # an edit of a function in COMPUTE_CODE["A4"] changes the hash the judge compares with
    h = decisive.compute_code_hash("A4")
    real = decisive._source
    monkeypatch.setattr(decisive_cells, "_source", lambda ref: real(ref) + ("#" if ref.endswith(":run_point") else ""))
    assert decisive.compute_code_hash("A4") != h
    assert decisive.judge("A4", _spec(), arch)["state"] == decisive.STALE


def test_a4_hand_edited_other_size_or_missing_cells(tiny_archive, tmp_path):
    arch = _copy(tiny_archive, tmp_path)
    spec = _spec()
    p = decisive.cell_path(arch, "A4", "chunk01")
    good = p.read_bytes()
    data = read_json(p)
    data["tasks"][1]["tf_min_val"] = [0.19, 0.19]  # a "flat" transformer typed in by hand
    write_json(p, data)
    with pytest.raises(TamperedFileError, match="chunk01"):
        decisive.judge("A4", spec, arch)
    p.write_bytes(good)
    other = copy.deepcopy(spec)
    other["section"]["steps"] = 1200
    with pytest.raises(decisive.ArchiveError, match="steps"):
        decisive.judge("A4", other, arch)
    decisive.cell_path(arch, "A4", "chunk02").unlink()
    rec = decisive.judge("A4", spec, arch)
    assert rec["state"] == decisive.INCOMPLETE and rec["verdict"] == "inconclusive" and rec["evaluation"] is None
    assert rec["cells_missing"] == ["chunk02"] and rec["groups_complete"] == {"chunk": [1]}
    assert decisive.table_cell(rec).startswith("inconclusive: INCOMPLETE (1/2 cells at the default settings")


def test_fill_only_the_named_cells(tmp_path):
    """``only`` fills the named cells and no other (two processes side by side, issue 37); a name that is not
    a cell of the plan is refused before anything runs, naming the claim and the cells it has."""
    arch = tmp_path / "archive"
    spec = _spec()
    with pytest.raises(decisive.ArchiveError, match=r"A4.*chunk09.*chunk01"):
        decisive.fill("A4", spec, arch, only=["chunk09"], log=lambda s: None)
    assert not arch.exists()
    assert decisive.fill("A4", spec, arch, only=["chunk02"], log=lambda s: None) == [
        decisive.cell_path(arch, "A4", "chunk02")]
    assert decisive.fill("A4", spec, arch, only=["chunk02"]) == []  # archived: skipped
    assert sorted(p.name for p in (arch / "A4" / "cells").iterdir()) == ["chunk02.json"]


def test_fill_writes_the_missing_cells_as_decide_does(tiny_archive, tmp_path):
    """decisive.fill (no Snakemake, no pyyaml: what a GPU call can run) writes sealed cells that the judge
    accepts, skips archived ones, and its cells equal those of ntkrepro.run (same numbers)."""
    arch = tmp_path / "archive"
    spec = _spec()
    first = decisive.fill("A4", spec, arch, max_cells=1, log=lambda s: None)
    assert first == [decisive.cell_path(arch, "A4", "chunk01")]
    assert [p.name for p in decisive.fill("A4", spec, arch, log=lambda s: None)] == ["chunk02.json"]
    assert decisive.fill("A4", spec, arch) == []  # resumable: nothing left
    rec = decisive.judge("A4", spec, arch)
    assert rec["state"] == decisive.COMPLETE
    assert rec["evaluation"]["measured"] == decisive.judge("A4", spec, tiny_archive)["evaluation"]["measured"]
    assert sorted(p.name for p in (arch / "A4" / "cells").iterdir()) == ["chunk01.json", "chunk02.json"]
