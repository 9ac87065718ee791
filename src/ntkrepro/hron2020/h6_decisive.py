r"""H6's decisive tier on a CPU: IMDb kernels at the paper's selection split (issue 37).

The default run's H6 protocol (:func:`ntkrepro.hron2020.imdb.run_h6`: GAP-only, GAP-FCN, CNN-GAP and
Struct models, NNGP and NTK, each regulariser chosen on validation, test accuracy, the two-way
bootstrap and learning curve, the permuted-label control and the Struct two-halves null pair) at the
paper's 3200 / 1600 / 1600 train / validation / test reviews, at the review length of the plan, cut
into one cell per group of models (``section['part_specs'][part]['models']``), results only.

Its kernels are the default run's: **length-aware blocks**
(:func:`ntkrepro.kernels.blocks.compute_kernel_blocks_sorted`, as :func:`ntkrepro.hron2020.imdb.fit_model`):
the reviews of each split are ordered by their number of tokens before the kernel is cut into blocks, so
that a block holds reviews of similar length; the fast backend computes each block at the block's own
length (it drops the tail that is masked in every review of the block, exactly), and the kernel is put
back in the reviews' order, equal to the computation in the original order to rounding
(``tests/test_h6_decisive.py``, ``tests/test_kernel_blocks.py``). What differs from the default run's
computation, not its numbers:

* **refits** by :func:`ntkrepro.kernels.resampling.weighted_refit` (bootstrap draws on their distinct
  rows; equal to the direct refits, tested), one factorisation for the real and the permuted labels
  where they chose the same regulariser; the control gets the plan's first ``control_n_boot`` draws.

:func:`aggregate_h6` assembles the cells into ``run_h6``'s layout, so H6's current criterion
(:func:`ntkrepro.hron2020.claims.evaluate_h6`) judges the archive unchanged.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ntkrepro.decisive_cells import compute_code_hash
from ntkrepro.hron2020.imdb import (BACKEND_NAMES, H6_PAPER_SIZES, NULL_PAIR_FAMILIES, SOTA_ACCURACY, _prepare,
                                    h6_resample_plans, h6_resample_record, is_official_archive, model_grid, model_name,
                                    model_kernel_fn, null_ordering_control, pad_check_indices, padding_invariance,
                                    select_families)
from ntkrepro.hron2020.regime import learning_curve_plan, permuted_labels, training_resample_plan
from ntkrepro.io import read_json
from ntkrepro.kernels.blocks import code_fingerprint, compute_kernel_blocks_sorted, describe
from ntkrepro.kernels.inference import accuracy, accuracy_with_ci
from ntkrepro.kernels.resampling import select_many, weighted_refit

log = logging.getLogger("ntkrepro")

#: Where cells cache kernel blocks while they run (env ``NTKREPRO_DECISIVE_CACHE`` overrides).
CACHE = ".cache/decisive-kernels"
LABELS = ("real", "permuted_labels")


def _params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The H6 parameters ``_prepare`` reads, the IMDb archive under ``data.root``."""
    data = dict(params["data"])
    root = data.pop("root", None) or "."
    data["archive"] = str(Path(root) / data["archive"])
    return {**params, "imdb": data, "glove": dict(params.get("glove") or {"source": "wheel", "dim": 50})}


