"""Hron et al.'s tier runners on the device: H4 at a tier's sizes (:func:`run_h4_tier`) and H6 from the
prepared inputs (:func:`run_h6_tier`), each through ``ntkrepro.run.execute`` into the Snakemake layout of
``out_stage``, with its throughput record. H5's decisive cells run through the generic decisive runner
(:func:`ntkrepro.device.cells.run_cells_tier`, the cell function named in config/decisive.yaml). The
parameters come from :mod:`ntkrepro.device.plan` (``h4_params``, ``h6_params``), which composes these."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ntkrepro.clock import CLOCK, now
from ntkrepro.hron2020.device_cost import (chunker, count_h4, flops_per_pair, measured_pairs, predict_h4,
                                           realised_final_depths)
from ntkrepro.kernels.device_regression import TALLY
from ntkrepro.run import execute

COMPUTE = {"H4": "ntkrepro.hron2020.cifar10:run_h4", "H6": "ntkrepro.hron2020.imdb:run_h6"}
RESULTS = {"H4": "hron2020/H4_cifar10_kernels.json", "H6": "hron2020/H6_imdb.json"}


def run_h4_tier(name: str, tier: Mapping[str, Any], params: Mapping[str, Any], out_stage: Path,
                cal: Mapping[str, Any], scale: str, compiled: set[str]) -> dict[str, Any]:
    """``run_h4`` with ``params`` (``ntkrepro.device.plan.h4_params`` at ``tier``), its results under
    ``out_stage``; the record: the measured time, the prediction replayed on the realised final depths, the
    regressions counted against those performed (:data:`TALLY`), the kernel pairs and FLOPs per second."""
    backend = params["regression_backend"]
    res_path = out_stage / RESULTS["H4"]
    res_path.parent.mkdir(parents=True, exist_ok=True)
    TALLY.clear()
    t0 = now()
    results = execute(COMPUTE["H4"], params, res_path, scale=scale,
                      outputs={"predictions": out_stage / "hron2020" / "H4_cifar10_kernels_predictions.npz"})
    wall = now() - t0  # the run's clock (CLOCK)
    depths = realised_final_depths(results)
    replay = predict_h4(params, name, tier, cal, depths, compiled=compiled)
    counted = count_h4(params, tier, depths, chunker(cal))
    pairs = measured_pairs(params, tier, results)
    flops = flops_per_pair(params)
    total_pairs = sum(pairs.values())
    total_flops = sum(pairs[m] * flops[m] for m in pairs)
    return {"claim": "H4", "tier": name, "sizes": dict(tier), "measured_s": wall, "clock": CLOCK["name"],
            "predicted_realised_s": replay, "final_depths": depths,
            "regressions_counted": {str(k): v for k, v in sorted(counted["by_size"].items())},
            "regressions_performed": {str(k): v for k, v in sorted(TALLY.items())},
            "regression_count_matches": dict(counted["by_size"]) == dict(TALLY),
            "pairs": pairs, "flops_per_pair": flops, "total_pairs": total_pairs, "total_flops": total_flops,
            "pairs_per_s": total_pairs / wall, "flops_per_s": total_flops / wall,
            "regression_backend": backend, "results": RESULTS["H4"]}


def run_h6_tier(name: str, params: Mapping[str, Any], out_stage: Path, scale: str) -> dict[str, Any]:
    """``run_h6`` with ``params`` (``ntkrepro.device.plan.h6_params``), its results under ``out_stage``."""
    res_path = out_stage / RESULTS["H6"]
    res_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = now()
    execute(COMPUTE["H6"], dict(params), res_path, scale=scale,
            outputs={"table": out_stage / "hron2020" / "H6_imdb_table.csv"})
    return {"claim": "H6", "tier": name, "measured_s": now() - t0, "results": RESULTS["H6"],
            "sizes": {k: params[k] for k in ("n_train", "n_valid", "n_test", "seq_len")},
            "glove": {k: params["glove"][k] for k in ("source", "sha256")}}
