"""The terminal shows one message line per job (issue 23 item 4): every rule has a `message:`
naming the claim, the scale and the replicate, and the local profile prints no shell commands."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_a_dry_run_prints_one_message_per_job_and_no_rule_blocks(tmp_path):
    out = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-n", "all", "benchmarks", "--profile",
                          "profiles/local", "--configfile", "config/smoke.yaml", "--config", f"results_dir={tmp_path}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout + out.stderr
    blocks = re.findall(r"^(?:local)?rule (\w+):$", text, re.M)
    assert not blocks, f"rules without a message: print their whole job block: {sorted(set(blocks))}"
    messages = re.findall(r"^Job \d+: (.+)$", text, re.M)
    jobs = int(re.search(r"^total\s+(\d+)$", text, re.M).group(1))     # the "Job stats" table
    assert len(messages) == jobs > 100
    assert all(re.search(r"\| scale smoke, replicate [01]$", m) for m in messages), messages[:5]
    assert any(m.startswith("H3: ledger entry") and m.endswith("replicate 1") for m in messages)
    assert "Shell command" not in text


def test_the_local_profile_prints_no_shell_commands():
    profile = yaml.safe_load((ROOT / "profiles" / "local" / "config.yaml").read_text())
    assert profile["printshellcmds"] is False