def _ok(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (np.asarray(pred).reshape(-1) > 0) == (np.asarray(y).reshape(-1) > 0)


def _boot(kt, ks, ys, lam, plan, y_test, n_boots):
    out: list[list[float]] = [[] for _ in ys]
    for i, (rows, te) in enumerate(zip(plan["train"], plan["test"])):
        active = [j for j in range(len(ys)) if i < n_boots[j]]
        if not active:
            break
        preds, _ = weighted_refit(kt, ks, [ys[j] for j in active], rows, lam)
        for j, p in zip(active, preds):
            out[j].append(float(np.mean(_ok(p, y_test)[te])))
    return out


def _curve(kt, ks, ys, lam, curve, y_test):
    out: list[list[float]] = [[] for _ in ys]
    for _, rows in curve:
        preds, _ = weighted_refit(kt, ks, ys, rows, lam)
        for j, p in enumerate(preds):
            out[j].append(float(np.mean(_ok(p, y_test))))
    return out


def _two_draws(params, kt, ks, y, lam, y_test) -> list[dict[str, Any]]:
    """:func:`ntkrepro.hron2020.regime.two_draws` as ``imdb._resampled`` calls it, with weighted refits."""
    rs = dict(params["train_resample"])
    seed = int(params["seed"]) + 11
    n = int(kt.shape[0])
    m = n // 2
    perm = np.random.default_rng(seed).permutation(n)
    plan = training_resample_plan(m, int(ks.shape[0]), int(rs["n_boot"]), seed + 1)
    curve = learning_curve_plan(m, rs["curve_fractions"], int(rs["curve_draws"]), seed + 2, min_size=4)
    out = []
    for half in (np.sort(perm[:m]), np.sort(perm[m:2 * m])):
        a, b, yh = kt[np.ix_(half, half)], ks[:, half], y[half]
        (pred,), _ = weighted_refit(a, b, [yh], np.arange(m), lam)
        ok = _ok(pred, y_test).astype(float)
        out.append({"n_fit": m, "accuracy": float(ok.mean()), "test_correct": ok.astype(int).tolist(),
                    "boot_accuracy": _boot(a, b, [yh], lam, plan, y_test, [int(rs["n_boot"])])[0],
                    "curve_accuracy": _curve(a, b, [yh], lam, curve, y_test)[0],
                    "curve_sizes": [int(s) for s, _ in curve]})
    return out


def run_h6_cell(params: dict[str, Any], ctx) -> dict[str, Any]:
    """Cell ``params['part']``: every model of its group fitted and evaluated as ``imdb.fit_model`` does,
    for the real and the permuted labels (``{"models": {label: [entry]}, "correct": ...}``)."""
    part = int(params["part"])
    spec = dict(list(params["part_specs"])[part])
    models = [(str(f), int(d)) for f, d in spec["models"]]
    grid = model_grid(params)
    bad = [m for m in models if m not in grid]
    if bad:
        raise ValueError(f"H6 decisive: part {part} names models {bad} outside the model grid {grid}")
    c0, t0 = time.process_time(), time.perf_counter()
    p = _params(params)
    data = _prepare(p, ctx)
    x, y, lengths = data["x"], data["y"], data["lengths"]
    c = float(params["mask_constant"])
    seed = int(params["seed"])
    rs = dict(params["train_resample"])
    labels = {"real": y, "permuted_labels": {**y, "train": permuted_labels(y["train"], seed + 99_991),
                                              "valid": permuted_labels(y["valid"], seed + 99_992)}}
    n_boot = {"real": int(rs["n_boot"]), "permuted_labels": int(rs.get("control_n_boot", rs["n_boot"]))}
    pad_idx = pad_check_indices(lengths["test"], int(params["pad_check"]["n_reviews"]), seed)
    n_valid = x["valid"].shape[0]
    x_et = np.concatenate([x["valid"], x["test"]])
    len_et = np.concatenate([lengths["valid"], lengths["test"]])
    plan, curve = h6_resample_plans(params, x["train"].shape[0], x["test"].shape[0])
    cache = Path(params.get("cache_dir") or os.environ.get("NTKREPRO_DECISIVE_CACHE") or CACHE) / "H6" / f"part{part}"
    out_models: dict[str, list[dict[str, Any]]] = {n: [] for n in LABELS}
    correct: dict[str, dict[str, list[int]]] = {n: {} for n in LABELS}
    kernel_s = 0.0
    for family, depth in models:
        jk = model_kernel_fn(family, depth, params)
        desc = "H6 decisive " + describe(family=family, depth=depth, filter_size=params["filter_size"],
                                         W_pos_emb_std=params["W_pos_emb_std"])
        kw = dict(block_size=int(params["block_size"]), cache_dir=cache, mask_constant=c, desc=desc,
                  backend=BACKEND_NAMES["fast"], get=("nngp", "ntk"), dtype="float32")
        tk = time.perf_counter()
        k_tt = compute_kernel_blocks_sorted(jk, x["train"], lengths["train"], **kw)
        k_et = compute_kernel_blocks_sorted(jk, x_et, len_et, x["train"], lengths["train"], **kw)
        kernel_s += time.perf_counter() - tk
        check_fn = model_kernel_fn(family, depth, params, trim=False)
        pad = padding_invariance(check_fn, x["test"][pad_idx], int(params["pad_check"]["extra"]), c)
        entries = {n: {"family": family, "depth": depth, "name": model_name(family, depth), "padding_invariance": pad,
                       "kernels": {}} for n in LABELS}
        for g in ("nngp", "ntk"):
            kt, kv, ks = (np.asarray(a, np.float64) for a in (k_tt[g], k_et[g][:n_valid], k_et[g][n_valid:]))
            sel = select_many(kt, kv, [labels[n]["train"] for n in LABELS], [labels[n]["valid"] for n in LABELS],
                              [float(v) for v in params["diag_reg_grid"]])
            lams = {n: s[0] for n, s in zip(LABELS, sel)}
            for lam in sorted(set(lams.values())):
                names = [n for n in LABELS if lams[n] == lam]
                ys = [labels[n]["train"] for n in names]
                preds, jitter = weighted_refit(kt, ks, ys, np.arange(kt.shape[0]), lam)
                train_preds, _ = weighted_refit(kt, kt, ys, np.arange(kt.shape[0]), lam)
                boots = _boot(kt, ks, ys, lam, plan, y["test"], [n_boot[n] for n in names])
                curves = _curve(kt, ks, ys, lam, curve, y["test"])
                for n, pred, tp, boot, cur in zip(names, preds, train_preds, boots, curves):
                    scores = sel[LABELS.index(n)][1]
                    acc = accuracy_with_ci(pred, y["test"], n_boot=int(params["n_boot"]), seed=seed)
                    entry = {"diag_reg": lam,
                             "valid_accuracy": max(s["accuracy"] for s in scores if s["diag_reg"] == lam),
                             "valid_scores": scores, "test_accuracy": acc.as_dict(), "jitter": float(jitter),
                             "train_accuracy": accuracy(tp, labels[n]["train"]),
                             "boot_accuracy": boot, "curve_accuracy": cur}
                    if n == "real" and family in NULL_PAIR_FAMILIES:
                        entry["two_draws"] = _two_draws(params, kt, ks, labels["real"]["train"], lam, y["test"])
                    entries[n]["kernels"][g] = entry
                    correct[n][f"{family}|{depth}|{g}"] = _ok(pred, y["test"]).astype(int).tolist()
                    log.info("H6 decisive %s %s %s: diag_reg %g, valid %.3f, test %.3f", n, model_name(family, depth),
                             g, lam, entry["valid_accuracy"], acc.value)
        for n in LABELS:
            out_models[n].append(entries[n])
    shutil.rmtree(cache, ignore_errors=True)  # kernel blocks are not results
    pairs = sum(1 for _ in models) * (x["train"].shape[0] * (x["train"].shape[0] + 1) // 2
                                      + x_et.shape[0] * x["train"].shape[0])
    return {"claim": "H6", "part": part, "models": out_models, "correct": correct,
            "base": {"archive": data["archive"], "archive_sha256": data["archive_sha256"], "text_stats": data["stats"],
                     "test_ids": data["ids"]["test"], "padding_check_reviews": [data["ids"]["test"][i] for i in pad_idx],
                     "array_length": int(x["train"].shape[1]), "n_fit": int(x["train"].shape[0]),
                     "n_test": int(x["test"].shape[0])},
            "kernel_seconds": round(kernel_s, 1), "pairs": int(pairs),
            "pairs_per_second": round(pairs / max(kernel_s, 1e-9), 1),
            "cpu_seconds": round(time.process_time() - c0, 1), "cell_seconds": round(time.perf_counter() - t0, 1),
            "compute_code": compute_code_hash("H6"), "kernel_code": code_fingerprint("ntkrepro.kernels.fast")}


def cell_pairs(params: Mapping[str, Any]) -> int:
    """Kernel pairs one model of a cell computes: training x training (symmetric, counted once) and
    validation + test x training, as :func:`run_h6_cell` does."""
    n_t = int(params["n_train"])
    return n_t * (n_t + 1) // 2 + (int(params["n_valid"]) + int(params["n_test"])) * n_t


def predict_seconds(params: Mapping[str, Any], spec: Mapping[str, Any], cost: Mapping[str, Any]) -> dict[str, float]:
    r"""Predicted process CPU seconds of one cell from the plan's ``cost`` entry (measured before the cell):
    kernels = pairs per model x the model's ``pair_us`` (CPU microseconds per pair at the plan's length, real
    review lengths, ``block_size`` blocks) x ``overhead``; regressions = Cholesky factorisations at the
    training size, ``chol_cpu_s_10k`` x (n / 10,000)^3 each: per model and kernel the regulariser grid, the
    refit and training fit, the bootstrap draws of both label sets (a draw counting :math:`(1 - 1/e)^3` of a
    factorisation) and the learning curve; the two-halves null pair of the GAP-FCN / Struct models on top."""
    models = [f"{f}_{int(d)}" for f, d in spec["models"]]
    us = sum(float(cost["pair_us"][m]) for m in models)
    kernel = cell_pairs(params) * us * float(cost.get("overhead", 1.0)) * 1e-6
    rs = params["train_resample"]
    u3 = (1.0 - np.exp(-1.0)) ** 3
    curve = sum(float(f) ** 3 for f in rs["curve_fractions"] if float(f) < 1) * int(rs["curve_draws"])
    boots = int(rs["n_boot"]) + int(rs.get("control_n_boot", rs["n_boot"]))
    per_kernel = len(params["diag_reg_grid"]) + 2 * 2 * (1 + curve) + boots * u3
    halves = 2 * 0.5 ** 3 * (1 + curve + int(rs["n_boot"]) * u3)
    reg = sum(2 * (per_kernel + (halves if f in NULL_PAIR_FAMILIES else 0.0)) for f, _ in spec["models"])
    reg *= float(cost["chol_cpu_s_10k"]) * (int(params["n_train"]) / 1e4) ** 3
    return {"kernel_cpu_s": round(kernel, 1), "regression_cpu_s": round(float(reg), 1),
            "total_cpu_s": round(kernel + float(reg), 1)}


def aggregate_h6(params: dict[str, Any], ctx) -> dict[str, Any]:
    """The cells (``shard_files``) assembled into :func:`ntkrepro.hron2020.imdb.run_h6`'s results layout:
    every model of the grid present exactly once, every cell of the same data."""
    cells = [read_json(ctx.use_data(p)) for p in params["shard_files"]]
    if sorted(int(c["part"]) for c in cells) != sorted(int(p) for p in params["parts"]):
        raise ValueError(f"H6 decisive: cells of parts {sorted(int(c['part']) for c in cells)}, the plan has "
                         f"{sorted(params['parts'])}: incomplete or duplicated")
    base = cells[0]["base"]
    if any(c["base"] != base for c in cells[1:]):
        raise ValueError("H6 decisive cells describe different data")
    grid = model_grid(params)

    def assemble(n: str) -> tuple[list[dict[str, Any]], dict]:
        models = {(m["family"], int(m["depth"])): m for c in cells for m in c["models"][n]}
        if sorted(models) != sorted(grid):
            raise ValueError(f"H6 decisive: models {sorted(models)} do not match the grid {sorted(grid)}")
        correct = {}
        for c in cells:
            for k, v in c["correct"][n].items():
                f, d, g = k.split("|")
                correct[(f, int(d), g)] = np.asarray(v)
        return [models[m] for m in grid], correct

    def body(models, correct) -> dict[str, Any]:
        return {"final": None,
                "protocol": {"archive": base["archive"], "archive_sha256": base["archive_sha256"],
                             "archive_official": is_official_archive(base["archive_sha256"]),
                             "n_train": params["n_train"], "n_valid": params["n_valid"], "n_test": params["n_test"],
                             "seq_len": params["seq_len"], "array_length": base["array_length"],
                             "mask_constant": float(params["mask_constant"]), "targets": "+-0.5"},
                "kernel_backend": "fast", "text_stats": base["text_stats"], "models": models,
                "families": select_families(models, correct),
                "padding_invariance_max": max(v for m in models for v in m["padding_invariance"].values()),
                "padding_check": {"reviews": base["padding_check_reviews"], "extra": params["pad_check"]["extra"]},
                "test_ids": base["test_ids"], "sota_accuracy": SOTA_ACCURACY,
                "train_resample": h6_resample_record(params, base["n_fit"], base["n_test"], H6_PAPER_SIZES["n_train"])}

    out = {"claim": "H6", **body(*assemble("real"))}
    ctrl = body(*assemble("permuted_labels"))
    ctrl["train_resample"]["n_boot"] = int(params["train_resample"].get("control_n_boot",
                                                                       params["train_resample"]["n_boot"]))
    ctrl["control_note"] = "training and validation labels permuted; same kernels, test reviews, padding check"
    out["controls"] = {"permuted_labels": ctrl, "same_family_two_draws": null_ordering_control(out)}
    return out
