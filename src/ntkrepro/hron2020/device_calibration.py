"""Hron et al.'s calibration on the device (H4, H5, H6): the probes whose times the cost models
(:mod:`ntkrepro.hron2020.device_cost`) multiply by their counts, each timed on :data:`ntkrepro.clock.CLOCK`.

* H4 (:func:`calibrate_h4`): per model one symmetric and one rectangular block (first call: compile, then
  the median of 3) and the cost of a fresh kernel function's first symmetric and rectangular call
  (``run_h4`` builds one per use; median over 3 fresh functions); the block cache's fixed cost per call,
  read and write per block; and, per H4 tier, the regression backend's own calls at the tier's exact shapes
  (:func:`calibrate_regression`: the grid and the validation refit at ``n_train``; on the full kernel a
  single fit, a bootstrap chunk and a learning-curve batch; a bootstrap chunk on a half-size kernel), each
  compiled, then timed (median of 3): a call's fixed cost, the time per draw at three sizes, and one new
  shape's compile time (the median of every probe's first call minus its timed call).
* H5 (:func:`calibrate_h5`): one epoch of a fresh trainer per batch of runs a cell trains (compile, then
  timed).
* H6 (:func:`calibrate_h6`): the data, per model a symmetric and a rectangular block, the host regressions.

The data loading is timed by the caller (:mod:`ntkrepro.device.call`)."""

from __future__ import annotations

import logging
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ntkrepro.clock import median_timed, now, timed
from ntkrepro.hron2020 import imdb
from ntkrepro.hron2020.cifar10 import N_CLASSES, h4_resample_plans, jitted_kernel_fn, load_splits
from ntkrepro.hron2020.device_cost import call_key, draw_chunks, h4_models
from ntkrepro.hron2020.finite_nets import LAYER_NORMS, MECHANISMS, make_model, make_trainer
from ntkrepro.hron2020.regime import boot_accuracies
from ntkrepro.kernels.blocks import compute_kernel_blocks
from ntkrepro.kernels.device_regression import TALLY, regression_backend
from ntkrepro.kernels.inference import kernel_regression, predicted_classes, select_diag_reg
from ntkrepro.stats import bootstrap_ci

log = logging.getLogger(__name__)

#: Refits per calibration probe (at most).
PROBE_DRAWS = 32


def synthetic_psd(n: int, seed: int = 0) -> np.ndarray:
    f = np.random.default_rng(seed).standard_normal((n, 64))
    return f @ f.T / 64 + 0.1 * np.eye(n)


