"""The sweep claims A1-A4 as a table for the workflow (pure Python, imported by ``arda2026.smk``).

Each sweep runs as shard jobs (``run_<claim>_shard``: a cost-balanced share of the (sweep point,
teacher kind, seed group) tasks) followed by one aggregation (``aggregate_<claim>``). The
Snakemake rules ``arda2026_sweep_shard`` and ``arda2026_sweep_aggregate`` are wildcarded over the
claim and take their parameters from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ntkrepro.arda2026 import forecasting, scaling

#: claim -> results name (``<claim>_<name>.json``), shard file name, library module, swept config key.
SWEEPS: dict[str, dict[str, str]] = {
    "A1": {"name": "width_scaling", "shard_name": "width", "module": "scaling", "sweep": "widths"},
    "A2": {"name": "sample_size", "shard_name": "sample_size", "module": "scaling", "sweep": "n_values"},
    "A3": {"name": "sequence_length", "shard_name": "sequence_length", "module": "scaling", "sweep": "T_values"},
    "A4": {"name": "lag_forecasting", "shard_name": "lag_forecasting", "module": "forecasting", "sweep": "L_values"},
}


def section(arda: Mapping[str, Any], claim: str) -> dict[str, Any]:
    """The compute parameters of sweep ``claim``: its config section; A1-A3 also carry the shared
    ``teacher`` (``teacher.kind`` is the verdict's teacher, ``compare_kinds`` run beside it)."""
    return dict(arda[claim]) if claim == "A4" else {**arda[claim], "teacher": arda["teacher"]}


def function(claim: str, step: str) -> str:
    """``module:function`` run by ``step`` (``"shard"`` or ``"aggregate"``) of sweep ``claim``."""
    if step not in ("shard", "aggregate"):
        raise ValueError(f"step must be 'shard' or 'aggregate', got {step!r}")
    fn = f"run_{claim.lower()}_shard" if step == "shard" else f"aggregate_{claim.lower()}"
    return f"ntkrepro.arda2026.{SWEEPS[claim]['module']}:{fn}"


def n_shards(arda: Mapping[str, Any], claim: str) -> int:
    """Number of shard jobs of sweep ``claim`` (config ``jobs`` capped at its number of tasks)."""
    if claim == "A4":
        return forecasting.n_shards(arda["A4"])
    return scaling.n_shards(section(arda, claim), claim)


def shard_files(results_dir: str, arda: Mapping[str, Any], claim: str) -> list[str]:
    """The shard outputs the aggregation of sweep ``claim`` collects."""
    what = SWEEPS[claim]["shard_name"]
    return [f"{results_dir}/arda2026/shards/{claim}_{what}_{k}.json" for k in range(n_shards(arda, claim))]


def size_text(arda: Mapping[str, Any], claim: str) -> str:
    """The sweep's size for the rules' messages, e.g. ``"widths [8, 32, 128], 3 seeds"``."""
    c = arda[claim]
    sweep = SWEEPS[claim]["sweep"]
    return f"{sweep} {c[sweep]}, {len(c['seeds'])} seeds"
