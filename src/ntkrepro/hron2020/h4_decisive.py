r"""H4's decisive tier on a CPU: CIFAR-10 kernels at 10,000 training + validation images (issue 37).

The default run's H4 protocol (:func:`ntkrepro.hron2020.cifar10.run_h4`) at 100x its training count,
cut into cells that each finish in about an hour on two cores and are archived as results only
(``config/decisive.yaml``, ``H4``; :mod:`ntkrepro.decisive` seals, verifies and re-judges them).

Two stages, one cell each ``part`` (``section['part_specs'][part]``):

* **sweep** (one cell per preceding depth): the validation sweep of every family at that depth, on
  a class-balanced ``sweep.n_train`` / ``sweep.n_val`` split (4,000 / 1,000): for NNGP and NTK, the
  diagonal regulariser chosen on validation and the per-image validation correctness at it -- for
  the real labels and for the permuted-label control (one factorisation per regulariser serves
  both). This is what the depth ordering and each family's ``selected_depth`` read.
* **final** (one cell per group of families): at the fixed depth ``final_depth`` (1), on the
  ``n_train`` / ``n_val`` / ``n_test`` split (8,000 / 2,000 / 2,000): the regulariser chosen on
  validation, the refit on train :math:`\cup` validation (10,000 images), test correctness with its
  bootstrap interval, the two-way bootstrap (``train_resample.n_boot`` refits on resampled training
  rows, :func:`ntkrepro.kernels.resampling.weighted_refit`, the same numbers as the direct refits at a
  quarter of the cost), the learning curve, and for the attention families the two-halves null pair
  of the ordering control -- again for the real labels and the permuted-label control.

Every kernel of a cell comes from one :func:`~ntkrepro.hron2020.cifar10.build_sweep_model` (the
conv stack computed once for all the cell's families; each family's kernel equal to its standalone
model's, tested), by :func:`ntkrepro.kernels.blocks.compute_kernel_blocks` (resumable block cache on
local disk, deleted when the cell is archived: no kernel matrix is archived).

:func:`aggregate_h4` assembles the cells into :func:`run_h4`'s results layout, so that H4's current
criterion (:func:`ntkrepro.hron2020.claims.evaluate_h4`) judges the archive unchanged: ``sweep`` rows
of every family and depth (4,000 / 1,000 split), ``final`` rows at depth 1 with ``selected_depth``
from the sweep, the orderings, the permuted-label control and the two-halves control.

Reductions against the paper (labelled in the ledger through ``extra_substitutes``): 8x8 images,
10,000 of the 50,000 training images and 2,000 test images, the depth sweep on 4,000 / 1,000 images,
the final models at depth 1 (the smallest swept; the paper's final table uses eight-layer
Struct / Residual models), the offline 20k subset of CIFAR-10 (a JPEG copy).

Cost model (:func:`predict_seconds`; the rates are the plan's ``cost`` entry, measured before the run):
process CPU seconds = pairs x (stack + readouts) microseconds per pair + factorisations x seconds per
factorisation at their size (:math:`\propto n^3`). Each cell records its measured CPU and wall time beside
its prediction (CPU time: the machine is shared with other work at a lower priority).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ntkrepro.data.cifar10 import N_CLASSES
from ntkrepro.decisive_cells import compute_code_hash
from ntkrepro.hron2020.cifar10 import (ATTENTION_FAMILIES, FAMILIES, KERNELS, build_sweep_model, h4_resample_record,
                                       is_official_archive, load_splits, null_ordering_control, orderings)
from ntkrepro.hron2020.regime import learning_curve_plan, permuted_labels, training_resample_plan
from ntkrepro.io import read_json
from ntkrepro.kernels.blocks import code_fingerprint, compute_kernel_blocks, describe
from ntkrepro.kernels.inference import one_hot, predicted_classes
from ntkrepro.kernels.resampling import select_many, weighted_refit
from ntkrepro.stats import bootstrap_ci

# Imports inside functions (issue 40): those left in a function listed in
# ntkrepro.decisive_cells.COMPUTE_CODE stay there, as its source is hashed into the archived decisive cells
# (H4: kernels.fast in tree_kernels).

log = logging.getLogger("ntkrepro.hron2020")

#: Seeds of the permuted labels (as :func:`ntkrepro.hron2020.cifar10.run_h4`: seed + these).
PERMUTE_TRAIN, PERMUTE_VAL = 99_991, 99_992
#: Where cells cache kernel blocks while they run (env ``NTKREPRO_DECISIVE_CACHE`` overrides).
CACHE = ".cache/decisive-kernels"
#: Label sets of every fit: the real labels and the permuted-label control.
LABELS = ("real", "permuted_labels")


# --------------------------------------------------------------------------------------------
# kernels

def tree_kernels(params: Mapping[str, Any], families: Sequence[str], depth: int, x1: np.ndarray,
                 x2: np.ndarray | None, desc: str, cache_dir: str | Path) -> dict[str, dict[str, np.ndarray]]:
    """``{family: {"nngp": K, "ntk": Theta}}`` between ``x1`` and ``x2`` (``None``: symmetric) of every
    family in ``families`` at ``depth``, from one :func:`build_sweep_model` (the shared conv stack once)."""
    from ntkrepro.kernels.fast import FastKernelFn

    model = build_sweep_model(list(families), int(depth), dict(params["arch"]))
    kf = FastKernelFn(model, memory_budget=int(params.get("memory_budget_mb", 128)) * 2 ** 20)
    names = tuple(f"{f}/{g}" for f in families for g in KERNELS)

    def fn(a, b, get):
        outs = kf(a, b, KERNELS)
        outs = outs if len(families) > 1 else [outs]
        return {f"{f}/{g}": getattr(o, g) for f, o in zip(families, outs) for g in KERNELS}

    res = compute_kernel_blocks(fn, x1, x2, block_size=int(params["block_size"]), cache_dir=cache_dir, get=names,
                                dtype=str(params.get("dtype", "float32")),
                                desc=f"{desc} [{describe(arch=dict(params['arch']), depth=int(depth))[:40]}]",
                                backend="ntkrepro.kernels.fast", code=code_fingerprint("ntkrepro.kernels.fast"))
    return {f: {g: res[f"{f}/{g}"] for g in KERNELS} for f in families}


def _cache_dir(params: Mapping[str, Any], name: str) -> Path:
    root = Path(params.get("cache_dir") or os.environ.get("NTKREPRO_DECISIVE_CACHE") or CACHE)
    return root / "H4" / name


# --------------------------------------------------------------------------------------------
# cells

def _labels(d: Mapping[str, Any], seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Training and validation labels of the real run and of the permuted-label control (run_h4's)."""
    return {"real": (d["y_train"], d["y_val"]),
            "permuted_labels": (permuted_labels(d["y_train"], seed + PERMUTE_TRAIN),
                                permuted_labels(d["y_val"], seed + PERMUTE_VAL))}


