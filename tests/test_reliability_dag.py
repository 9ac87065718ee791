"""Reliability of the workflow itself (issue 14): a code change reruns exactly the chains that use
it, and paths with spaces work. Both drive real Snakemake on a throwaway copy of the repository or
a throwaway results folder (marker ``slow``: about a minute each on 2 cores)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
pytestmark = pytest.mark.slow

_IGNORE = shutil.ignore_patterns(".git", ".venv", ".snakemake", "results", "resources", "__pycache__",
                                 ".pytest_cache", "*.egg-info", ".ipynb_checkpoints")


def _data_override(tmp: Path) -> Path:
    """A --configfile that only points data.root at the real data folder (absolute), listed after
    the complete config/smoke.yaml."""
    root = yaml.safe_load((ROOT / "config/smoke.yaml").read_text())["data"]["root"]
    f = tmp / "data_root.yaml"
    f.write_text(yaml.safe_dump({"data": {"root": str((ROOT / root).resolve())}}))
    return f


def _smk(cwd: Path, *args: str, results: Path, extra_configfiles: tuple[Path, ...] = (),
         timeout: int = 600) -> subprocess.CompletedProcess:
    cmd = [SNAKEMAKE, *args, "--configfile", "config/smoke.yaml", *map(str, extra_configfiles),
           "--config", f"results_dir={results}"]
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        sys.stderr.write(out.stdout[-6000:] + out.stderr[-6000:])
    return out


def _job_counts(text: str) -> dict[str, int]:
    """The 'Job stats' table of a dry run -> {rule: count} ({} when nothing is to be done)."""
    if "Job stats" not in text:
        return {}
    table = text.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    rows = [re.match(r"^(\S+)\s+(\d+)$", line.strip()) for line in table.splitlines()]
    return {m.group(1): int(m.group(2)) for m in rows if m and m.group(1) != "total"}


def _completed_run(tmp_path: Path) -> tuple[Path, Path, tuple[Path, ...], list[str]]:
    """A complete smoke run, simulated on a throwaway copy of the repository: every output of `all`
    exists and Snakemake records it as made by this code. Returns (repo, results, extra config
    files, the outputs)."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=_IGNORE, symlinks=True)
    results = tmp_path / "results"
    over = (_data_override(tmp_path),)
    out = _smk(repo, "--summary", "all", results=results, extra_configfiles=over)
    assert out.returncode == 0
    outputs = [line.split("\t", 1)[0] for line in out.stdout.splitlines() if line.startswith(str(results))]
    for f in outputs:
        Path(f).parent.mkdir(parents=True, exist_ok=True)
        Path(f).touch()
    assert _smk(repo, "--touch", "--forceall", "all", "--cores", "1", results=results,
                extra_configfiles=over).returncode == 0
    return repo, results, over, outputs


def test_editing_a_module_reruns_exactly_the_chains_that_use_it(tmp_path):
    """Issue 14, item 3: after a complete run, appending a comment to
    src/ntkrepro/hron2020/gaussianity.py used to give 'Nothing to be done'. Now exactly H1's
    compute rule and figure rerun, plus the ledger entries whose criterion module imports it, the
    claims table and the report; reverting the edit needs nothing (content, not mtime)."""
    repo, results, over, outputs = _completed_run(tmp_path)
    assert len(outputs) > 50
    out = _smk(repo, "-n", "all", results=results, extra_configfiles=over)
    assert out.returncode == 0 and "Nothing to be done" in out.stdout + out.stderr

    module = repo / "src/ntkrepro/hron2020/gaussianity.py"
    original = module.read_text()
    module.write_text(original + "\n# a comment appended after the run\n")
    out = _smk(repo, "-n", "all", results=results, extra_configfiles=over)
    assert out.returncode == 0
    jobs = _job_counts(out.stdout)
    # rep<k>_<rule>: the same rule in replicate k (Snakefile modules; smoke replicates H3 and A2)
    compute = {r for r in jobs if re.sub(r"^rep\d+_", "", r) not in {"figure", "claim_evaluation", "claim_ledger_entry",
                                                                      "claims_table", "replication_report", "all"}}
    assert compute == {"H1_hron2020_gaussianity"}, jobs
    assert jobs["figure"] == 1 and "hron2020_H1_gaussianity" in out.stdout
    # H1's entry, and those of other H claims whose criterion module imports gaussianity (the H
    # criteria are collected by ntkrepro.hron2020.claims); no entry of another paper
    # each job prints its rule's message ("H1: ledger entry | scale smoke, replicate 0"); replicates' entries too
    entry_outputs = re.findall(r"^Job \d+: ([A-Z]\d+): ledger entry \|", out.stdout, re.M)
    entries = set(entry_outputs)
    assert "H1" in entries and all(e.startswith("H") for e in entries), entries
    assert sum(n for r, n in jobs.items() if re.fullmatch(r"(rep\d+_)?claim_ledger_entry", r)) == len(entry_outputs)
    # each rerun entry re-applies its criterion first (rule claim_evaluation), nothing more
    assert sum(n for r, n in jobs.items() if re.fullmatch(r"(rep\d+_)?claim_evaluation", r)) == len(entry_outputs)

    module.write_text(original)  # the same code again: nothing to rerun
    out = _smk(repo, "-n", "all", results=results, extra_configfiles=over)
    assert out.returncode == 0 and "Nothing to be done" in out.stdout + out.stderr


def test_results_dir_with_a_space(tmp_path):
    """Issue 14, item 6: unquoted {output}/{log} split such a path and wrote a stray file outside
    the results folder. The H2 chain (compute, figure, ledger entry) runs into it cleanly."""
    results = tmp_path / "with space" / "res"
    out = _smk(ROOT, str(results / "claims" / "H2.json"), "--profile", "profiles/local", results=results)
    assert out.returncode == 0
    entry = yaml.safe_load((results / "claims" / "H2.json").read_text())
    assert entry["id"] == "H2" and entry["verdict"] in {"reproduced", "not_reproduced", "inconclusive"}
    assert (results / "figures" / "hron2020_H2_average_pooling.png").stat().st_size > 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["with space"]  # nothing written beside it
    assert sorted(p.name for p in (tmp_path / "with space").iterdir()) == ["res"]


def test_editing_plotting_or_notebooks_reruns_every_figure(tmp_path):
    """Issue 22, item 1: the figure rule's code hash was a param computed from `input`, which
    Snakemake does not record, so editing ntkrepro/plotting.py (imported by every notebook) or
    ntkrepro/notebooks.py (the runner) reran no figure. Now each edit reruns every figure (and only
    figures and what reads them: entries, table, report -- no compute rule)."""
    repo, results, over, outputs = _completed_run(tmp_path)
    n_figures = sum(1 for f in outputs if f.endswith(".png") and "/figures/" in f)
    assert n_figures > 10
    for module in ("plotting.py", "notebooks.py"):
        path = repo / "src/ntkrepro" / module
        original = path.read_text()
        path.write_text(original + "\n# a comment appended after the run\n")
        out = _smk(repo, "-n", "all", results=results, extra_configfiles=over)
        assert out.returncode == 0
        jobs = _job_counts(out.stdout)
        assert jobs.get("figure") == n_figures, (module, jobs)
        assert set(jobs) <= {"figure", "claim_ledger_entry", "claims_table", "replication_report", "all"}, jobs
        path.write_text(original)
