r"""The prepared one-GPU call: H4 in size tiers, H5 at its named epochs, A1 at the paper's settings --
each tier written as it finishes (issues 24, 30).

Usage (from the repository root; the shared data in ``../shared/data``; needs only jax, numpy and
scipy besides this repository -- flax and optax for H5; no neural-tangents, pyyaml, tqdm or
snakemake)::

    PYTHONPATH=src python -m ntkrepro.hron2020.gpu_run --out results-gpu --budget-s 480

(``workflow/scripts/gpu_h4.sh`` wraps it as one device call: caches in a temporary folder.)

1. **Plan** (:data:`PLANS`, declared before any run), in this order: H4 at 1,000 images (``t1000``),
   H5 (every mechanism x LayerNorm x 5 seeds + the permuted-label control, trained 200 epochs: the
   epochs its learning curve names, ~150-250), A1 at the paper's settings (config/paper.yaml: d=8,
   T=16, n=5000, widths 8..256, 10 seeds, 4000 steps, step 1.75/sqrt(4000), rho=3, both teachers,
   the ``width_fixed`` control), then H4 at 2,000 and 5,000 images. The H4 tiers are config/default.yaml's
   H4 (:data:`PARAMS_SNAPSHOT`) at the tier's sizes: the official training set's class-balanced
   train + validation split, 4:1, and 2,000 test images, 8x8, every family and depth, kernel blocks
   of 200 x 200, regressions on the default JAX device (``regression_backend: jax``,
   :mod:`ntkrepro.kernels.device_regression`). H6 is not in the plan: its GloVe inputs do not travel
   as they are (the 6B-50d table is 80 MB of vectors + 3.7 MB of vocabulary > the 64 MiB a device
   call carries; H6 would need a vocabulary cut to the reviews' words, prepared on the CPU).
2. **Calibration** (:func:`calibrate`): per H4 model one symmetric and one rectangular block (first
   call: compile, second: timed), the block cache's write and read per block, the data loading,
   and, per H4 tier, the regression backend's own calls at the tier's sizes (the grid at
   ``n_train``, a chunk of refits at ``n_train + n_val`` and at an eighth of it); for H5 one epoch of
   its trainer (compile, then timed); for A1 one teacher and, at the smallest and largest width, a
   few projected-GD steps and worst-case-search steps (compile, then timed).
3. **Prediction** (:func:`count_h4`, :func:`predict_h4`, :func:`predict_h5`, :func:`predict_a1`): every
   computation the tier performs is counted -- for H4 the kernel blocks (train and validation
   kernels of every model, the test kernels of the selected depths: an upper bound before the run,
   the realised depths after it), the cache reads, the grid, the validation refit, the final fits,
   the two-way bootstrap and learning-curve refits, all twice (the permuted-label control reruns
   the pipeline) -- and multiplied by its calibrated time. The regression counts are checked after
   the run against the backends' tally (:data:`ntkrepro.kernels.device_regression.TALLY`).
4. **Run**: each tier in plan order if its prediction fits the budget left (else recorded as
   ``skipped`` with its prediction); the first H4 tier always runs. Each finished tier is written at
   once as one archive ``<out>/<tier>.tar.gz`` (its results in the Snakemake layout and its own
   throughput record), and ``<out>/gpu_run.json`` (plan, calibration, predictions, every finished
   tier's measured time, rates, device and precision) is rewritten after the calibration and after
   every tier: a call cut off by its time limit returns the calibration and every finished tier.
   Everything under ``<out>`` is at most :data:`MAX_FILES` files of at most :data:`MAX_FILE_BYTES`
   bytes, no folder below it (:func:`check_outputs`).

Judge on the CPU side (unpack, then the claims' own criteria in the pinned environment)::

    tar -xzf results-gpu/t5000.tar.gz -C results-gpu/t5000
    PYTHONPATH=src .venv/bin/python -m ntkrepro.ledger evaluate H4 \
        --results results-gpu/t5000/hron2020/H4_cifar10_kernels.json --scale gpu \
        --out results-gpu/t5000/claims/H4_evaluation.json

No criterion is applied here.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import math
import os
import shutil
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("ntkrepro.hron2020.gpu_run")

REPO = Path(__file__).resolve().parents[3]
#: config/default.yaml's ``hron2020: H4:`` and ``H5:`` sections and ``data:`` section, config/paper.yaml's
#: ``arda2026: A1:`` and ``teacher:``, as JSON (the GPU machine has no pyyaml). Regenerate:
#: ``python -m ntkrepro.hron2020.gpu_run --write-params-snapshot``.
PARAMS_SNAPSHOT = REPO / "config" / "gpu_h4_default.json"
COMPUTE = {"H4": "ntkrepro.hron2020.cifar10:run_h4", "H5": "ntkrepro.hron2020.finite_nets:run_h5",
           "A1": "ntkrepro.arda2026.scaling:run_a1_shard"}
RESULTS = {"H4": "hron2020/H4_cifar10_kernels.json", "H5": "hron2020/H5_finite_attention.json",
           "A1": "arda2026/A1_width_scaling.json"}

#: Pre-declared H4 tiers: (train, validation, test) images and the kernel block size.
TIERS: dict[str, dict[str, Any]] = {
    "t1000": {"n_train": 800, "n_val": 200, "n_test": 2000, "block_size": 200},
    "t2000": {"n_train": 1600, "n_val": 400, "n_test": 2000, "block_size": 200},
    "t5000": {"n_train": 4000, "n_val": 1000, "n_test": 2000, "block_size": 200},
}
#: H5 on the device: config/default.yaml's H5 trained for the epochs its learning curve names.
H5_TIERS: dict[str, dict[str, Any]] = {"h5_e200": {"epochs": 200}}
#: A1 on the device: config/paper.yaml's A1 and teacher, unchanged (the paper's settings).
A1_TIERS: dict[str, dict[str, Any]] = {"a1_paper": {}}

#: CPU-sized tiers for the tests (not results), with the proportions of the GPU tiers: every family,
#: the default grid, 200 bootstrap draws and 16 learning-curve refits per final model; depth 1, 4x4.
SMOKE_TIERS: dict[str, dict[str, Any]] = {
    "cpu100": {"n_train": 80, "n_val": 20, "n_test": 60, "block_size": 20, "depths": [1], "image_size": 4},
    "cpu200": {"n_train": 160, "n_val": 40, "n_test": 60, "block_size": 20, "depths": [1], "image_size": 4},
}
SMOKE_H5_TIERS: dict[str, dict[str, Any]] = {"h5_smoke": {
    "image_size": 4, "n_train": 100, "n_val": 50, "d_model": 8, "n_heads": 2, "n_pos_emb": 4, "epochs": 3,
    "batch_size": 50, "seeds": [0, 1], "curve_val": 20}}
SMOKE_A1_TIERS: dict[str, dict[str, Any]] = {"a1_smoke": {
    "n": 40, "widths": [4, 8], "seeds": [1, 2], "steps": 20, "lin_search_steps": 3, "n_boot": 200,
    "teacher": {"n_mc": 64}}}
#: Plan order: (claim, tier).
PLANS: dict[str, list[tuple[str, str]]] = {
    "gpu": [("H4", "t1000"), ("H5", "h5_e200"), ("A1", "a1_paper"), ("H4", "t2000"), ("H4", "t5000")],
    "smoke": [("H4", "cpu100"), ("H5", "h5_smoke"), ("A1", "a1_smoke"), ("H4", "cpu200")],
    "smoke-h4": [("H4", "cpu100"), ("H4", "cpu200")],
}
SAFETY = 1.0  # the prediction is a point estimate; the budget check adds MARGIN
#: A tier starts only if its prediction times MARGIN fits the time left.
MARGIN = 1.2
#: What comes back from the device: files, bytes per file (everything under ``--out``).
MAX_FILES, MAX_FILE_BYTES = 8, 16 * 2 ** 20
#: Refits per calibration probe (at most).
PROBE_DRAWS = 32


# --------------------------------------------------------------------------------------------
# configuration

def config_sections() -> dict[str, Any]:
    """``{"H4", "H5", "data"}`` of config/default.yaml and ``{"A1", "teacher"}`` of config/paper.yaml
    (pyyaml if installed, else the snapshot)."""
    try:
        import yaml
    except ImportError:
        return json.loads(PARAMS_SNAPSHOT.read_text())
    cfg = yaml.safe_load((REPO / "config" / "default.yaml").read_text())
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    return {"H4": cfg["hron2020"]["H4"], "H5": cfg["hron2020"]["H5"], "data": cfg["data"],
            "A1": paper["arda2026"]["A1"], "teacher": paper["arda2026"]["teacher"]}


def default_data_root() -> Path:
    """``../shared/data`` beside the repository, else ``shared/data`` inside it."""
    for root in (REPO.parent / "shared" / "data", REPO / "shared" / "data"):
        if root.is_dir():
            return root
    return REPO.parent / "shared" / "data"


def h4_params(sections: Mapping[str, Any], tier: Mapping[str, Any], out: Path, data_root: Path,
              cache: Path | None = None, regression_backend: str = "jax") -> dict[str, Any]:
    """H4's params as the Snakemake rule builds them (``H4_CFG``), at ``tier``'s sizes, fast backend,
    regressions on ``regression_backend``; kernel blocks cached under ``cache`` (default ``<out>/cache``)."""
    p = {k: v for k, v in dict(sections["H4"]).items() if k not in ("benchmark", "n_shards")}
    p.update(tier, kernel_backend="fast", nt_batch_size=0, dtype="float32", regression_backend=regression_backend,
             data={"root": str(data_root), **dict(sections["data"]["cifar10"])},
             cache_dir=str((cache or out / "cache") / "kernels" / "hron2020_H4"))
    return p


def h5_params(sections: Mapping[str, Any], tier: Mapping[str, Any], data_root: Path) -> dict[str, Any]:
    """H5's params as the Snakemake rule builds them, with ``tier``'s overrides."""
    return {**dict(sections["H5"]), **dict(tier), "data": {"root": str(data_root), **dict(sections["data"]["cifar10"])}}


def a1_params(sections: Mapping[str, Any], tier: Mapping[str, Any]) -> dict[str, Any]:
    """A1's section with the teacher (``ntkrepro.arda2026.sweeps.section``), ``tier``'s overrides, one
    shard per task (each written as it finishes)."""
    sec = {**dict(sections["A1"]), **{k: v for k, v in dict(tier).items() if k != "teacher"}}
    sec["teacher"] = {**dict(sections["teacher"]), **dict(tier.get("teacher", {}))}
    sec["seeds_per_job"] = 1
    from ntkrepro.arda2026 import scaling

    sec["jobs"] = len(scaling.tasks(sec, "A1"))
    return sec


def _models(params: Mapping[str, Any]) -> list[tuple[str, int]]:
    depths = sorted({int(d) for d in params["depths"]} | {int(v) for v in dict(params.get("final_depth") or {}).values()})
    return [(f, d) for f in params["families"] for d in depths]


# --------------------------------------------------------------------------------------------
# counting (item 2): every computation run_h4 performs

def _blocks(n1: int, n2: int | None, b: int) -> dict[str, int]:
    from ntkrepro.kernels.blocks import block_grid

    out = {"sym": 0, "rect": 0}
    for i, j in block_grid(n1, n1 if n2 is None else n2, b, n2 is None):
        out["sym" if n2 is None and i == j else "rect"] += 1
    return out


def _kernel_blocks(which: str, tier: Mapping[str, int]) -> dict[str, int]:
    from ntkrepro.hron2020.cifar10 import KERNEL_PAIRS

    n = {"train": tier["n_train"], "val": tier["n_val"], "test": tier["n_test"]}
    rows, cols = KERNEL_PAIRS[which]
    return _blocks(n[rows], None if cols is None else n[cols], int(tier["block_size"]))


def blocks_needed(params: Mapping[str, Any], tier: Mapping[str, int]) -> dict[str, int]:
    """Kernel blocks of every kernel of :data:`KERNEL_PAIRS` for one (family, depth) at ``tier``."""
    from ntkrepro.hron2020.cifar10 import KERNEL_PAIRS

    out = Counter()
    for which in KERNEL_PAIRS:
        out.update(_kernel_blocks(which, tier))
    return {"sym": out["sym"], "rect": out["rect"]}


def count_h4(params: Mapping[str, Any], tier: Mapping[str, Any], final_depths: Mapping[str, Sequence[int]] | None = None
             ) -> dict[str, Any]:
    """Everything :func:`ntkrepro.hron2020.cifar10.run_h4` computes at ``tier`` (both runs: the real
    labels and the permuted-label control, on the same cached kernels).

    ``final_depths``: per family the distinct depths whose test kernels the final fits used (over both
    runs); ``None``: every depth (the upper bound, known before the run). Returns
    ``{"blocks": {model: {"sym", "rect"}}, "loads": {model: blocks read from the cache},
    "regressions": {"grid"|"val_refit"|"final"|"boot"|"curve": {n: fits}}, "by_size": {n: fits},
    "final_models": ...}``."""
    from ntkrepro.hron2020.cifar10 import KERNELS, h4_resample_plans

    runs = 2
    n_t, n_v, n_s = int(tier["n_train"]), int(tier["n_val"]), int(tier["n_test"])
    n_fit = n_t + n_v
    fams, depths = list(params["families"]), [int(d) for d in params["depths"]]
    override = {k: int(v) for k, v in dict(params.get("final_depth") or {}).items()}
    if final_depths is None:
        final_depths = {f: [override[f]] if f in override else depths for f in fams}
    nb = {w: _kernel_blocks(w, tier) for w in ("train", "val", "valval", "test", "testval")}
    tot = {w: nb[w]["sym"] + nb[w]["rect"] for w in nb}
    blocks, loads = {}, Counter()
    for f, d in _models(params):
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
           "final": {n_fit: runs * n_final_models}, "boot": {n_fit: runs * n_final_models * int(plan["train"].shape[0])},
           "curve": dict(Counter({int(m): 0 for m, _ in curve}))}
    for m, _ in curve:
        reg["curve"][int(m)] += runs * n_final_models
    # the ordering control's null pairs (real run only): per attention family and kernel, two disjoint
    # halves of train + validation, each fitted once, on its own bootstrap plan and learning curve
    from ntkrepro.hron2020 import cifar10 as _c
    from ntkrepro.hron2020 import regime as _r

    n_pairs = len([f for f in fams if f in getattr(_c, "ATTENTION_FAMILIES", ())]) * len(KERNELS)
    if n_pairs and hasattr(_r, "two_draws"):
        rs = dict(params.get("train_resample") or {})
        half = n_fit // 2
        hc = _r.learning_curve_plan(half, rs.get("curve_fractions", [0.125, 0.25, 0.5, 1.0]),
                                    int(rs.get("curve_draws", 5)), 0, min_size=_c.N_CLASSES)
        two = Counter({half: 2 * n_pairs * (1 + int(rs.get("n_boot", 200)))})
        for m, _ in hc:
            two[int(m)] += 2 * n_pairs
        reg["two_draws"] = dict(two)
    by_size = Counter()
    for v in reg.values():
        by_size.update(v)
    return {"blocks": blocks, "loads": dict(loads), "regressions": reg, "by_size": dict(by_size),
            "selection_models": n_sel, "final_models": runs * n_final_models, "runs": runs}


def realised_final_depths(results: Mapping[str, Any]) -> dict[str, list[int]]:
    """Per family the distinct depths the final fits of the real run and the control used."""
    out: dict[str, set[int]] = {}
    for body in (results, *dict(results.get("controls") or {}).values()):
        for r in body.get("final", []):
            out.setdefault(r["family"], set()).add(int(r["depth"]))
    return {f: sorted(v) for f, v in out.items()}


def _power(n: float, pts: Mapping[int, float]) -> float:
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
               final_depths: Mapping[str, Sequence[int]] | None = None, *, first_tier: bool = True) -> dict[str, float]:
    """Predicted seconds of ``run_h4`` at ``tier`` by part (``total``: their sum), from :func:`count_h4`
    and the calibration. The jitted kernels compile once per process (``first_tier``)."""
    if int(tier["block_size"]) != int(cal["block"]):
        raise ValueError("a tier's block size must be the calibrated one")
    cnt = count_h4(params, tier, final_depths)
    per_model = {f"{m['family']}-d{m['depth']}": m for m in cal["models"]}
    kernels = sum(b["sym"] * (per_model[k]["sym_s"] + cal["block_write_s"])
                  + b["rect"] * (per_model[k]["rect_s"] + cal["block_write_s"]) for k, b in cnt["blocks"].items())
    # a fresh kernel function per model for the selection's kernels (first run) and per final depth
    # whose test kernels are computed (first run, or the control's other depths)
    uses = {f"{m['family']}-d{m['depth']}": 0 for m in cal["models"]}
    depths = [int(d) for d in params["depths"]]
    for f, d in _models(params):
        uses[f"{f}-d{d}"] = int(d in depths) + int(cnt["blocks"][f"{f}-d{d}"]["sym"] > (
            _kernel_blocks("train", tier)["sym"] if d in depths else 0))
    compile_s = sum(uses[k] * (m["sym_recompile_s"] + m["rect_recompile_s"]) for k, m in per_model.items())
    loads = sum(cnt["loads"].values()) * cal["block_read_s"]
    r = cal["regression"][tier_name]
    reg = cnt["regressions"]
    grid = cnt["selection_models"] * r["grid_s"] + sum(reg["val_refit"].values()) * r["refit_at_train_s"]
    refit = {int(k): v for k, v in r["refit_s"].items()}
    final = sum(c * _power(n, refit) for n, c in reg["final"].items())
    boot = sum(c * _power(n, refit) for n, c in reg["boot"].items())
    curve = sum(c * _power(n, refit) for n, c in reg["curve"].items())
    two = sum(c * _power(n, refit) for n, c in reg.get("two_draws", {}).items())
    # the test-accuracy interval of every final model and the 8 paired ordering intervals per run (n_boot each)
    fixed = (cnt["final_models"] + 8 * cnt["runs"]) * cal["ci_s"] + cal["load_data_s"]
    # batched (jax) refits compile once per new batch shape: the final fit's, each learning-curve size's,
    # a remainder chunk of the bootstrap (the grid's, the validation refit's and the bootstrap chunk's
    # were compiled by the calibration)
    n_fit = int(tier["n_train"]) + int(tier["n_val"])
    n_boot = max(sum(reg["boot"].values()) // max(cnt["final_models"], 1), 1)
    chunk = int(r.get("boot_chunk", n_boot))
    shapes = 1 + sum(1 for m in reg["curve"] if m != n_fit) + int(n_boot % chunk != 0) + len(reg.get("two_draws", {}))
    compile_s += shapes * float(r.get("compile_s", 0.0))
    parts = {"kernels": kernels, "compile": compile_s, "cache_reads": loads, "grid": grid, "final": final,
             "boot": boot, "curve": curve, "two_draws": two, "fixed": fixed}
    parts = {k: SAFETY * v for k, v in parts.items()}
    parts["total"] = sum(parts.values())
    return parts


def predict_h5(params: Mapping[str, Any], cal: Mapping[str, Any]) -> dict[str, float]:
    """Predicted seconds of ``run_h5``: data, one compilation, epochs x configurations x the timed epoch."""
    n_cfg = len(params["mechanisms"]) * len(params["layer_norms"])
    parts = {"load_data": cal["load_s"], "compile": max(cal["first_s"] - cal["epoch_s"], 0.0),
             "train": n_cfg * int(params["epochs"]) * cal["epoch_s"]}
    parts["total"] = sum(parts.values())
    return parts


def _interp_m(m: float, pts: Mapping[int, float]) -> float:
    xs = sorted(pts)
    if len(xs) == 1:
        return pts[xs[0]]
    lo, hi = xs[0], xs[-1]
    return pts[lo] + (pts[hi] - pts[lo]) * (m - lo) / (hi - lo)


def predict_a1(sec: Mapping[str, Any], cal: Mapping[str, Any]) -> dict[str, float]:
    """Predicted seconds of A1's shards: per (teacher kind, seed) one teacher, per width ``steps``
    projected-GD steps; for the verdict's teacher also ``lin_search_steps`` worst-case steps per width
    and the ``width_fixed`` control (the smallest width at every column); one compilation per width
    (per step count) and process. Step times interpolated linearly in the width between the probes."""
    from ntkrepro.arda2026 import scaling

    head = sec["teacher"]["kind"]
    steps, lin = int(sec["steps"]), int(sec["lin_search_steps"])
    widths = [int(m) for m in sec["widths"]]
    m0 = min(widths)
    ts = {int(k): v for k, v in cal["step_s"].items()}
    ta = {int(k): v for k, v in cal["ascent_step_s"].items()}
    tc = {int(k): v for k, v in cal["compile_s"].items()}
    teachers = train = ascent = 0.0
    for t in scaling.tasks(sec, "A1"):
        for _ in t["seeds"]:
            teachers += cal["teacher_s"]
            train += sum(steps * _interp_m(m, ts) for m in widths)
            if t["kind"] == head:
                ascent += sum(lin * _interp_m(m, ta) for m in widths)
                train += len(widths) * steps * _interp_m(m0, ts)
                ascent += len(widths) * lin * _interp_m(m0, ta)
    parts = {"teachers": teachers, "train": train, "ascent": ascent,
             "compile": sum(_interp_m(m, tc) for m in widths), "aggregate": cal.get("aggregate_s", 1.0)}
    parts["total"] = sum(parts.values())
    return parts


def choose_tier(predicted: Mapping[str, float], seconds_left: float, order: Sequence[str]) -> tuple[str, bool]:
    """``(tier, fits)``: the largest tier (``order``: smallest first) predicted to fit in
    ``seconds_left``; the smallest with ``fits = False`` when none does."""
    fitting = [t for t in order if predicted[t] <= seconds_left]
    return (fitting[-1], True) if fitting else (order[0], False)


# --------------------------------------------------------------------------------------------
# calibration

def _timed(fn, *args, **kwargs) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def _psd(n: int, seed: int = 0) -> np.ndarray:
    f = np.random.default_rng(seed).standard_normal((n, 64))
    return f @ f.T / 64 + 0.1 * np.eye(n)


def calibrate_regression(params: Mapping[str, Any], tier: Mapping[str, Any], backend: str) -> dict[str, Any]:
    """The regression backend's own calls at ``tier``'s sizes, as ``run_h4`` makes them: the grid
    (:meth:`select_diag_reg`) at ``n_train``, one refit at ``n_train``, and a chunk of refits
    (bootstrap draws) at ``n_train + n_val`` and at an eighth of it. Synthetic PSD kernels (the times
    do not depend on the values)."""
    from ntkrepro.hron2020.regime import boot_accuracies
    from ntkrepro.kernels.device_regression import TALLY, regression_backend
    from ntkrepro.kernels.inference import predicted_classes

    n_t, n_v, n_s = int(tier["n_train"]), int(tier["n_val"]), int(tier["n_test"])
    n_fit = n_t + n_v
    reg = regression_backend(backend)
    saved = Counter(TALLY)
    rng = np.random.default_rng(1)
    y = np.eye(10)[rng.integers(0, 10, n_fit + n_s)]
    k = _psd(n_fit + n_s)
    grid = [float(v) for v in params["diag_reg_grid"]]
    out: dict[str, Any] = {"backend": backend}
    for rep in range(2):  # first: compile (jax)
        _, out["grid_s"] = _timed(reg.select_diag_reg, k[:n_t, :n_t], k[n_t:n_fit, :n_t], y[:n_t], y[n_t:n_fit], grid)
        _, out["refit_at_train_s"] = _timed(reg.kernel_regression, k[:n_t, :n_t], k[n_t:n_fit, :n_t], y[:n_t], 1e-3)
    refit = {}
    rs = dict(params.get("train_resample") or {})
    n_boot, n_curve = int(rs.get("n_boot", 200)), int(rs.get("curve_draws", 5))
    for m in sorted({n_fit, max(10, n_fit // 8)}):
        kk, ks, yy = k[:m, :m], k[n_fit:, :m], y[:m]
        yt = rng.integers(0, 10, n_s)
        # the run's batch: the bootstrap's chunk at n_fit (its shape is then compiled here), the curve's draws
        want = n_boot if m == n_fit else n_curve
        draws = int(min(want, reg.chunk(m, m, n_s, 10))) if backend == "jax" else int(min(PROBE_DRAWS, want))
        plan = {"train": rng.integers(0, m, (draws, m)), "test": rng.integers(0, n_s, (draws, n_s))}

        def fit(a, b, c):
            return predicted_classes(reg.kernel_regression(a, b, c, 1e-3)) == yt

        many = reg.correct_many(kk, ks, yy, 1e-3, yt)
        boot_accuracies(fit, kk, ks, yy, plan, correct_many=many)  # compiles (jax)
        _, t = _timed(boot_accuracies, fit, kk, ks, yy, plan, correct_many=many)
        refit[m] = t / draws
        if m == n_fit:
            out["boot_chunk"] = draws
    out["compile_s"] = 0.0
    if backend == "jax":  # one new batch shape (as a learning-curve size brings): compile = first - second call
        m = max(10, n_fit // 4)
        rows = [rng.integers(0, m, m) for _ in range(3)]
        t1 = _timed(reg.predict_many, k[:m, :m], k[n_fit:, :m], y[:m], 1e-3, rows)[1]
        t2 = _timed(reg.predict_many, k[:m, :m], k[n_fit:, :m], y[:m], 1e-3, rows)[1]
        out["compile_s"] = max(t1 - t2, 0.0)
    out["refit_s"] = refit
    TALLY.clear()
    TALLY.update(saved)
    return out


def calibrate(params: Mapping[str, Any], data: Mapping[str, Any], block: int, h4_tiers: Mapping[str, Mapping[str, Any]],
              backend: str, cache: Path) -> dict[str, Any]:
    """H4's calibration (module docstring, item 2)."""
    import jax

    from ntkrepro.hron2020.cifar10 import jitted_kernel_fn
    from ntkrepro.kernels.blocks import compute_kernel_blocks
    from ntkrepro.stats import bootstrap_ci

    x = np.asarray(data["x_train"][: 2 * block])
    if x.shape[0] < 2 * block:
        raise ValueError(f"calibration needs {2 * block} training images, the smallest tier has {x.shape[0]}")
    a, b = x[:block], x[block:]
    def one_block(kfn, args) -> float:
        t0 = time.perf_counter()
        k = kfn(*args, ("nngp", "ntk"))
        np.asarray(k.nngp), np.asarray(k.ntk)  # to the host, as compute_kernel_blocks does
        return time.perf_counter() - t0

    rows, kfns = [], []
    for fam, depth in _models(params):
        kfn = jitted_kernel_fn(fam, depth, dict(params["arch"]), backend="fast")
        kfns.append(kfn)
        rec = {"family": fam, "depth": depth}
        for kind, args in (("sym", (a, None)), ("rect", (a, b))):
            rec[f"{kind}_first_s"] = one_block(kfn, args)
            rec[f"{kind}_s"] = min(one_block(kfn, args) for _ in range(3))  # the min: load only adds time
            # run_h4 builds a fresh kernel function per use: its first call loads the compiled
            # computation from the persistent cache (traces it again); once per model and use
            rec[f"{kind}_recompile_s"] = max(one_block(jitted_kernel_fn(fam, depth, dict(params["arch"]), backend="fast"),
                                                   args) - rec[f"{kind}_s"], 0.0)
        rows.append(rec)
        log.info("calibration %s-d%d: sym %.3f s, rect %.3f s per block (first calls %.1f + %.1f s, fresh function "
                 "%.1f + %.1f s)", fam, depth, rec["sym_s"], rec["rect_s"], rec["sym_first_s"], rec["rect_first_s"],
                 rec["sym_recompile_s"], rec["rect_recompile_s"])
    # the block cache: a symmetric kernel of up to 4 x 4 blocks (nb diagonal, nb(nb-1)/2 off-diagonal)
    # written, then read back twice (the faster read), by the compiled function of the first model
    kfn = kfns[0]
    nb = int(min(4, np.asarray(data["x_train"]).shape[0] // block))
    xb = np.asarray(data["x_train"][: nb * block])
    n_blocks = nb * (nb + 1) // 2
    folder = cache / "calibration_blocks"
    kw = dict(block_size=block, cache_dir=folder, dtype="float32", desc="calibration", progress=False, backend="fast")
    _, t_write = _timed(compute_kernel_blocks, kfn, xb, **kw)
    t_read = min(_timed(compute_kernel_blocks, kfn, xb, **kw)[1] for _ in range(2))
    shutil.rmtree(folder, ignore_errors=True)
    m0 = rows[0]
    write = max(t_write - nb * m0["sym_s"] - (n_blocks - nb) * m0["rect_s"], 0.0) / n_blocks
    # the test-accuracy interval of every final model (bootstrap over test points, n_boot draws)
    n_test = max(int(t["n_test"]) for t in h4_tiers.values())
    _, ci = _timed(bootstrap_ci, np.random.default_rng(0).integers(0, 2, n_test).astype(float), np.mean,
                   n_boot=int(params["n_boot"]), seed=0)
    regression = {}
    for name, tier in h4_tiers.items():
        regression[name] = calibrate_regression(params, tier, backend)
        log.info("calibration regressions %s (%s): grid %.3f s, refits %s", name, backend, regression[name]["grid_s"],
                 {m: round(v, 4) for m, v in regression[name]["refit_s"].items()})
    return {"block": block, "models": rows, "block_write_s": write, "block_read_s": t_read / n_blocks, "ci_s": ci,
            "regression": regression, "regression_backend": backend}


def calibrate_h5(params: Mapping[str, Any]) -> dict[str, Any]:
    """One epoch of H5's trainer at the tier's shapes (first call: compile; second: timed), and the data."""
    from ntkrepro.hron2020.cifar10 import load_splits
    from ntkrepro.hron2020.finite_nets import LAYER_NORMS, MECHANISMS, make_model, make_trainer

    seeds = [int(s) for s in params["seeds"]]
    d, t_load = _timed(load_splits, {**params, "seed": seeds[0]}, None, need_test=False)
    size = int(params["image_size"])
    xt = d["x_train"].reshape(d["x_train"].shape[0], size * size, 3)
    xv = d["x_val"].reshape(d["x_val"].shape[0], size * size, 3)
    model = make_model(seq_len=size * size, d_model=int(params["d_model"]), n_heads=int(params["n_heads"]),
                       n_pos_emb=int(params["n_pos_emb"]))
    train = make_trainer(model, xt, d["y_train"], xv, epochs=1, batch_size=int(params["batch_size"]),
                         learning_rate=float(params["learning_rate"]), n_curve_val=params.get("curve_val"))
    n_runs = len(seeds) + int(params.get("n_control_runs", 1))
    labels = np.stack([d["y_train"]] * n_runs).astype(np.int32)
    init = np.arange(n_runs, dtype=np.uint32)
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        out = train(init, labels, MECHANISMS.index(params["mechanisms"][0]), LAYER_NORMS.index(params["layer_norms"][0]))
        np.asarray(out[0])
        times.append(time.perf_counter() - t0)
    return {"load_s": t_load, "first_s": times[0], "epoch_s": times[1], "runs_per_call": n_runs}


def calibrate_a1(sec: Mapping[str, Any], probe_steps: int = 20, probe_lin: int = 4) -> dict[str, Any]:
    """A1: one teacher (of the first task), and at the smallest and largest width ``probe_steps``
    projected-GD steps and ``probe_lin`` worst-case-search steps (first call: compile; second: timed)."""
    import jax
    import jax.numpy as jnp

    from ntkrepro.arda2026 import model, scaling

    t = scaling.tasks(sec, "A1")[0]
    n, T, d = int(sec["n"]), int(sec["T"]), int(sec["d"])
    D, t_first = _timed(scaling.teacher_data, sec, t["seeds"][0], n, T, t["kind"])  # compiles
    _, t_teacher = _timed(scaling.teacher_data, sec, 10_000_019, n, T, t["kind"])  # a seed no task uses
    scaling._make_teacher.cache_clear()  # the run builds every teacher (counted)
    X, y = jnp.asarray(D["X_train"]), jnp.asarray(D["y_train"])
    lr = float(sec["step_size_coef"]) / math.sqrt(int(sec["steps"]))
    step_s, ascent_s, compile_s = {}, {}, {}
    for m in sorted({min(int(v) for v in sec["widths"]), max(int(v) for v in sec["widths"])}):
        p0 = model.init_params(jax.random.PRNGKey(0), m, d)
        tt, ta = [], []
        for _ in range(2):
            t0 = time.perf_counter()
            p, losses = model.train(p0, X, y, steps=probe_steps, lr=lr, rho=float(sec["rho"]))
            np.asarray(losses)
            tt.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            scaling.worst_case_linearisation_error(jax.random.PRNGKey(1), p0, X, float(sec["rho"]), probe_lin)
            ta.append(time.perf_counter() - t0)
        step_s[m], ascent_s[m] = tt[1] / probe_steps, ta[1] / probe_lin
        compile_s[m] = max(tt[0] - tt[1], 0.0) + max(ta[0] - ta[1], 0.0)
    return {"teacher_s": t_teacher, "teacher_first_s": t_first, "step_s": step_s, "ascent_step_s": ascent_s, "compile_s": compile_s,
            "probe_steps": probe_steps, "probe_lin": probe_lin}


# --------------------------------------------------------------------------------------------
# rates

def flops_per_pair(params: Mapping[str, Any]) -> dict[str, float]:
    """Analytic FLOPs per input pair (NNGP + NTK) of every (family, depth), ``fast.flop_count``."""
    from ntkrepro.hron2020.cifar10 import build_model
    from ntkrepro.kernels import fast

    size = int(params["image_size"])
    return {f"{f}-d{d}": float(fast.flop_count(fast.from_stax_builder(build_model, f, d, dict(params["arch"])),
                                               (size, size, 3))["total"])
            for f, d in _models(params)}


def measured_pairs(params: Mapping[str, Any], tier: Mapping[str, int], results: Mapping[str, Any]) -> dict[str, int]:
    """Input pairs of the kernels ``run_h4`` computed, per (family, depth): every model's train and
    validation kernels, the test kernels of the depths the final fits (real run and control) used
    (symmetric blocks count their upper triangle with the diagonal blocks whole, as computed)."""
    from ntkrepro.hron2020.cifar10 import KERNEL_PAIRS
    from ntkrepro.kernels.blocks import block_grid

    n = {"train": tier["n_train"], "val": tier["n_val"], "test": tier["n_test"]}
    b = int(tier["block_size"])

    def pairs(which: str) -> int:
        rows, cols = KERNEL_PAIRS[which]
        n1, n2 = n[rows], n[rows] if cols is None else n[cols]
        return sum(min(b, n1 - i * b) * min(b, n2 - j * b) for i, j in block_grid(n1, n2, b, cols is None))

    final = realised_final_depths(results)
    out = {}
    for f, d in _models(params):
        whiches = ["train", "val"] + (["valval", "test", "testval"] if d in final.get(f, []) else [])
        out[f"{f}-d{d}"] = sum(pairs(w) for w in whiches)
    return out


# --------------------------------------------------------------------------------------------
# outputs (item 3)

def _write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_text(json.dumps(obj, indent=1, default=str))
    os.replace(tmp, path)


def bundle(folder: Path, archive: Path) -> int:
    """``folder``'s files as one ``.tar.gz`` at ``archive`` (written beside it, then renamed); its size."""
    tmp = archive.with_name(f".{archive.name}.part")
    with tarfile.open(tmp, "w:gz") as tf:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                tf.add(f, arcname=str(f.relative_to(folder)))
    size = tmp.stat().st_size
    if size > MAX_FILE_BYTES:
        tmp.unlink()
        raise ValueError(f"{archive.name} would be {size} bytes > {MAX_FILE_BYTES}: it would not come back")
    os.replace(tmp, archive)
    return size


def check_outputs(out: Path) -> list[str]:
    """What would not come back from the device (empty when everything does): more than
    :data:`MAX_FILES` files, a file over :data:`MAX_FILE_BYTES`, a folder deeper than two below ``out``."""
    problems = []
    files = [p for p in Path(out).rglob("*") if p.is_file()]
    if len(files) > MAX_FILES:
        problems.append(f"{len(files)} files > {MAX_FILES}")
    for p in files:
        if p.stat().st_size > MAX_FILE_BYTES:
            problems.append(f"{p.name}: {p.stat().st_size} bytes > {MAX_FILE_BYTES}")
        if len(p.relative_to(out).parts) > 3:
            problems.append(f"{p.relative_to(out)} is more than two folders below the output folder")
    return problems


def unpack(out: Path) -> dict[str, Path]:
    """Every tier archive under ``out`` unpacked into ``out/<tier>/`` (the CPU side); ``{tier: folder}``."""
    got = {}
    for arc in sorted(Path(out).glob("*.tar.gz")):
        name = arc.name[: -len(".tar.gz")]
        dest = Path(out) / name
        dest.mkdir(exist_ok=True)
        with tarfile.open(arc, "r:gz") as tf:
            tf.extractall(dest, filter="data") if sys.version_info >= (3, 12) else tf.extractall(dest)  # noqa: S202
        got[name] = dest
    return got


# --------------------------------------------------------------------------------------------
# the tiers

def _run_h4_tier(name: str, tier: Mapping[str, Any], sections, out_stage: Path, data_root: Path, cache: Path,
                 backend: str, cal: Mapping[str, Any], scale: str, first: bool) -> dict[str, Any]:
    from ntkrepro.kernels.device_regression import TALLY
    from ntkrepro.run import execute

    params = h4_params(sections, tier, out_stage, data_root, cache, backend)
    res_path = out_stage / RESULTS["H4"]
    res_path.parent.mkdir(parents=True, exist_ok=True)
    TALLY.clear()
    t0 = time.perf_counter()
    results = execute(COMPUTE["H4"], params, res_path, scale=scale,
                      outputs={"predictions": out_stage / "hron2020" / "H4_cifar10_kernels_predictions.npz"})
    wall = time.perf_counter() - t0
    depths = realised_final_depths(results)
    replay = predict_h4(params, name, tier, cal, depths, first_tier=first)
    counted = count_h4(params, tier, depths)
    pairs = measured_pairs(params, tier, results)
    flops = flops_per_pair(params)
    total_pairs = sum(pairs.values())
    total_flops = sum(pairs[m] * flops[m] for m in pairs)
    return {"claim": "H4", "tier": name, "sizes": dict(tier), "wall_s": wall,
            "predicted_realised_s": replay, "final_depths": depths,
            "regressions_counted": {str(k): v for k, v in sorted(counted["by_size"].items())},
            "regressions_performed": {str(k): v for k, v in sorted(TALLY.items())},
            "regression_count_matches": dict(counted["by_size"]) == dict(TALLY),
            "pairs": pairs, "flops_per_pair": flops, "total_pairs": total_pairs, "total_flops": total_flops,
            "pairs_per_s": total_pairs / wall, "flops_per_s": total_flops / wall,
            "regression_backend": backend, "results": RESULTS["H4"]}


def _run_h5_tier(name: str, params: Mapping[str, Any], out_stage: Path, scale: str) -> dict[str, Any]:
    from ntkrepro.run import execute

    res_path = out_stage / RESULTS["H5"]
    res_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    execute(COMPUTE["H5"], dict(params), res_path, scale=scale)
    return {"claim": "H5", "tier": name, "wall_s": time.perf_counter() - t0, "epochs": int(params["epochs"]),
            "results": RESULTS["H5"]}


def _run_a1_tier(name: str, sec: Mapping[str, Any], out_stage: Path, archive: Path, scale: str) -> dict[str, Any]:
    """Every shard (one task each), the tier's archive rewritten after each; then the aggregate."""
    from ntkrepro.arda2026 import scaling
    from ntkrepro.run import execute

    shards = out_stage / "arda2026" / "shards"
    shards.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    files = []
    for k in range(scaling.n_shards(sec, "A1")):
        f = shards / f"A1_width_{k}.json"
        execute("ntkrepro.arda2026.scaling:run_a1_shard", {**sec, "shard": k}, f, scale=scale)
        files.append(str(f))
        bundle(out_stage, archive)  # a cut-off keeps the finished shards
    execute("ntkrepro.arda2026.scaling:aggregate_a1", {**sec, "shard_files": files}, out_stage / RESULTS["A1"],
            scale=scale)
    return {"claim": "A1", "tier": name, "wall_s": time.perf_counter() - t0, "n_shards": len(files),
            "results": RESULTS["A1"]}


def run(out: Path, budget_s: float, data_root: Path, plan: str = "gpu", scale: str | None = None,
        cache: Path | None = None, regression_backend: str = "jax") -> dict[str, Any]:
    """Calibrate, then run the plan's tiers in order, each written as it finishes (module docstring)."""
    t_start = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    own_cache = cache is None
    cache = Path(tempfile.mkdtemp(prefix="ntkrepro-gpu-")) if cache is None else Path(cache)
    scale = scale or ("gpu" if plan == "gpu" else "smoke")
    steps = PLANS[plan]
    h4_tiers, h5_tiers, a1_tiers = ((TIERS, H5_TIERS, A1_TIERS) if plan == "gpu"
                                    else (SMOKE_TIERS, SMOKE_H5_TIERS, SMOKE_A1_TIERS))
    planned = {t for _, t in steps}
    h4_tiers, h5_tiers, a1_tiers = ({k: v for k, v in d.items() if k in planned} for d in (h4_tiers, h5_tiers, a1_tiers))
    try:
        return _run(out, budget_s, data_root, steps, h4_tiers, h5_tiers, a1_tiers, scale, cache, regression_backend,
                    t_start)
    finally:
        if own_cache:
            shutil.rmtree(cache, ignore_errors=True)


def _importable(name: str) -> bool:
    import importlib

    try:
        importlib.import_module(name)
        return True
    except ImportError:
        return False


def _run(out, budget_s, data_root, steps, h4_tiers, h5_tiers, a1_tiers, scale, cache, backend, t_start):
    _enable_compilation_cache(cache / "jax")
    import jax

    from ntkrepro.hron2020.cifar10 import load_splits
    from ntkrepro.kernels.numerics import MATMUL_PRECISION, precision_record

    sections = config_sections()
    order = sorted(h4_tiers, key=lambda t: h4_tiers[t]["n_train"] + h4_tiers[t]["n_val"])
    blocks = {int(t["block_size"]) for t in h4_tiers.values()}
    if len(blocks) != 1:
        raise ValueError("every H4 tier must use the same block size (calibrated once)")
    if [t for c, t in steps if c == "H4"] != order:
        raise ValueError("the plan must run the H4 tiers smallest first")
    p_small = h4_params(sections, h4_tiers[order[0]], out, data_root, cache, backend)
    d_small, t_load = _timed(load_splits, p_small, None)
    cal = calibrate(p_small, d_small, blocks.pop(), h4_tiers, backend, cache)
    cal["load_data_s"] = t_load
    predicted: dict[str, dict[str, float]] = {}
    skipped_why: dict[str, str] = {}
    for i, t in enumerate(order):
        predicted[t] = predict_h4(h4_params(sections, h4_tiers[t], out, data_root, cache, backend), t, h4_tiers[t],
                                  cal, first_tier=i == 0)
    for t, tier in h5_tiers.items():
        if not (_importable("flax") and _importable("optax")):
            skipped_why[t] = "flax / optax not importable here"
            continue
        p5 = h5_params(sections, tier, data_root)
        cal[t] = calibrate_h5(p5)
        predicted[t] = predict_h5(p5, cal[t])
    for t, tier in a1_tiers.items():
        if not _importable("torch"):  # the authors' teacher inputs (ntkrepro.arda2026.teacher.authors_inputs)
            skipped_why[t] = "torch not importable here (the authors' teacher inputs need it)"
            continue
        sec = a1_params(sections, tier)
        cal[t] = calibrate_a1(sec)
        predicted[t] = predict_a1(sec, cal[t])
    t_cal = time.perf_counter() - t_start
    record: dict[str, Any] = {
        "what": "one-device call (ntkrepro.hron2020.gpu_run): H4 tiers, H5, A1", "scale": scale,
        "plan": [{"claim": c, "tier": t} for c, t in steps], "budget_s": budget_s, "margin": MARGIN,
        "h4_tiers": {t: dict(h4_tiers[t]) for t in order}, "h5_tiers": h5_tiers, "a1_tiers": a1_tiers,
        "calibration": cal, "calibration_wall_s": t_cal,
        "predicted_s": {t: p["total"] for t, p in predicted.items()}, "predicted_parts_s": predicted,
        "tiers": {t: {"status": "skipped", "why": why} for t, why in skipped_why.items()},
        "kernel_backend": "fast", "dtype": "float32 kernels, float64 regressions", "regression_backend": backend,
        "matmul_precision": MATMUL_PRECISION, "numerics": precision_record(), "jax_backend": jax.default_backend(),
        "h6": ("not in the plan: the GloVe 6B-50d table it embeds with (80 MB vectors + 3.7 MB vocabulary) is over "
               "the 64 MiB a call carries"),
    }
    top = out / "gpu_run.json"
    _write_json_atomic(top, record)
    log.info("calibration %.1f s; predicted %s", t_cal, {t: round(v["total"], 1) for t, v in predicted.items()})
    first_h4 = True
    for claim, name in steps:
        if name in skipped_why:
            continue
        left = budget_s - (time.perf_counter() - t_start)
        pred = predicted[name]["total"]
        if pred * MARGIN > left and not (claim == "H4" and first_h4):
            record["tiers"][name] = {"status": "skipped", "why": f"predicted {pred:.0f} s x {MARGIN} > {left:.0f} s left",
                                     "predicted_s": pred}
            _write_json_atomic(top, record)
            log.info("tier %s skipped: predicted %.1f s, %.1f s left", name, pred, left)
            continue
        stage = cache / "stage" / name
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        archive = out / f"{name}.tar.gz"
        log.info("tier %s (%s): predicted %.1f s, %.1f s left", name, claim, pred, left)
        if claim == "H4":
            rec = _run_h4_tier(name, h4_tiers[name], sections, stage, data_root, cache, backend, cal, scale, first_h4)
            rec["fits_budget"] = pred * MARGIN <= left
            first_h4 = False
        elif claim == "H5":
            rec = _run_h5_tier(name, h5_params(sections, h5_tiers[name], data_root), stage, scale)
        else:
            rec = _run_a1_tier(name, a1_params(sections, a1_tiers[name]), stage, archive, scale)
        rec.update(status="done", predicted_s=pred, measured_over_predicted=rec["wall_s"] / pred,
                   left_before_s=left, device=precision_record()["devices"], jax=jax.__version__)
        if claim == "H4":
            rec["measured_over_predicted_realised"] = rec["wall_s"] / rec["predicted_realised_s"]["total"]
        _write_json_atomic(stage / f"{name}_throughput.json", rec)
        rec["archive_bytes"] = bundle(stage, archive)
        record["tiers"][name] = rec
        record["total_wall_s"] = time.perf_counter() - t_start
        _write_json_atomic(top, record)
        log.info("tier %s done: %.1f s (predicted %.1f s)", name, rec["wall_s"], pred)
        shutil.rmtree(stage, ignore_errors=True)
    record["total_wall_s"] = time.perf_counter() - t_start
    record["outputs_fit"] = not check_outputs(out)
    _write_json_atomic(top, record)
    return record


def _enable_compilation_cache(folder: Path) -> None:
    import jax

    folder.mkdir(parents=True, exist_ok=True)
    for key, value in (("jax_compilation_cache_dir", str(folder)), ("jax_persistent_cache_min_compile_time_secs", 0.0),
                       ("jax_persistent_cache_min_entry_size_bytes", -1)):
        try:
            jax.config.update(key, value)
        except (AttributeError, KeyError, ValueError) as e:  # an older/newer jax without the option
            log.warning("jax option %s not set: %s", key, e)


def write_params_snapshot() -> Path:
    import yaml

    cfg = yaml.safe_load((REPO / "config" / "default.yaml").read_text())
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    snap = {"H4": cfg["hron2020"]["H4"], "H5": cfg["hron2020"]["H5"], "data": cfg["data"],
            "A1": paper["arda2026"]["A1"], "teacher": paper["arda2026"]["teacher"]}
    PARAMS_SNAPSHOT.write_text(json.dumps(snap, indent=1, sort_keys=True) + "\n")
    return PARAMS_SNAPSHOT


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ntkrepro.hron2020.gpu_run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="results-gpu", help="output folder (one archive per finished tier + gpu_run.json)")
    ap.add_argument("--budget-s", type=float, default=480.0, help="wall seconds for the whole call (8 min)")
    ap.add_argument("--data-root", default=None, help="folder of the CIFAR-10 archive (default: ../shared/data, "
                    "else shared/data in the repository)")
    ap.add_argument("--cache", default=None, help="kernel-block and compilation caches (default: a temporary folder)")
    ap.add_argument("--tiers", choices=tuple(PLANS), default="gpu", help="the plan (PLANS); smoke, smoke-h4: CPU-sized "
                    "tiers (tests)")
    ap.add_argument("--regression-backend", choices=("jax", "scipy"), default="jax",
                    help="H4's kernel regressions: the default JAX device (jax) or the host (scipy)")
    ap.add_argument("--write-params-snapshot", action="store_true", help=f"rewrite {PARAMS_SNAPSHOT.name} and exit")
    args = ap.parse_args(argv)
    if not (np.isfinite(args.budget_s) and args.budget_s > 0):
        ap.error(f"--budget-s must be a positive number of seconds, got {args.budget_s!r}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        ap.error(f"--out {out} is a file, not a folder: give a results folder (e.g. results-gpu)")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".gpu_run_write_test"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        ap.error(f"--out {out}: cannot write there ({err.strerror or err})")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if args.write_params_snapshot:
        print(write_params_snapshot())
        return 0
    run(Path(args.out), args.budget_s, Path(args.data_root) if args.data_root else default_data_root(), args.tiers,
        cache=Path(args.cache) if args.cache else None, regression_backend=args.regression_backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
