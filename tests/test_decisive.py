"""The decisive tier (issue 29; ntkrepro.decisive): plan, sealed archive, re-judging with the current
criterion, INCOMPLETE / STALE / hand-edited cells, the table column and `ledger check`."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from snakemake.utils import validate

from ntkrepro import decisive, decisive_cells, ledger
from ntkrepro.io import TamperedFileError, read_json, seal, to_jsonable, write_json

ROOT = Path(__file__).resolve().parents[1]
CODE = "c0de" * 16  # the synthetic cells' compute-code hash (judge(code_hash=CODE): no jax import)


def _plan():
    return decisive.load_plan(ROOT / "config/decisive.yaml")


# ---- the plan (config/decisive.yaml) ----------------------------------------------------------------

def test_plan_validates_and_every_claim_says_how_it_is_decided():
    plan = _plan()
    validate(copy.deepcopy(plan), str(ROOT / "workflow/schemas/decisive.schema.yaml"))
    for cid, spec in plan["claims"].items():
        assert spec["status"] in ("run", "pending", "gpu_only", "undecidable"), cid
        if spec["status"] != "run":
            assert spec["reason"], cid
    assert plan["claims"]["F6"]["status"] == "undecidable"
    assert plan["claims"]["H4"]["status"] == "run"  # issue 37: decided on this CPU at 10,000 train + validation images
    assert plan["claims"]["H6"]["status"] in ("run", "pending", "gpu_only")
    a4 = plan["claims"]["A4"]  # the power line's upper end (104-253), at the settings it was measured at
    assert a4["status"] == "run" and len(a4["section"]["seeds"]) >= 253 and a4["scale"] == "default"
    assert 150 <= plan["claims"]["H5"]["section"]["epochs"] <= 250  # the learning curve's ~150-250 epochs


def test_a1_plan_is_the_papers_settings_and_config_paper():
    """CLAIMS.md row A1: d=8, T=16, n=5000, widths 8..256, seeds 1-10, 4000 steps, 1.75/sqrt(4000), rho=3;
    the same numbers as config/paper.yaml (the paper's teacher, descriptive only, is not run)."""
    a1 = _plan()["claims"]["A1"]
    s = a1["section"]
    assert (s["d"], s["T"], s["n"], s["steps"], s["step_size_coef"], s["rho"]) == (8, 16, 5000, 4000, 1.75, 3.0)
    assert s["widths"] == [8, 16, 32, 64, 128, 256] and s["seeds"] == list(range(1, 11))
    paper = yaml.safe_load((ROOT / "config/paper.yaml").read_text())["arda2026"]
    for k, v in s.items():
        if k == "teacher":
            assert v == paper["teacher"]
        elif k != "compare_kinds":
            assert paper["A1"][k] == v, k
    assert a1["scale"] == "paper" and a1["scale"] in ledger.SCALES
    cs = decisive.cells(a1)
    assert len(cs) == 60 and cs[0]["name"] == "seed01_m008" and cs[-1]["name"] == "seed10_m256"
    assert decisive.cell_params(a1, cs[1])["width"] == 16 and decisive.cell_params(a1, cs[1])["seed"] == 1


def test_decisive_yaml_is_an_overlay_and_other_partial_files_are_not(tmp_path):
    assert decisive.is_overlay([ROOT / "config/decisive.yaml"])
    other = tmp_path / "x.yaml"
    other.write_text(yaml.safe_dump({"decisive": {}, "scale": "paper"}))
    assert not decisive.is_overlay([other])
    assert not decisive.is_overlay([])


def test_compute_code_hash_changes_with_the_compute_code(monkeypatch):
    h = decisive.code_hash_of(["ntkrepro.decisive:cells"])
    assert h == decisive.code_hash_of(["ntkrepro.decisive:cells"])
    assert h != decisive.code_hash_of(["ntkrepro.decisive:cell_name"])
    monkeypatch.setattr(decisive_cells, "_source", lambda ref: "changed")
    assert decisive.code_hash_of(["ntkrepro.decisive:cells"]) != h


# ---- synthetic archives ---------------------------------------------------------------------------

def _spec(seeds=(1, 2, 3, 4, 5, 6), widths=(8, 16, 32, 64)):
    a1 = copy.deepcopy(_plan()["claims"]["A1"])
    a1["section"].update(seeds=list(seeds), widths=list(widths), n_boot=200)
    return a1


def _rows(seed, m, slope, rng):
    """One (seed, width) cell's rows: errors ~ m^slope with seed noise; the width_fixed control ~ flat."""
    f = lambda c: float(c * m ** slope * np.exp(0.03 * rng.standard_normal()))  # noqa: E731
    real = {"kind": "authors", "seed": seed, "m": m, "n": 5000, "T": 16, "n_train": 4000,
            "label_stats": {"mean_y2": 0.5}, "approx_error": f(3.0), "min_train_loss": f(0.4),
            "final_train_loss": f(0.41), "initial_loss": 0.5, "val_loss": f(0.45), "lin_error": f(0.2)}
    g = lambda c: float(c * np.exp(0.03 * rng.standard_normal()))  # noqa: E731
    ctrl = {"kind": "authors", "control": "width_fixed", "seed": seed, "m": m, "width_used": 8,
            "approx_error": g(1.0), "min_train_loss": g(0.2), "final_train_loss": g(0.2), "initial_loss": 0.5,
            "lin_error": g(0.1)}
    return [real, ctrl]


def _write_cell(archive, spec, cell, slope=-0.5, code=CODE, seed_rng=0):
    rng = np.random.default_rng(1000 * cell["seed"] + cell["width"] + seed_rng)
    data = {"claim": "A1", "cell": {"seed": cell["seed"], "width": cell["width"]},
            "rows": _rows(cell["seed"], cell["width"], slope, rng), "compute_code": code,
            "params": decisive.cell_params(spec, cell), "wall_seconds": 12.5,
            "provenance": {"git": {"commit": "0123456789abcdef" * 2 + "01234567", "dirty": False},
                           "created_utc": "2026-12-04T21:30:00+00:00", "device": {"jax": ["cpu:cpu"], "cpu": "x86_64"},
                           "platform": "Linux-6.1-x86_64"}}
    p = decisive.cell_path(archive, "A1", cell["name"])
    write_json(p, seal(to_jsonable(data)))
    return p


def _archive(tmp_path, spec, slope=-0.5, skip=()):
    arch = tmp_path / "archive"
    for c in decisive.cells(spec):
        if c["name"] not in skip:
            _write_cell(arch, spec, c, slope)
    return arch


def test_complete_archive_is_judged_by_the_current_a1_criterion(tmp_path):
    spec = _spec()
    rec = decisive.judge("A1", spec, _archive(tmp_path, spec), code_hash=CODE)
    assert rec["state"] == decisive.COMPLETE and rec["cells_archived"] == rec["cells_planned"] == 24
    ev = rec["evaluation"]
    assert ev["id"] == "A1" and ev["scale"] == "paper"
    assert -0.56 < ev["measured"]["slope_min_train_loss"]["value"] < -0.44
    assert rec["verdict"] == ev["verdict"] == "reproduced"  # slopes -0.5 inside [-0.65, -0.35], control flat
    assert [c["verdict"] for c in ev["controls"]] == ["not_reproduced"]
    # a run whose errors fall like m^-0.15 is refuted by the same criterion (the judge can fail)
    bad = decisive.judge("A1", spec, _archive(tmp_path / "b", spec, slope=-0.15), code_hash=CODE)
    assert bad["state"] == decisive.COMPLETE and bad["verdict"] == "not_reproduced"


def test_incomplete_archive_draws_no_verdict_but_reports_the_complete_seeds(tmp_path):
    spec = _spec()
    arch = _archive(tmp_path, spec, skip={"seed03_m064", "seed05_m008", "seed06_m008", "seed06_m016"})
    rec = decisive.judge("A1", spec, arch, code_hash=CODE)
    assert rec["state"] == decisive.INCOMPLETE and rec["verdict"] == "inconclusive"
    assert rec["evaluation"] is None and "incomplete" in rec["reason"]
    assert rec["cells_archived"] == 20 and len(rec["cells_missing"]) == 4
    assert rec["groups_complete"] == {"seed": [1, 2, 4]}
    assert rec["partial"]["criterion_verdict"] in ("reproduced", "inconclusive", "not_reproduced")
    cell = decisive.table_cell(rec)
    assert cell.startswith("inconclusive: INCOMPLETE (20/24 cells") and "partial, not a verdict" in cell


def test_stale_cell_is_labelled_and_never_used(tmp_path):
    spec = _spec()
    arch = _archive(tmp_path, spec)
    _write_cell(arch, spec, decisive.cells(spec)[5], code="0ld" + "0" * 61)  # computed by older code
    rec = decisive.judge("A1", spec, arch, code_hash=CODE)
    assert rec["state"] == decisive.STALE and rec["verdict"] is None and rec["evaluation"] is None
    assert rec["cells_stale"] == [decisive.cells(spec)[5]["name"]] and "STALE" in rec["reason"]
    assert decisive.table_cell(rec).startswith("STALE")
    s = decisive.summary(rec)
    assert s["verdict"] is None and s["cell"].startswith("STALE")


def test_hand_edited_or_unsealed_or_oversized_cell_is_refused(tmp_path):
    spec = _spec()
    arch = _archive(tmp_path, spec)
    p = decisive.cell_path(arch, "A1", "seed02_m016")
    data = read_json(p)
    data["rows"][0]["min_train_loss"] *= 0.5  # a "better" number typed in by hand
    write_json(p, data)
    with pytest.raises(TamperedFileError, match="seed02_m016"):
        decisive.judge("A1", spec, arch, code_hash=CODE)
    from ntkrepro.io import SEAL_KEY
    del data["provenance"][SEAL_KEY]
    write_json(p, data)
    with pytest.raises(decisive.ArchiveError, match="not sealed"):
        decisive.judge("A1", spec, arch, code_hash=CODE)
    _write_cell(arch, spec, decisive.cells(spec)[7])  # intact again
    with pytest.raises(decisive.ArchiveError, match="budget"):
        decisive.judge("A1", spec, arch, code_hash=CODE, max_bytes=1024)


def test_cell_with_other_sizes_than_the_plan_is_refused(tmp_path):
    spec = _spec()
    arch = _archive(tmp_path, spec)
    other = copy.deepcopy(spec)
    other["section"]["steps"] = 1200
    with pytest.raises(decisive.ArchiveError, match="steps"):
        decisive.judge("A1", other, arch, code_hash=CODE)


# ---- the ledger: entry field, table column, check ------------------------------------------------

def _entry_with(tmp_path, rec, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = Path("claims/decisive/A1.json")
    write_json(p, rec)
    entry = {"id": "A1", "paper": "arda2026", "statement": "s", "verdict": "inconclusive", "scale": "default",
             "measured": {}, "controls": [], "amendments": []}
    ledger.attach_decisive(entry, [str(p)])
    return entry, p


def test_entry_table_and_check_show_the_archived_run(tmp_path, monkeypatch):
    spec = _spec()
    rec = decisive.judge("A1", spec, _archive(tmp_path, spec), code_hash=CODE)
    rec = json.loads(json.dumps(rec))
    monkeypatch.setattr(decisive_cells, "compute_code_hash", lambda claim: CODE)
    entry, p = _entry_with(tmp_path, rec, monkeypatch)
    assert entry["decisive"]["state"] == "complete" and entry["decisive"]["verdict"] == "reproduced"
    row = ledger.table_rows([entry])[0]
    assert row["verdict"] == "inconclusive" and row["decisive"].startswith("reproduced (24/24 cells; archived: ")
    assert "0123456" in row["decisive"] and "2026-12-04" in row["decisive"]
    assert ledger._decisive_short(row["decisive"]) == "reproduced (CPU, 2026-12-04, 0123456)"
    ledger.write_table([entry], tmp_path / "t.csv", tmp_path / "t.md", tmp_path / "t.tex")
    md = (tmp_path / "t.md").read_text()
    assert "| default (this run) | decisive run (archived: device, date, commit) |" in md
    assert "reproduced (CPU, 2026-12-04, 0123456)" in (tmp_path / "t.tex").read_text()
    assert ledger.check_decisive(entry) == [] and decisive.check_entry(entry) == []
    # a hand-edited archived cell: ledger check finds the broken hash chain, decisive verify refuses the cell
    cell = Path(next(iter(rec["cells_sha256"])))
    data = read_json(cell)
    data["rows"][0]["approx_error"] = 1e-9
    write_json(cell, data)
    problems = ledger.check_decisive(entry)
    assert problems == [f"A1: archived cell {cell} changed after the decisive evaluation read it; rerun snakemake"]
    problems = decisive.check_entry(entry)
    assert problems and "refused" in problems[0] and cell.name in problems[0]
    cell.unlink()
    assert ledger.check_decisive(entry) == [f"A1: archived cell {cell} is missing"]


def test_check_flags_a_stale_cell_used_under_a_verdict(tmp_path, monkeypatch):
    spec = _spec()
    rec = json.loads(json.dumps(decisive.judge("A1", spec, _archive(tmp_path, spec), code_hash=CODE)))
    entry, _ = _entry_with(tmp_path, rec, monkeypatch)
    # today's compute code differs from the cells': the entry says "complete" -> check names them STALE
    monkeypatch.setattr(decisive_cells, "compute_code_hash", lambda claim: "f" * 64)
    problems = decisive.check_entry(entry)
    assert problems and all("STALE" in q for q in problems) and len(problems) == 24
    assert ledger.check_decisive(entry) == []  # the ledger checks the hash chain; staleness is decisive verify's
    # an entry whose decisive field was edited by hand
    monkeypatch.setattr(decisive_cells, "compute_code_hash", lambda claim: CODE)
    entry["decisive"]["verdict"] = "not_reproduced"
    assert any("differs" in q for q in ledger.check_decisive(entry))
    assert any("differs" in q for q in decisive.check_entry(entry))
    # a decisive field without the hash chain
    assert ledger.check_decisive({"id": "A1", "decisive": {"state": "complete"}})


def test_verify_claims_dir_checks_the_entries_decisive_cells(tmp_path, monkeypatch, capsys):
    """``decisive verify --claims-dir`` runs :func:`decisive.check_entry` on each ledger entry: what ``ledger
    check`` leaves above the ledger (a STALE cell under a verdict)."""
    spec = _spec()
    arch = _archive(tmp_path, spec)
    rec = json.loads(json.dumps(decisive.judge("A1", spec, arch, code_hash=CODE)))
    entry, _ = _entry_with(tmp_path, rec, monkeypatch)
    claims = tmp_path / "claims"
    write_json(claims / "A1.json", entry)
    plan = {"decisive": {"archive": str(arch), "max_file_bytes": 1 << 20, "claims": {"A1": spec}}}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan))
    monkeypatch.setattr(decisive_cells, "compute_code_hash", lambda claim: CODE)
    args = ["verify", "--plan", str(tmp_path / "plan.yaml"), "--claims-dir", str(claims)]
    assert decisive.main(args) == 0
    assert f"{claims / 'A1.json'}: decisive field ok" in capsys.readouterr().out
    monkeypatch.setattr(decisive_cells, "compute_code_hash", lambda claim: "f" * 64)
    assert decisive.main(args) == 1
    err = capsys.readouterr().err
    assert err.count("PROBLEM A1: archived cell") == 24 and "is STALE" in err
    assert decisive.main(["verify", "--plan", str(tmp_path / "plan.yaml"), "--claims-dir", str(tmp_path / "no")]) == 1
    assert "no such folder of ledger entries" in capsys.readouterr().err


