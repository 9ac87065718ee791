"""Every documented target runs at smoke scale (issue 22 item 7): `snakemake benchmarks` (marker
``dag``; about 3 minutes on 2 cores)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ntkrepro.io import read_json

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")


@pytest.mark.dag
def test_benchmarks_target_runs_at_smoke(tmp_path):
    out = subprocess.run([SNAKEMAKE, "benchmarks", "--profile", "profiles/local", "--configfile",
                          "config/smoke.yaml", "--config", f"results_dir={tmp_path}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-6000:]
    bench = tmp_path / "benchmarks"
    fast = read_json(bench / "fast_kernels.json")
    assert fast["provenance"]["scale"] == "smoke"
    assert (bench / "paper_scale_plan.md").read_text().strip()
    for name in ("arda2026_training_throughput", "hazelden2026_kronecker_core", "hron2020_kernel_throughput",
                 "hron2020_imdb_kernel_throughput", "paper_scale_plan", "mc_attention"):
        assert read_json(bench / f"{name}.json")["provenance"]["scale"] == "smoke", name
    mc = read_json(bench / "mc_attention.json")  # issue 41: an extension, labelled so
    assert mc["extension"] is True and set(mc["accuracy"]) == {"cifar10", "imdb"}
    for acc in mc["accuracy"].values():  # the headline: Monte Carlo minus d^-1, with a paired interval
        for g in ("nngp", "ntk"):
            d = acc[g]["difference_at_largest_n"]
            assert d["ci"][0] <= d["value"] <= d["ci"][1]
    assert (bench / "mc_attention.png").stat().st_size > 0
