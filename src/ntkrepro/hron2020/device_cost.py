"""Hron et al.'s cost models on the device (H4, H5, H6): every computation a tier performs, counted, and
its predicted seconds from the calibration (:mod:`ntkrepro.hron2020.device_calibration`).

* H4 (:func:`count_h4`, :func:`predict_h4`): the kernel blocks (train and validation kernels of every
  model, the test kernels of the selected depths: an upper bound before the run, the realised depths after
  it), each fresh kernel function's first calls, every ``compute_kernel_blocks`` call and block read, and
  every jitted regression call by its compiled shape (:func:`call_key`: the grid, the validation refit,
  the final fits, the two-way bootstrap in chunks, the learning-curve batches, the ordering control's
  halves), all twice where the permuted-label control reruns the pipeline -- and multiplied by its
  calibrated time; a shape compiles once per process (the calibration's and the earlier tiers' shapes
  are not counted again). The regression counts are checked after the run against the backends' tally
  (:data:`ntkrepro.kernels.device_regression.TALLY`). Measured on the CPU at the two smoke tiers
  (``workflow/scripts/profile_h4_predictor.py`` times each part against its prediction). The rates
  (:func:`flops_per_pair`, :func:`measured_pairs`) go into a finished tier's throughput record.
* H5 (:func:`predict_h5_cells`): per decisive cell its data, its trainer's compilation and its epochs.
* H6 (:func:`predict_h6`): a coarser model: blocks, compilations, block cache, host regressions.

Composed by :mod:`ntkrepro.device` (which A1's model, :mod:`ntkrepro.arda2026.device_cost`, joins there)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ntkrepro.hron2020.cifar10 import (ATTENTION_FAMILIES, KERNEL_PAIRS, KERNELS, N_CLASSES, build_model,
                                       h4_resample_plans)
from ntkrepro.hron2020.imdb import NULL_PAIR_FAMILIES, h6_resample_plans, model_grid
from ntkrepro.hron2020.regime import learning_curve_plan
from ntkrepro.kernels import fast
from ntkrepro.kernels.blocks import block_grid
from ntkrepro.kernels.device_regression import DeviceRegression

SAFETY = 1.0  # the prediction is a point estimate; the budget check adds ntkrepro.device.plan.MARGIN


# --------------------------------------------------------------------------------------------
# H4: counting every computation run_h4 performs

def h4_models(params: Mapping[str, Any]) -> list[tuple[str, int]]:
    """Every ``(family, depth)`` H4 computes kernels of: the selection depths and the final-depth overrides."""
    overrides = {int(v) for v in dict(params.get("final_depth") or {}).values()}
    depths = sorted({int(d) for d in params["depths"]} | overrides)
    return [(f, d) for f in params["families"] for d in depths]


def block_counts(n1: int, n2: int | None, b: int) -> dict[str, int]:
    out = {"sym": 0, "rect": 0}
    for i, j in block_grid(n1, n1 if n2 is None else n2, b, n2 is None):
        out["sym" if n2 is None and i == j else "rect"] += 1
    return out


def kernel_blocks(which: str, tier: Mapping[str, int]) -> dict[str, int]:
    n = {"train": tier["n_train"], "val": tier["n_val"], "test": tier["n_test"]}
    rows, cols = KERNEL_PAIRS[which]
    return block_counts(n[rows], None if cols is None else n[cols], int(tier["block_size"]))


def blocks_needed(params: Mapping[str, Any], tier: Mapping[str, int]) -> dict[str, int]:
    """Kernel blocks of every kernel of :data:`KERNEL_PAIRS` for one (family, depth) at ``tier``."""
    out = Counter()
    for which in KERNEL_PAIRS:
        out.update(kernel_blocks(which, tier))
    return {"sym": out["sym"], "rect": out["rect"]}


def count_h4(params: Mapping[str, Any], tier: Mapping[str, Any],
             final_depths: Mapping[str, Sequence[int]] | None = None,
             chunk: Callable[[int, int, int], int] | None = None) -> dict[str, Any]:
    """Everything :func:`ntkrepro.hron2020.cifar10.run_h4` computes at ``tier`` (both runs: the real
    labels and the permuted-label control, on the same cached kernels).

    ``final_depths``: per family the distinct depths whose test kernels the final fits used (over both
    runs); ``None``: every depth (the upper bound, known before the run). Returns
    ``{"blocks": {model: {"sym", "rect"}}, "loads": {model: blocks read from the cache},
    "regressions": {"grid"|"val_refit"|"final"|"boot"|"curve": {n: fits}}, "by_size": {n: fits},
    "final_models": ..., "calls": {call_key: jitted calls}, "kernel_calls": ..., "block_reads": ...}``.
    ``chunk(m, n_k, n_s)``: draws per batched call (``DeviceRegression.chunk``); ``None``: one call per group."""
    runs = 2
    n_t, n_v, n_s = int(tier["n_train"]), int(tier["n_val"]), int(tier["n_test"])
    n_fit = n_t + n_v
    fams, depths = list(params["families"]), [int(d) for d in params["depths"]]
    override = {k: int(v) for k, v in dict(params.get("final_depth") or {}).items()}
    if final_depths is None:
        final_depths = {f: [override[f]] if f in override else depths for f in fams}
    nb = {w: kernel_blocks(w, tier) for w in ("train", "val", "valval", "test", "testval")}
    tot = {w: nb[w]["sym"] + nb[w]["rect"] for w in nb}
    blocks, loads = {}, Counter()
    for f, d in h4_models(params):
        whiches = (["train", "val"] if d in depths else []) + (["valval", "test", "testval"]
                                                              if d in final_depths.get(f, []) else [])
        c = Counter()
        for w in whiches:
            c.update(nb[w])
        blocks[f"{f}-d{d}"] = {"sym": c["sym"], "rect": c["rect"]}
        # select_on_validation reads train + val of every depth in each run (the first read of the first
        # run is the computation itself)
        if d in depths:
            loads[f"{f}-d{d}"] += runs * (tot["train"] + tot["val"]) - (tot["train"] + tot["val"])
    # final_test reads the 5 kernels of the final depth once per (family, kernel) in each run
    n_final_models = len(fams) * len(KERNELS)
    per_final = sum(tot.values())
    loads["final"] = runs * n_final_models * per_final - sum(
        len(final_depths.get(f, [])) * (tot["valval"] + tot["test"] + tot["testval"]) for f in fams)
    plan, curve = h4_resample_plans(params, n_fit, n_s)
    n_grid = len(params["diag_reg_grid"])
    n_sel = runs * len(fams) * len(depths) * len(KERNELS)
    reg = {"grid": {n_t: n_sel * n_grid}, "val_refit": {n_t: n_sel},
           "final": {n_fit: runs * n_final_models},
           "boot": {n_fit: runs * n_final_models * int(plan["train"].shape[0])},
           "curve": dict(Counter({int(m): 0 for m, _ in curve}))}
    for m, _ in curve:
        reg["curve"][int(m)] += runs * n_final_models
    # the ordering control's null pairs (real run only): per attention family and kernel, two disjoint
    # halves of train + validation, each fitted once, on its own bootstrap plan and learning curve
    n_pairs = len([f for f in fams if f in ATTENTION_FAMILIES]) * len(KERNELS)
    half, hc = n_fit // 2, []
    if n_pairs:
        rs = dict(params.get("train_resample") or {})
        half = n_fit // 2
        hc = learning_curve_plan(half, rs.get("curve_fractions", [0.125, 0.25, 0.5, 1.0]),
                                 int(rs.get("curve_draws", 5)), 0, min_size=N_CLASSES)
        two = Counter({half: 2 * n_pairs * (1 + int(rs.get("n_boot", 200)))})
        for m, _ in hc:
            two[int(m)] += 2 * n_pairs
        reg["two_draws"] = dict(two)
    by_size = Counter()
    for v in reg.values():
        by_size.update(v)
    # the jitted calls of the batched backend, by compiled shape (:func:`call_key`): what the
    # predictor times (per call + per draw) and what compiles (a shape not compiled before)
    calls: Counter[str] = Counter()
    n_grid_lams = len(params["diag_reg_grid"])
    for b in draw_chunks(n_grid_lams, chunk(n_t, n_t, n_v) if chunk else n_grid_lams):
        calls[call_key("full", n_t, n_v, b, n_t)] += n_sel
    calls[call_key("rows", n_t, n_v, 1, n_t)] += n_sel
    rs = dict(params.get("train_resample") or {})

    def fitted(n_k: int, boot: int, curve_plan, times: int) -> None:
        """One final model on a kernel of ``n_k`` rows: its fit, bootstrap and learning curve."""
        calls[call_key("rows", n_k, n_s, 1, n_k)] += times
        groups = Counter({n_k: 0})
        for m, _ in curve_plan:
            groups[int(m)] += 1
        for m, draws in [(n_k, boot), *sorted(groups.items())]:
            for b in draw_chunks(draws, chunk(m, n_k, n_s) if chunk else draws):
                calls[call_key("rows", n_k, n_s, b, m)] += times

    fitted(n_fit, int(plan["train"].shape[0]), curve, runs * n_final_models)
    if reg.get("two_draws"):
        fitted(half, int(rs.get("n_boot", 200)), hc, 2 * n_pairs)
    # compute_kernel_blocks calls (each reads back every block of its kernel): per run, the train and
    # validation kernels of every selection model, the 5 kernels of every final model
    kernel_calls = runs * (2 * len(fams) * len(depths) + len(KERNEL_PAIRS) * n_final_models)
    reads = sum(loads.values()) + sum(b["sym"] + b["rect"] for b in blocks.values())
    return {"blocks": blocks, "loads": dict(loads), "regressions": reg, "by_size": dict(by_size),
            "selection_models": n_sel, "final_models": runs * n_final_models, "runs": runs, "calls": dict(calls),
            "kernel_calls": kernel_calls, "block_reads": reads}


def call_key(fn: str, n_k: int, n_s: int, batch: int, m: int) -> str:
    """One compiled shape of :mod:`ntkrepro.kernels.device_regression`'s jitted functions: ``fn``
    (``rows``: refits on gathered rows; ``full``: the grid), the kernel's rows ``n_k``, the
    predicted points ``n_s``, the batch (draws or grid values per call) and the fit size ``m``."""
    return f"{fn}:k{int(n_k)}:s{int(n_s)}:b{int(batch)}:m{int(m)}"


def parse_call_key(key: str) -> dict[str, Any]:
    fn, *rest = key.split(":")
    return {"fn": fn, **{f"n_{p[0]}" if p[0] in "ks" else {"b": "batch", "m": "m"}[p[0]]: int(p[1:]) for p in rest}}


def draw_chunks(n: int, c: int) -> list[int]:
    """Batch sizes of ``n`` draws in chunks of ``c`` (as ``DeviceRegression.predict_many`` splits them)."""
    c = max(int(c), 1)
    return [min(c, n - s) for s in range(0, int(n), c)]


def realised_final_depths(results: Mapping[str, Any]) -> dict[str, list[int]]:
    """Per family the distinct depths the final fits of the real run and the control used."""
    out: dict[str, set[int]] = {}
    for body in (results, *dict(results.get("controls") or {}).values()):
        for r in body.get("final", []):
            out.setdefault(r["family"], set()).add(int(r["depth"]))
    return {f: sorted(v) for f, v in out.items()}


def power_law(n: float, pts: Mapping[int, float]) -> float:
    """Seconds at size ``n`` from probes ``{size: seconds}`` (a power law through the two nearest
    probes; one probe: cubic)."""
    xs = sorted(pts)
    if len(xs) == 1 or xs[0] == xs[-1]:
        return pts[xs[-1]] * (n / xs[-1]) ** 3
    lo, hi = (xs[0], xs[1]) if n <= xs[0] else (xs[-2], xs[-1])
    for a, b in zip(xs, xs[1:]):
        if a <= n <= b:
            lo, hi = a, b
    p = math.log(max(pts[hi], 1e-12) / max(pts[lo], 1e-12)) / math.log(hi / lo)
    p = min(max(p, 0.0), 3.0)
    # anchored at the probe nearer in log size (exact at either probe, even with the exponent clamped)
    anchor = lo if abs(math.log(n / lo)) <= abs(math.log(n / hi)) else hi
    return pts[anchor] * (n / anchor) ** p


def predict_h4(params: Mapping[str, Any], tier_name: str, tier: Mapping[str, Any], cal: Mapping[str, Any],
               final_depths: Mapping[str, Sequence[int]] | None = None, *,
               compiled: Sequence[str] | set[str] = ()) -> dict[str, float]:
    """Predicted seconds of ``run_h4`` at ``tier`` by part (``total``: their sum), from :func:`count_h4`
    and the calibration.

    * ``kernels``: every block computed (its calibrated time and the write of its file);
    * ``kernel_compile``: each fresh kernel function ``run_h4`` builds and calls (per selection model,
      per final depth whose test kernels are computed) pays its first symmetric and rectangular call;
    * ``cache``: every ``compute_kernel_blocks`` call's fixed cost and every block it reads back;
    * ``grid``: the grid and the validation refit of every selection model (their exact shapes, timed);
    * ``final``, ``boot``, ``curve``, ``two_draws``: the batched refits, per jitted call ``per_call_s``
      + batch x the per-draw time at its size (:func:`power_law` between the probes);
    * ``regression_compile``: every call shape (:func:`call_key`) not in ``compiled`` (what the
      calibration and the earlier tiers of this process compiled) times the calibrated compile;
    * ``fixed``: the data, the test-accuracy intervals."""
    if int(tier["block_size"]) != int(cal["block"]):
        raise ValueError("a tier's block size must be the calibrated one")
    r = cal["regression"][tier_name]
    cnt = count_h4(params, tier, final_depths, chunker(cal))
    per_model = {f"{m['family']}-d{m['depth']}": m for m in cal["models"]}
    io = cal["io"]
    kernels = sum(b["sym"] * (per_model[k]["sym_s"] + io["write_s"])
                  + b["rect"] * (per_model[k]["rect_s"] + io["write_s"]) for k, b in cnt["blocks"].items())
    # a fresh kernel function per selection model (first run) and per final depth whose test kernels
    # are computed (first run, or the control's other depths)
    depths = [int(d) for d in params["depths"]]
    uses = {f"{f}-d{d}": int(d in depths) + int(cnt["blocks"][f"{f}-d{d}"]["sym"] > (
        kernel_blocks("train", tier)["sym"] if d in depths else 0)) for f, d in h4_models(params)}
    kernel_compile = sum(uses[k] * per_model[k]["use_s"] for k in uses)
    cache = cnt["kernel_calls"] * io["call_s"] + cnt["block_reads"] * io["read_s"]
    per_draw = {int(k): v for k, v in r["per_draw_s"].items()}

    def call_s(key: str) -> float:
        c = parse_call_key(key)
        if c["fn"] == "full":
            return float(r["grid_s"])
        if c["n_k"] == int(tier["n_train"]) and c["n_s"] == int(tier["n_val"]):
            return float(r["refit_at_train_s"])
        return float(r["per_call_s"]) + c["batch"] * power_law(c["m"], per_draw)

    n_fit, n_s = int(tier["n_train"]) + int(tier["n_val"]), int(tier["n_test"])
    half = n_fit // 2
    parts = dict.fromkeys(("grid", "final", "boot", "curve", "two_draws"), 0.0)
    for key, n in cnt["calls"].items():
        c = parse_call_key(key)
        if c["n_s"] != n_s:
            part = "grid"
        elif c["n_k"] == half and cnt["regressions"].get("two_draws"):
            part = "two_draws"
        elif c["m"] == n_fit and c["batch"] == 1:
            part = "final"
        elif c["m"] == n_fit:
            part = "boot"
        else:
            part = "curve"
        parts[part] += n * call_s(key)
    if r.get("backend") != "jax":  # the host path: one call per draw, its per-draw time measured per draw
        parts = {"grid": cnt["selection_models"] * r["grid_s"] + sum(cnt["regressions"]["val_refit"].values())
                 * r["refit_at_train_s"]}
        for part in ("final", "boot", "curve", "two_draws"):
            parts[part] = sum(c * power_law(n, per_draw) for n, c in cnt["regressions"].get(part, {}).items())
    done = set(compiled) | set(r.get("compiled", ()))
    new_shapes = sorted(k for k in cnt["calls"] if k not in done) if r.get("backend") == "jax" else []
    # the test-accuracy interval of every final model and the 8 paired ordering intervals per run (n_boot each)
    fixed = (cnt["final_models"] + 8 * cnt["runs"]) * cal["ci_s"] + cal["load_data_s"]
    parts = {"kernels": kernels, "kernel_compile": kernel_compile, "cache": cache, **parts,
             "regression_compile": len(new_shapes) * float(r.get("compile_s", 0.0)), "fixed": fixed}
    parts = {k: SAFETY * v for k, v in parts.items()}
    parts["total"] = sum(parts.values())
    parts["new_shapes"] = len(new_shapes)
    return parts


def tier_shapes(params: Mapping[str, Any], tier: Mapping[str, Any], cal: Mapping[str, Any]) -> set[str]:
    """The call shapes (:func:`call_key`) a tier compiles; the later tiers of the process reuse them."""
    return set(count_h4(params, tier, None, chunker(cal))["calls"])


def chunker(cal: Mapping[str, Any]) -> Callable[[int, int, int], int] | None:
    """``chunk(m, n_k, n_s)`` of the calibrated device's batch memory (``None`` for the host path)."""
    if cal.get("regression_backend") != "jax":
        return None

    reg = DeviceRegression(batch_bytes=int(cal["batch_bytes"]))
    return lambda m, n_k, n_s: reg.chunk(m, n_k, n_s, 10)


