"""A1-A3: the sweeps' task lists and shards (pure Python: the Snakefile imports this at every parse).

A **task** is one group of units of one claim; shard ``k`` of ``K`` runs its cost-balanced share of
:func:`tasks` (one Snakemake job per shard). Split out of :mod:`ntkrepro.arda2026.scaling` (issue 40:
no module over 600 lines), which re-exports every name, so ``scaling.tasks`` etc. still work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

METRICS_A1 = ("min_train_loss", "approx_error", "lin_error")
#: A2's negative control: m*(n) made to grow like n^0.4 (the growth the v2 band [-0.5, 0.5] accepted).
A2_CONTROL_POWER = 0.4
POINT = {"A1": "m", "A2": "n", "A3": "T"}



# ------------------------------------------------------------------------------------------
# Task lists (pure Python: also used by the Snakefile to name shard outputs)

def seed_groups(seeds: Sequence[int], per_group: int) -> list[list[int]]:
    """Split ``seeds`` into consecutive groups of ``per_group``."""
    if per_group < 1:
        raise ValueError("seeds_per_job must be >= 1")
    seeds = list(seeds)
    return [seeds[i:i + per_group] for i in range(0, len(seeds), per_group)]


def teacher_kinds(section: Mapping[str, Any]) -> list[str]:
    """The headline teacher kind (``teacher.kind``, the verdict's) followed by ``compare_kinds``."""
    head = section["teacher"]["kind"]
    return [head] + [k for k in section.get("compare_kinds", []) if k != head]


def tasks(section: Mapping[str, Any], claim: str) -> list[dict[str, Any]]:
    """All tasks of claim ``A1`` (kind x seed group, every width), ``A2`` (kind x seed group, every
    n and width) or ``A3`` (T x kind x teacher group, every student seed)."""
    kinds = teacher_kinds(section)
    if claim in ("A1", "A2"):
        groups = seed_groups(section["seeds"], section["seeds_per_job"])
        return [{"kind": k, "seeds": g} for k in kinds for g in groups]
    if claim == "A3":
        groups = seed_groups(section["teacher_seeds"], section["teachers_per_job"])
        return [{"T": int(T), "kind": k, "teachers": g} for T in section["T_values"] for k in kinds for g in groups]
    raise ValueError(f"unknown claim {claim!r}")


def n_shards(section: Mapping[str, Any], claim: str) -> int:
    """Number of shard jobs: ``section['jobs']`` capped at the number of tasks."""
    return max(1, min(int(section["jobs"]), len(tasks(section, claim))))


def balance(items: Sequence[Any], costs: Sequence[float], K: int) -> list[list[Any]]:
    """Deterministic longest-processing-time split of ``items`` into ``K`` groups of similar total cost.

    Each group keeps the original order of its items.
    """
    if K < 1:
        raise ValueError("K must be >= 1")
    order = sorted(range(len(items)), key=lambda i: (-costs[i], i))
    load = [0.0] * K
    groups: list[list[int]] = [[] for _ in range(K)]
    for i in order:
        k = min(range(K), key=lambda j: (load[j], j))
        groups[k].append(i)
        load[k] += costs[i] + 1e-9
    return [[items[i] for i in sorted(g)] for g in groups]


def _task_cost(section: Mapping[str, Any], task: Mapping[str, Any], claim: str) -> float:
    """Relative cost of a task (training work ~ n m T per step; a constant for start-up and compiles)."""
    if claim == "A1":
        if task["kind"] != section["teacher"]["kind"]:
            return sum(section["widths"]) * len(task["seeds"]) + 8.0
        # the verdict's teacher: linearisation search, and the width_fixed control (min width at every column)
        width_units = sum(section["widths"]) + len(section["widths"]) * min(section["widths"])
        return 1.3 * width_units * len(task["seeds"]) + 8.0
    if claim == "A2":
        return float(len(task["seeds"])) + 1.0
    rnn = len(section.get("indrnn_seeds", [])) if task["kind"] == section["teacher"]["kind"] else 0
    return float(task["T"]) * len(task["teachers"]) * (len(section["seeds"]) + rnn) + 8.0


def shard_tasks(section: Mapping[str, Any], claim: str, shard: int) -> list[dict[str, Any]]:
    """The tasks of shard ``shard`` (cost-balanced over :func:`n_shards` shards)."""
    K = n_shards(section, claim)
    if not 0 <= shard < K:
        raise ValueError(f"shard {shard} out of range for {K} shards")
    ts = tasks(section, claim)
    return balance(ts, [_task_cost(section, t, claim) for t in ts], K)[shard]