def test_no_archive_no_column():
    assert ledger.decisive_text({"id": "H1"}) == "-"
    assert ledger._decisive_short("-") == "-"
    assert decisive.table_cell(None) == "-"


# ---- the committed archive itself ----------------------------------------------------------------

def test_committed_archive_cells_are_sealed_in_budget_and_of_the_plan():
    plan = _plan()
    for cid, spec in plan["claims"].items():
        planned = {c["name"]: c for c in decisive.cells(spec)} if spec["status"] == "run" else {}
        for p in decisive.archived_cells(ROOT / plan["archive"], cid):
            assert p.stat().st_size <= plan["max_file_bytes"], p
            assert p.stem in planned, p
            v = decisive.verify_cell(p, cid, max_bytes=plan["max_file_bytes"], code_hash="x")
            for k, val in planned[p.stem].items():  # the cell's own values (e.g. seed and width)
                if k != "name":
                    assert v["data"]["params"][k] == val, (p, k)


def test_decide_dry_run_plans_one_job_per_missing_cell(tmp_path):
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "decide", "--profile", "profiles/local",
                          "--configfile", "config/decisive.yaml", "--directory", str(ROOT)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    plan = _plan()
    missing = sum(len(decisive.cells(s)) - len(decisive.archived_cells(ROOT / plan["archive"], c))
                  for c, s in plan["claims"].items() if s["status"] == "run")
    text = out.stdout + out.stderr
    if missing:
        assert f"decisive_cell {missing}" in " ".join(text.split())
        assert "F6 (undecidable" in text  # the decide job's message names the claims it cannot run
    else:  # every planned cell archived (A1, A4, H5 since 2026-12-05): nothing to compute
        assert "Nothing to be done" in text
        assert "decisive_cell " not in " ".join(text.split()).replace("metadata: decisive_cell", "")


