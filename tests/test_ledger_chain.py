"""Issue 22, items 4 and 5 and the ledger CLI messages: the hash chain results -> evaluation -> entry,
hand edits found (by file), clear messages for malformed ledger files, duplicate entries refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ntkrepro import ledger
from ntkrepro.io import TamperedFileError, read_json, seal, write_json
from ntkrepro.ledger import ClaimSpec, Evaluation


@pytest.fixture
def f97():
    """A throw-away claim F97: reproduced iff results["F97_x"]["effect"] > 0, refuted iff < 0, with one
    control ("null", effect -1) that the criterion rejects, so that an intact chain passes check."""
    spec = ClaimSpec("F97", "framework", "s", "c", controls=(ledger.ControlSpec("null", "w", "y"),))

    @ledger.register(spec)
    def _evaluate(results, scale):
        x = float(results["F97_x"]["effect"])
        return Evaluation({"effect": x}, ledger.decide(reproduced=x > 0, refuted=x < 0), f"effect {x}")

    ledger.register_control("F97", "null")(lambda r: ledger.stored_control(r, "null"))
    yield
    ledger._REGISTRY.pop("F97", None)
    ledger._CONTROLS.pop(("F97", "null"), None)


def _pipeline(root: Path, capsys) -> dict[str, Path]:
    """results (sealed, as ntkrepro.run writes them) -> evaluate -> entry -> table, as the DAG runs it."""
    res = root / "framework" / "F97_x.json"
    write_json(res, seal({"effect": 1.0, "controls": {"null": {"effect": -1.0}}, "provenance": {"code": "x"}}))
    claims = root / "claims"
    ev = claims / "evaluations" / "F97.json"
    entry = claims / "F97.json"
    assert ledger.main(["evaluate", "F97", "--results", str(res), "--scale", "smoke", "--out", str(ev)]) == 0
    assert ledger.main(["entry", "F97", "--evaluation", str(ev), "--out", str(entry)]) == 0
    out = {k: str(claims / f"t.{k}") for k in ("csv", "md", "tex")}
    assert ledger.main(["table", str(entry), "--csv", out["csv"], "--md", out["md"], "--tex", out["tex"],
                        "--index", str(claims / "index.json"), "--expected", "F97"]) == 0
    capsys.readouterr()
    return {"results": res, "evaluation": ev, "entry": entry, "claims": claims}


def _check(claims: Path, capsys) -> tuple[int, str]:
    rc = ledger.main(["check", "--claims-dir", str(claims)])
    return rc, capsys.readouterr().err


def test_intact_chain_passes_and_records_the_hashes(tmp_path, f97, capsys):
    p = _pipeline(tmp_path, capsys)
    ev, e = read_json(p["evaluation"]), read_json(p["entry"])
    assert ev["verdict"] == "reproduced"
    assert list(ev["results_sha256"]) == ["framework/F97_x.json"]
    assert len(e["evaluation_sha256"]) == 64
    assert _check(p["claims"], capsys)[0] == 0


def test_edited_entry_verdict_is_found_by_file(tmp_path, f97, capsys):
    p = _pipeline(tmp_path, capsys)
    e = read_json(p["entry"])
    write_json(p["entry"], {**e, "measured": {"effect": 5.0}})
    rc, err = _check(p["claims"], capsys)
    assert rc == 1 and "field 'measured'" in err and "F97.json" in err and "evaluations/F97.json" in err


def test_edited_evaluation_is_found_by_file(tmp_path, f97, capsys):
    p = _pipeline(tmp_path, capsys)
    ev = read_json(p["evaluation"])
    write_json(p["evaluation"], {**ev, "verdict": "not_reproduced"})
    rc, err = _check(p["claims"], capsys)
    assert rc == 1 and "evaluations/F97.json has sha256" in err


def test_edited_results_file_is_found_and_refused_by_evaluate(tmp_path, f97, capsys):
    """A hand edit of a results JSON: Snakemake would rerun the evaluation (newer input); the edited
    file is refused there (its seal), and `ledger check` on the old chain names the file."""
    p = _pipeline(tmp_path, capsys)
    data = json.loads(p["results"].read_text())
    data["effect"] = -3.0  # flips the verdict
    p["results"].write_text(json.dumps(data))
    rc, err = _check(p["claims"], capsys)
    assert rc == 1 and "results file" in err and "F97_x.json" in err
    with pytest.raises(TamperedFileError, match="F97_x.json: its content changed"):
        ledger.load_results([p["results"]])
    assert ledger.main(["evaluate", "F97", "--results", str(p["results"]), "--scale", "smoke",
                        "--out", str(p["evaluation"])]) == 1
    assert "F97_x.json: its content changed" in capsys.readouterr().err


def test_each_link_of_the_chain_names_its_file_missing_or_changed(tmp_path, f97, capsys):
    """The three links (evaluation, results file, replicate entry) each say which file is missing or changed
    (issue 31 folded their three copies of the check into one helper; the messages are the same)."""
    p = _pipeline(tmp_path, capsys)
    claims, e = p["claims"], read_json(p["entry"])
    assert ledger.check_chain(claims, e) == []
    rep = tmp_path / "replicates" / "r1" / "claims" / "F97.json"
    with_rep = {**e, "replicate_entries_sha256": {"replicates/r1/claims/F97.json": "0" * 64}}
    assert ledger.check_chain(claims, with_rep) == [f"F97: replicate entry {rep} is missing"]
    write_json(rep, {"id": "F97"})
    assert ledger.check_chain(claims, with_rep) == [
        f"F97: replicate entry {rep} changed after the headline entry was written; rerun snakemake"]
    p["results"].rename(p["results"].with_suffix(".bak"))
    assert ledger.check_chain(claims, e) == [
        f"F97: results file {p['results']} (recorded by {p['evaluation']}) is missing"]
    p["results"].with_suffix(".bak").rename(p["results"])
    p["evaluation"].unlink()
    assert ledger.check_chain(claims, e) == [f"F97: its evaluation {p['evaluation']} is missing"]


def test_run_seals_what_it_writes(tmp_path, monkeypatch):
    from ntkrepro import run
    from ntkrepro.io import check_seal

    monkeypatch.setattr(run, "resolve", lambda spec: (lambda params, ctx: {"x": 1.5, "arr": [1, 2]}))
    out = tmp_path / "r.json"
    run.execute("ntkrepro.io:none", {"a": 1}, out, scale="smoke")
    assert check_seal(read_json(out), out) is True


@pytest.mark.parametrize("content,needle", [
    ("", "cannot be read as JSON"),
    ('{"id": "F97", "verd', "cannot be read as JSON"),
    ("[1, 2]", "holds a JSON list"),
    (None, "does not exist"),
])
def test_check_and_table_on_malformed_files_say_which_file(tmp_path, f97, capsys, content, needle):
    p = _pipeline(tmp_path, capsys)
    if content is None:
        p["entry"].unlink()
        rc, err = _check(p["claims"], capsys)
        assert rc == 1 and "no ledger entry" in err and "Traceback" not in err
    else:
        p["entry"].write_text(content)
        rc, err = _check(p["claims"], capsys)
        assert rc == 1 and needle in err and "F97.json" in err
    claims = p["claims"]
    out = {k: str(claims / f"u.{k}") for k in ("csv", "md", "tex")}
    rc = ledger.main(["table", str(p["entry"]), "--csv", out["csv"], "--md", out["md"], "--tex", out["tex"],
                      "--index", str(claims / "i.json"), "--expected", "F97"])
    assert rc == 1 and needle in capsys.readouterr().err
    (claims / "index.json").write_text("{trunc")
    rc, err = _check(claims, capsys)
    assert rc == 1 and "index.json" in err


def test_table_refuses_the_same_entry_twice(tmp_path, f97, capsys):
    p = _pipeline(tmp_path, capsys)
    claims = p["claims"]
    out = {k: str(claims / f"u.{k}") for k in ("csv", "md", "tex")}
    rc = ledger.main(["table", str(p["entry"]), str(p["entry"]), "--csv", out["csv"], "--md", out["md"],
                      "--tex", out["tex"], "--index", str(claims / "i.json"), "--expected", "F97"])
    assert rc == 1 and "claim F97 is given twice" in capsys.readouterr().err


def test_null_measured_value_gives_a_table_row_not_a_traceback(tmp_path, f97, capsys):
    e = {"id": "F97", "paper": "framework", "statement": "s", "verdict": "inconclusive", "scale": "smoke",
         "measured": {"a": {"value": None, "ci_low": None, "ci_high": None}, "b": None}}
    rows = ledger.table_rows([e])
    assert rows[0]["headline"] == "a = None [None, None]; b = None"


def test_evaluate_refuses_an_unknown_scale(tmp_path, f97, capsys):
    with pytest.raises(SystemExit):
        ledger.main(["evaluate", "F97", "--results", "x.json", "--scale", "tiny", "--out", str(tmp_path / "e.json")])
    assert "invalid choice: 'tiny'" in capsys.readouterr().err


def test_a_live_orphan_computing_the_same_output_is_detected(tmp_path):
    """Issue 22 (kill -9 of Snakemake itself): the rerun is not locked out and used to relaunch a job
    whose orphan was still running. ntkrepro.run now holds a lock on the output while computing it:
    the relaunched job stops at once, naming the orphan's pid; once the orphan is gone it runs."""
    import subprocess
    import sys
    import time

    from ntkrepro import run

    out = tmp_path / "r.json"
    code = ("import sys, time; from ntkrepro.run import output_lock\n"
            f"with output_lock({str(out)!r}):\n    print('locked', flush=True); time.sleep(60)\n")
    orphan = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert orphan.stdout.readline().strip() == "locked"
        with pytest.raises(run.StillRunningError, match=f"pid {orphan.pid}"):
            with run.output_lock(out):
                pass
    finally:
        orphan.kill()
        orphan.wait()
    time.sleep(0.1)
    with run.output_lock(out):  # the orphan is gone: its lock died with it
        pass
    assert not (tmp_path / ".r.json.running").exists()
