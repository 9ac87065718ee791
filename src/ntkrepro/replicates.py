r"""Independent replicates of every claim: the derived configuration of replicate ``r``.

Replicate 0 is the configured run itself (its outputs under ``results/``, unchanged). Replicate
:math:`r \ge 1` reruns the compute chain of each claim in ``replicate_claims`` with a derived
configuration (:func:`replicate_config`) whose outputs go under ``results/replicates/r<r>/``:

* **Seeds.** Every seed in the paper sections -- keys :data:`SEED_KEYS` (an integer or a list of
  integers) at any depth: initialisation, teacher draws, data sampling, bootstrap -- is shifted

  .. math:: s \mapsto s + S\,r, \qquad S = 1\,000\,003 \;(:data:`SEED_STRIDE`).

  The library derives further seeds from these by small offsets (``seed + 1``, ``seed + h``,
  ``100 seed + 10 i + j``, ``10^6 (seed + 1) + m``, ...); with configured seeds and offsets below
  :math:`S / 100`, the seed sets of two replicates are disjoint (tests/test_replicates.py checks the
  configured seeds of all three scales). A key containing ``seed`` that is neither a seed nor a
  count (:data:`SEED_COUNT_KEYS`) is refused, so a new seed key cannot be missed silently.
* **Data.** ``data.cifar10.replicate`` and ``data.imdb.replicate`` are set to ``r``. The loaders
  (:func:`ntkrepro.data.cifar10.draw_splits`, :func:`ntkrepro.data.imdb.replicate_pool`) then
  draw replicate ``r``'s examples from the archive *minus every example replicates 0..r-1 of the
  same claim used* (their draws are recomputed from their own seeds), so the data of any two
  replicates are disjoint and replicate 0's draw is exactly today's. An archive too small for the
  configured sizes times the number of replicates raises an error naming the replicate.

Criteria keep their own fixed bootstrap seeds where the criterion code fixes one (e.g. the G3/G4
Spearman bootstraps): the bootstrap then resamples different measurements, with the same stream.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

#: Seed shift per replicate (a prime well above every configured seed and derived offset).
SEED_STRIDE = 1_000_003
#: Config keys holding a seed (int) or a list of seeds.
SEED_KEYS = frozenset({"seed", "seeds", "teacher_seeds", "indrnn_seeds", "data_seed", "boot_seed"})
#: Config keys whose name contains "seed" but which count seeds or derive them (not shifted).
SEED_COUNT_KEYS = frozenset({"n_seeds", "seeds_per_job", "d_seed_modulus"})
#: Top-level sections whose seeds are shifted.
PAPER_SECTIONS = ("hron2020", "arda2026", "hazelden2026", "framework")
#: Data sections that take a ``replicate`` index (disjoint slices).
DATA_SECTIONS = ("cifar10", "imdb")


def shift_seed(seed: int, replicate: int) -> int:
    """:math:`s + S r` (``S`` = :data:`SEED_STRIDE`)."""
    if replicate < 0:
        raise ValueError(f"replicate index must be >= 0, got {replicate}")
    return int(seed) + SEED_STRIDE * int(replicate)


def base_seed(seed: int, replicate: int) -> int:
    """Inverse of :func:`shift_seed`: the replicate-0 seed of replicate ``replicate``'s ``seed``."""
    return int(seed) - SEED_STRIDE * int(replicate)


def _shift(node: Any, replicate: int, path: str) -> Any:
    if isinstance(node, Mapping):
        out = {}
        for k, v in node.items():
            where = f"{path}.{k}"
            if k in SEED_KEYS:
                ints = isinstance(v, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in v)
                if isinstance(v, bool) or not (isinstance(v, int) or ints):
                    raise TypeError(f"{where}: a seed must be an integer or a list of integers, got {v!r}")
                out[k] = shift_seed(v, replicate) if isinstance(v, int) else [shift_seed(s, replicate) for s in v]
            elif "seed" in str(k) and k not in SEED_COUNT_KEYS:
                raise KeyError(f"{where}: unknown seed-like key; add it to ntkrepro.replicates.SEED_KEYS "
                               "(a seed, shifted per replicate) or SEED_COUNT_KEYS (a count)")
            else:
                out[k] = _shift(v, replicate, where)
        return out
    if isinstance(node, list):
        return [_shift(v, replicate, f"{path}[{i}]") for i, v in enumerate(node)]
    return node


def replicate_dir(results_dir: str, replicate: int) -> str:
    """Where replicate ``replicate`` writes: ``<results_dir>/replicates/r<replicate>``."""
    return f"{results_dir}/replicates/r{int(replicate)}"


def replicate_config(config: Mapping[str, Any], replicate: int) -> dict[str, Any]:
    """The configuration of replicate ``replicate`` >= 1 (module docstring): seeds shifted, the data
    sections' ``replicate`` index and ``replicate_index`` set, ``results_dir`` moved, ``replicates``
    set to 1 (a replicate has no replicates of its own)."""
    if replicate < 1:
        raise ValueError("replicate 0 is the configured run itself")
    cfg = copy.deepcopy(dict(config))
    for sec in PAPER_SECTIONS:
        cfg[sec] = _shift(cfg[sec], replicate, sec)
    for sec in DATA_SECTIONS:
        cfg["data"][sec] = {**cfg["data"][sec], "replicate": int(replicate)}
    cfg["results_dir"] = replicate_dir(config["results_dir"], replicate)
    cfg["replicates"] = 1
    cfg["replicate_index"] = int(replicate)
    return cfg


def seeds_in(config: Mapping[str, Any]) -> dict[str, list[int]]:
    """Every configured seed of the paper sections, by dotted key (for tests and provenance)."""
    found: dict[str, list[int]] = {}

    def walk(node: Any, path: str) -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                if k in SEED_KEYS:
                    found[f"{path}.{k}"] = [int(v)] if isinstance(v, int) else [int(s) for s in v]
                else:
                    walk(v, f"{path}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]")

    for sec in PAPER_SECTIONS:
        walk(config[sec], sec)
    return found


def replicated_claims(config: Mapping[str, Any], claims: Iterable[str]) -> list[str]:
    """The claims (of ``claims``, the DAG's) that get replicates: ``replicate_claims`` ("all" or a
    list; an id not in the DAG is an error); none when ``replicates`` is 1."""
    claims = sorted(claims)
    if int(config.get("replicates", 1)) <= 1:
        return []
    wanted = config.get("replicate_claims", "all")
    if wanted == "all":
        return claims
    unknown = sorted(set(wanted) - set(claims))
    if unknown:
        raise ValueError(f"replicate_claims names claims not in the DAG: {unknown}")
    return sorted(wanted)
