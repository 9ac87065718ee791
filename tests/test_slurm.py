"""The DAG on a real SLURM: a throwaway single-node cluster (workflow/scripts/slurm_local.sh).

Runs the H2 chain of the smoke DAG (compute rule -> figure notebook rule -> ledger rule) through
`--executor slurm` with the production profile profiles/slurm (only its timing knobs shortened),
checks each rule really ran as a SLURM job with the rule's resources, and that the ledger entry
equals the one of the same slice run locally. A second, quick test checks GPU routing: with
`slurm-partition-config`, a `gpu=1` rule is submitted with `--gpus=1` to the GPU partition and a
CPU rule to the CPU one. Skips, with the reason, only where SLURM cannot start here (packages
missing and not installable: see .ci/slurm.sh).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SLURM_LOCAL = ROOT / "workflow" / "scripts" / "slurm_local.sh"
CI_INSTALL = ROOT / ".ci" / "slurm.sh"
VENV_BIN = Path(sys.executable).parent
SKIP = 77  # slurm_local.sh: SLURM cannot start here

pytestmark = pytest.mark.slurm

# The H2 slice: one compute rule, one notebook rule, the ledger rule.
CLAIM = "H2"
FIGURE = "hron2020_H2_average_pooling"
RULES = {"H2_hron2020_average_pooling", "claim_evaluation", "figure", "claim_ledger_entry"}
TIMEOUT_S = 480  # each snakemake run (smoke H2 slice: ~40 s locally, ~80 s via SLURM)


def _targets(results_dir: Path) -> list[str]:
    return [str(results_dir / "claims" / f"{CLAIM}.json"), str(results_dir / "figures" / f"{FIGURE}.png")]


def _snakemake(targets, results_dir: Path, extra: list[str], log: Path, env) -> subprocess.Popen:
    cmd = [
        "timeout", "-k", "10", str(TIMEOUT_S),
        str(VENV_BIN / "snakemake"), *targets,
        *extra,
        "--configfile", "config/smoke.yaml",
        "--config", f"results_dir={results_dir}",
    ]  # fmt: skip
    fh = open(log, "w")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT, text=True)
    proc.log_path = log  # type: ignore[attr-defined]
    fh.close()
    return proc


def _wait(proc: subprocess.Popen, what: str) -> None:
    rc = proc.wait()
    if rc != 0:
        tail = Path(proc.log_path).read_text()[-6000:]  # type: ignore[attr-defined]
        msg = "timed out (timeout -k)" if rc in (124, 137) else f"exit code {rc}"
        pytest.fail(f"{what} snakemake run failed: {msg}\n--- log tail ---\n{tail}")


def _start(cluster_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["timeout", "-k", "5", "90", "bash", str(SLURM_LOCAL), "start", str(cluster_dir)],
        capture_output=True, text=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def slurm_cluster():
    """A running single-node SLURM for this module; yields the environment to submit to it."""
    # Short path: munge's unix socket lives under it (<= 107 characters).
    cluster_dir = Path(tempfile.mkdtemp(prefix="ntkslurm.", dir="/tmp"))
    try:
        started = _start(cluster_dir)
        if started.returncode == SKIP and "not installed" in started.stderr and CI_INSTALL.exists():
            # Packages absent: try the CI installer once (root + apt only; says why if it cannot).
            inst = subprocess.run(["timeout", "300", "bash", str(CI_INSTALL)], capture_output=True, text=True)
            started = _start(cluster_dir)
            started.stderr += inst.stdout + inst.stderr
        if started.returncode == SKIP:
            pytest.skip(f"SLURM cannot start here: {started.stderr.strip()[-1500:]}")
        assert started.returncode == 0, f"slurm_local.sh start failed:\n{started.stdout}\n{started.stderr}"

        env = dict(os.environ)
        env["SLURM_CONF"] = str(cluster_dir / "slurm.conf")
        # DIR/bin/srun re-exports SLURM_CONF inside jobs (see slurm_local.sh, write_shims).
        env["PATH"] = os.pathsep.join([str(cluster_dir / "bin"), str(VENV_BIN), env.get("PATH", "")])
        yield {"dir": cluster_dir, "env": env}
    finally:
        subprocess.run(["timeout", "-k", "5", "60", "bash", str(SLURM_LOCAL), "stop", str(cluster_dir)],
                       capture_output=True, text=True)  # fmt: skip
        status = subprocess.run(["bash", str(SLURM_LOCAL), "status", str(cluster_dir)], capture_output=True, text=True)
        shutil.rmtree(cluster_dir, ignore_errors=True)
        assert status.returncode == 3, f"SLURM daemons left running: {status.stdout}"


def _numbers_equal(a, b, path="measured"):
    """Deep comparison; floats equal to 1e-9 relative (identical in practice: same seeds, same CPU)."""
    if isinstance(a, dict):
        assert set(a) == set(b), f"{path}: keys differ: {sorted(a)} vs {sorted(b)}"
        for k in a:
            _numbers_equal(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), f"{path}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            _numbers_equal(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert b == pytest.approx(a, rel=1e-9, abs=1e-12), f"{path}: {a!r} (local) vs {b!r} (slurm)"
    else:
        assert a == b, f"{path}: {a!r} (local) vs {b!r} (slurm)"


def test_h2_chain_on_slurm_equals_local(slurm_cluster, tmp_path):
    env = slurm_cluster["env"]
    slurm_results = tmp_path / "slurm_results"
    local_results = tmp_path / "local_results"
    slurm_logs = tmp_path / "slurm_logs"
    t0 = time.monotonic()

    # Production profile; only waiting times shortened for a one-node cluster on a local disk.
    on_slurm = _snakemake(
        _targets(slurm_results), slurm_results,
        ["--profile", "profiles/slurm", "--jobs", "3", "--latency-wait", "5", "--retries", "0",
         "--slurm-init-seconds-before-status-checks", "1", "--slurm-logdir", str(slurm_logs),
         "--slurm-keep-successful-logs"],
        tmp_path / "snakemake_slurm.log", env,
    )  # fmt: skip
    # The local run overlaps the SLURM run (whose jobs mostly wait on status polls).
    local = _snakemake(
        _targets(local_results), local_results,
        ["--profile", "profiles/local", "--cores", "1"],
        tmp_path / "snakemake_local.log", env,
    )  # fmt: skip
    _wait(local, "local")
    _wait(on_slurm, "SLURM")
    print(f"H2 slice, SLURM + local runs: {time.monotonic() - t0:.0f} s wall")

    # Every rule of the slice ran as its own, completed SLURM job with the rule's resources.
    q = subprocess.run(
        ["squeue", "-h", "--states=all", "-o", "%k|%T|%m|%l|%j"],
        capture_output=True, text=True, env=env, timeout=30, check=True,
    )  # fmt: skip
    jobs = [line.split("|") for line in q.stdout.split("\n") if line.startswith("rule_")]
    # The plugin's job comment is rule_<rule>[_wildcards_<values>].
    by_rule = {j[0].removeprefix("rule_").split("_wildcards_")[0]: j for j in jobs}
    assert set(by_rule) == RULES, f"SLURM jobs seen: {q.stdout}"
    for rule, (_, state, _mem, _limit, name) in by_rule.items():
        assert state == "COMPLETED", f"{rule}: {state}"
        assert name.startswith("ntkrepro"), name  # profile's slurm-jobname-prefix
    compute = by_rule["H2_hron2020_average_pooling"]
    assert compute[2] == "4000M" and compute[3] == "30:00", f"mem_mb/runtime not passed: {compute}"
    assert any(slurm_logs.rglob("*.log")), "no SLURM job logs"

    # Same outputs as the local run.
    for results in (slurm_results, local_results):
        for ext in ("png", "pdf"):
            fig = results / "figures" / f"{FIGURE}.{ext}"
            assert fig.stat().st_size > 0, fig
    entry_slurm = json.loads((slurm_results / "claims" / f"{CLAIM}.json").read_text())
    entry_local = json.loads((local_results / "claims" / f"{CLAIM}.json").read_text())
    assert entry_slurm["verdict"] == entry_local["verdict"]
    assert entry_slurm["scale"] == entry_local["scale"] == "smoke"
    _numbers_equal(entry_local["measured"], entry_slurm["measured"])
    # ... and the same compute results, but for provenance (config hash covers results_dir) and timings.
    res = [json.loads((d / "hron2020" / "H2_average_pooling.json").read_text()) for d in (local_results, slurm_results)]
    for r in res:
        for key in [k for k in r if k == "provenance" or k.endswith("_seconds")]:
            del r[key]
    _numbers_equal(res[0], res[1], "H2_average_pooling")


GPU_SNAKEFILE = """
rule all:
    input: "out/cpu.txt", "out/gpu.txt"

