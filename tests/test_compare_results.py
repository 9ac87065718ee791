"""workflow/scripts/compare_results.py: provenance, timings and caches aside, a changed number, verdict or
file is reported (issue 40: the smoke DAG output compared before and after a refactoring)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parents[1] / "workflow" / "scripts" / "compare_results.py"
_spec = importlib.util.spec_from_file_location("compare_results", SCRIPT)
compare_results = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare_results)


def _tree(root: Path, *, commit: str, value: float, verdict: str, seconds: float, cache: str) -> Path:
    (root / "claims").mkdir(parents=True)
    (root / "hron2020").mkdir()
    (root / "cache" / "kernels" / cache).mkdir(parents=True)
    (root / "logs").mkdir()
    (root / "claims" / "H1.json").write_text(json.dumps({
        "verdict": verdict, "measured": {"slope": value}, "evaluation_sha256": commit * 4,
        "provenance": {"git": {"commit": commit}}}))
    (root / "hron2020" / "H1.json").write_text(json.dumps({"x": [1.0, float("nan")], "wall_seconds": seconds,
                                                          "provenance": {"git": {"commit": commit}}}))
    np.savez(root / "hron2020" / "samples.npz", a=np.arange(3.0) * value,
             __provenance__=np.frombuffer(commit.encode(), np.uint8))
    (root / "cache" / "kernels" / cache / "manifest.json").write_text("{}")
    (root / "logs" / "run.log").write_text(commit)
    return root


def test_provenance_timings_and_caches_aside_two_runs_are_identical(tmp_path, capsys):
    old = _tree(tmp_path / "old", commit="aaa", value=1.0, verdict="reproduced", seconds=3.0, cache="k1")
    new = _tree(tmp_path / "new", commit="bbb", value=1.0, verdict="reproduced", seconds=9.0, cache="k2")
    assert compare_results.compare_trees(old, new) == {}
    assert compare_results.main([str(old), str(new)]) == 0
    assert "0 file(s) differ" in capsys.readouterr().out


def test_a_changed_number_verdict_or_file_is_reported(tmp_path):
    old = _tree(tmp_path / "old", commit="aaa", value=1.0, verdict="reproduced", seconds=3.0, cache="k")
    new = _tree(tmp_path / "new", commit="aaa", value=1.5, verdict="inconclusive", seconds=3.0, cache="k")
    (new / "claims" / "H2.json").write_text("{}")
    diff = compare_results.compare_trees(old, new)
    assert set(diff) == {"claims/H1.json", "claims/H2.json", "hron2020/samples.npz"}
    assert any("/verdict" in d for d in diff["claims/H1.json"])
    assert any("/measured/slope" in d for d in diff["claims/H1.json"])
    assert diff["claims/H2.json"] == ["only in the new tree"]
    assert compare_results.main([str(old), str(new)]) == 1
    assert compare_results.main([str(old), str(tmp_path / "missing")]) == 2
