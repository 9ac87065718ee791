"""Config validation: a wrong type, an unknown key or a negative size fails before any job runs."""

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from snakemake.utils import validate

ROOT = Path(__file__).resolve().parents[1]
SCALES = ["smoke", "default", "paper"]
SECTIONS = ["hron2020", "arda2026", "hazelden2026", "framework"]


def _load(scale):
    return yaml.safe_load((ROOT / "config" / f"{scale}.yaml").read_text())


@pytest.mark.parametrize("scale", SCALES)
def test_every_scale_validates(scale):
    cfg = _load(scale)
    validate(copy.deepcopy(cfg), str(ROOT / "workflow/schemas/config.schema.yaml"))
    for section in SECTIONS:
        schema = ROOT / "workflow/schemas" / f"{section}.schema.yaml"
        if schema.exists():
            validate(copy.deepcopy(cfg[section]), str(schema))


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
    (lambda c: c["hron2020"]["H1"].__setitem__("n_draws", -5), "n_draws"),
    (lambda c: c["hron2020"]["H1"].__setitem__("d", "big"), "d"),
    (lambda c: c["hron2020"]["H2"].__setitem__("typo_key", 1), "typo_key"),
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