def calibrate_regression(params: Mapping[str, Any], tier: Mapping[str, Any], backend: str) -> dict[str, Any]:
    """The regression backend's own calls at ``tier``'s shapes, as ``run_h4`` makes them (synthetic
    PSD kernels; the times do not depend on the values), each first called once (compiles, jax) and
    then timed (median of 3): the grid (``select_diag_reg``) at ``n_train`` and one refit there
    (validation kernel); on the full kernel of ``n_train + n_val`` rows against ``n_test`` points
    (jax) a single fit, a bootstrap chunk and a learning-curve batch at the curve's smallest size,
    and a bootstrap chunk on a kernel of half the rows (the ordering control's halves). From these:
    ``per_call_s`` (a call's fixed cost) and ``per_draw_s`` ``{m: s}`` at the smallest curve size,
    at half and at ``n_fit``; ``compile_s``: the median of the five probes' first call - timed
    call (one new shape; :func:`calibrate_h4` pools the probes of every tier); ``compiled``: the shapes
    compiled here (:func:`call_key`). Host path (scipy): the time per draw of up to :data:`PROBE_DRAWS`
    refits at the same two sizes."""
    n_t, n_v, n_s = int(tier["n_train"]), int(tier["n_val"]), int(tier["n_test"])
    n_fit = n_t + n_v
    reg = regression_backend(backend)
    saved = Counter(TALLY)
    rng = np.random.default_rng(1)
    y = np.eye(N_CLASSES)[rng.integers(0, N_CLASSES, n_fit + n_s)]
    k = synthetic_psd(n_fit + n_s)
    grid = [float(v) for v in params["diag_reg_grid"]]
    rs = dict(params.get("train_resample") or {})
    n_boot, n_curve = int(rs.get("n_boot", 200)), int(rs.get("curve_draws", 5))
    _, curve = h4_resample_plans(params, n_fit, n_s)
    m_small = min([int(m) for m, _ in curve] or [n_fit])
    out: dict[str, Any] = {"backend": backend}
    first_minus_timed = []

    def probe(fn, *args) -> float:
        first = timed(fn, *args)[1]
        again = median_timed(fn, *args)
        first_minus_timed.append(max(first - again, 0.0))
        return again

    out["grid_s"] = probe(reg.select_diag_reg, k[:n_t, :n_t], k[n_t:n_fit, :n_t], y[:n_t], y[n_t:n_fit], grid)
    out["refit_at_train_s"] = probe(reg.kernel_regression, k[:n_t, :n_t], k[n_t:n_fit, :n_t], y[:n_t], 1e-3)
    kk, ks, yy = k[:n_fit, :n_fit], k[n_fit:, :n_fit], y[:n_fit]
    if backend == "jax":
        boot_b = int(min(n_boot, reg.chunk(n_fit, n_fit, n_s, N_CLASSES)))
        curve_b = int(min(n_curve, reg.chunk(m_small, n_fit, n_s, N_CLASSES)))
        draws = {"fit": [np.arange(n_fit)], "boot": [rng.integers(0, n_fit, n_fit) for _ in range(boot_b)],
                 "curve": [np.sort(rng.choice(n_fit, m_small, replace=False)) for _ in range(curve_b)]}
        t = {w: probe(reg.predict_many, kk, ks, yy, 1e-3, d) for w, d in draws.items()}
        a_full = (t["boot"] - t["fit"]) / (boot_b - 1) if boot_b > 1 else t["fit"]
        a_full = max(a_full, 0.0)
        out["per_call_s"] = max(t["fit"] - a_full, 0.0)
        out["per_draw_s"] = {m_small: max((t["curve"] - out["per_call_s"]) / curve_b, 0.0), n_fit: a_full}
        # the ordering control's halves: a bootstrap chunk on a kernel of half the rows (its own shape)
        half = n_fit // 2
        half_b = int(min(n_boot, reg.chunk(half, half, n_s, N_CLASSES)))
        if half > m_small:
            t["half_boot"] = probe(reg.predict_many, kk[:half, :half], ks[:, :half], yy[:half], 1e-3,
                                   [rng.integers(0, half, half) for _ in range(half_b)])
            out["per_draw_s"][half] = max((t["half_boot"] - out["per_call_s"]) / half_b, 0.0)
        out["probe_s"] = t
        out["compile_probes_s"] = first_minus_timed
        out["compile_s"] = float(np.median(first_minus_timed))
        out["compiled"] = sorted({call_key("full", n_t, n_v, b, n_t) for b in draw_chunks(len(grid), reg.chunk(
            n_t, n_t, n_v, N_CLASSES))} | {call_key("rows", n_t, n_v, 1, n_t), call_key("rows", n_fit, n_s, 1, n_fit),
                                           call_key("rows", n_fit, n_s, boot_b, n_fit),
                                           call_key("rows", n_fit, n_s, curve_b, m_small)}
                                 | ({call_key("rows", half, n_s, half_b, half)} if half > m_small else set()))
        out["batch_bytes"] = reg.batch_bytes()
    else:
        per_draw = {}
        yt = rng.integers(0, N_CLASSES, n_s)
        for m in sorted({m_small, n_fit}):
            draws = int(min(PROBE_DRAWS, n_boot))
            plan = {"train": rng.integers(0, m, (draws, m)), "test": rng.integers(0, n_s, (draws, n_s))}

            def fit(a, b, c):
                return predicted_classes(reg.kernel_regression(a, b, c, 1e-3)) == yt

            per_draw[m] = timed(boot_accuracies, fit, kk[:m, :m], ks[:, :m], yy[:m], plan)[1] / draws
        out.update(per_call_s=0.0, per_draw_s=per_draw, compile_s=0.0, compiled=[])
    TALLY.clear()
    TALLY.update(saved)
    return out