rule cpu_job:
    output: "out/cpu.txt"
    resources: mem_mb=500, runtime=5
    shell: "echo $SLURM_JOB_PARTITION > {output}"

rule gpu_job:
    output: "out/gpu.txt"
    resources: mem_mb=500, runtime=5, gpu=1
    shell: "echo $SLURM_JOB_PARTITION > {output}"
"""

GPU_PARTITIONS = """
partitions:
  debug: {max_runtime: 60, max_mem_mb: 4000, max_gpu: 0}
  gpu: {max_runtime: 60, max_mem_mb: 4000, max_gpu: 1}
"""


def test_gpu_rules_go_to_the_gpu_partition(slurm_cluster, tmp_path):
    """profiles/slurm + slurm-partition-config: `gpu=1` -> GPU partition with --gpus=1, else CPU."""
    env = slurm_cluster["env"]
    (tmp_path / "Snakefile").write_text(GPU_SNAKEFILE)
    (tmp_path / "partitions.yaml").write_text(GPU_PARTITIONS)
    cmd = [
        "timeout", "-k", "10", "180", str(VENV_BIN / "snakemake"),
        "--snakefile", str(tmp_path / "Snakefile"), "--directory", str(tmp_path),
        "--profile", "profiles/slurm", "--jobs", "2", "--latency-wait", "5", "--retries", "0",
        "--slurm-init-seconds-before-status-checks", "1",
        "--slurm-partition-config", str(tmp_path / "partitions.yaml"),
        "--slurm-jobname-prefix", "ntkgputest",
    ]  # fmt: skip
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0, (run.stdout + run.stderr)[-6000:]
    assert (tmp_path / "out" / "cpu.txt").read_text().strip() == "debug"
    assert (tmp_path / "out" / "gpu.txt").read_text().strip() == "gpu"
    q = subprocess.run(["scontrol", "-o", "show", "job"], capture_output=True, text=True, env=env, timeout=30,
                       check=True)  # fmt: skip
    jobs = {}
    for line in q.stdout.splitlines():
        fields = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
        if fields.get("JobName", "").startswith("ntkgputest"):
            jobs[fields.get("Comment")] = fields
    gpu, cpu = jobs["rule_gpu_job"], jobs["rule_cpu_job"]
    assert (gpu["JobState"], gpu["Partition"], gpu.get("TresPerJob")) == ("COMPLETED", "gpu", "gres:gpu:1"), gpu
    assert (cpu["JobState"], cpu["Partition"]) == ("COMPLETED", "debug"), cpu
    assert "gpu" not in cpu.get("TresPerJob", "") + cpu.get("TresPerNode", ""), cpu
