"""The device call itself: calibrate, predict, then run the plan's tiers in order, each written as it
finishes (:func:`run`; the package docstring, :mod:`ntkrepro.device`, tells the whole story).

Composes the papers' device parts: Hron et al.'s H4, H5 and H6 calibration, cost models and tier runners
(:mod:`ntkrepro.hron2020.device_calibration`, :mod:`ntkrepro.hron2020.device_cost`,
:mod:`ntkrepro.hron2020.device_tiers`), Arda et al.'s A1 cost model (:mod:`ntkrepro.arda2026.device_cost`),
and the decisive cells' runner (:mod:`ntkrepro.device.cells`)."""

from __future__ import annotations

import importlib
import logging
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import jax

from ntkrepro.arda2026.device_cost import calibrate_a1, predict_a1_cells
from ntkrepro.clock import CLOCK, timed
from ntkrepro.device.cells import provenance_commit, run_cells_tier
from ntkrepro.device.config import REPO, config_sections, decisive_plan
from ntkrepro.device.limits import bundle, check_outputs, write_json_atomic
from ntkrepro.device.plan import (MARGIN, PLANS, decisive_spec, device_section, h4_params, h6_params, pending_cells,
                                  tier_prediction, tiers_of)
from ntkrepro.hron2020.cifar10 import load_splits
from ntkrepro.hron2020.device_calibration import calibrate_h4, calibrate_h5, calibrate_h6
from ntkrepro.hron2020.device_cost import h5_cell_batch, predict_h4, predict_h5_cells, predict_h6, tier_shapes
from ntkrepro.hron2020.device_tiers import run_h4_tier, run_h6_tier
from ntkrepro.kernels.numerics import MATMUL_PRECISION, precision_record

log = logging.getLogger(__name__)


def run(out: Path, budget_s: float, data_root: Path, plan: str = "gpu", scale: str | None = None,
        cache: Path | None = None, regression_backend: str = "jax", archive: Path | None | str = "repo"
        ) -> dict[str, Any]:
    """Calibrate, then run the plan's tiers in order, each written as it finishes (module docstring).

    ``archive``: the decisive archive whose cells the A1 / H5 tiers skip (already computed); ``"repo"``: the
    repository's (``<repo>/archive/decisive``) for the ``gpu`` plan, none for the smoke plans (their tiny
    cells are not the archive's)."""
    t_start = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    own_cache = cache is None
    cache = Path(tempfile.mkdtemp(prefix="ntkrepro-gpu-")) if cache is None else Path(cache)
    scale = scale or ("gpu" if plan == "gpu" else "smoke")
    steps = PLANS[plan]
    h4_tiers, h5_tiers, a1_tiers, h6_tiers = tiers_of(plan)
    if isinstance(archive, str) and archive == "repo":
        archive = REPO / decisive_plan()["archive"] if plan == "gpu" else None
    try:
        return _run(out, budget_s, data_root, steps, h4_tiers, h5_tiers, a1_tiers, scale, cache, regression_backend,
                    t_start, h6_tiers, None if archive is None else Path(archive))
    finally:
        if own_cache:
            shutil.rmtree(cache, ignore_errors=True)


def importable(name: str) -> bool:
    """Whether ``name`` imports here (flax / optax for H5, torch for A1's teacher inputs are optional)."""
    try:
        importlib.import_module(name)
        return True
    except ImportError:
        return False