def calibrate_h4(params: Mapping[str, Any], data: Mapping[str, Any], block: int,
                 h4_tiers: Mapping[str, Mapping[str, Any]], backend: str, cache: Path) -> dict[str, Any]:
    """H4's calibration (module docstring): per model its blocks and a fresh function's first calls, the block
    cache, the test-accuracy interval, and per tier the regression backend (:func:`calibrate_regression`)."""

    x = np.asarray(data["x_train"][: 2 * block])
    if x.shape[0] < 2 * block:
        raise ValueError(f"calibration needs {2 * block} training images, the smallest tier has {x.shape[0]}")
    a, b = x[:block], x[block:]
    def one_block(kfn, args) -> float:
        t0 = now()
        k = kfn(*args, ("nngp", "ntk"))
        np.asarray(k.nngp), np.asarray(k.ntk)  # to the host, as compute_kernel_blocks does
        return now() - t0

    rows, kfns = [], []
    for fam, depth in h4_models(params):
        kfn = jitted_kernel_fn(fam, depth, dict(params["arch"]), backend="fast")
        kfns.append(kfn)
        rec = {"family": fam, "depth": depth}
        for kind, args in (("sym", (a, None)), ("rect", (a, b))):
            rec[f"{kind}_first_s"] = one_block(kfn, args)
            rec[f"{kind}_s"] = float(np.median([one_block(kfn, args) for _ in range(3)]))
        # run_h4 builds a fresh kernel function per use and calls it on a symmetric block, then on a
        # rectangular one: the first call loads the compiled computation (persistent cache) and traces
        # it, the second traces the other shape. Per use: the median over 3 fresh functions
        fresh = []
        for _ in range(3):
            f2 = jitted_kernel_fn(fam, depth, dict(params["arch"]), backend="fast")
            fresh.append(one_block(f2, (a, None)) + one_block(f2, (a, b)))
        rec["use_s"] = max(float(np.median(fresh)) - rec["sym_s"] - rec["rect_s"], 0.0)
        rows.append(rec)
        log.info("calibration %s-d%d: sym %.3f s, rect %.3f s per block (first calls %.1f + %.1f s, fresh function "
                 "%.2f s per use)", fam, depth, rec["sym_s"], rec["rect_s"], rec["sym_first_s"], rec["rect_first_s"],
                 rec["use_s"])
    # the block cache, with the compiled function of the first model: a call's fixed cost and the read
    # of a block (reading back a kernel of 1 and of up to 4 x 4 blocks), the write of a block (a fresh
    # kernel of up to 4 x 4 blocks computed, written, read back); medians of 3
    kfn = kfns[0]
    nb = int(min(4, np.asarray(data["x_train"]).shape[0] // block))
    xb = np.asarray(data["x_train"][: nb * block])
    n_blocks = nb * (nb + 1) // 2
    folder = cache / "calibration_blocks"
    kw = dict(block_size=block, dtype="float32", desc="calibration", progress=False, backend="fast")
    m0 = rows[0]
    writes = []
    for _ in range(3):
        shutil.rmtree(folder, ignore_errors=True)
        writes.append(timed(compute_kernel_blocks, kfn, xb, cache_dir=folder / "big", **kw)[1])
        compute_kernel_blocks(kfn, xb[:block], cache_dir=folder / "one", **kw)
    t_big = median_timed(compute_kernel_blocks, kfn, xb, cache_dir=folder / "big", **kw)
    t_one = median_timed(compute_kernel_blocks, kfn, xb[:block], cache_dir=folder / "one", **kw)
    shutil.rmtree(folder, ignore_errors=True)
    read = max(t_big - t_one, 0.0) / max(n_blocks - 1, 1)
    call = max(t_one - read, 0.0)
    write = max(float(np.median(writes)) - t_big - nb * m0["sym_s"] - (n_blocks - nb) * m0["rect_s"], 0.0) / n_blocks
    io = {"call_s": call, "read_s": read, "write_s": write, "probe_blocks": n_blocks}
    # the test-accuracy interval of every final model (bootstrap over test points, n_boot draws)
    n_test = max(int(t["n_test"]) for t in h4_tiers.values())
    _, ci = timed(bootstrap_ci, np.random.default_rng(0).integers(0, 2, n_test).astype(float), np.mean,
                   n_boot=int(params["n_boot"]), seed=0)
    regression = {}
    for name, tier in h4_tiers.items():
        regression[name] = calibrate_regression(params, tier, backend)
        log.info("calibration regressions %s (%s): grid %.3f s, per call %.4f s, per draw %s, compile %.2f s", name,
                 backend, regression[name]["grid_s"], regression[name]["per_call_s"],
                 {m: round(v, 5) for m, v in regression[name]["per_draw_s"].items()}, regression[name]["compile_s"])
    if backend == "jax":  # one new shape's compile: the median over every tier's probes (the first probes
        # of the process also pay the compiler's own start-up, which no later shape does)
        pooled = float(np.median([v for r in regression.values() for v in r["compile_probes_s"]]))
        for r in regression.values():
            r["compile_s"] = pooled
    out = {"block": block, "models": rows, "io": io, "ci_s": ci, "regression": regression,
           "regression_backend": backend}
    if backend == "jax":
        out["batch_bytes"] = int(next(iter(regression.values()))["batch_bytes"])
    return out


def calibrate_h5(section: Mapping[str, Any], batches: Sequence[int] = (1, 2)) -> dict[str, Any]:
    """H5's cells at their shapes: the data loading (each cell loads it), and per batch of runs a cell
    trains together (1; 2 on a control seed) one epoch of a fresh trainer (first call: compile + epoch;
    second: the timed epoch)."""
    seeds = [int(s) for s in section["seeds"]]
    d, t_load = timed(load_splits, {**section, "seed": seeds[0]}, None, need_test=False)
    size = int(section["image_size"])
    xt = d["x_train"].reshape(d["x_train"].shape[0], size * size, 3)
    xv = d["x_val"].reshape(d["x_val"].shape[0], size * size, 3)
    model = make_model(seq_len=size * size, d_model=int(section["d_model"]), n_heads=int(section["n_heads"]),
                       n_pos_emb=int(section["n_pos_emb"]))
    first, epoch, compile_s = {}, {}, {}
    for b in sorted({int(v) for v in batches}):
        train = make_trainer(model, xt, d["y_train"], xv, epochs=1, batch_size=int(section["batch_size"]),
                             learning_rate=float(section["learning_rate"]), n_curve_val=section.get("curve_val"))
        labels = np.stack([d["y_train"]] * b).astype(np.int32)
        init = np.arange(b, dtype=np.uint32)
        times = []
        for _ in range(2):
            t0 = now()
            out = train(init, labels, MECHANISMS.index(section["mechanisms"][0]),
                        LAYER_NORMS.index(section["layer_norms"][0]))
            np.asarray(out[0])
            times.append(now() - t0)
        first[str(b)], epoch[str(b)], compile_s[str(b)] = times[0], times[1], max(times[0] - times[1], 0.0)
    return {"load_s": t_load, "first_s": first, "epoch_s": epoch, "compile_s": compile_s}


class _NoContext:
    """What ``imdb._prepare`` asks of a run context, for the calibration (nothing recorded)."""
    def use_data(self, *_a, **_k) -> None:
        return None


def calibrate_h6(params: Mapping[str, Any], io: Mapping[str, float] | None = None) -> dict[str, Any]:
    """H6: the data (IMDb read, tokenized, embedded with the prepared GloVe vectors), per model of
    ``model_grid`` one symmetric and one rectangular kernel block of the tier's padded length (first
    call: compile; then the median of 3), and the host regression (scipy) at ``n_train`` and at an
    eighth of it against ``n_test`` points, and the grid (median of 3). ``io``: H4's block-cache costs."""
    data, t_prep = timed(imdb._prepare, params, _NoContext())
    x = data["x"]["train"]
    b = int(params["block_size"])
    c = float(params["mask_constant"])
    a, bb = x[:b], x[b:2 * b] if x.shape[0] >= 2 * b else x[:b]
    models = []
    for fam, depth in imdb.model_grid(params):
        jk = imdb.model_kernel_fn(fam, depth, params)

        def block(x1, x2):
            t0 = now()
            k = jk(x1, x2, ("nngp", "ntk"), mask_constant=c)
            np.asarray(k.nngp if hasattr(k, "nngp") else k["nngp"])
            return now() - t0

        rec = {"family": fam, "depth": depth}
        for kind, args in (("sym", (a, None)), ("rect", (a, bb))):
            rec[f"{kind}_first_s"] = block(*args)
            rec[f"{kind}_s"] = float(np.median([block(*args) for _ in range(3)]))
        models.append(rec)
    n_t, n_s = int(params["n_train"]), int(params["n_test"])
    k = synthetic_psd(n_t + n_s)
    y = np.where(np.random.default_rng(2).random((n_t + n_s, 1)) < 0.5, -0.5, 0.5)
    fit_s = {}
    for m in sorted({max(4, n_t // 8), n_t}):
        fit_s[m] = median_timed(kernel_regression, k[:m, :m], k[n_t:, :m], y[:m], 1e-3)
    grid = [float(v) for v in params["diag_reg_grid"]]
    grid_s = median_timed(select_diag_reg, k[:n_t, :n_t], k[n_t:, :n_t], y[:n_t], y[n_t:], grid)
    return {"prepare_s": t_prep, "models": models, "fit_s": fit_s, "grid_s": grid_s,
            "io": dict(io or {"call_s": 0.0, "read_s": 0.0, "write_s": 0.0})}