def test_report_shows_the_decisive_run_beside_this_run(tmp_path, render_report):
    spec = _spec()
    arch = _archive(tmp_path, spec)
    rec = json.loads(json.dumps(decisive.judge("A1", spec, arch, code_hash=CODE)))
    entry = ledger.entry_from_evaluation(rec["evaluation"])
    p = tmp_path / "A1.decisive.json"
    write_json(p, rec)
    ledger.attach_decisive(entry, [str(p)])
    _write_cell(arch, spec, decisive.cells(spec)[0], code="0" * 64)  # now one cell is stale
    stale = json.loads(json.dumps(decisive.judge("A1", spec, arch, code_hash=CODE)))
    e2 = {**ledger.entry_from_evaluation(rec["evaluation"]), "id": "A2"}
    q = tmp_path / "A2.decisive.json"
    write_json(q, {**stale, "id": "A2"})
    ledger.attach_decisive(e2, [str(q)])
    tex = render_report([entry, e2])
    assert "default (this run) & decisive run (archived: date, commit)" in tex
    assert r"\textbf{Decisive run (archived, judged now by the current criterion): complete, reproduced.}" in tex
    assert "STALE (CPU, 2026-12-04, 0123456)" in tex and "24 of 24 cells" in tex
    # commits by their short hashes: five 40-hex words ran 122 pt into the margin (CI of stop 46)
    assert rec["commits"] and all(len(h) == 40 for h in rec["commits"])
    assert f"commit(s) {rec['commits'][0][:7]}," in " ".join(tex.split()) and rec["commits"][0] not in tex


