"""Issue 39 (fourth bad-input round): the decisive archive, the README tables, the GPU-call wrapper and its
inputs; each defect with a test that failed before its fix, then the "loud but unclear" items."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from ntkrepro import decisive, verdicts
from ntkrepro.io import read_json, seal, to_jsonable, write_json

ROOT = Path(__file__).resolve().parents[1]
PLAN = ROOT / "config" / "decisive.yaml"
ARCHIVE = ROOT / "archive" / "decisive"


def _plan_dict():
    return yaml.safe_load(PLAN.read_text())


def _write_plan(tmp_path, data, name="decisive.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def _cell(claim, name):
    return ARCHIVE / claim / "cells" / f"{name}.json"


# ---- 1. a mistyped or missing archive folder is not an empty archive --------------------------------

def test_refresh_decisive_refuses_a_mistyped_archive_and_changes_nothing(tmp_path, capsys):
    summary = tmp_path / "verdicts.json"
    shutil.copy(ROOT / "docs" / "verdicts.json", summary)
    before = summary.read_bytes()
    rc = verdicts.main(["--refresh-decisive", str(summary), "--plan", str(PLAN),
                        "--archive", str(ROOT / "archive" / "decisve")])
    err = capsys.readouterr().err
    assert rc == 1 and "archive/decisve: no such folder" in err and "nothing was changed" in err
    assert summary.read_bytes() == before  # the decisive verdicts are still there
    # a folder that exists but is not the archive (no <CLAIM>/cells/ of the plan) is refused too
    rc = verdicts.main(["--refresh-decisive", str(summary), "--plan", str(PLAN), "--archive", str(tmp_path)])
    assert rc == 1 and "holds no <CLAIM>/cells/ folder" in capsys.readouterr().err
    assert summary.read_bytes() == before


def test_decisive_verify_and_judge_refuse_a_missing_archive(tmp_path, capsys):
    plan = _plan_dict()
    plan["decisive"]["archive"] = str(tmp_path / "archive" / "decisve")
    p = _write_plan(tmp_path, plan)
    for args in (["verify", "--plan", str(p)], ["judge", "A1", "--plan", str(p), "--out", str(tmp_path / "j.json")]):
        rc = decisive.main(args)
        err = capsys.readouterr().err
        assert rc == 1 and "archive/decisve: no such folder" in err, (args, err)
    assert not (tmp_path / "j.json").exists()


# ---- 2. --sync-readme writes only a verdict table, into one well-formed section ----------------------

def _summary():
    return json.loads((ROOT / "docs" / "verdicts.json").read_text())


def _bad_rows(s):
    s["rows"] = []


def _partial_row(s):
    del s["rows"][0]["stable"]


def _bogus_tier(s):
    s["tiers"].append({"claim": "Z9"})


def _tier_unknown_claim(s):
    s["tiers"].append({**s["tiers"][0], "claim": "Z9"})


def _newline_cell(s):
    s["rows"][0]["headline (95 % interval)"] = "slope -0.5\n| injected | row |"


def _list_summary(s):
    return [s]


@pytest.mark.parametrize("edit,needle", [
    (_bad_rows, "`rows` is empty"),
    (_partial_row, "lacks the columns ['stable']"),
    (_bogus_tier, "(Z9) lacks the columns"),
    (_tier_unknown_claim, "'Z9' is not a claim id"),
    (_newline_cell, "is not one line of text"),
    (_list_summary, "holds a list, not a summary"),
])
def test_sync_readme_refuses_bad_rows_and_leaves_the_readme(tmp_path, capsys, edit, needle):
    s = _summary()
    s = edit(s) or s
    sp = tmp_path / "verdicts.json"
    sp.write_text(json.dumps(s))
    readme = tmp_path / "README.md"
    shutil.copy(ROOT / "README.md", readme)
    before = readme.read_bytes()
    rc = verdicts.main(["--sync-readme", str(sp), str(readme)])
    err = capsys.readouterr().err
    assert rc == 1 and needle in err and "verdicts.json" in err, err
    assert readme.read_bytes() == before


def test_sync_readme_refuses_a_twice_or_misordered_section(tmp_path, capsys):
    sp = tmp_path / "verdicts.json"
    shutil.copy(ROOT / "docs" / "verdicts.json", sp)
    readme = tmp_path / "README.md"
    text = (ROOT / "README.md").read_text()
    sec = text[text.index(verdicts.BEGIN):text.index(verdicts.END) + len(verdicts.END)]
    for bad, needle in ((text + "\n" + sec + "\n", "2 times"),
                        (text.replace(verdicts.BEGIN, "@@B@@").replace(verdicts.END, verdicts.BEGIN)
                         .replace("@@B@@", verdicts.END), "before")):
        readme.write_text(bad)
        rc = verdicts.main(["--sync-readme", str(sp), str(readme)])
        err = capsys.readouterr().err
        assert rc == 1 and needle in err and "Traceback" not in err, err
        assert readme.read_text() == bad
    # the committed snapshot still syncs to the committed README, byte for byte
    readme.write_text(text)
    assert verdicts.main(["--sync-readme", str(sp), str(readme)]) == 0
    assert readme.read_text() == text


def test_verdicts_names_a_non_json_summary(tmp_path, capsys):
    sp = tmp_path / "verdicts.json"
    sp.write_text("{not json")
    readme = tmp_path / "README.md"
    shutil.copy(ROOT / "README.md", readme)
    for args in (["--sync-readme", str(sp), str(readme)], ["--refresh-decisive", str(sp), "--plan", str(PLAN)]):
        rc = verdicts.main(args)
        err = capsys.readouterr().err
        assert rc == 1 and f"{sp}: not a JSON summary" in err, err


# ---- 3. a module constant of the compute code makes cells STALE --------------------------------------

def test_archived_cells_are_current_under_the_constants_scheme():
    for claim, name in (("A1", "seed01_m008"), ("A4", "chunk01"), ("H5", "seed00_ln0")):
        r = decisive.verify_cell(_cell(claim, name), claim)
        assert not r["stale"], (claim, r["stale_why"])
        assert decisive.pinned_constants_changed(claim) == []
    assert decisive.compute_constants("A4") == {"ntkrepro.arda2026.forecasting:N_FREQ": "8"}
    assert "ntkrepro.hron2020.finite_nets:CONTROL_SEED_OFFSET" in decisive.compute_constants("H5")


@pytest.mark.parametrize("claim,module,name,value,cell", [
    ("A4", "ntkrepro.arda2026.forecasting", "N_FREQ", 9, "chunk01"),
    ("H5", "ntkrepro.hron2020.finite_nets", "CONTROL_SEED_OFFSET", 200_000, "seed00_ln0"),
])
def test_a_changed_module_constant_makes_archived_cells_stale(monkeypatch, claim, module, name, value, cell):
    import importlib

    mod = importlib.import_module(module)
    before = decisive.compute_code_hash(claim)
    monkeypatch.setattr(mod, name, value)
    assert decisive.compute_code_hash(claim) != before  # scheme 2: a new cell records the constants
    r = decisive.verify_cell(_cell(claim, cell), claim)
    assert r["stale"] and f"{module}:{name}" in r["stale_why"]


def test_a_scheme_2_cell_is_stale_after_a_constant_changes(tmp_path, monkeypatch):
    from ntkrepro.arda2026 import forecasting

    data = read_json(_cell("A4", "chunk01"))
    data["compute_code"] = decisive.compute_code_hash("A4")
    assert data["compute_code"].startswith(decisive.CODE_SCHEME)
    data["provenance"].pop("content_sha256")
    p = tmp_path / "A4" / "cells" / "chunk01.json"
    p.parent.mkdir(parents=True)
    write_json(p, seal(to_jsonable(data)))
    assert not decisive.verify_cell(p, "A4")["stale"]
    monkeypatch.setattr(forecasting, "N_FREQ", 4)
    assert decisive.verify_cell(p, "A4")["stale"]
    # a constant used by no listed function (aggregate only) changes nothing
    monkeypatch.setattr(forecasting, "N_FREQ", 8)
    monkeypatch.setattr(forecasting, "BAYES_MSE", 0.5)
    assert not decisive.verify_cell(p, "A4")["stale"]


def test_a_scheme_1_cell_of_a_claim_without_pin_is_stale(monkeypatch):
    monkeypatch.delitem(decisive.ARCHIVED_CONSTANTS, "A4")
    r = decisive.verify_cell(_cell("A4", "chunk01"), "A4")
    assert r["stale"] and "no pin" in r["stale_why"]


def test_every_committed_cell_verifies_ok():
    out = subprocess.run([sys.executable, "-m", "ntkrepro.decisive", "verify"], cwd=ROOT, capture_output=True,
                         text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and lines and all(line.endswith(": ok") for line in lines), out.stdout + out.stderr


# ---- 4. the decisive plan's scale labels are checked against its sizes -------------------------------

def test_decisive_plan_scale_label_is_checked():
    plan = _plan_dict()["decisive"]
    decisive.check_plan(plan, "config/decisive.yaml", ROOT / "config")  # the committed plan passes
    bad = copy.deepcopy(plan)
    bad["claims"]["A4"]["scale"] = "paper"
    with pytest.raises(decisive.ArchiveError, match=r"decisive\.claims\.A4: scale: paper, but its sizes are those "
                                                    r"of config/default\.yaml"):
        decisive.check_plan(bad, "config/decisive.yaml", ROOT / "config")
    bad = copy.deepcopy(plan)
    bad["claims"]["A1"]["scale"] = "default"
    with pytest.raises(decisive.ArchiveError, match=r"A1: scale: default, but its sizes are those of config/paper"):
        decisive.check_plan(bad, "config/decisive.yaml", ROOT / "config")


def test_load_plan_and_verify_refuse_a_mislabelled_plan(tmp_path, capsys):
    data = _plan_dict()
    data["decisive"]["claims"]["A4"]["scale"] = "paper"
    data["decisive"]["archive"] = str(ARCHIVE)
    cfg = tmp_path / "config"
    cfg.mkdir()
    for sc in ("smoke", "default", "paper"):
        shutil.copy(ROOT / "config" / f"{sc}.yaml", cfg)
    p = _write_plan(cfg, data)
    assert decisive.main(["verify", "--plan", str(p)]) == 1
    assert "decisive.claims.A4: scale: paper" in capsys.readouterr().err


# ---- 5. gpu_h4.sh: BUDGET_S is a whole number of seconds ---------------------------------------------

@pytest.mark.parametrize("budget", ["420.5", "1e9", "nan", "0", "-5", "abc"])
def test_gpu_h4_refuses_a_bad_budget_before_running_anything(tmp_path, budget):
    marker = tmp_path / "ran"
    fake = tmp_path / "python"  # stands in for python: records that it was started
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {marker}\n")
    fake.chmod(0o755)
    out = subprocess.run(["bash", str(ROOT / "workflow/scripts/gpu_h4.sh")], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "BUDGET_S": budget, "PYTHON": str(fake), "OUT": str(tmp_path)})
    assert out.returncode != 0, out.stdout + out.stderr
    assert f"BUDGET_S={budget} is not a positive whole number of seconds" in out.stderr
    assert "unbound variable" not in out.stderr and not marker.exists()


def test_gpu_h4_takes_a_whole_budget(tmp_path):
    marker = tmp_path / "ran"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {marker}\n")
    fake.chmod(0o755)
    out = subprocess.run(["bash", str(ROOT / "workflow/scripts/gpu_h4.sh")], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "BUDGET_S": "420", "PYTHON": str(fake), "OUT": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert "--budget-s 420 " in marker.read_text()


# ---- 6. device_inputs checks every copy's sha256 ------------------------------------------------------

def _data_root(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    (root / "cifar.tar.gz").write_bytes(b"cifar archive bytes" * 10)
    (root / "imdb.tar.gz").write_bytes(b"imdb archive bytes" * 10)
    sha = {n: hashlib.sha256((root / n).read_bytes()).hexdigest() for n in ("cifar.tar.gz", "imdb.tar.gz")}
    cfg = {"cifar10": {"archive": "cifar.tar.gz", "sha256": sha["cifar.tar.gz"], "download": False},
           "imdb": {"archive": "imdb.tar.gz", "sha256": sha["imdb.tar.gz"], "download": False},
           "glove": {"source": "wheel", "dim": 50}}
    return root, cfg


@pytest.fixture
def light_prepare(monkeypatch):
    """device_inputs.prepare without the IMDb reader and the GloVe wheel (the copies are what is tested)."""
    from ntkrepro.data import glove, imdb
    from ntkrepro.device import inputs as device_inputs

    monkeypatch.setattr(imdb, "resolve", lambda cfg: Path(cfg["archive"]))
    monkeypatch.setattr(device_inputs, "imdb_vocabulary", lambda p: {"film"})
    monkeypatch.setattr(glove, "load_vectors", lambda vocab, cfg: {"film": np.zeros(50, np.float32)})
    return device_inputs


@pytest.mark.parametrize("name", ["cifar.tar.gz", "imdb.tar.gz"])
def test_device_inputs_replaces_a_same_size_stale_copy(tmp_path, light_prepare, name):
    root, cfg = _data_root(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    src = (root / name).read_bytes()
    (out / name).write_bytes(bytes(reversed(src)))  # same size, other bytes
    man = light_prepare.prepare(out, root, cfg)
    assert (out / name).read_bytes() == src
    key = "cifar10" if name.startswith("cifar") else "imdb"
    assert man["files"][name]["sha256"] == cfg[key]["sha256"] == hashlib.sha256((out / name).read_bytes()).hexdigest()


def test_device_inputs_names_a_source_with_the_wrong_sha(tmp_path, light_prepare):
    root, cfg = _data_root(tmp_path)
    cfg["cifar10"]["sha256"] = "0" * 64
    with pytest.raises(ValueError, match=r"cifar\.tar\.gz: sha256 \w+ is not the configured 0000"):
        light_prepare.prepare(tmp_path / "out", root, cfg)
    assert not (tmp_path / "out" / "cifar.tar.gz").exists()


def test_device_inputs_out_is_a_file_or_data_root_missing(tmp_path, capsys, light_prepare):
    root, cfg = _data_root(tmp_path)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match="--out .*file: a file, not a folder"):
        light_prepare.prepare(f, root, cfg)
    with pytest.raises(ValueError, match="--data-root .*nope: no such folder"):
        light_prepare.prepare(tmp_path / "o2", tmp_path / "nope", cfg)
    rc = light_prepare.main(["--out", str(f), "--data-root", str(root)])
    assert rc == 1 and "a file, not a folder" in capsys.readouterr().err


# ---- 7. ledger check holds the index to the registry --------------------------------------------------

sys.path.insert(0, str(ROOT / "tests"))
from test_bad_input_round3 import _chain, f96  # noqa: E402,F401


def test_ledger_check_finds_a_claim_dropped_from_the_index(tmp_path, f96, capsys):  # noqa: F811
    from ntkrepro import ledger

    claims = _chain(tmp_path, capsys)
    assert ledger.main(["check", "--claims-dir", str(claims)]) == 0
    capsys.readouterr()
    # a registered claim's entry in the ledger, which the index does not list (dropped after an edit)
    (claims / "F1.json").write_text(json.dumps({"id": "F1", "verdict": "reproduced", "edited": True}))
    rc = ledger.main(["check", "--claims-dir", str(claims)])
    err = capsys.readouterr().err
    assert rc == 1 and "F1.json: the ledger holds claim F1, but the claims index" in err
    (claims / "F1.json").unlink()
    idx = read_json(claims / "index.json")
    idx["claims"].append("Z9")
    write_json(claims / "index.json", idx)
    rc = ledger.main(["check", "--claims-dir", str(claims)])
    assert rc == 1 and "lists Z9, which no paper registers" in capsys.readouterr().err


# ---- 8. the alias bomb given straight to Snakemake: documented, not fixable in the Snakefile ----------

def test_the_snakemake_alias_bomb_limit_is_documented():
    """Snakemake 9 merges every --configfile (ConfigSettings.__post_init__ -> update_config, which walks a
    nested-mapping bomb exponentially) before it reads the Snakefile: the Snakefile cannot refuse it, so
    docs/reliability.md says to go through `python -m ntkrepro.configcheck --snakemake`."""
    text = (ROOT / "docs" / "reliability.md").read_text()
    assert "configcheck --snakemake" in text and "ConfigSettings" in text


# ---- loud but unclear: decisive verify / judge / fill ----------------------------------------------

def _tmp_archive(tmp_path, names=("seed01_m008", "seed01_m016")):
    arch = tmp_path / "archive"
    (arch / "A1" / "cells").mkdir(parents=True)
    for n in names:
        shutil.copy(_cell("A1", n), arch / "A1" / "cells")
    data = _plan_dict()
    data["decisive"]["archive"] = str(arch)
    return arch, data


def _verify(tmp_path, data, capsys):
    p = _write_plan(tmp_path, data)
    rc = decisive.main(["verify", "--plan", str(p)])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return rc, out.out, out.err


@pytest.mark.parametrize("case,needle", [
    ("empty", "seed01_m032.json: not a JSON cell (0 bytes, empty"),
    ("truncated", "seed01_m032.json: not a JSON cell (100 bytes"),
    ("directory", "seed01_m032.json: a directory, not an archived cell file"),
    ("duplicate", "seed02_m008.json: holds the cell seed01_m008 (seed 1, width 8), not seed02_m008"),
    ("edited", "run `snakemake decide --configfile config/decisive.yaml` to recompute it"),
])
def test_verify_names_a_broken_cell_without_traceback(tmp_path, capsys, case, needle):
    arch, data = _tmp_archive(tmp_path)
    cells = arch / "A1" / "cells"
    if case == "empty":
        (cells / "seed01_m032.json").write_bytes(b"")
    elif case == "truncated":
        (cells / "seed01_m032.json").write_bytes(_cell("A1", "seed01_m032").read_bytes()[:100])
    elif case == "directory":
        (cells / "seed01_m032.json").mkdir()
    elif case == "duplicate":
        shutil.copy(cells / "seed01_m008.json", cells / "seed02_m008.json")
    elif case == "edited":
        d = read_json(cells / "seed01_m016.json")
        d["rows"][0]["lin_error"] = 0.0
        write_json(cells / "seed01_m016.json", d)
    rc, out, err = _verify(tmp_path, data, capsys)
    assert rc == 1 and needle in err, err
    assert "seed01_m008.json: ok" in out  # the intact cells are still verified


@pytest.mark.parametrize("edit,needle", [
    (lambda d: d["decisive"].__setitem__("max_file_bytes", "abc"),
     "decisive.max_file_bytes must be a positive whole number of bytes (1048576 = 1 MiB), got 'abc' (text)"),
    (lambda d: d.__setitem__("decisive", [1, 2]), "`decisive` is a list, not a mapping"),
    (lambda d: d["decisive"].__setitem__("claims", ["A1"]), "decisive.claims is a list"),
    (lambda d: d["decisive"]["claims"]["A1"].pop("section"), "decisive.claims.A1: a `run` claim needs section"),
    (lambda d: d["decisive"]["claims"]["A1"].__setitem__("cell", ["seeds", "depths"]),
     "decisive.claims.A1.cell names 'depths', but section.depths is missing"),
    (lambda d: d["decisive"]["claims"]["A1"].pop("mem_mb"), "decisive.claims.A1 lacks mem_mb: the plan is an overlay"),
    (lambda d: d["decisive"]["claims"]["A1"].__setitem__("cell_function", "scaling.run_a1_cell"),
     "decisive.claims.A1.cell_function: 'scaling.run_a1_cell' is not 'package.module:function'"),
])
def test_a_bad_plan_is_named_by_key(tmp_path, capsys, edit, needle):
    _, data = _tmp_archive(tmp_path)
    edit(data)
    rc, _, err = _verify(tmp_path, data, capsys)
    assert rc == 1 and needle in err and "decisive.yaml" in err, err


def test_snakemake_decide_names_the_overlay_and_the_claim(tmp_path):
    over = tmp_path / "my_overlay.yaml"
    over.write_text("decisive:\n  archive: archive/decisive\n  max_file_bytes: 1048576\n"
                    "  claims:\n    A1: {status: run, scale: paper}\n")
    snakemake = str(Path(sys.executable).parent / "snakemake")
    out = subprocess.run([snakemake, "-n", "--cores", "1", "decide", "--configfile", str(over)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    text = out.stdout + out.stderr
    assert out.returncode != 0 and f"{over}: decisive.claims.A1: a `run` claim needs cell" in text, text[-2000:]


def test_plan_file_missing_or_a_directory(tmp_path, capsys):
    for p in (tmp_path / "nope.yaml", tmp_path):
        assert decisive.main(["verify", "--plan", str(p)]) == 1
        err = capsys.readouterr().err
        assert str(p) in err and "not the decisive plan" in err and "Traceback" not in err


@pytest.mark.parametrize("claim,needle", [
    ("Z9", "Z9: not a claim of"),
    ("H4", "H4: "),
])
def test_judge_an_unknown_or_gpu_only_claim(tmp_path, capsys, claim, needle):
    _, data = _tmp_archive(tmp_path)
    # a claim planned for a GPU only (H4 was, before issue 37 planned it on the CPU)
    data["decisive"]["claims"]["H4"] = {"status": "gpu_only", "scale": "paper", "size": {"n_train": 50000},
                                        "reason": "GPU only (a test plan)"}
    p = _write_plan(tmp_path, data)
    rc = decisive.main(["judge", claim, "--plan", str(p), "--out", str(tmp_path / "j.json")])
    err = capsys.readouterr().err
    assert rc == 1 and needle in err and "Traceback" not in err
    if claim == "H4":
        assert "plans no archived cells for it (status gpu_only" in err


def test_judge_refuses_a_duplicate_cell_by_name(tmp_path):
    arch, data = _tmp_archive(tmp_path)
    cells = arch / "A1" / "cells"
    shutil.copy(cells / "seed01_m008.json", cells / "seed02_m008.json")
    with pytest.raises(decisive.ArchiveError, match="holds the cell seed01_m008"):
        decisive.judge("A1", data["decisive"]["claims"]["A1"], arch)


def test_fill_names_a_file_archive_an_unknown_function_and_a_missing_cell_key(tmp_path):
    spec = copy.deepcopy(_plan_dict()["decisive"]["claims"]["A1"])
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(decisive.ArchiveError, match="archive .*file: a file, not the archive folder"):
        decisive.fill("A1", spec, f)
    bad = {**spec, "cell_function": "ntkrepro.arda2026.scaling:no_such_cell"}
    with pytest.raises(decisive.ArchiveError, match=r"A1\.cell_function: 'ntkrepro\.arda2026\.scaling:no_such_cell' "
                                                    "is not a function of the library"):
        decisive.fill("A1", bad, tmp_path / "a")
    bad = {**spec, "cell": ["seeds", "width"]}
    with pytest.raises(decisive.ArchiveError, match=r"A1\.cell names 'width', but section\.width is missing"):
        decisive.fill("A1", bad, tmp_path / "a")
    assert not (tmp_path / "a").exists()


# ---- loud but unclear: amendment log, ledger, gpu_run ---------------------------------------------

def test_amendment_log_names_a_broken_claims_toml_and_a_missing_lock(tmp_path, repo_root):
    from ntkrepro import amendment_log as al
    from ntkrepro.papers import PAPERS

    for paper in PAPERS:
        t = al.claims_file(paper, tmp_path)
        t.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(al.claims_file(paper, repo_root), t)
    missing = tmp_path / "no_lock.json"
    problems = al.check(tmp_path, missing)
    assert len(problems) == 1 and "the amendment-log lock is missing" in problems[0] and "restore it" in problems[0]
    with pytest.raises(ValueError, match="the amendment-log lock is missing"):
        al.lock(tmp_path, missing)
    assert not missing.exists()
    broken = al.claims_file("framework", tmp_path)
    broken.write_text(broken.read_text() + "\n[[F1.amendments]\n")
    with pytest.raises(ValueError, match=r"framework/claims\.toml: not valid TOML"):
        al.check(tmp_path, al.LOCK_FILE)


def test_ledger_evaluate_refuses_a_negative_replicate_and_out_below_a_file(tmp_path, capsys):
    from ntkrepro import ledger

    f = tmp_path / "file"
    f.write_text("x")
    base = ["evaluate", "F1", "--results", str(f), "--scale", "smoke"]
    with pytest.raises(SystemExit) as ex:
        ledger.main([*base, "--out", str(tmp_path / "e.json"), "--replicate", "-1"])
    assert ex.value.code == 2 and "--replicate -1: a replicate index is 0" in capsys.readouterr().err
    with pytest.raises(SystemExit) as ex:
        ledger.main([*base, "--out", str(f / "e.json")])
    assert ex.value.code == 2 and f"{f} is a file, not a folder" in capsys.readouterr().err


def test_gpu_run_names_a_missing_data_root(tmp_path, capsys):
    from ntkrepro.device import cli

    with pytest.raises(SystemExit) as ex:
        cli.main(["--out", str(tmp_path / "o"), "--data-root", str(tmp_path / "nope"), "--tiers", "smoke"])
    assert ex.value.code == 2 and "--data-root" in (err := capsys.readouterr().err) and "no such folder" in err


# ---- loud but unclear: CIFAR-10 archives (ntkrepro.data.archive; ntkrepro.data.cifar10 is untouched: it is
# in H5's compute code) ---------------------------------------------------------------------------------

def test_cifar_empty_train_batches_are_named_empty_not_byte_identical(tmp_path):
    from test_cifar10 import _batch, _make_archive

    from ntkrepro.data.archive import ArchiveError
    from ntkrepro.data.cifar10 import load_cifar10

    batches = [_batch(3, i) for i in range(6)]
    _make_archive(tmp_path / "c.tar.gz", batches, extra={"cifar-10-batches-py/data_batch_1": b"",
                                                         "cifar-10-batches-py/data_batch_2": b""})
    with pytest.raises(ArchiveError, match=r"member cifar-10-batches-py/data_batch_1 is empty \(0 bytes\)") as err:
        load_cifar10(tmp_path / "c.tar.gz")
    assert "byte-identical" not in str(err.value)


def test_cifar_archive_that_is_a_directory_is_named(tmp_path):
    from ntkrepro.data.archive import ArchiveError
    from ntkrepro.data.cifar10 import resolve_cifar10

    (tmp_path / "cifar-10-python-subset.tar.gz").mkdir()
    with pytest.raises(ArchiveError, match=r"cifar-10-python-subset\.tar\.gz is a directory, not the archive file"):
        resolve_cifar10({"archive": "cifar-10-python-subset.tar.gz", "sha256": "a" * 64, "download": False}, tmp_path,
                        resources_dir=tmp_path / "res")
