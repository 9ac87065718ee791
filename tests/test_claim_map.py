"""The README's claim map is generated from the workflow's registry and cannot go stale (issue 23)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ntkrepro import claim_map


def test_readme_claim_map_is_the_generated_one(repo_root, tmp_path):
    out = tmp_path / "res"
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", f"{out}/claims/claim_map.md", "--profile", "profiles/local",
         "--configfile", "config/smoke.yaml", "--config", f"results_dir={out}", "-j1", "--quiet", "all"],
        cwd=repo_root, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    generated = (out / "claims" / "claim_map.md").read_text()
    readme = claim_map.readme_section((repo_root / "README.md").read_text())
    assert readme == generated, (
        "README's claim map differs from the workflow's: run `.venv/bin/snakemake claim_map --profile profiles/local "
        "&& .venv/bin/python -m ntkrepro.claim_map --sync-readme results/claims/claim_map.md README.md`")
    assert generated.count("\n| ") == 1 + 21     # header + one row per claim


_ROW = {"claim": "H1", "paper": "hron2020", "figures": ["hron2020_H1_gaussianity"],
        "producers": [{"rule": "H1_hron2020_gaussianity", "wildcards": {},
                       "function": "ntkrepro.hron2020.gaussianity:run_h1"}]}


@pytest.mark.parametrize("change, problem", [
    ({"producers": []}, "no rule of the workflow writes its results"),
    ({"producers": [{**_ROW["producers"][0], "function": "ntkrepro.framework.deviation:run_f2"}]}, "does not import"),
    ({"producers": [{**_ROW["producers"][0], "function": "ntkrepro.hron2020.gaussianity:run_h9"}]}, "does not import"),
    ({"figures": ["hron2020_H1_missing"]}, "no notebook"),
    ({"paper": "framework"}, "registered for hron2020"),
])
def test_every_cell_is_checked(repo_root, change, problem):
    assert claim_map.check_rows([_ROW], repo_root) == []
    problems = claim_map.check_rows([{**_ROW, **change}], repo_root)
    assert len(problems) == 1 and problem in problems[0]


def test_cli_refuses_a_stale_row_and_syncs_the_readme(tmp_path, repo_root, monkeypatch, capsys):
    monkeypatch.chdir(repo_root)
    bad = {**_ROW, "figures": ["hron2020_H1_missing"]}
    assert claim_map.main(["--rows", json.dumps([bad]), "--out", str(tmp_path / "t.md")]) == 1
    assert "no notebook" in capsys.readouterr().err and not (tmp_path / "t.md").exists()
    assert claim_map.main(["--rows", json.dumps([_ROW]), "--out", str(tmp_path / "t.md")]) == 0
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{claim_map.BEGIN}\nold\n{claim_map.END}\nrest\n")
    assert claim_map.main(["--sync-readme", str(tmp_path / "t.md"), str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("rest\n") and "evaluate_h1" in text and "old" not in text