# --------------------------------------------------------------------------------------------
# H5's decisive cells

def h5_cell_batch(section: Mapping[str, Any], seed: int) -> int:
    """Runs trained together in one H5 cell (``finite_nets.h5_cell_runs``): the real run, plus the
    permuted-label control run on the control seeds (the first ``n_control_runs`` of ``seeds``)."""
    ctrl = [int(v) for v in section["seeds"]][: int(section.get("n_control_runs", 1))]
    return 2 if int(seed) in ctrl else 1


def predict_h5_cells(section: Mapping[str, Any], cells: Sequence[Mapping[str, Any]],
                     cal: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Predicted seconds of each H5 cell (``run_h5_cell``): its data loading, its trainer's compilation (a
    fresh jitted trainer per cell), and mechanisms x epochs x the timed epoch at the cell's batch of runs."""
    out = {}
    for c in cells:
        b = str(h5_cell_batch(section, c["seed"]))
        parts = {"load_data": cal["load_s"], "compile": cal["compile_s"][b],
                 "train": len(section["mechanisms"]) * int(section["epochs"]) * cal["epoch_s"][b]}
        parts["total"] = sum(parts.values())
        out[c["name"]] = parts
    return out


# --------------------------------------------------------------------------------------------
# H6

def h6_fits(params: Mapping[str, Any]) -> dict[str, Any]:
    """H6's host regressions per (model, kernel) and run: the grid, the refit, the training-accuracy
    fit, the two-way bootstrap and the learning curve (``imdb._resampled``), and the ordering control's
    halves (real run, :data:`imdb.NULL_PAIR_FAMILIES`): ``{"grid": calls, "fits": {n: fits}, "pair": {n: fits}}``."""
    n_t, n_s = int(params["n_train"]), int(params["n_test"])
    plan, curve = h6_resample_plans(params, n_t, n_s)
    fits = Counter({n_t: 2 + int(plan["train"].shape[0])})
    for m, _ in curve:
        fits[int(m)] += 1
    rs = dict(params.get("train_resample") or {})
    half = n_t // 2
    pair = Counter({half: 2 * (1 + int(rs.get("n_boot", 200)))})
    for m, _ in learning_curve_plan(half, rs.get("curve_fractions", [0.125, 0.25, 0.5, 1.0]),
                                    int(rs.get("curve_draws", 5)), 0, min_size=4):
        pair[int(m)] += 2
    return {"fits": dict(fits), "pair": dict(pair)}