def _run(out, budget_s, data_root, steps, h4_tiers, h5_tiers, a1_tiers, scale, cache, backend, t_start,
         h6_tiers=None, archive=None):
    enable_compilation_cache(cache / "jax")
    sections = config_sections()
    order = sorted(h4_tiers, key=lambda t: h4_tiers[t]["n_train"] + h4_tiers[t]["n_val"])
    blocks = {int(t["block_size"]) for t in h4_tiers.values()}
    if len(blocks) != 1:
        raise ValueError("every H4 tier must use the same block size (calibrated once)")
    if [t for c, t in steps if c == "H4"] != order:
        raise ValueError("the plan must run the H4 tiers smallest first")
    p_small = h4_params(sections, h4_tiers[order[0]], out, data_root, cache, backend)
    d_small, t_load = timed(load_splits, p_small, None)
    cal = calibrate_h4(p_small, d_small, blocks.pop(), h4_tiers, backend, cache)
    cal["load_data_s"] = t_load
    predicted: dict[str, dict[str, float]] = {}
    skipped_why: dict[str, str] = {}
    # the shapes each tier compiles are reused by the later tiers of this process (smallest first)
    compiled: set[str] = set()
    for t in order:
        p_t = h4_params(sections, h4_tiers[t], out, data_root, cache, backend)
        predicted[t] = predict_h4(p_t, t, h4_tiers[t], cal, compiled=compiled)
        compiled |= tier_shapes(p_t, h4_tiers[t], cal)
    compiled = set()  # what the tiers that ran compiled (the replay after each tier)
    # the decisive tiers (H5, A1): the cells of config/decisive.yaml's entries not yet archived
    plan = decisive_plan() if (h5_tiers or a1_tiers) else None
    dec: dict[str, dict[str, Any]] = {}  # tier -> claim, spec, section, cells to run
    no_commit = provenance_commit() if plan else None
    for t, tier in {**h5_tiers, **a1_tiers}.items():
        claim = tier["claim"]
        spec = decisive_spec(plan, tier)
        todo, have = pending_cells(claim, spec, archive)
        sec = device_section(spec, data_root)
        dec[t] = {"claim": claim, "spec": spec, "section": sec, "todo": todo}
        if claim == "H5" and not (importable("flax") and importable("optax")):
            skipped_why[t] = "flax / optax not importable here"
        elif claim == "A1" and not importable("torch"):  # the authors' teacher inputs (teacher.authors_inputs)
            skipped_why[t] = "torch not importable here (the authors' teacher inputs need it)"
        elif no_commit:
            skipped_why[t] = no_commit
        elif not todo:
            skipped_why[t] = f"every cell of the plan ({len(have)}) is archived already under {archive}"
        if t in skipped_why:
            continue
        if claim == "H5":
            cal[t] = calibrate_h5(sec, sorted({h5_cell_batch(sec, c["seed"]) for c in todo}))
            cells_pred = predict_h5_cells(sec, todo, cal[t])
        else:
            cal[t] = calibrate_a1({**sec, "seeds_per_job": 1})
            cells_pred = predict_a1_cells(sec, todo, cal[t])
        predicted[t] = tier_prediction(cells_pred, have)
        predicted[t]["cell_parts"] = cells_pred
    for t, tier in (h6_tiers or {}).items():
        p6 = h6_params(sections, tier, data_root, cache)
        if p6["glove"] is None:
            # the record's text as before the move (issue 40: no output changed; the old module name still runs)
            skipped_why[t] = (f"no prepared GloVe subset in {data_root} (python -m ntkrepro.hron2020.device_inputs "
                              "on the CPU, then carry its folder)")
            continue
        cal[t] = calibrate_h6(p6, cal.get("io"))
        predicted[t] = predict_h6(p6, cal[t])
    t_cal = time.perf_counter() - t_start
    # the record's texts as before the move to ntkrepro.device (issue 40: no output changed; the old module
    # names still run, as shims)
    record: dict[str, Any] = {
        "what": "one-device call (ntkrepro.hron2020.gpu_run): H4 tiers, H5, A1, H6", "scale": scale,
        "plan": [{"claim": c, "tier": t} for c, t in steps], "budget_s": budget_s, "margin": MARGIN,
        "h4_tiers": {t: dict(h4_tiers[t]) for t in order}, "h5_tiers": h5_tiers, "a1_tiers": a1_tiers,
        "h6_tiers": h6_tiers,
        "decisive": {t: {"claim": v["claim"], "cells_to_run": [c["name"] for c in v["todo"]],
                         "archive_skipped": None if archive is None else str(archive)} for t, v in dec.items()},
        "calibration": cal, "calibration_wall_s": t_cal, "clock": CLOCK["name"],
        "predicted_s": {t: p["total"] for t, p in predicted.items()}, "predicted_parts_s": predicted,
        "tiers": {t: {"status": "skipped", "why": why} for t, why in skipped_why.items()},
        "kernel_backend": "fast", "dtype": "float32 kernels, float64 regressions", "regression_backend": backend,
        "matmul_precision": MATMUL_PRECISION, "numerics": precision_record(), "jax_backend": jax.default_backend(),
        "h6": ("from the prepared inputs (ntkrepro.hron2020.device_inputs): the GloVe 6B-50d vectors of the IMDb "
               "subset's words; the whole table (80 MB + 3.7 MB vocabulary) would not fit the 64 MiB a call carries"),
    }
    top = out / "gpu_run.json"
    write_json_atomic(top, record)
    log.info("calibration %.1f s; predicted %s", t_cal, {t: round(v["total"], 1) for t, v in predicted.items()})
    first_h4 = True
    for claim, name in steps:
        if name in skipped_why:
            continue
        left = budget_s - (time.perf_counter() - t_start)
        pred = predicted[name]["total"]
        need = predicted[name].get("first_cell", pred)  # a decisive tier: its first cell (each is checked)
        if need * MARGIN > left and not (claim == "H4" and first_h4):
            why = f"predicted {need:.0f} s x {MARGIN} > {left:.0f} s left"
            record["tiers"][name] = {"status": "skipped", "why": why, "predicted_s": pred}
            write_json_atomic(top, record)
            log.info("tier %s skipped: predicted %.1f s, %.1f s left", name, pred, left)
            continue
        stage = cache / "stage" / name
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        tarball = out / f"{name}.tar.gz"
        log.info("tier %s (%s): predicted %.1f s, %.1f s left", name, claim, pred, left)
        w0, c0 = time.perf_counter(), time.process_time()
        if claim == "H4":
            p_t = h4_params(sections, h4_tiers[name], stage, data_root, cache, backend)
            rec = run_h4_tier(name, h4_tiers[name], p_t, stage, cal, scale, compiled)
            compiled |= tier_shapes(p_t, h4_tiers[name], cal)
            rec["fits_budget"] = pred * MARGIN <= left
            first_h4 = False
        elif claim == "H6":
            rec = run_h6_tier(name, h6_params(sections, h6_tiers[name], data_root, cache), stage, scale)
        else:  # H5, A1: decisive cells
            d = dec[name]
            rec = run_cells_tier(name, claim, d["spec"], d["section"], d["todo"], predicted[name], stage, tarball,
                                 plan["archive"], lambda: budget_s - (time.perf_counter() - t_start))
        rec.update(wall_s=time.perf_counter() - w0, cpu_s=time.process_time() - c0, clock=CLOCK["name"])
        pred_run = rec.get("predicted_run_s", pred)  # a decisive tier: the cells it ran
        rec.update(status="done", predicted_s=pred,
                   measured_over_predicted=rec["measured_s"] / pred_run if pred_run else None,
                   left_before_s=left, device=precision_record()["devices"], jax=jax.__version__)
        if claim == "H4":
            rec["measured_over_predicted_realised"] = rec["measured_s"] / rec["predicted_realised_s"]["total"]
        write_json_atomic(stage / f"{name}_throughput.json", rec)
        rec["archive_bytes"] = bundle(stage, tarball)
        record["tiers"][name] = rec
        record["total_wall_s"] = time.perf_counter() - t_start
        write_json_atomic(top, record)
        log.info("tier %s done: %.1f s (%s clock; predicted %.1f s)", name, rec["measured_s"], CLOCK["name"], pred)
        shutil.rmtree(stage, ignore_errors=True)
    record["total_wall_s"] = time.perf_counter() - t_start
    record["outputs_fit"] = not check_outputs(out)
    write_json_atomic(top, record)
    return record


def enable_compilation_cache(folder: Path) -> None:
    """JAX's persistent compilation cache in ``folder``, every compilation kept (the tiers reuse them)."""
    folder.mkdir(parents=True, exist_ok=True)
    for key, value in (("jax_compilation_cache_dir", str(folder)),
                       ("jax_persistent_cache_min_compile_time_secs", 0.0),
                       ("jax_persistent_cache_min_entry_size_bytes", -1)):
        try:
            jax.config.update(key, value)
        except (AttributeError, KeyError, ValueError) as e:  # an older/newer jax without the option
            log.warning("jax option %s not set: %s", key, e)

