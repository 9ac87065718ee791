"""Issue 32 (third bad-input round): each defect with a test that failed before its fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ntkrepro import configcheck
from ntkrepro.configcheck import ConfigError

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")


def _load(scale):
    return yaml.safe_load((ROOT / "config" / f"{scale}.yaml").read_text())


def _bomb(tmp_path, levels=9, fanout=10):
    lines = ["a0: &a0 [1.0, 2.0]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fanout) + "]" for i in range(1, levels + 1)]
    p = tmp_path / "bomb.yaml"
    p.write_text("\n".join(lines) + "\n")
    return p


# ---- config alias bomb, deep nesting, binary file -------------------------------------------------

def test_alias_bomb_is_refused_in_milliseconds_naming_the_file(tmp_path):
    p = _bomb(tmp_path)
    with pytest.raises(ConfigError, match=r"bomb\.yaml: its aliases .* expand to more than"):
        configcheck.load_strict(p)


def test_nonfinite_keys_walks_a_shared_object_once():
    leaf = [1.0, float("nan")]
    node = leaf
    for _ in range(40):  # 2**40 paths if walked as a tree
        node = {"x": node, "y": node}
    assert configcheck.nonfinite_keys({"top": node}) == ["top" + ".x" * 40 + "[1]"]


def test_a_few_aliases_are_still_fine(tmp_path):
    p = tmp_path / "ok.yaml"
    p.write_text("base: &b {n_boot: 10}\nother: *b\n")
    assert configcheck.load_strict(p) == {"base": {"n_boot": 10}, "other": {"n_boot": 10}}


def test_deep_nesting_is_a_clear_error_not_a_recursion_error(tmp_path):
    p = tmp_path / "deep.yaml"
    p.write_text("x: " + "[" * 2000 + "]" * 2000 + "\n")
    with pytest.raises(ConfigError, match=r"deep\.yaml: nested too deeply"):
        configcheck.load_strict(p)
    p.write_text("x: " + "[" * 60 + "]" * 60 + "\n")  # parses, but deeper than any config
    with pytest.raises(ConfigError, match=r"deep\.yaml: nested \d+ levels deep .*more than 50"):
        configcheck.load_strict(p)


def test_binary_file_names_the_file(tmp_path):
    p = tmp_path / "bin.yaml"
    p.write_bytes(b"\x00\x01\xff\xfe")
    with pytest.raises(ConfigError, match=r"bin\.yaml: not a text file"):
        configcheck.load_strict(p)


# ---- seeds and sizes out of range; memory estimate -----------------------------------------------

@pytest.mark.parametrize("key,value,needle", [
    ("seed", 1e23, "hron2020.H1.seed: 1e+23 is outside [0, 4294967295]"),
    ("seed", -1, "hron2020.H1.seed: -1 is outside"),
    ("seed", 2.5, "hron2020.H1.seed: 2.5 is not a whole number"),
    ("n_boot", 1e12, "hron2020.H1.n_boot: 1000000000000.0 is outside [0, 2147483647]"),
    ("n_boot", "1e12", "hron2020.H1.n_boot: '1e12' is text, not a number"),
])
def test_seed_and_size_out_of_range_are_refused_naming_the_key(key, value, needle):
    cfg = _load("smoke")
    cfg["hron2020"]["H1"][key] = value
    with pytest.raises(ConfigError) as err:
        configcheck.check_values(cfg, "--configfile x.yaml")
    assert needle in str(err.value) and "x.yaml" in str(err.value)


def test_h1_n_draws_beyond_the_machine_is_refused_naming_the_key():
    cfg = _load("smoke")
    cfg["hron2020"]["H1"]["n_draws"] = 10**9
    with pytest.raises(ConfigError, match=r"hron2020\.H1\.n_draws needs at least 7\d\d GiB"):
        configcheck.check_memory(cfg, "the merged config", memory=64 * 2**30)
    configcheck.check_memory(_load("paper"), "paper", memory=8 * 2**30)  # the paper's sizes fit 8 GiB


@pytest.mark.parametrize("scale", ["smoke", "default", "paper"])
def test_shipped_configs_pass_every_check(scale):
    cfg = _load(scale)
    configcheck.check_values(cfg, scale, user=False)
    configcheck.check_scale_label(cfg, scale, ROOT / "config")


# ---- scale: paper over smoke sizes ---------------------------------------------------------------

def test_scale_paper_over_smoke_sizes_is_refused():
    cfg = _load("smoke")
    cfg["scale"] = "paper"
    with pytest.raises(ConfigError, match="scale: paper, but its sizes are those of config/smoke.yaml"):
        configcheck.check_scale_label(cfg, "the merged config", ROOT / "config")
    paper = _load("paper")
    paper["hron2020"]["H1"]["n_boot"] = 7  # a few sizes changed: still paper
    configcheck.check_scale_label(paper, "the merged config", ROOT / "config")


# ---- through snakemake ------------------------------------------------------------------------------

def _dry(*configfiles, target="results/claims/H2.json"):
    return subprocess.run([SNAKEMAKE, "-n", "--cores", "1", target, "--configfile", *map(str, configfiles)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_snakemake_refuses_alias_bomb_quickly(tmp_path):
    out = _dry(ROOT / "config/smoke.yaml", _bomb(tmp_path))
    assert out.returncode != 0 and "bomb.yaml: its aliases" in out.stdout + out.stderr


@pytest.mark.parametrize("rd", ["results/", "./results", "./results/"])
def test_results_dir_spelling_is_normalised(tmp_path, rd):
    over = tmp_path / "rd.yaml"
    over.write_text(f"results_dir: {rd}\n")
    out = _dry(ROOT / "config/smoke.yaml", over)
    assert out.returncode == 0, (out.stdout + out.stderr)[-2000:]
    assert "No rule to produce" not in out.stdout + out.stderr


# ---- the NaN rule: a NaN never counts as a refutation or a rejected control ----------------------

import dataclasses  # noqa: E402
import json  # noqa: E402

import numpy as np  # noqa: E402

from ntkrepro import ledger  # noqa: E402
from ntkrepro.io import TamperedFileError, read_json, seal, write_json, write_npz  # noqa: E402
from ntkrepro.ledger import Evaluation, Verdict  # noqa: E402
from ntkrepro.stats import Interval  # noqa: E402

ALL_CLAIMS = sorted(ledger.registered_claims())


def test_every_claim_is_covered():
    assert len(ALL_CLAIMS) >= 21


@pytest.mark.parametrize("cid", ALL_CLAIMS)
def test_nan_rule_for_every_registered_criterion_and_control(cid, monkeypatch):
    """The generic layer for each registered claim and each of its registered controls: a criterion
    that says not_reproduced on measured values holding a NaN (in an interval, a list, a plain number)
    gives inconclusive, naming the value; its control is not rejected; a finite refutation stays one."""
    spec = ledger.get_claim(cid)
    assert spec.controls, f"{cid} has no control"

    def fake(results, scale):
        x = results["fake"]["x"]
        return Evaluation({"effect": Interval(x, x - 1.0, x + 1.0), "per_width": [1.0, x]},
                          Verdict.NOT_REPRODUCED, f"effect {x}")

    monkeypatch.setitem(ledger._REGISTRY, cid, dataclasses.replace(spec, evaluate=fake))
    for c in spec.controls:
        ledger.control_function(cid, c.name)  # every pre-registered control has its function
        monkeypatch.setitem(ledger._CONTROLS, (cid, c.name), lambda r: r)
    e = ledger.make_evaluation(cid, {"fake": {"x": float("nan")}}, scale="smoke")
    if not spec.seed_claim:  # CLAIMS.md rule 9 (issue 38): measured and reported, no verdict to cap
        assert e["verdict"] == ledger.NOT_A_CLAIM and e["criterion_verdict"] is None
        assert all(c["verdict"] == ledger.NOT_A_CLAIM and not c["rejected"] for c in e["controls"])
        return
    assert e["criterion_verdict"] == "not_reproduced" and e["verdict"] == "inconclusive"
    assert "effect.value" in e["reason"] and ledger.NAN_NOT_EVIDENCE in e["reason"]
    assert e["power"] and "NaN" in e["power"][-1]["text"]
    assert all(c["verdict"] == "inconclusive" and not c["rejected"] for c in e["controls"])
    assert len(e["controls"]) == len(spec.controls)
    assert ledger.check_controls(e) == []
    e = ledger.make_evaluation(cid, {"fake": {"x": 3.0}}, scale="smoke")  # finite: the refutation stands
    assert e["verdict"] == "not_reproduced" and all(c["rejected"] for c in e["controls"])


def test_nan_rule_leaves_reproduced_and_infinite_intervals_alone():
    v, r, cap = ledger.apply_nan_rule(Verdict.NOT_REPRODUCED, "x", {"a": {"value": 1.0, "ci_low": -np.inf}})
    assert v is Verdict.NOT_REPRODUCED and cap is None
    v, r, cap = ledger.apply_nan_rule(Verdict.NOT_REPRODUCED, "x", {"a": [1.0, {"b": np.float64("nan")}]})
    assert v is Verdict.INCONCLUSIVE and "a[1].b" in r


def test_g1_nan_at_any_site_is_inconclusive_not_ignored():
    from ntkrepro.hazelden2026 import claims as g

    kinds = ["embed", "q", "k", "v", "o", "mlp_in", "mlp_out", "readout"]
    sites = [{"site": k, "kind": k, "rel_error": 1e-17, "control_rel_error": 0.5} for k in kinds]
    sites[3]["rel_error"] = float("nan")  # not the first site: Python's max ignored it
    r = {"G1_kronecker_transformer": {
        "dtypes": {"float64": {"sites": sites}, "float32": {"sites": [dict(s, rel_error=1e-8) for s in sites]}},
        "params": dict(d_in=16, d_model=64, n_heads=1, d_mlp=128, n_layers=3, seq_len=50, batch=8, n_units=4, seed=0)}}
    ev = g.evaluate_g1(r, "paper")
    assert ev.verdict is Verdict.INCONCLUSIVE and np.isnan(ev.measured["max_rel_error_float64"])
    assert any("NaN" in p.text() for p in ev.power)


def _f1(err, nt_rel=1e-16, control=None):
    W = [64, 256, 1024, 4096]
    r = {"widths": W, "rel_error": err, "rel_error_of_seed_mean": [0.01] * 4,
         "closed_vs_neural_tangents_max_rel": nt_rel, "params": {"n_boot": 200, "seed": 0}}
    if control is not None:
        r["controls"] = {"wrong_constant": control}
    return {"F1_linear_attention": r}


def test_f1_nan_control_is_not_rejected_and_nan_run_is_not_a_refutation():
    rng = np.random.default_rng(0)
    good = (2.0 * np.array([64, 256, 1024, 4096.0])[:, None] ** -0.5 * np.exp(rng.normal(0, .03, (4, 6)))).tolist()
    nan = np.full((4, 6), np.nan).tolist()
    ctrl = {"widths": [64, 256, 1024, 4096], "rel_error": nan, "rel_error_of_seed_mean": [np.nan] * 4,
            "closed_vs_neural_tangents_max_rel": float("nan")}
    e = ledger.make_entry("F1", _f1(good, control=ctrl), scale="default")
    (c,) = e["controls"]
    assert not c["rejected"] and c["verdict"] != "not_reproduced"
    assert c["verdict"] == "inconclusive" and "NaN" in c["nan"]
    # the control's refutation rested on a NaN: nothing shows the criterion could fail here
    assert e["criterion_verdict"] == "reproduced" and e["verdict"] == "inconclusive"
    assert "control 'wrong_constant'" in e["reason"] and ledger.check_controls(e) == []
    e = ledger.make_entry("F1", _f1(good, nt_rel=float("nan"), control=ctrl), scale="default")
    assert e["verdict"] == "inconclusive" and "closed_vs_nt_max_rel" in e["reason"]


# ---- seals, canonical hashes, replicate summaries, the index, the table ---------------------------

@pytest.fixture
def f96():
    """A throw-away claim F96 (reproduced iff effect > 0) with a control the criterion rejects."""
    spec = ledger.ClaimSpec("F96", "framework", "s", "c", controls=(ledger.ControlSpec("null", "w", "y"),))

    @ledger.register(spec)
    def _evaluate(results, scale):
        r = results["F96_x"]
        x = float(r["effect"]) if "effect" in r else float(np.asarray(r["arr"]).sum())
        return Evaluation({"effect": x}, ledger.decide(reproduced=x > 0, refuted=x < 0), f"effect {x}")

    ledger.register_control("F96", "null")(lambda r: {"F96_x": {"effect": -1.0}})
    yield
    ledger._REGISTRY.pop("F96", None)
    ledger._CONTROLS.pop(("F96", "null"), None)


def _run(args, capsys):
    rc = ledger.main(args)
    return rc, capsys.readouterr().err


def _chain(root: Path, capsys, replicates=2, effects=(1.0, 2.0)):
    """results -> evaluation -> entry for replicate 1, then for the headline (replicate 0), then the table."""
    claims = root / "claims"
    reps = []
    for r in range(replicates - 1, -1, -1):
        base = root if r == 0 else root / "replicates" / f"r{r}"
        res = base / "framework" / "F96_x.json"
        write_json(res, seal({"effect": effects[r], "provenance": {"scale": "smoke"}}))
        ev = base / "claims" / "evaluations" / "F96.json"
        entry = base / "claims" / "F96.json"
        assert ledger.main(["evaluate", "F96", "--results", str(res), "--scale", "smoke", "--replicate", str(r),
                            "--out", str(ev)]) == 0
        assert ledger.main(["entry", "F96", "--evaluation", str(ev), "--out", str(entry)]
                           + (["--replicate-entries", *map(str, reps)] if r == 0 and reps else [])) == 0
        reps.append(entry)
    rc = ledger.main(_table_args(claims))
    assert rc == 0, capsys.readouterr().err
    capsys.readouterr()
    return claims


def _table_args(claims):
    return ["table", str(claims / "F96.json"), "--csv", str(claims / "t.csv"), "--md", str(claims / "t.md"),
            "--tex", str(claims / "t.tex"), "--index", str(claims / "index.json"), "--expected", "F96",
            "--replicates", "2", "--replicated", "F96"]


def test_intact_replicated_chain_passes(tmp_path, f96, capsys):
    claims = _chain(tmp_path, capsys)
    rc, err = _run(["check", "--claims-dir", str(claims)], capsys)
    assert rc == 0, err


@pytest.mark.parametrize("edit,needle", [
    (lambda e: e["replicates"][1].__setitem__("verdict", "not_reproduced"), "replicates[1]"),
    (lambda e: e["replicates"][1].__setitem__("headline", "effect = 9"), "replicates[1]"),
    (lambda e: e["replicates"][1].__setitem__("controls", []), "replicates[1]"),
    (lambda e: e["replicates"][0].__setitem__("headline", "effect = 9"), "replicates[0]"),
    (lambda e: (e["replicates"][1].__setitem__("verdict", "not_reproduced"), e.__setitem__("stable", False)),
     "replicates[1]"),
    (lambda e: (e["replicates"].pop(), e.__setitem__("stable", None)), "replicate"),
])
def test_edited_replicate_summary_or_stable_is_found(tmp_path, f96, capsys, edit, needle):
    claims = _chain(tmp_path, capsys)
    e = read_json(claims / "F96.json")
    edit(e)
    write_json(claims / "F96.json", e)
    rc, err = _run(["check", "--claims-dir", str(claims)], capsys)
    assert rc == 1 and needle in err and "F96.json" in err, err
    # and the claims table (the report's input) is not built from it
    rc, err = _run(_table_args(claims), capsys)
    assert rc == 1 and needle in err and "no claims table is written" in err


def test_table_refuses_an_edited_entry_naming_the_file(tmp_path, f96, capsys):
    claims = _chain(tmp_path, capsys)
    (claims / "t.csv").unlink()
    e = read_json(claims / "F96.json")
    write_json(claims / "F96.json", {**e, "verdict": "not_reproduced", "replicates": [
        {**e["replicates"][0], "verdict": "not_reproduced"}, e["replicates"][1]], "stable": False})
    rc, err = _run(_table_args(claims), capsys)
    assert rc == 1 and "F96.json" in err and not (claims / "t.csv").exists()


def test_empty_claims_index_is_refused(tmp_path, f96, capsys):
    claims = _chain(tmp_path, capsys)
    write_json(claims / "index.json", {"claims": [], "replicates": {}})
    rc, err = _run(["check", "--claims-dir", str(claims)], capsys)
    assert rc == 1 and "index.json lists no claims" in err


def test_reformatted_files_are_no_false_alarm_but_edits_are_found(tmp_path, f96, capsys):
    claims = _chain(tmp_path, capsys)
    for p in (claims / "evaluations" / "F96.json", tmp_path / "framework" / "F96_x.json",
              tmp_path / "replicates" / "r1" / "claims" / "F96.json"):
        data = json.loads(p.read_text())
        p.write_text(json.dumps(dict(reversed(list(data.items()))), indent=7) + "\n\n")  # whitespace, key order
    rc, err = _run(["check", "--claims-dir", str(claims)], capsys)
    assert rc == 0, err
    res = tmp_path / "framework" / "F96_x.json"
    res.write_text(res.read_text().replace('"effect": 1.0', '"effect": -1.0'))
    rc, err = _run(["check", "--claims-dir", str(claims)], capsys)
    assert rc == 1 and "F96_x.json" in err


def test_unsealed_results_are_refused_by_evaluate_and_check(tmp_path, f96, capsys):
    claims = _chain(tmp_path, capsys)
    res = tmp_path / "framework" / "F96_x.json"
    data = read_json(res)
    del data["provenance"]["content_sha256"]
    data["effect"] = -5.0  # the edit that flipped the verdict on rerun
    write_json(res, data)
    with pytest.raises(TamperedFileError, match="carries no seal"):
        ledger.load_results([res])
    rc, err = _run(["evaluate", "F96", "--results", str(res), "--scale", "smoke", "--out",
                    str(claims / "evaluations" / "F96.json")], capsys)
    assert rc == 1 and "F96_x.json: carries no seal" in err


def test_npz_results_are_sealed_and_an_edit_is_refused(tmp_path, f96, capsys):
    p = tmp_path / "framework" / "F96_x.npz"
    write_npz(p, {"arr": np.array([1.0, 2.0])}, provenance={"scale": "smoke"})
    assert float(np.asarray(ledger.load_results([p])["F96_x"]["arr"]).sum()) == 3.0
    with np.load(p) as z:
        payload = {k: z[k] for k in z.files}
    payload["arr"] = np.array([-1.0, -2.0])  # edit the array, keep the old provenance (and seal)
    with open(p, "wb") as fh:
        np.savez(fh, **payload)
    with pytest.raises(TamperedFileError, match="F96_x.npz: its arrays or provenance changed"):
        ledger.load_results([p])
    with open(p, "wb") as fh:  # no provenance at all: unsealed
        np.savez(fh, arr=np.array([1.0]))
    with pytest.raises(TamperedFileError, match="F96_x.npz: carries no seal"):
        ledger.load_results([p])


# ---- ledger evaluate: --scale gpu, clear errors --------------------------------------------------

def test_evaluate_scale_gpu_runs_and_a_scale_mismatch_is_refused(tmp_path, f96, capsys):
    res = tmp_path / "framework" / "F96_x.json"
    write_json(res, seal({"effect": 1.0, "provenance": {"scale": "gpu"}}))
    ev = tmp_path / "claims" / "evaluations" / "F96.json"
    rc, err = _run(["evaluate", "F96", "--results", str(res), "--scale", "gpu", "--out", str(ev)], capsys)
    assert rc == 0, err
    assert read_json(ev)["scale"] == "gpu"
    rc, err = _run(["evaluate", "F96", "--results", str(res), "--scale", "paper", "--out", str(ev)], capsys)
    assert rc == 1 and "computed at scale 'gpu', not --scale paper" in err


def test_evaluate_names_unknown_claim_binary_file_and_wrong_results(tmp_path, f96, capsys):
    res = tmp_path / "F96_x.json"
    write_json(res, seal({"effect": 1.0}))
    out = str(tmp_path / "e.json")
    rc, err = _run(["evaluate", "Q7", "--results", str(res), "--scale", "smoke", "--out", out], capsys)
    assert rc == 2 and "Q7" in err and "registered claims" in err and "Traceback" not in err
    rc, err = _run(["evaluate", "H99", "--results", str(res), "--scale", "smoke", "--out", out], capsys)
    assert rc == 2 and "H99" in err
    binary = tmp_path / "H2_average_pooling.json"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    rc, err = _run(["evaluate", "H2", "--results", str(binary), "--scale", "smoke", "--out", out], capsys)
    assert rc == 1 and "H2_average_pooling.json is not JSON text" in err
    rc, err = _run(["evaluate", "H2", "--results", str(res), "--scale", "smoke", "--out", out], capsys)
    assert rc == 1 and "do not hold what claim H2's criterion reads" in err


# ---- IMDb: empty reviews named by archive member, invalid UTF-8 counted and warned once -----------

def _imdb_archive(tmp_path, extra):
    sys.path.insert(0, str(ROOT / "tests"))
    from test_imdb import make_archive

    return make_archive(tmp_path / "a.tar.gz", extra=extra)


def test_imdb_empty_review_is_named_by_archive_member(tmp_path):
    from ntkrepro.data import imdb
    from ntkrepro.data.archive import ArchiveError

    p = _imdb_archive(tmp_path, [("aclImdb/train/pos/77_9.txt", b"  <br /> ")])
    with pytest.raises(ArchiveError, match=r"aclImdb/train/pos/77_9\.txt"):
        imdb.read_reviews(p)


def test_imdb_invalid_utf8_is_counted_and_warned_once(tmp_path, caplog):
    from ntkrepro.data import imdb

    p = _imdb_archive(tmp_path, [("aclImdb/train/pos/77_9.txt", b"good \xff\xfe film"),
                                 ("aclImdb/test/neg/78_1.txt", b"bad \xc3 film")])
    report: dict = {}
    with caplog.at_level("WARNING", logger="ntkrepro.data.imdb"):
        revs = imdb.read_reviews(p, report=report)
    assert report["invalid_utf8"] == 2 and "aclImdb/train/pos/77_9.txt" in report["invalid_utf8_members"]
    lines = [r for r in caplog.records if "not valid UTF-8" in r.getMessage()]
    assert len(lines) == 1 and "2 review(s)" in lines[0].getMessage()
    assert any("\ufffd" in r.text for r in revs["train"])


# ---- kernels: empty batch, huge ridge ------------------------------------------------------------

def test_fast_kernel_on_an_empty_batch_is_an_empty_kernel():
    from ntkrepro.kernels import fast

    kf = fast.kernel_fn(fast.serial(fast.Dense(8), fast.Relu(), fast.Dense(1)))
    x0, x3 = np.zeros((0, 5), np.float32), np.ones((3, 5), np.float32)
    assert [np.shape(k) for k in kf(x0, None)] == [(0, 0), (0, 0)]
    assert [np.shape(k) for k in kf(x0, x3)] == [(0, 3), (0, 3)]
    assert np.shape(kf(x3, x0, get="nngp")) == (3, 0)


def test_huge_finite_ridge_is_refused_not_scored():
    from ntkrepro.kernels.inference import kernel_regression

    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 4))
    k = a @ a.T + np.eye(6)
    y = np.eye(2)[[0, 1, 0, 1, 0, 1]]
    with pytest.raises(ValueError, match="diag_reg=1e\\+308 times the kernel's mean diagonal overflows"):
        kernel_regression(k, k[:2], y, 1.0e308)
    assert np.all(np.isfinite(kernel_regression(k, k[:2], y, 1.0e6)))


# ---- claim_map --sync-readme and gpu_run arguments -------------------------------------------------

def _readme(tmp_path):
    from ntkrepro import claim_map

    table = tmp_path / "t.md"
    table.write_text(f"{claim_map.BEGIN}\n| new |\n{claim_map.END}\n")
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{claim_map.BEGIN}\n| old |\n{claim_map.END}\noutro\n")
    return claim_map, table, readme


def test_sync_readme_replaces_only_the_map(tmp_path, capsys):
    cm, table, readme = _readme(tmp_path)
    assert cm.main(["--sync-readme", str(table), str(readme)]) == 0
    assert readme.read_text() == f"intro\n{cm.BEGIN}\n| new |\n{cm.END}\noutro\n"


@pytest.mark.parametrize("case", ["garbage", "readme_as_table", "same_file", "missing_table", "no_markers"])
def test_sync_readme_refuses_what_is_not_a_claim_map(tmp_path, capsys, case):
    cm, table, readme = _readme(tmp_path)
    before = readme.read_text()
    args = [str(table), str(readme)]
    if case == "garbage":
        table.write_text("garbage\n")
    elif case == "readme_as_table":
        other = tmp_path / "R2.md"
        other.write_text(before)
        args = [str(other), str(readme)]
    elif case == "same_file":
        args = [str(readme), str(readme)]
    elif case == "missing_table":
        args = [str(tmp_path / "nope.md"), str(readme)]
    elif case == "no_markers":
        readme.write_text("just text\n")
        before = readme.read_text()
    rc = cm.main(["--sync-readme", *args])
    err = capsys.readouterr().err
    assert rc == 1 and readme.read_text() == before and "Traceback" not in err
    assert {"garbage": "t.md is not a generated claim map", "readme_as_table": "holds text besides one claim map",
            "same_file": "same file", "missing_table": "nope.md", "no_markers": "has no claim map"}[case] in err


@pytest.mark.parametrize("args,needle", [
    (["--budget-s", "nan"], "--budget-s must be a positive number"),
    (["--budget-s", "-5"], "--budget-s must be a positive number"),
    (["--budget-s", "inf"], "--budget-s must be a positive number"),
])
def test_gpu_run_refuses_a_bad_budget(tmp_path, capsys, args, needle):
    from ntkrepro.device import cli

    with pytest.raises(SystemExit) as ex:
        cli.main(["--out", str(tmp_path / "o"), *args])
    assert ex.value.code == 2 and needle in capsys.readouterr().err
    assert not (tmp_path / "o" / "hron2020").exists()


def test_gpu_run_bad_out_is_a_clear_error(tmp_path, capsys):
    from ntkrepro.device import cli

    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(SystemExit) as ex:
        cli.main(["--out", str(f)])
    assert ex.value.code == 2 and "is a file, not a folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as ex:
        cli.main(["--out", str(f / "sub")])
    assert ex.value.code == 2 and "cannot write there" in capsys.readouterr().err


# ---- a config edit reruns only the jobs that read the edited section (slow: a simulated run) -------

@pytest.mark.slow
def test_a_config_edit_reruns_only_the_chain_that_reads_it(tmp_path):
    """hron2020.H2.n_boot edited after a complete run: the whole-config hash used to be in every
    compute command, so H3, F1, F3 ... reran too. Now H2's compute rule alone reruns (then its
    evaluation, figure and entry, the table and the report)."""
    import re

    sys.path.insert(0, str(ROOT / "tests"))
    from test_reliability_dag import _completed_run, _job_counts, _smk

    repo, results, over, outputs = _completed_run(tmp_path)
    h2 = yaml.safe_load((ROOT / "config/smoke.yaml").read_text())["hron2020"]["H2"]
    edit = tmp_path / "edit.yaml"
    edit.write_text(yaml.safe_dump({"hron2020": {"H2": {"n_boot": int(h2["n_boot"]) + 1}}}))
    out = _smk(repo, "-n", "all", results=results, extra_configfiles=(*over, edit))
    assert out.returncode == 0
    jobs = _job_counts(out.stdout)
    compute = {r for r in jobs if re.sub(r"^rep\d+_", "", r) not in {"figure", "claim_evaluation", "claim_ledger_entry",
                                                                      "claims_table", "replication_report", "all"}}
    assert compute == {"H2_hron2020_average_pooling"}, jobs
    assert jobs.get("claim_evaluation") == 1 and jobs.get("claim_ledger_entry") == 1, jobs


# ---- the --configfile check before Snakemake parses the files ---------------------------------------

def test_configfiles_of_a_snakemake_command_line():
    args = ["-n", "all", "--configfile", "a.yaml", "b.yaml", "--cores", "1", "--configfiles=c.yaml"]
    assert configcheck.configfiles_of(args) == ["a.yaml", "b.yaml", "c.yaml"]


@pytest.mark.parametrize("content,needle", [
    (b"", "is empty"), (b"- a\n- b\n", "holds a list"), (b"scale:\tsmoke\n", "not valid YAML"),
    (b"\x00\x01\xff", "not a text file"), (None, "is a directory"),
])
def test_snakemake_wrapper_names_the_bad_configfile(tmp_path, capsys, content, needle):
    p = tmp_path / "bad.yaml"
    if content is None:
        p.mkdir()
    else:
        p.write_bytes(content)
    assert configcheck.main(["--snakemake", "-n", "--configfile", "config/smoke.yaml", str(p)]) == 1
    err = capsys.readouterr().err
    assert f"--configfile {p}" in err and needle in err


def _h2(p_real=-0.5, p_ctrl=0.02, nan_real=False, nan_ctrl=False):
    def rows(p, nan):
        out = [{"d": d, "spread": Interval(0.5 * d**p, 0.4 * d**p, 0.6 * d**p).as_dict(),
                "nngp_distance": Interval(0.05 * d**p, 0.04 * d**p, 0.06 * d**p).as_dict()}
               for d in (4, 16, 64, 256, 1024)]
        if nan:
            out[2]["spread"] = Interval(float("nan"), float("nan"), float("nan")).as_dict()
        return out

    base = {"n_draws": 10, "n_inputs": 2, "seq_len": 4, "d_in": 8, "tied_linear_scaling_distance": 0.1}
    return {"H2_average_pooling": {**base, "per_d": rows(p_real, nan_real),
                                   "controls": {"sqrt_scaling": {**base, "per_d": rows(p_ctrl, nan_ctrl)}}}}


def test_h2_with_nan_results_is_never_refuted_and_its_control_never_rejected():
    e = ledger.make_entry("H2", _h2(p_real=0.02, nan_real=True), scale="smoke")  # flat AND a NaN
    # H2's criterion alone calls a NaN slope a refutation; the NaN rule does not
    assert e["criterion_verdict"] == "not_reproduced" and e["verdict"] == "inconclusive", e["reason"]
    assert "NaN" in e["reason"]
    assert ledger.make_entry("H2", _h2(p_real=0.02), scale="smoke")["verdict"] == "not_reproduced"  # finite: refuted
    e = ledger.make_entry("H2", _h2(nan_ctrl=True), scale="smoke")
    (c,) = e["controls"]
    assert c["verdict"] == "inconclusive" and not c["rejected"]
    assert e["criterion_verdict"] == "reproduced" and e["verdict"] == "inconclusive"
    assert ledger.make_entry("H2", _h2(), scale="smoke")["verdict"] == "reproduced"  # finite control: rejected