def predict_h6(params: Mapping[str, Any], cal: Mapping[str, Any]) -> dict[str, float]:
    """Predicted seconds of ``run_h6`` (a coarser model than H4's): the data; per model its blocks
    (train x train, (valid + test) x train), one compilation of each block shape and the padding
    check (one more compilation, taken as the symmetric first call); the block cache (both runs); the
    host regressions of both runs (:func:`h6_fits`; per fit the probe at the nearer size, power law
    between) and the grid."""
    n_t, n_e = int(params["n_train"]), int(params["n_valid"]) + int(params["n_test"])
    b = int(params["block_size"])
    sym, rect = block_counts(n_t, None, b), block_counts(n_e, n_t, b)
    n_sym, n_rect = sym["sym"], sym["rect"] + rect["rect"] + rect["sym"]
    io = cal["io"]
    kernels = compile_s = 0.0
    for m in cal["models"]:
        kernels += n_sym * (m["sym_s"] + io["write_s"]) + n_rect * (m["rect_s"] + io["write_s"])
        compile_s += 2 * m["sym_first_s"] + m["rect_first_s"] - m["sym_s"] - m["rect_s"]
    n_models = len(model_grid(params))
    cache = 2 * n_models * (2 * io["call_s"] + (n_sym + n_rect) * io["read_s"])
    f = h6_fits(params)
    fit_s = {int(k): v for k, v in cal["fit_s"].items()}
    per_kernel = sum(c * power_law(n, fit_s) for n, c in f["fits"].items())
    pairs = sum(c * power_law(n, fit_s) for n, c in f["pair"].items())
    n_pair_models = sum(1 for fam, _ in model_grid(params) if fam in NULL_PAIR_FAMILIES)
    regressions = 2 * 2 * n_models * (per_kernel + cal["grid_s"]) + 2 * n_pair_models * pairs
    parts = {"prepare": cal["prepare_s"], "kernels": kernels, "compile": compile_s, "cache": cache,
             "regressions": regressions}
    parts["total"] = sum(parts.values())
    return parts


