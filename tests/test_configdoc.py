"""config/README.md documents every config key (issue 31 item 5): its key reference is generated
from the schemas by :mod:`ntkrepro.configdoc`; a key without a description, a stale note or an
out-of-date README fails here."""

from __future__ import annotations

import shutil

import pytest
import yaml

from ntkrepro import configdoc


def test_config_readme_is_up_to_date_with_the_schemas():
    assert configdoc.README.read_text() == configdoc.readme_text(), \
        "config/README.md is out of date: run python -m ntkrepro.configdoc --write"
    assert configdoc.main(["--check"]) == 0


def test_every_schema_key_has_a_row_with_a_description():
    text = configdoc.README.read_text().partition(configdoc.MARKER)[2]
    n_keys = 0
    for section, _, schema in configdoc.load_schemas():
        for path, node in configdoc.schema_keys(schema):
            # a paper's sub-sections (claims, teacher, benchmark) are headings, every other key a row
            n_keys += not (section != "config" and len(path) == 1 and node.get("properties"))
            assert configdoc.description(section, path, node), f"{section}: {'.'.join(path)} has no description"
    rows = [line for line in text.splitlines() if line.startswith("| `") and not line.startswith("| `config/")]
    assert len(rows) == n_keys > 300
    assert "undocumented" not in text


def test_no_note_describes_a_key_that_no_schema_has():
    assert configdoc.unused_notes() == []


def _schemas_copy(tmp_path):
    d = tmp_path / "schemas"
    shutil.copytree(configdoc.SCHEMA_DIR, d)
    return d


def test_a_new_key_without_description_is_refused(tmp_path):
    d = _schemas_copy(tmp_path)
    f = d / "hron2020.schema.yaml"
    schema = yaml.safe_load(f.read_text())
    schema["properties"]["H1"]["properties"]["new_knob"] = {"type": "integer"}
    f.write_text(yaml.safe_dump(schema))
    with pytest.raises(ValueError, match=r"hron2020\.H1\.new_knob"):
        configdoc.render(d)
    # with a description it is documented, and the committed README is then out of date
    schema["properties"]["H1"]["properties"]["new_knob"]["description"] = "a new knob"
    f.write_text(yaml.safe_dump(schema))
    assert "| `new_knob` | integer | a new knob |" in configdoc.render(d)
    assert configdoc.readme_text(schema_dir=d) != configdoc.README.read_text()


def test_a_note_for_a_removed_key_is_stale(monkeypatch):
    monkeypatch.setitem(configdoc.NOTES, "framework:F1.no_such_key", "gone")
    assert configdoc.unused_notes() == ["framework:F1.no_such_key"]
    assert configdoc.main(["--check"]) == 1


def test_schema_walk_and_types_on_a_small_schema():
    schema = {"$defs": {"pos": {"type": "integer", "minimum": 1, "description": "a size"}},
              "properties": {"a": {"$ref": "#/$defs/pos"},
                             "b": {"oneOf": [{"type": "null"},
                                             {"type": "object", "properties": {"c": {"enum": ["x", "y"]}}}]},
                             "d": {"type": "array", "items": {"type": "object", "properties": {
                                 "e": {"type": "number", "exclusiveMinimum": 0}}}}}}
    keys = {".".join(p): n for p, n in configdoc.schema_keys(schema)}
    assert list(keys) == ["a", "b", "b.c", "d", "d.[].e"]
    assert keys["a"]["description"] == "a size"
    assert configdoc.type_text(keys["a"], schema) == "integer >= 1"
    assert configdoc.type_text(keys["b.c"], schema) == "one of `x`, `y`"
    assert configdoc.type_text(keys["d.[].e"], schema) == "number > 0"


def test_workflow_catalog_file_follows_the_catalog_layout():
    """``.snakemake-workflow-catalog.yml``: the keys the catalog reads (``usage.mandatory-flags``,
    ``usage.software-stack-deployment`` with at least one method, ``usage.report``), flags that name
    files of this repository, and the config README the catalog renders beside it."""
    import shlex

    root = configdoc.ROOT
    cat = yaml.safe_load((root / ".snakemake-workflow-catalog.yml").read_text())
    usage = cat["usage"]
    assert set(usage) == {"mandatory-flags", "software-stack-deployment", "report"}
    assert usage["mandatory-flags"]["desc"].strip()
    flags = shlex.split(usage["mandatory-flags"]["flags"])
    for opt, path in zip(flags, flags[1:]):
        if opt == "--profile":
            assert (root / path / "config.yaml").is_file(), path
        if opt == "--configfile":
            assert (root / path).is_file(), path
    assert "--profile" in flags
    sdm = usage["software-stack-deployment"]
    assert set(sdm) <= {"conda", "apptainer", "apptainer+conda", "singularity", "singularity+conda"}
    assert any(v is True for v in sdm.values()) and all(isinstance(v, bool) for v in sdm.values())
    if sdm.get("conda"):  # every rule declares the environment the flag deploys
        rules = (root / "workflow" / "rules").glob("*.smk")
        assert (root / "envs" / "environment.yaml").is_file()
        assert any("conda:" in f.read_text() for f in rules)
    assert isinstance(usage["report"], bool)
    assert configdoc.README.is_file()


def test_a_new_config_file_is_listed(tmp_path):
    """A new scale file (e.g. ``config/decisive.yaml``) appears in the generated table, so the
    committed README is out of date until regenerated."""
    d = tmp_path / "config"
    shutil.copytree(configdoc.ROOT / "config", d)
    (d / "decisive.yaml").write_text("# Scale: decisive. The sizes that decide.\nscale: decisive\n")
    out = configdoc.render(config_dir=d)
    assert "| `config/decisive.yaml` | `decisive` | The sizes that decide. |" in out
    assert out != configdoc.README.read_text().partition(configdoc.MARKER)[2].lstrip("\n")
