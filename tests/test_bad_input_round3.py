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