# --------------------------------------------------------------------------------------------
# rates (a finished H4 tier's throughput record)

def flops_per_pair(params: Mapping[str, Any]) -> dict[str, float]:
    """Analytic FLOPs per input pair (NNGP + NTK) of every (family, depth), ``fast.flop_count``."""
    size = int(params["image_size"])
    return {f"{f}-d{d}": float(fast.flop_count(fast.from_stax_builder(build_model, f, d, dict(params["arch"])),
                                               (size, size, 3))["total"])
            for f, d in h4_models(params)}


def measured_pairs(params: Mapping[str, Any], tier: Mapping[str, int], results: Mapping[str, Any]) -> dict[str, int]:
    """Input pairs of the kernels ``run_h4`` computed, per (family, depth): every model's train and
    validation kernels, the test kernels of the depths the final fits (real run and control) used
    (symmetric blocks count their upper triangle with the diagonal blocks whole, as computed)."""
    n = {"train": tier["n_train"], "val": tier["n_val"], "test": tier["n_test"]}
    b = int(tier["block_size"])

    def pairs(which: str) -> int:
        rows, cols = KERNEL_PAIRS[which]
        n1, n2 = n[rows], n[rows] if cols is None else n[cols]
        return sum(min(b, n1 - i * b) * min(b, n2 - j * b) for i, j in block_grid(n1, n2, b, cols is None))

    final = realised_final_depths(results)
    out = {}
    for f, d in h4_models(params):
        whiches = ["train", "val"] + (["valval", "test", "testval"] if d in final.get(f, []) else [])
        out[f"{f}-d{d}"] = sum(pairs(w) for w in whiches)
    return out