def test_verify_cli_lists_and_deletes_stale_cells_and_refuses_edited_ones(tmp_path, monkeypatch, capsys):
    spec = _spec()
    arch = _archive(tmp_path, spec)
    plan = {"decisive": {"archive": str(arch), "max_file_bytes": 1 << 20, "claims": {"A1": spec}}}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan))
    monkeypatch.setattr(decisive_cells, "compute_code_hash", lambda claim: CODE)
    assert decisive.main(["verify", "--plan", str(tmp_path / "plan.yaml")]) == 0
    stale = _write_cell(arch, spec, decisive.cells(spec)[3], code="1" * 64)
    assert decisive.main(["verify", "--plan", str(tmp_path / "plan.yaml")]) == 0
    assert f"{stale}: STALE" in capsys.readouterr().out and stale.exists()
    assert decisive.main(["verify", "--plan", str(tmp_path / "plan.yaml"), "--delete-stale"]) == 0
    assert not stale.exists()
    p = decisive.cell_path(arch, "A1", "seed01_m008")
    d = read_json(p)
    d["wall_seconds"] = 1.0
    write_json(p, d)
    assert decisive.main(["verify", "--plan", str(tmp_path / "plan.yaml")]) == 1
    assert "REFUSED" in capsys.readouterr().err


