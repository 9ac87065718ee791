"""The whole smoke DAG end to end (marker ``dag``; minutes).

Runs ``snakemake all`` at smoke scale into ``$NTKREPRO_DAG_RESULTS`` (CI sets it to ``results`` so
the outputs stay in place; otherwise a temporary folder), then checks: every claim in the DAG has a
valid ledger entry, every figure and the PDF report exist, a dry run has nothing left to do, and a
second run of the H1/H2 chains gives identical ledger numbers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ntkrepro.ledger import check
from ntkrepro.io import read_json

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
pytestmark = pytest.mark.dag


def _smk(*args: str, results: Path, timeout: int = 1800) -> subprocess.CompletedProcess:
    cmd = [SNAKEMAKE, *args, "--profile", "profiles/local", "--configfile", "config/smoke.yaml",
           "--config", f"results_dir={results}"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        sys.stderr.write(out.stdout[-8000:] + out.stderr[-8000:])
    return out


@pytest.fixture(scope="module")
def dag_results(tmp_path_factory) -> Path:
    env = os.environ.get("NTKREPRO_DAG_RESULTS")
    results = Path(env) if env else tmp_path_factory.mktemp("results")
    out = _smk("all", results=results)
    assert out.returncode == 0, "smoke DAG failed (log above)"
    return results


def test_every_claim_has_a_ledger_entry_and_the_report_exists(dag_results):
    index = read_json(dag_results / "claims" / "index.json")["claims"]
    assert {"H1", "H2"} <= set(index)
    assert check(dag_results / "claims", index) == []
    assert (dag_results / "paper" / "replication_report.pdf").stat().st_size > 10_000
    for entry in index:
        e = read_json(dag_results / "claims" / f"{entry}.json")
        assert e["scale"] == "smoke" and e["provenance"]["config_hash"]
        for fig in e["figures"]:
            assert Path(fig).exists() and Path(fig).with_suffix(".pdf").exists()


def test_report_text_stays_inside_the_page(dag_results):
    """No line of the report runs into the margin: LaTeX logs every overfull box (long identifiers
    in narrow table cells did, before ``_`` and ``/`` allowed a line break)."""
    log = (dag_results / "paper" / "replication_report.build.log").read_text(errors="replace")
    overfull = [line for line in log.splitlines() if line.startswith("Overfull \\hbox")]
    assert overfull == [], overfull[:5]


def test_replicated_claims_have_independent_replicates(dag_results):
    """Smoke runs replicates of a data-driven (H3) and a seed-driven (A2) claim (config/smoke.yaml)."""
    index = read_json(dag_results / "claims" / "index.json")
    counts = index["replicates"]
    assert check(dag_results / "claims", index["claims"], counts) == []
    replicated = sorted(c for c, k in counts.items() if k > 1)
    assert {"H3", "A2"} <= set(replicated)
    for cid in replicated:
        e = read_json(dag_results / "claims" / f"{cid}.json")
        reps = e["replicates"]
        assert [r["replicate"] for r in reps] == list(range(counts[cid]))
        assert e["stable"] == (len({r["verdict"] for r in reps}) == 1)
        r1 = read_json(dag_results / "replicates" / "r1" / "claims" / f"{cid}.json")
        assert r1["replicate"] == 1 and r1["verdict"] == reps[1]["verdict"] and r1["figures"] == []
        assert r1["measured"] != e["measured"]  # other seeds (and data) give other numbers
    h3 = [read_json(dag_results / p / "hron2020" / "H3_kernel_convergence.json") for p in (".", "replicates/r1")]
    assert h3[0]["archive_sha256"] == h3[1]["archive_sha256"]  # the same archive, a disjoint slice of it
    assert read_json(dag_results / "claims" / "H3.json")["replicates"][1]["archives"]
    table = (dag_results / "claims" / "claims_table.md").read_text()
    assert "| stable |" in table


def test_dry_run_after_full_run_has_nothing_to_do(dag_results):
    out = _smk("-n", results=dag_results)
    assert out.returncode == 0
    assert "Nothing to be done" in out.stdout + out.stderr


@pytest.mark.parametrize("claim", ["H1", "H2"])
def test_rerun_gives_identical_ledger_numbers(dag_results, tmp_path, claim):
    again = tmp_path / "again"
    out = _smk(f"{again}/claims/{claim}.json", results=again)
    assert out.returncode == 0
    a = read_json(dag_results / "claims" / f"{claim}.json")
    b = read_json(again / "claims" / f"{claim}.json")
    assert json.dumps(a["measured"], sort_keys=True) == json.dumps(b["measured"], sort_keys=True)
    assert a["verdict"] == b["verdict"]


def test_snakemake_html_report_has_every_figure_captioned(dag_results):
    html = dag_results / "report.html"
    out = _smk("--report", str(html), results=dag_results)
    assert out.returncode == 0 and html.stat().st_size > 100_000
    text = html.read_text(errors="replace")
    index = read_json(dag_results / "claims" / "index.json")["claims"]
    for claim in index:
        assert f"Claim <strong>{claim}</strong>" in text, f"no captioned figure for {claim}"
    assert "ERROR/" not in out.stdout + out.stderr  # caption RST rendered cleanly
