"""Shared pytest configuration: fixed seeds, CPU-only JAX, the repository root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (where the Snakefile is)."""
    return ROOT


@pytest.fixture
def render_report(tmp_path, monkeypatch):
    """``render(entries) -> LaTeX``: write the claims table of ledger ``entries`` under ``tmp_path``
    and render the report template from the repository root, as rule ``replication_report`` does."""
    from ntkrepro import report
    from ntkrepro.ledger import write_table

    def render(entries):
        claims = tmp_path / "results" / "claims"
        claims.mkdir(parents=True, exist_ok=True)
        write_table(list(entries), claims / "t.csv", claims / "t.md", claims / "claims_table.tex")
        monkeypatch.chdir(ROOT)
        return report.render(ROOT / "paper" / "replication_report.tex.j2", list(entries), {},
                             claims / "claims_table.tex", "smoke", tmp_path / "results" / "paper")

    return render