def _select(k: np.ndarray, n_t: int, labels: Mapping[str, tuple[np.ndarray, np.ndarray]], grid: Sequence[float]
            ) -> dict[str, dict[str, Any]]:
    """Validation selection on the first ``n_t`` rows (train) against the rest (validation) of ``k``,
    for every label set at once: ``{label: {"diag_reg", "val_accuracy", "scores", "val_correct"}}``."""
    k_tt, k_vt = k[:n_t, :n_t], k[n_t:, :n_t]
    names = list(labels)
    sel = select_many(k_tt, k_vt, [one_hot(labels[n][0], N_CLASSES) for n in names],
                      [one_hot(labels[n][1], N_CLASSES) for n in names], grid)
    out = {}
    for n, (best, scores, pred) in zip(names, sel):
        ok = predicted_classes(pred) == labels[n][1]
        out[n] = {"diag_reg": best, "val_accuracy": max(s["accuracy"] for s in scores), "scores": scores,
                  "val_correct": ok.astype(int).tolist()}
    return out


def run_sweep_cell(params: Mapping[str, Any], spec: Mapping[str, Any], ctx) -> dict[str, Any]:
    """One preceding depth, every family: validation sweep rows for the real and the permuted labels."""
    sw = dict(params["sweep"])
    depth, seed = int(spec["depth"]), int(params["seed"])
    d = load_splits({**params, "n_train": int(sw["n_train"]), "n_val": int(sw["n_val"])}, ctx, need_test=False)
    n_t = d["x_train"].shape[0]
    x = np.concatenate([d["x_train"], d["x_val"]])
    families = list(params["families"])
    cache = _cache_dir(params, f"sweep_d{depth}")
    t0 = time.perf_counter()
    ks = tree_kernels(params, families, depth, x, None, f"H4 decisive sweep d{depth}", cache)
    kernel_s = time.perf_counter() - t0
    labels = _labels(d, seed)
    rows: dict[str, list[dict[str, Any]]] = {n: [] for n in LABELS}
    t1 = time.perf_counter()
    for fam in ctx.progress(families, desc=f"H4 sweep d{depth}: regressions"):
        for g in KERNELS:
            for n, r in _select(np.asarray(ks[fam][g]), n_t, labels, params["diag_reg_grid"]).items():
                rows[n].append({"family": fam, "depth": depth, "kernel": g, **r})
                if n == "real":
                    log.info("H4 sweep %s-d%d %s: val acc %.3f (diag_reg %g)", fam, depth, g, r["val_accuracy"],
                             r["diag_reg"])
    return {"stage": "sweep", "depth": depth, "n_train": int(n_t), "n_val": int(d["x_val"].shape[0]),
            "rows": rows, "archive": Path(d["archive"]).name, "archive_sha256": d["archive_sha256"],
            "n_available": d["n_available"], "kernel_seconds": round(kernel_s, 1),
            "regression_seconds": round(time.perf_counter() - t1, 1), "pairs": int(x.shape[0] * (x.shape[0] + 1) // 2),
            "_cache": cache}


def _boot(k_fit, k_test, ys, lam, plan, y_test, n_boots: Sequence[int] | None = None) -> list[list[float]]:
    """Two-way bootstrap accuracies per label set: ``weighted_refit`` per draw, scored on the draw's
    resampled test points (as :func:`ntkrepro.hron2020.regime.boot_accuracies`); label set ``j`` gets the
    plan's first ``n_boots[j]`` draws (all by default), one factorisation per draw for every set using it."""
    n_boots = [len(plan["train"])] * len(ys) if n_boots is None else [int(v) for v in n_boots]
    out: list[list[float]] = [[] for _ in ys]
    for i, (rows, te) in enumerate(zip(plan["train"], plan["test"])):
        active = [j for j in range(len(ys)) if i < n_boots[j]]
        if not active:
            break
        preds, _ = weighted_refit(k_fit, k_test, [ys[j] for j in active], rows, lam)
        for j, p in zip(active, preds):
            out[j].append(float(np.mean((predicted_classes(p) == y_test)[te])))
    return out


def _curve(k_fit, k_test, ys, lam, curve, y_test) -> list[list[float]]:
    """Test accuracy refitted on each learning-curve subset, per label set."""
    out: list[list[float]] = [[] for _ in ys]
    for _, rows in curve:
        preds, _ = weighted_refit(k_fit, k_test, ys, rows, lam)
        for j, p in enumerate(preds):
            out[j].append(float(np.mean(predicted_classes(p) == y_test)))
    return out


def _two_draws(params, k_fit, k_test, y_fit, lam, y_test) -> list[dict[str, Any]]:
    """The ordering control's null pair, as :func:`ntkrepro.hron2020.regime.two_draws` (same seeds,
    plans and record), with weighted refits."""
    rs = dict(params["train_resample"])
    seed = int(params["seed"]) + 11
    n = int(k_fit.shape[0])
    m = n // 2
    perm = np.random.default_rng(seed).permutation(n)
    plan = training_resample_plan(m, int(k_test.shape[0]), int(rs["n_boot"]), seed + 1)
    curve = learning_curve_plan(m, rs["curve_fractions"], int(rs["curve_draws"]), seed + 2, min_size=N_CLASSES)
    out = []
    for half in (np.sort(perm[:m]), np.sort(perm[m:2 * m])):
        kt, ks, y = k_fit[np.ix_(half, half)], k_test[:, half], y_fit[half]
        (pred,), _ = weighted_refit(kt, ks, [y], np.arange(m), lam)
        ok = (predicted_classes(pred) == y_test).astype(float)
        out.append({"n_fit": m, "accuracy": float(ok.mean()), "test_correct": ok.astype(int).tolist(),
                    "boot_accuracy": _boot(kt, ks, [y], lam, plan, y_test)[0],
                    "curve_accuracy": _curve(kt, ks, [y], lam, curve, y_test)[0],
                    "curve_sizes": [int(s) for s, _ in curve]})
    return out


def run_final_cell(params: Mapping[str, Any], spec: Mapping[str, Any], ctx) -> dict[str, Any]:
    """A group of families at ``final_depth``: selection on validation, refit on train + validation,
    test accuracy, two-way bootstrap, learning curve (and the null pair for attention families), for the
    real and the permuted labels (``final`` rows as :func:`ntkrepro.hron2020.cifar10.final_test` writes)."""
    families = list(spec["families"])
    depth, seed = int(params["final_depth"]), int(params["seed"])
    rs = dict(params["train_resample"])
    d = load_splits(params, ctx)
    n_t = d["x_train"].shape[0]
    x_fit = np.concatenate([d["x_train"], d["x_val"]])
    n_fit, n_test = x_fit.shape[0], d["x_test"].shape[0]
    y_test = d["y_test"]
    labels = _labels(d, seed)
    y_fit = {n: one_hot(np.concatenate(labels[n]), N_CLASSES) for n in LABELS}
    plan = training_resample_plan(n_fit, n_test, int(rs["n_boot"]), seed + 7)
    curve = learning_curve_plan(n_fit, rs["curve_fractions"], int(rs["curve_draws"]), seed + 8, min_size=N_CLASSES)
    # the permuted-label control: the plan's first control_n_boot draws (its gain interval only has to show
    # whether it reaches chance); the real labels: all of them
    n_boot = {"real": int(rs["n_boot"]), "permuted_labels": int(rs.get("control_n_boot", rs["n_boot"]))}
    name = "final_" + "_".join(families)
    cache = _cache_dir(params, name)
    t0 = time.perf_counter()
    kf = tree_kernels(params, families, depth, x_fit, None, f"H4 decisive {name} fit", cache)
    kt = tree_kernels(params, families, depth, d["x_test"], x_fit, f"H4 decisive {name} test", cache)
    kernel_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    rows: dict[str, list[dict[str, Any]]] = {n: [] for n in LABELS}
    for fam in families:
        for g in KERNELS:
            k_fit, k_test = np.asarray(kf[fam][g]), np.asarray(kt[fam][g])
            sel = _select(k_fit, n_t, labels, params["diag_reg_grid"])
            lams = {n: sel[n]["diag_reg"] for n in LABELS}
            for lam in sorted(set(lams.values())):  # one factorisation per regulariser for every label set at it
                names = [n for n in LABELS if lams[n] == lam]
                ys = [y_fit[n] for n in names]
                preds, jitter = weighted_refit(k_fit, k_test, ys, np.arange(n_fit), lam)
                boots = _boot(k_fit, k_test, ys, lam, plan, y_test, [n_boot[n] for n in names])
                curves = _curve(k_fit, k_test, ys, lam, curve, y_test)
                for n, pred, boot, cur in zip(names, preds, boots, curves):
                    ok = (predicted_classes(pred) == y_test).astype(np.int8)
                    acc = bootstrap_ci(ok.astype(float), np.mean, n_boot=int(params["n_boot"]), seed=seed)
                    row = {"family": fam, "kernel": g, "depth": depth, "diag_reg": lam,
                           "val_accuracy": sel[n]["val_accuracy"], "val_scores": sel[n]["scores"],
                           "test_accuracy": acc.as_dict(), "jitter": jitter, "boot_accuracy": boot,
                           "curve_accuracy": cur, "test_correct": ok.astype(int).tolist()}
                    if n == "real" and fam in ATTENTION_FAMILIES:
                        row["two_draws"] = _two_draws(params, k_fit, k_test, y_fit["real"], lam, y_test)
                    rows[n].append(row)
                    log.info("H4 final %s %s %s depth %d: test acc %.3f [%.3f, %.3f]", n, fam, g, depth, acc.value,
                             acc.low, acc.high)
    return {"stage": "final", "families": families, "depth": depth, "n_train": int(n_t),
            "n_val": int(d["x_val"].shape[0]), "n_test": int(n_test), "rows": rows,
            "archive": Path(d["archive"]).name, "archive_sha256": d["archive_sha256"], "n_available": d["n_available"],
            "kernel_seconds": round(kernel_s, 1), "regression_seconds": round(time.perf_counter() - t1, 1),
            "pairs": int(n_fit * (n_fit + 1) // 2 + n_test * n_fit), "_cache": cache}


def run_h4_cell(params: dict[str, Any], ctx) -> dict[str, Any]:
    """Cell ``params['part']`` of H4's decisive plan (``section['part_specs']``): a sweep or a final cell.
    Records wall and process CPU time, the cost model's prediction and the measured kernel throughput."""
    part = int(params["part"])
    specs = list(params["part_specs"])
    if not 0 <= part < len(specs):
        raise ValueError(f"H4 decisive: part {part} not in part_specs (0..{len(specs) - 1})")
    spec = dict(specs[part])
    c0 = time.process_time()
    if spec.get("stage") == "sweep":
        out = run_sweep_cell(params, spec, ctx)
    elif spec.get("stage") == "final":
        out = run_final_cell(params, spec, ctx)
    else:
        raise ValueError(f"H4 decisive: part {part} has stage {spec.get('stage')!r} (sweep or final)")
    cache = out.pop("_cache")
    out.update(claim="H4", part=part, compute_code=compute_code_hash("H4"), kernel_code=code_fingerprint("ntkrepro.kernels.fast"), cpu_seconds=round(time.process_time() - c0, 1),
               pairs_per_second=round(out["pairs"] / max(out["kernel_seconds"], 1e-9), 1))
    if params.get("cost"):
        out["predicted_seconds"] = predict_seconds(params, spec, params["cost"])
    shutil.rmtree(cache, ignore_errors=True)  # kernel blocks are not results: the cell is complete
    return out


# --------------------------------------------------------------------------------------------
# aggregate: run_h4's results layout from the archived cells

def _select_depth(sweep: Sequence[Mapping[str, Any]], fam: str, g: str) -> int:
    rows = [r for r in sweep if r["family"] == fam and r["kernel"] == g]
    return int(min(rows, key=lambda r: (-r["val_accuracy"], r["depth"]))["depth"])


def _body(params: Mapping[str, Any], sweep: list[dict[str, Any]], final: list[dict[str, Any]], base: Mapping[str, Any],
          null_pairs: bool) -> dict[str, Any]:
    families = [f for f in FAMILIES if f in params["families"]]
    order = {(f, g): i for i, (f, g) in enumerate((f, g) for f in families for g in KERNELS)}
    final = sorted(final, key=lambda r: order[(r["family"], r["kernel"])])
    correct = {f"{r['family']}_{r['kernel']}": np.asarray(r["test_correct"], np.int8) for r in final}
    rows = []
    for r in final:
        row = {k: v for k, v in r.items()
               if k not in ("test_correct", "val_scores") and (null_pairs or k != "two_draws")}
        row["selected_depth"] = _select_depth(sweep, r["family"], r["kernel"])
        rows.append(row)
    body = {**base, "families": families, "sweep": sweep, "final": rows,
            "comparisons": orderings({**params, "families": families}, rows, correct),
            "train_resample": h4_resample_record(params, int(base["n_train"]) + int(base["n_val"]),
                                                 int(base["n_test"]))}
    return body


def aggregate_h4(params: dict[str, Any], ctx) -> dict[str, Any]:
    """The cells (``shard_files``) assembled into :func:`ntkrepro.hron2020.cifar10.run_h4`'s results layout
    for H4's criterion: every planned part present exactly once, all of one data archive and split."""
    cells = [read_json(ctx.use_data(p)) for p in params["shard_files"]]
    parts = sorted(int(c["part"]) for c in cells)
    want = [int(p) for p in params["parts"]]
    if parts != sorted(want):
        raise ValueError(f"H4 decisive: cells of parts {parts}, the plan has {sorted(want)}: incomplete or duplicated")
    shas = {c["archive_sha256"] for c in cells}
    if len(shas) != 1:
        raise ValueError(f"H4 decisive cells read different CIFAR-10 archives: {sorted(shas)}")
    sweeps = [c for c in cells if c["stage"] == "sweep"]
    finals = [c for c in cells if c["stage"] == "final"]
    depths = sorted(int(c["depth"]) for c in sweeps)
    fams = sorted(f for c in finals for f in c["families"])
    if fams != sorted(params["families"]):
        raise ValueError(f"H4 decisive: final cells hold families {fams}, the plan {sorted(params['families'])}")
    f0 = finals[0]
    base = {"image_size": int(params["image_size"]), "n_train": int(f0["n_train"]), "n_val": int(f0["n_val"]),
            "n_test": int(f0["n_test"]), "depths": depths, "arch": dict(params["arch"]), "kernel_backend": "fast",
            "archive": f0["archive"], "archive_sha256": f0["archive_sha256"],
            "archive_official": is_official_archive(f0["archive_sha256"]), "n_available": f0["n_available"],
            "sweep_n_train": int(sweeps[0]["n_train"]), "sweep_n_val": int(sweeps[0]["n_val"]),
            "final_depth": int(params["final_depth"]),
            "extra_substitutes": [
                f"depth sweep (selection of the preceding depth, depth ordering) on {sweeps[0]['n_train']}/"
                f"{sweeps[0]['n_val']} train/validation images; final models at depth {int(params['final_depth'])} "
                "(the smallest swept) on the full split, their regulariser chosen on its validation images",
                "kernels and refits: ntkrepro.kernels.fast (one model per depth for all families) and weighted "
                "bootstrap refits (equal to the direct refits, tested)"]}
    body: dict[str, dict[str, Any]] = {}
    for n in LABELS:
        sweep = sorted((r for c in sweeps for r in c["rows"][n]),
                       key=lambda r: (FAMILIES.index(r["family"]), r["depth"], KERNELS.index(r["kernel"])))
        final = [r for c in finals for r in c["rows"][n]]
        body[n] = _body(params, sweep, final, base, null_pairs=(n == "real"))
    ctrl = body["permuted_labels"]
    ctrl["control_note"] = "training and validation labels permuted (each split separately); same kernels, test set"
    ctrl["train_resample"]["n_boot"] = int(params["train_resample"].get("control_n_boot",
                                                                       params["train_resample"]["n_boot"]))
    out = {"claim": "H4", **body["real"],
           "controls": {"permuted_labels": {"claim": "H4", **ctrl},
                        "same_family_two_draws": {"claim": "H4", **null_ordering_control(body["real"])}},
           "cells": {int(c["part"]): {k: c.get(k) for k in ("stage", "depth", "families", "kernel_seconds",
                                                            "regression_seconds", "pairs", "pairs_per_second",
                                                            "cpu_seconds", "wall_seconds", "predicted_seconds")}
                     for c in cells}}
    return out


# --------------------------------------------------------------------------------------------
# cost model

def cell_pairs(params: Mapping[str, Any], spec: Mapping[str, Any]) -> int:
    """Kernel pairs a cell computes (symmetric blocks counted once)."""
    if spec["stage"] == "sweep":
        n = int(params["sweep"]["n_train"]) + int(params["sweep"]["n_val"])
        return n * (n + 1) // 2
    n = int(params["n_train"]) + int(params["n_val"])
    return n * (n + 1) // 2 + int(params["n_test"]) * n


def predict_seconds(params: Mapping[str, Any], spec: Mapping[str, Any], cost: Mapping[str, Any]) -> dict[str, float]:
    r"""Predicted process CPU seconds of one cell (CPU time, not wall: robust to other work on the
    machine), from the plan's ``cost`` entry, measured before the run: kernels = pairs x (``stack_us[depth]``
    + the cell's ``readout_us``) x ``overhead``; regressions = Cholesky factorisations x ``chol_cpu_s_10k``
    x (size / 10,000)^3, a bootstrap draw counting :math:`(1 - 1/e)^3` of a factorisation at its size."""
    fams = list(params["families"]) if spec["stage"] == "sweep" else list(spec["families"])
    depth = int(spec["depth"]) if spec["stage"] == "sweep" else int(params["final_depth"])
    us = float(cost["stack_us"][str(depth)]) + sum(float(cost["readout_us"][f]) for f in fams)
    kernel = cell_pairs(params, spec) * us * float(cost.get("overhead", 1.0)) * 1e-6
    chol = float(cost["chol_cpu_s_10k"])
    grid = len(params["diag_reg_grid"])
    if spec["stage"] == "sweep":
        n_t = int(params["sweep"]["n_train"])
        reg = len(fams) * len(KERNELS) * grid * (n_t / 1e4) ** 3
    else:
        rs = params["train_resample"]
        n_fit = int(params["n_train"]) + int(params["n_val"])
        u3 = (1.0 - np.exp(-1.0)) ** 3  # a bootstrap draw: its distinct rows
        curve = sum(float(f) ** 3 for f in rs["curve_fractions"] if float(f) < 1) * int(rs["curve_draws"])
        boots = int(rs["n_boot"]) + int(rs.get("control_n_boot", rs["n_boot"]))  # two label sets (upper bound)
        per_model = grid * (int(params["n_train"]) / n_fit) ** 3 + 2 * (1 + curve) + boots * u3
        halves = 2 * 0.5 ** 3 * (1 + curve + int(rs["n_boot"]) * u3)
        reg = sum(len(KERNELS) * (per_model + (halves if f in ATTENTION_FAMILIES else 0.0)) for f in fams)
        reg *= (n_fit / 1e4) ** 3
    reg = float(reg) * chol
    return {"kernel_cpu_s": round(kernel, 1), "regression_cpu_s": round(reg, 1), "total_cpu_s": round(kernel + reg, 1)}
