"""Config validation: a wrong type, an unknown key or a negative size fails before any job runs."""

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate

from ntkrepro.papers import PAPERS

ROOT = Path(__file__).resolve().parents[1]
SCALES = ["smoke", "default", "paper"]
SECTIONS = list(PAPERS)  # one config section (and one schema) per paper of the registry


def _load(scale):
    return yaml.safe_load((ROOT / "config" / f"{scale}.yaml").read_text())


@pytest.mark.parametrize("scale", SCALES)
def test_every_scale_validates(scale):
    cfg = _load(scale)
    validate(copy.deepcopy(cfg), str(ROOT / "workflow/schemas/config.schema.yaml"))
    for section in SECTIONS:
        schema = ROOT / "workflow/schemas" / f"{section}.schema.yaml"
        assert schema.is_file(), f"paper {section} has no schema {schema}"
        validate(copy.deepcopy(cfg[section]), str(schema))


def test_top_level_schema_lists_exactly_the_registered_papers():
    """The top-level schema names each paper section; it must equal ntkrepro.papers.PAPERS."""
    top = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())
    general = {"scale", "results_dir", "data", "report", "replicates", "replicate_claims"}
    assert set(top["required"]) - general == set(PAPERS)
    # replicate_index: set only in a replicate's derived config (ntkrepro.replicates), never in a scale file
    # decisive: the decisive tier's overlay (config/decisive.yaml, sets only this key; never in a scale file)
    assert set(top["properties"]) - general - {"replicate_index", "decisive"} == set(PAPERS)
    for scale in SCALES:
        assert set(_load(scale)) - general == set(PAPERS), scale


def test_every_registered_paper_has_its_pieces():
    """Rule files, report prose and claims module of each registered paper exist (CONTRIBUTING, adding a paper)."""
    for key, paper in PAPERS.items():
        for f in paper.rule_files:
            assert (ROOT / "workflow/rules" / f).is_file(), f
        assert (ROOT / "paper/sections" / f"{key}.tex").is_file()
        assert (ROOT / "src/ntkrepro" / key / "claims.py").is_file()
    listed = {f for p in PAPERS.values() for f in p.rule_files}
    paper_rule_files = {f.name for f in (ROOT / "workflow/rules").glob("*.smk")} - {
        "common.smk", "ledger.smk", "report.smk", "benchmarks.smk", "decisive.smk"}
    assert paper_rule_files == listed, "a rule file is neither shared nor a registered paper's"


def test_no_scale_silently_inherits_a_default_value():
    """Snakemake merges --configfile over config/default.yaml: every default key must be set explicitly."""
    def keys(d, prefix=""):
        out = set()
        for k, v in d.items():
            out.add(prefix + k)
            if isinstance(v, dict):
                out |= keys(v, prefix + k + ".")
        return out

    default = keys(_load("default"))
    for scale in ("smoke", "paper"):
        missing = default - keys(_load(scale))
        assert not missing, f"config/{scale}.yaml lacks {sorted(missing)} (would inherit default's value)"


@pytest.mark.parametrize("mutate,needle", [
    (lambda c: c["hron2020"]["H1"].__setitem__("n_draws", -5), "['H1']['n_draws']"),
    (lambda c: c["hron2020"]["H1"].__setitem__("d", "big"), "['H1']['d']"),
    (lambda c: c["hron2020"]["H2"].__setitem__("typo_key", 1), "'typo_key' was unexpected"),
])
def test_bad_section_value_is_rejected_naming_the_key(mutate, needle):
    cfg = _load("smoke")
    mutate(cfg)
    with pytest.raises(Exception) as err:
        validate(cfg["hron2020"], str(ROOT / "workflow/schemas/hron2020.schema.yaml"))
    assert needle in str(err.value)


@pytest.mark.parametrize("mutate,needle", [
    (lambda c: c.__setitem__("unknown_top_key", 1), "unknown_top_key"),
    (lambda c: c["hron2020"]["H1"].__setitem__("n_draws", -5), "n_draws"),
    (lambda c: c.__setitem__("scale", "huge"), "huge"),
])
def test_snakemake_refuses_bad_config_before_any_job(tmp_path, mutate, needle):
    cfg = _load("smoke")
    mutate(cfg)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    out = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-n", "--cores", "1",
                          "--configfile", str(bad)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert needle in out.stdout + out.stderr
    assert "Job stats" not in out.stdout


# ---- issue 14, item 2: no silent inheritance from config/default.yaml -------------------------

def _dry(tmp_path, *configfiles, extra=()):
    return subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-n", "--cores", "1", *extra,
                           "--configfile", *map(str, configfiles), "--config", f"results_dir={tmp_path / 'res'}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_configfile_missing_keys_is_refused_naming_them(tmp_path):
    """A scale file that forgot H2.seed and the whole framework section used to run the default
    scale's values under its own scale name; now the run stops before any job and names them."""
    cfg = _load("smoke")
    del cfg["hron2020"]["H2"]["seed"]
    del cfg["framework"]
    partial = tmp_path / "my_scale.yaml"
    partial.write_text(yaml.safe_dump(cfg))
    out = _dry(tmp_path, partial)
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "Job stats" not in out.stdout
    assert "hron2020.H2.seed" in text and "framework" in text and "does not set" in text