def test_a1_cell_rows_equal_the_full_units_rows():
    """An archived A1 cell (one seed at one width) holds exactly the rows run_a1_unit writes for that
    (seed, width), its width_fixed control column included, so that cells aggregate like a unit."""
    from ntkrepro.arda2026 import scaling

    section = {"d": 8, "T": 4, "n": 40, "widths": [8, 16], "seeds": [1], "steps": 3, "step_size_coef": 1.75,
               "rho": 3.0, "lin_search_steps": 2, "n_boot": 10, "compare_kinds": [],
               "teacher": {"kind": "authors", "R": 4, "nu": 3.0, "n_mc": 32}}
    full = scaling.run_a1_unit(section, "authors", 1, linearisation=True)
    cell = scaling.run_a1_cell({**section, "seed": 1, "width": 16}, None)
    want = [r for r in full if r["m"] == 16]
    assert len(want) == 2 and json.dumps(cell["rows"], sort_keys=True, default=str) == json.dumps(
        want, sort_keys=True, default=str)
    assert cell["rows"][1]["width_used"] == 8  # the control uses the smallest width of the sweep, not the cell's
    assert cell["compute_code"] == decisive.compute_code_hash("A1")
    with pytest.raises(ValueError, match="not one of"):
        scaling.run_a1_cell({**section, "seed": 1, "width": 12}, None)