def test_override_file_after_a_complete_one_is_accepted(tmp_path):
    """Completeness is judged on the merged --configfile content: a small override file listed
    after a complete scale file is fine (e.g. a nested numeric value, which --config would turn
    into a string)."""
    over = tmp_path / "over.yaml"
    over.write_text(yaml.safe_dump({"hron2020": {"H2": {"seed": 7}}}))
    out = _dry(tmp_path, ROOT / "config/smoke.yaml", over)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]


def test_missing_keys_helper():
    from ntkrepro.provenance import missing_keys

    ref = {"a": 1, "b": {"c": 2, "d": {"e": 3}}, "f": {"g": 1}}
    assert missing_keys(ref, {"a": 0, "b": {"c": 0, "d": {}}, "f": None}) == ["b.d.e"]
    assert missing_keys(ref, {}) == ["a", "b", "f"]


# ---- issue 14, item 4: data.* fully validated --------------------------------------------------

@pytest.mark.parametrize("mutate,needle", [
    (lambda c: c["data"]["cifar10"].__setitem__("sha256", 12345), "12345"),
    (lambda c: c["data"]["cifar10"].__setitem__("sha265", "a" * 64), "sha265"),
    (lambda c: c["data"]["imdb"].__setitem__("download", "no"), "download"),
    (lambda c: c["data"]["imdb"].__setitem__("sha256", "ABC"), "sha256"),
    (lambda c: c["data"]["glove"].__setitem__("source", "zip"), "path"),
    (lambda c: c["data"]["glove"].update(source="zip", path="g.zip"), "sha256"),
    (lambda c: c["data"]["glove"].__setitem__("dim", 64), "dim"),
    (lambda c: c["data"].__setitem__("cifar", {}), "cifar"),
    (lambda c: c.__setitem__("results_dir", "res\nults"), "results_dir"),
])
def test_bad_data_value_is_rejected_naming_the_key(mutate, needle):
    cfg = _load("smoke")
    mutate(cfg)
    with pytest.raises(Exception) as err:
        validate(cfg, str(ROOT / "workflow/schemas/config.schema.yaml"))
    assert needle in str(err.value)


def test_results_dir_with_space_is_valid():
    cfg = _load("smoke")
    cfg["results_dir"] = "/tmp/my results/run 1"
    validate(cfg, str(ROOT / "workflow/schemas/config.schema.yaml"))


# ---- issue 22, items 3 and 5: config that would silently mean something else -------------------

def _smoke_with(tmp_path, edit=None, text=None, name="bad.yaml"):
    cfg = _load("smoke")
    if edit is not None:
        edit(cfg)
    bad = tmp_path / name
    bad.write_text(text if text is not None else yaml.safe_dump(cfg))
    return bad


@pytest.mark.parametrize("edit,needle", [
    (lambda c: c["hron2020"]["H4"].__setitem__("diag_reg_grid", [float("inf")]), "hron2020.H4.diag_reg_grid[0]"),
    (lambda c: c["arda2026"]["teacher"].__setitem__("nu", float("nan")), "arda2026.teacher.nu"),
    (lambda c: c.__setitem__("replicate_index", 1), "replicate_index may not be set by hand"),
    (lambda c: c["data"]["cifar10"].__setitem__("replicate", 1), "data.cifar10.replicate may not be set by hand"),
    (lambda c: c["hron2020"]["H4"].__setitem__("final_depth", {"strcut": 2}), "strcut"),
    (lambda c: c["arda2026"]["A1"].__setitem__("widths", [16, 16, 32]), "arda2026.A1.widths"),
    (lambda c: c.__setitem__("results_dir", "res{x}"), "contains a brace"),
])
def test_snakemake_refuses_config_that_means_something_else(tmp_path, edit, needle):
    out = _dry(tmp_path, _smoke_with(tmp_path, edit)) if "results_dir" not in needle and "brace" not in needle else \
        subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-n", "--cores", "1", "--configfile",
                        str(_smoke_with(tmp_path, edit))], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert needle in out.stdout + out.stderr, (out.stdout + out.stderr)[-3000:]
    assert "Job stats" not in out.stdout


def test_duplicated_yaml_key_is_refused_naming_the_key_and_file(tmp_path):
    text = (ROOT / "config/smoke.yaml").read_text() + "\nscale: smoke\n"
    bad = _smoke_with(tmp_path, text=text, name="dup.yaml")
    out = _dry(tmp_path, bad)
    assert out.returncode != 0
    msg = out.stdout + out.stderr
    assert "'scale' appears twice" in msg and "dup.yaml" in msg, msg[-3000:]


def test_configcheck_names_an_empty_or_list_file(tmp_path):
    from ntkrepro.configcheck import main

    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    lst = tmp_path / "list.yaml"
    lst.write_text("- a\n- b\n")
    assert main([str(empty)]) == 1
    assert main([str(lst)]) == 1
    from ntkrepro.configcheck import ConfigError, load_strict

    with pytest.raises(ConfigError, match="empty.yaml is empty"):
        load_strict(empty)
    with pytest.raises(ConfigError, match="list.yaml holds a list"):
        load_strict(lst)
    with pytest.raises(ConfigError, match="'x' appears twice"):
        (tmp_path / "d.yaml").write_text("a:\n  x: 1\n  x: 2\n")
        load_strict(tmp_path / "d.yaml")


def test_a_non_schema_error_is_not_reported_as_a_config_error():
    """validate_section (common.smk) turns only schema violations into config errors."""
    text = (ROOT / "workflow/rules/common.smk").read_text()
    body = text.split("def validate_section", 1)[1].split("\ndef ", 1)[0]
    assert "except Exception" not in body and "raise\n" in body
