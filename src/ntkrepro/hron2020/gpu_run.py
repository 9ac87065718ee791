r"""The prepared one-GPU call: H4 in size tiers, H5's and A1's decisive cells (config/decisive.yaml), H6 from
inputs prepared on the CPU -- each tier written as it finishes (issues 24, 30).

Usage (from the repository root; the data in ``../shared/data`` or, on the device, the folder
prepared by ``python -m ntkrepro.hron2020.device_inputs``; needs only jax, numpy and scipy besides
this repository -- flax and optax for H5, torch for A1's teacher inputs; no neural-tangents, pyyaml,
tqdm, pandas or snakemake)::

    PYTHONPATH=src python -m ntkrepro.hron2020.gpu_run --out results-gpu --budget-s 480 --data-root device-inputs

(``workflow/scripts/gpu_h4.sh`` wraps it as one device call: caches in a temporary folder.)

1. **Plan** (:data:`PLANS`, declared before any run), in this order: H4 at 1,000 images (``t1000``),
   H5's decisive cells (``h5_decisive``: config/decisive.yaml's H5, 250 epochs, one cell = one seed at one
   LayerNorm placement, every mechanism, the permuted-label control on the first seed), A1's decisive
   cells (``a1_decisive``: config/decisive.yaml's A1 at the paper's settings, d=8, T=16, n=5000, 4000
   steps, one cell = one seed at one width with its ``width_fixed`` column) -- the cells not yet in the
   repository's ``archive/decisive`` (:func:`pending_cells`; the plan read from
   :data:`DECISIVE_SNAPSHOT`), each sealed as ``ntkrepro.decisive.fill`` seals it -- then H4 at 2,000
   and 5,000 images. The H4 tiers are config/default.yaml's
   H4 (:data:`PARAMS_SNAPSHOT`) at the tier's sizes: the official training set's class-balanced
   train + validation split, 4:1, and 2,000 test images, 8x8, every family and depth, kernel blocks
   of 200 x 200, regressions on the default JAX device (``regression_backend: jax``,
   :mod:`ntkrepro.kernels.device_regression`). Last, H6 (config/default.yaml's H6 at 800 / 200 / 800
   reviews of length 128, :data:`H6_TIERS`) from inputs prepared on the CPU
   (:mod:`ntkrepro.hron2020.device_inputs`: the GloVe 6B-50d table, 80 MB + 3.7 MB of vocabulary, does
   not fit the 64 MiB a device call carries; the vectors of the IMDb subset's words do, 6.3 MB); skipped,
   recorded, where ``--data-root`` holds no prepared GloVe subset.
2. **Calibration** (:func:`calibrate`): per H4 model one symmetric and one rectangular block (first
   call: compile, then the median of 3) and the cost of a fresh kernel function's first symmetric and
   rectangular call (``run_h4`` builds one per use; median over 3 fresh functions); the block cache's
   fixed cost per call, read and write per block; the data loading; and, per H4 tier, the regression
   backend's own calls at the tier's exact shapes (the grid and the validation refit at ``n_train``;
   on the full kernel a single fit, a bootstrap chunk and a learning-curve batch; a bootstrap chunk on
   a half-size kernel), each compiled, then timed (median of 3): a call's fixed cost, the time per
   draw at three sizes, and one new shape's compile time (the median of every probe's first call
   minus its timed call); for H5 one epoch of a fresh trainer per batch of runs a cell trains (compile,
   then timed); for A1 one teacher and, at the smallest and largest width, a few projected-GD steps
   and worst-case-search steps (compile, then timed).
3. **Prediction** (:func:`count_h4`, :func:`predict_h4`, :func:`predict_h5_cells`, :func:`predict_a1_cells`): every
   computation the tier performs is counted -- for H4 the kernel blocks (train and validation
   kernels of every model, the test kernels of the selected depths: an upper bound before the run,
   the realised depths after it), each fresh kernel function's first calls, every
   ``compute_kernel_blocks`` call and block read, and every jitted regression call by its compiled
   shape (:func:`call_key`: the grid, the validation refit, the final fits, the two-way bootstrap in
   chunks, the learning-curve batches, the ordering control's halves), all twice where the
   permuted-label control reruns the pipeline -- and multiplied by its calibrated time; a shape
   compiles once per process (the calibration's and the earlier tiers' shapes are not counted again).
   The regression counts are checked after the run against the backends' tally
   (:data:`ntkrepro.kernels.device_regression.TALLY`). Measured on the CPU at the two smoke tiers
   (``workflow/scripts/profile_h4_predictor.py`` times each part against its prediction).
4. **Run**: each tier in plan order if its prediction fits the budget left (else recorded as
   ``skipped`` with its prediction); the first H4 tier always runs; a decisive tier starts when its first
   cell fits and runs each cell only if that cell's prediction fits. Each finished tier is written at
   once as one archive ``<out>/<tier>.tar.gz`` (its results in the Snakemake layout -- a decisive tier's:
   ``archive/decisive/<ID>/cells/<cell>.json``, rewritten after every cell -- and its own
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

Install a decisive tier's cells (never overwriting an archived one), then verify (docs/gpu.md)::

    tar -xzf results-gpu/a1_decisive.tar.gz --skip-old-files archive
    PYTHONPATH=src .venv/bin/python -m ntkrepro.decisive verify

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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger("ntkrepro.hron2020.gpu_run")

REPO = Path(__file__).resolve().parents[3]
#: config/default.yaml's ``hron2020: H4:`` and ``H5:`` sections and ``data:`` section, config/paper.yaml's
#: ``arda2026: A1:`` and ``teacher:``, as JSON (the GPU machine has no pyyaml). Regenerate:
#: ``python -m ntkrepro.hron2020.gpu_run --write-params-snapshot``.
PARAMS_SNAPSHOT = REPO / "config" / "gpu_h4_default.json"
COMPUTE = {"H4": "ntkrepro.hron2020.cifar10:run_h4", "H5": "ntkrepro.hron2020.finite_nets:run_h5_cell",
           "A1": "ntkrepro.arda2026.scaling:run_a1_cell", "H6": "ntkrepro.hron2020.imdb:run_h6"}
RESULTS = {"H4": "hron2020/H4_cifar10_kernels.json", "H5": "hron2020/H5_finite_attention.json",
           "A1": "arda2026/A1_width_scaling.json", "H6": "hron2020/H6_imdb.json"}

#: Pre-declared H4 tiers: (train, validation, test) images and the kernel block size.
TIERS: dict[str, dict[str, Any]] = {
    "t1000": {"n_train": 800, "n_val": 200, "n_test": 2000, "block_size": 200},
    "t2000": {"n_train": 1600, "n_val": 400, "n_test": 2000, "block_size": 200},
    "t5000": {"n_train": 4000, "n_val": 1000, "n_test": 2000, "block_size": 200},
}
#: config/decisive.yaml's ``decisive`` section as JSON (the GPU machine has no pyyaml), written beside
#: :data:`PARAMS_SNAPSHOT` by ``--write-params-snapshot``.
DECISIVE_SNAPSHOT = REPO / "config" / "gpu_decisive_plan.json"
#: H5 and A1 on the device: the DECISIVE CELLS of config/decisive.yaml's H5 (250 epochs, seed x LayerNorm)
#: and A1 (the paper's settings, seed x width) entries, unchanged -- each cell sealed as the archive wants it
#: (``ntkrepro.decisive.fill``'s ``execute`` of the entry's ``cell_function`` on ``decisive.cell_params``), the
#: cells already in the repository's archive skipped. ``section``: overrides of the entry's section (smoke only).
H5_TIERS: dict[str, dict[str, Any]] = {"h5_decisive": {"claim": "H5"}}
A1_TIERS: dict[str, dict[str, Any]] = {"a1_decisive": {"claim": "A1"}}
#: H6 on the device: config/default.yaml's H6 (length 128, every family and depth) at 800 / 200 / 800
#: reviews (issue 11 asks >= 800 test reviews at length >= 128; default runs 160 / 40 / 240), from the
#: prepared inputs (:mod:`ntkrepro.hron2020.device_inputs`: GloVe cut to the IMDb subset's words).
H6_TIERS: dict[str, dict[str, Any]] = {"h6_t800": {"n_train": 800, "n_valid": 200, "n_test": 800}}

#: CPU-sized tiers for the tests (not results), with the proportions of the GPU tiers: every family,
#: the default grid, 200 bootstrap draws and 16 learning-curve refits per final model; depth 1, 4x4.
SMOKE_TIERS: dict[str, dict[str, Any]] = {
    "cpu100": {"n_train": 80, "n_val": 20, "n_test": 60, "block_size": 20, "depths": [1], "image_size": 4},
    "cpu200": {"n_train": 160, "n_val": 40, "n_test": 60, "block_size": 20, "depths": [1], "image_size": 4},
}
#: Tiny decisive specs (config/decisive.yaml's entries with a CPU-sized section): 2 cells each.
SMOKE_H5_TIERS: dict[str, dict[str, Any]] = {"h5_smoke": {"claim": "H5", "section": {
    "image_size": 4, "n_train": 100, "n_val": 50, "d_model": 8, "n_heads": 2, "n_pos_emb": 4, "epochs": 3,
    "batch_size": 50, "seeds": [0, 1], "curve_val": 20, "lns": [0]}}}
SMOKE_H6_TIERS: dict[str, dict[str, Any]] = {"h6_smoke": {
    "seq_len": 16, "n_train": 40, "n_valid": 20, "n_test": 40, "fcn_depths": [1], "cnn_depths": [1],
    "attention_layers": [1], "diag_reg_grid": [1.0e-4, 1.0e-2, 1.0], "block_size": 20,
    "pad_check": {"n_reviews": 2, "extra": 8}, "n_boot": 200}}
SMOKE_A1_TIERS: dict[str, dict[str, Any]] = {"a1_smoke": {"claim": "A1", "section": {
    "n": 40, "widths": [4, 8], "seeds": [1], "steps": 20, "lin_search_steps": 3, "n_boot": 200,
    "teacher": {"n_mc": 64}}}}
#: Plan order: (claim, tier).
PLANS: dict[str, list[tuple[str, str]]] = {
    "gpu": [("H4", "t1000"), ("H5", "h5_decisive"), ("A1", "a1_decisive"), ("H4", "t2000"), ("H4", "t5000"),
            ("H6", "h6_t800")],
    "smoke": [("H4", "cpu100"), ("H5", "h5_smoke"), ("A1", "a1_smoke"), ("H4", "cpu200"), ("H6", "h6_smoke")],
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
    """``{"H4", "H5", "H6", "data"}`` of config/default.yaml and ``{"A1", "teacher"}`` of
    config/paper.yaml (pyyaml if installed, else the snapshot)."""
    try:
        import yaml
    except ImportError:
        return json.loads(PARAMS_SNAPSHOT.read_text())
    cfg = yaml.safe_load((REPO / "config" / "default.yaml").read_text())
    paper = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    return {"H4": cfg["hron2020"]["H4"], "H5": cfg["hron2020"]["H5"], "H6": cfg["hron2020"]["H6"],
            "data": cfg["data"], "A1": paper["arda2026"]["A1"], "teacher": paper["arda2026"]["teacher"]}


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


def h6_params(sections: Mapping[str, Any], tier: Mapping[str, Any], data_root: Path, cache: Path) -> dict[str, Any]:
    """H6's params as the Snakemake rule builds them (``H6_PARAMS``), with ``tier``'s overrides, the
    IMDb archive in ``data_root`` and the GloVe vectors prepared there
    (:func:`ntkrepro.hron2020.device_inputs.glove_config`; ``None`` when not prepared)."""
    from ntkrepro.hron2020.device_inputs import glove_config

    glove = glove_config(data_root)
    p = {k: v for k, v in dict(sections["H6"]).items() if k != "benchmark"}
    p.update(tier, imdb={**dict(sections["data"]["imdb"]),
                         "archive": str(Path(data_root) / sections["data"]["imdb"]["archive"])},
             glove=glove, cache_dir=str(cache / "kernels" / "hron2020_H6"))
    return p


def decisive_plan() -> dict[str, Any]:
    """config/decisive.yaml's ``decisive`` section (pyyaml if installed, else :data:`DECISIVE_SNAPSHOT`)."""
    try:
        import yaml  # noqa: F401
    except ImportError:
        return json.loads(DECISIVE_SNAPSHOT.read_text())
    from ntkrepro import decisive

    return decisive.load_plan(REPO / "config" / "decisive.yaml")


def decisive_spec(plan: Mapping[str, Any], tier: Mapping[str, Any]) -> dict[str, Any]:
    """The tier's claim entry of the decisive plan; ``tier["section"]`` overrides its section (the smoke
    tiers' CPU-sized cells; nested ``teacher`` / ``data`` merged). The GPU tiers override nothing."""
    spec = dict(plan["claims"][tier["claim"]])
    if spec.get("status") != "run":
        raise ValueError(f"{tier['claim']}: status {spec.get('status')!r} in the decisive plan, not 'run'")
    sec = dict(spec["section"])
    for k, v in dict(tier.get("section") or {}).items():
        sec[k] = {**dict(sec.get(k) or {}), **v} if isinstance(v, Mapping) else v
    spec["section"] = sec
    return spec


def device_section(spec: Mapping[str, Any], data_root: Path) -> dict[str, Any]:
    """The section a cell runs with here: the plan's, the data's ``root`` set to ``data_root`` (where this
    machine keeps the data; ``decisive.judge`` does not compare it, the archive is pinned by its sha256)."""
    sec = dict(spec["section"])
    if isinstance(sec.get("data"), Mapping):
        sec["data"] = {**dict(sec["data"]), "root": str(data_root)}
    return sec


def pending_cells(claim: str, spec: Mapping[str, Any], archive: Path | None) -> tuple[list[dict[str, Any]], list[str]]:
    """``(to run, already archived)``: the plan's cells (``decisive.cells``, in its order) without those
    whose file exists under ``archive`` (the repository's ``archive/decisive``; None: nothing archived)."""
    from ntkrepro import decisive

    todo, have = [], []
    for c in decisive.cells(spec):
        if archive is not None and decisive.cell_path(archive, claim, c["name"]).exists():
            have.append(c["name"])
        else:
            todo.append(c)
    return todo, have


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


def count_h4(params: Mapping[str, Any], tier: Mapping[str, Any], final_depths: Mapping[str, Sequence[int]] | None = None,
             chunk: Callable[[int, int, int], int] | None = None) -> dict[str, Any]:
    """Everything :func:`ntkrepro.hron2020.cifar10.run_h4` computes at ``tier`` (both runs: the real
    labels and the permuted-label control, on the same cached kernels).

    ``final_depths``: per family the distinct depths whose test kernels the final fits used (over both
    runs); ``None``: every depth (the upper bound, known before the run). Returns
    ``{"blocks": {model: {"sym", "rect"}}, "loads": {model: blocks read from the cache},
    "regressions": {"grid"|"val_refit"|"final"|"boot"|"curve": {n: fits}}, "by_size": {n: fits},
    "final_models": ..., "calls": {call_key: jitted calls}, "kernel_calls": ..., "block_reads": ...}``.
    ``chunk(m, n_k, n_s)``: draws per batched call (``DeviceRegression.chunk``); ``None``: one call per group."""
    from ntkrepro.hron2020.cifar10 import KERNEL_PAIRS, KERNELS, h4_resample_plans

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
    half, hc = n_fit // 2, []
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
    # the jitted calls of the batched backend, by compiled shape (:func:`call_key`): what the
    # predictor times (per call + per draw) and what compiles (a shape not compiled before)
    calls: Counter[str] = Counter()
    n_grid_lams = len(params["diag_reg_grid"])
    for b in _chunks(n_grid_lams, chunk(n_t, n_t, n_v) if chunk else n_grid_lams):
        calls[call_key("full", n_t, n_v, b, n_t)] += n_sel
    calls[call_key("rows", n_t, n_v, 1, n_t)] += n_sel
    rs = dict(params.get("train_resample") or {})
    n_draws = int(rs.get("curve_draws", 5))

    def fitted(n_k: int, boot: int, curve_plan, times: int) -> None:
        """One final model on a kernel of ``n_k`` rows: its fit, bootstrap and learning curve."""
        calls[call_key("rows", n_k, n_s, 1, n_k)] += times
        groups = Counter({n_k: 0})
        for m, _ in curve_plan:
            groups[int(m)] += 1
        for m, draws in [(n_k, boot), *sorted(groups.items())]:
            for b in _chunks(draws, chunk(m, n_k, n_s) if chunk else draws):
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


def _chunks(n: int, c: int) -> list[int]:
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
      + batch x the per-draw time at its size (:func:`_power` between the probes);
    * ``regression_compile``: every call shape (:func:`call_key`) not in ``compiled`` (what the
      calibration and the earlier tiers of this process compiled) times the calibrated compile;
    * ``fixed``: the data, the test-accuracy intervals."""
    if int(tier["block_size"]) != int(cal["block"]):
        raise ValueError("a tier's block size must be the calibrated one")
    r = cal["regression"][tier_name]
    cnt = count_h4(params, tier, final_depths, chunker(cal))
    per_model = {f"{m['family']}-d{m['depth']}": m for m in cal["models"]}
    io = cal["io"]
    kernels = sum(b["sym"] * (per_model[k]["sym_s"] + io["write_s"]) + b["rect"] * (per_model[k]["rect_s"] + io["write_s"])
                  for k, b in cnt["blocks"].items())
    # a fresh kernel function per selection model (first run) and per final depth whose test kernels
    # are computed (first run, or the control's other depths)
    depths = [int(d) for d in params["depths"]]
    uses = {f"{f}-d{d}": int(d in depths) + int(cnt["blocks"][f"{f}-d{d}"]["sym"] > (
        _kernel_blocks("train", tier)["sym"] if d in depths else 0)) for f, d in _models(params)}
    kernel_compile = sum(uses[k] * per_model[k]["use_s"] for k in uses)
    cache = cnt["kernel_calls"] * io["call_s"] + cnt["block_reads"] * io["read_s"]
    per_draw = {int(k): v for k, v in r["per_draw_s"].items()}

    def call_s(key: str) -> float:
        c = parse_call_key(key)
        if c["fn"] == "full":
            return float(r["grid_s"])
        if c["n_k"] == int(tier["n_train"]) and c["n_s"] == int(tier["n_val"]):
            return float(r["refit_at_train_s"])
        return float(r["per_call_s"]) + c["batch"] * _power(c["m"], per_draw)

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
            parts[part] = sum(c * _power(n, per_draw) for n, c in cnt["regressions"].get(part, {}).items())
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
    from ntkrepro.kernels.device_regression import DeviceRegression

    reg = DeviceRegression(batch_bytes=int(cal["batch_bytes"]))
    return lambda m, n_k, n_s: reg.chunk(m, n_k, n_s, 10)


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


def _interp_m(m: float, pts: Mapping[int, float]) -> float:
    xs = sorted(pts)
    if len(xs) == 1:
        return pts[xs[0]]
    lo, hi = xs[0], xs[-1]
    return pts[lo] + (pts[hi] - pts[lo]) * (m - lo) / (hi - lo)


def predict_a1_cells(section: Mapping[str, Any], cells: Sequence[Mapping[str, Any]], cal: Mapping[str, Any],
                     compiled: set[int] | None = None) -> dict[str, dict[str, float]]:
    """Predicted seconds of each A1 cell (``run_a1_cell``, in the order given): the teacher of its seed
    (built once per seed and process: cached), ``steps`` projected-GD steps and ``lin_search_steps``
    worst-case steps at its width and the same at the smallest width (its ``width_fixed`` control column),
    and one compilation per width and process (``compiled``: widths compiled before). Step times
    interpolated linearly in the width between the calibration's probes."""
    steps, lin = int(section["steps"]), int(section["lin_search_steps"])
    m0 = min(int(m) for m in section["widths"])
    ts = {int(k): v for k, v in cal["step_s"].items()}
    ta = {int(k): v for k, v in cal["ascent_step_s"].items()}
    tc = {int(k): v for k, v in cal["compile_s"].items()}
    seen, done = set(), set(compiled or ())
    out = {}
    for c in cells:
        m, seed = int(c["width"]), int(c["seed"])
        parts = {"teacher": 0.0 if seed in seen else cal["teacher_s"],
                 "train": steps * (_interp_m(m, ts) + _interp_m(m0, ts)),
                 "ascent": lin * (_interp_m(m, ta) + _interp_m(m0, ta)),
                 "compile": sum(_interp_m(w, tc) for w in {m, m0} - done)}
        parts["total"] = sum(parts.values())
        seen.add(seed)
        done |= {m, m0}
        out[c["name"]] = parts
    return out


def tier_prediction(cells: Mapping[str, Mapping[str, float]], archived: Sequence[str]) -> dict[str, Any]:
    """A decisive tier's prediction: the sum over the cells it will run, each cell's, the first's (the
    tier starts when its first cell fits the time left; each cell is checked again before it runs)."""
    per = {k: v["total"] for k, v in cells.items()}
    return {"total": sum(per.values()), "cells": per, "first_cell": next(iter(per.values()), 0.0),
            "n_cells": len(per), "archived_before": list(archived),
            "parts": {k: sum(v[k] for v in cells.values()) for k in next(iter(cells.values()), {}) if k != "total"}}


def choose_tier(predicted: Mapping[str, float], seconds_left: float, order: Sequence[str]) -> tuple[str, bool]:
    """``(tier, fits)``: the largest tier (``order``: smallest first) predicted to fit in
    ``seconds_left``; the smallest with ``fits = False`` when none does."""
    fitting = [t for t in order if predicted[t] <= seconds_left]
    return (fitting[-1], True) if fitting else (order[0], False)


# --------------------------------------------------------------------------------------------
# calibration

#: The clock of the calibration and of the measured tier times: ``wall`` (the device, the default) or
#: ``cpu`` (this process's CPU time: on a shared, loaded CPU what the neighbours take does not count;
#: the CI tests run single-threaded and use it). The budget is always wall time.
CLOCK = {"name": "wall"}


def _now() -> float:
    return time.process_time() if CLOCK["name"] == "cpu" else time.perf_counter()


def _timed(fn, *args, **kwargs) -> tuple[Any, float]:
    t0 = _now()
    out = fn(*args, **kwargs)
    return out, _now() - t0


def _psd(n: int, seed: int = 0) -> np.ndarray:
    f = np.random.default_rng(seed).standard_normal((n, 64))
    return f @ f.T / 64 + 0.1 * np.eye(n)


def _median_timed(fn, *args, **kwargs) -> float:
    """The median of 3 timed calls (a loaded machine's stray delays do not move it)."""
    return float(np.median([_timed(fn, *args, **kwargs)[1] for _ in range(3)]))


def calibrate_regression(params: Mapping[str, Any], tier: Mapping[str, Any], backend: str) -> dict[str, Any]:
    """The regression backend's own calls at ``tier``'s shapes, as ``run_h4`` makes them (synthetic
    PSD kernels; the times do not depend on the values), each first called once (compiles, jax) and
    then timed (median of 3): the grid (``select_diag_reg``) at ``n_train`` and one refit there
    (validation kernel); on the full kernel of ``n_train + n_val`` rows against ``n_test`` points
    (jax) a single fit, a bootstrap chunk and a learning-curve batch at the curve's smallest size,
    and a bootstrap chunk on a kernel of half the rows (the ordering control's halves). From these:
    ``per_call_s`` (a call's fixed cost) and ``per_draw_s`` ``{m: s}`` at the smallest curve size,
    at half and at ``n_fit``; ``compile_s``: the median of the five probes' first call - timed
    call (one new shape; :func:`calibrate` pools the probes of every tier); ``compiled``: the shapes compiled here (:func:`call_key`). Host path
    (scipy): the time per draw of up to :data:`PROBE_DRAWS` refits at the same two sizes."""
    from ntkrepro.hron2020.cifar10 import N_CLASSES, h4_resample_plans
    from ntkrepro.hron2020.regime import boot_accuracies
    from ntkrepro.kernels.device_regression import TALLY, regression_backend
    from ntkrepro.kernels.inference import predicted_classes

    n_t, n_v, n_s = int(tier["n_train"]), int(tier["n_val"]), int(tier["n_test"])
    n_fit = n_t + n_v
    reg = regression_backend(backend)
    saved = Counter(TALLY)
    rng = np.random.default_rng(1)
    y = np.eye(N_CLASSES)[rng.integers(0, N_CLASSES, n_fit + n_s)]
    k = _psd(n_fit + n_s)
    grid = [float(v) for v in params["diag_reg_grid"]]
    rs = dict(params.get("train_resample") or {})
    n_boot, n_curve = int(rs.get("n_boot", 200)), int(rs.get("curve_draws", 5))
    _, curve = h4_resample_plans(params, n_fit, n_s)
    m_small = min([int(m) for m, _ in curve] or [n_fit])
    out: dict[str, Any] = {"backend": backend}
    first_minus_timed = []

    def probe(fn, *args) -> float:
        first = _timed(fn, *args)[1]
        timed = _median_timed(fn, *args)
        first_minus_timed.append(max(first - timed, 0.0))
        return timed

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
        out["compiled"] = sorted({call_key("full", n_t, n_v, b, n_t) for b in _chunks(len(grid), reg.chunk(
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

            per_draw[m] = _timed(boot_accuracies, fit, kk[:m, :m], ks[:, :m], yy[:m], plan)[1] / draws
        out.update(per_call_s=0.0, per_draw_s=per_draw, compile_s=0.0, compiled=[])
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
        t0 = _now()
        k = kfn(*args, ("nngp", "ntk"))
        np.asarray(k.nngp), np.asarray(k.ntk)  # to the host, as compute_kernel_blocks does
        return _now() - t0

    rows, kfns = [], []
    for fam, depth in _models(params):
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
    for rep in range(3):
        shutil.rmtree(folder, ignore_errors=True)
        writes.append(_timed(compute_kernel_blocks, kfn, xb, cache_dir=folder / "big", **kw)[1])
        compute_kernel_blocks(kfn, xb[:block], cache_dir=folder / "one", **kw)
    t_big = _median_timed(compute_kernel_blocks, kfn, xb, cache_dir=folder / "big", **kw)
    t_one = _median_timed(compute_kernel_blocks, kfn, xb[:block], cache_dir=folder / "one", **kw)
    shutil.rmtree(folder, ignore_errors=True)
    read = max(t_big - t_one, 0.0) / max(n_blocks - 1, 1)
    call = max(t_one - read, 0.0)
    write = max(float(np.median(writes)) - t_big - nb * m0["sym_s"] - (n_blocks - nb) * m0["rect_s"], 0.0) / n_blocks
    io = {"call_s": call, "read_s": read, "write_s": write, "probe_blocks": n_blocks}
    # the test-accuracy interval of every final model (bootstrap over test points, n_boot draws)
    n_test = max(int(t["n_test"]) for t in h4_tiers.values())
    _, ci = _timed(bootstrap_ci, np.random.default_rng(0).integers(0, 2, n_test).astype(float), np.mean,
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
    from ntkrepro.hron2020.cifar10 import load_splits
    from ntkrepro.hron2020.finite_nets import LAYER_NORMS, MECHANISMS, make_model, make_trainer

    seeds = [int(s) for s in section["seeds"]]
    d, t_load = _timed(load_splits, {**section, "seed": seeds[0]}, None, need_test=False)
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
            t0 = _now()
            out = train(init, labels, MECHANISMS.index(section["mechanisms"][0]),
                        LAYER_NORMS.index(section["layer_norms"][0]))
            np.asarray(out[0])
            times.append(_now() - t0)
        first[str(b)], epoch[str(b)], compile_s[str(b)] = times[0], times[1], max(times[0] - times[1], 0.0)
    return {"load_s": t_load, "first_s": first, "epoch_s": epoch, "compile_s": compile_s}


class _NoContext:
    """What ``imdb._prepare`` asks of a run context, for the calibration (nothing recorded)."""

    def use_data(self, *_a, **_k) -> None:
        return None


def _h6_fits(params: Mapping[str, Any]) -> dict[str, Any]:
    """H6's host regressions per (model, kernel) and run: the grid, the refit, the training-accuracy
    fit, the two-way bootstrap and the learning curve (``imdb._resampled``), and the ordering control's
    halves (real run, :data:`imdb.NULL_PAIR_FAMILIES`): ``{"grid": calls, "fits": {n: fits}, "pair": {n: fits}}``."""
    from ntkrepro.hron2020.imdb import h6_resample_plans
    from ntkrepro.hron2020.regime import learning_curve_plan

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


def calibrate_h6(params: Mapping[str, Any], io: Mapping[str, float] | None = None) -> dict[str, Any]:
    """H6: the data (IMDb read, tokenized, embedded with the prepared GloVe vectors), per model of
    ``model_grid`` one symmetric and one rectangular kernel block of the tier's padded length (first
    call: compile; then the median of 3), and the host regression (scipy) at ``n_train`` and at an
    eighth of it against ``n_test`` points, and the grid (median of 3). ``io``: H4's block-cache costs."""
    from ntkrepro.hron2020 import imdb
    from ntkrepro.kernels.inference import kernel_regression, select_diag_reg

    data, t_prep = _timed(imdb._prepare, params, _NoContext())
    x = data["x"]["train"]
    b = int(params["block_size"])
    c = float(params["mask_constant"])
    a, bb = x[:b], x[b:2 * b] if x.shape[0] >= 2 * b else x[:b]
    models = []
    for fam, depth in imdb.model_grid(params):
        jk = imdb.model_kernel_fn(fam, depth, params)

        def block(x1, x2):
            t0 = _now()
            k = jk(x1, x2, ("nngp", "ntk"), mask_constant=c)
            np.asarray(k.nngp if hasattr(k, "nngp") else k["nngp"])
            return _now() - t0

        rec = {"family": fam, "depth": depth}
        for kind, args in (("sym", (a, None)), ("rect", (a, bb))):
            rec[f"{kind}_first_s"] = block(*args)
            rec[f"{kind}_s"] = float(np.median([block(*args) for _ in range(3)]))
        models.append(rec)
    n_t, n_s = int(params["n_train"]), int(params["n_test"])
    k = _psd(n_t + n_s)
    y = np.where(np.random.default_rng(2).random((n_t + n_s, 1)) < 0.5, -0.5, 0.5)
    fit_s = {}
    for m in sorted({max(4, n_t // 8), n_t}):
        fit_s[m] = _median_timed(kernel_regression, k[:m, :m], k[n_t:, :m], y[:m], 1e-3)
    grid = [float(v) for v in params["diag_reg_grid"]]
    grid_s = _median_timed(select_diag_reg, k[:n_t, :n_t], k[n_t:, :n_t], y[:n_t], y[n_t:], grid)
    return {"prepare_s": t_prep, "models": models, "fit_s": fit_s, "grid_s": grid_s,
            "io": dict(io or {"call_s": 0.0, "read_s": 0.0, "write_s": 0.0})}


def predict_h6(params: Mapping[str, Any], cal: Mapping[str, Any]) -> dict[str, float]:
    """Predicted seconds of ``run_h6`` (a coarser model than H4's): the data; per model its blocks
    (train x train, (valid + test) x train), one compilation of each block shape and the padding
    check (one more compilation, taken as the symmetric first call); the block cache (both runs); the
    host regressions of both runs (:func:`_h6_fits`; per fit the probe at the nearer size, power law
    between) and the grid."""
    from ntkrepro.hron2020.imdb import NULL_PAIR_FAMILIES, model_grid

    n_t, n_e = int(params["n_train"]), int(params["n_valid"]) + int(params["n_test"])
    b = int(params["block_size"])
    sym, rect = _blocks(n_t, None, b), _blocks(n_e, n_t, b)
    n_sym, n_rect = sym["sym"], sym["rect"] + rect["rect"] + rect["sym"]
    io = cal["io"]
    kernels = compile_s = 0.0
    for m in cal["models"]:
        kernels += n_sym * (m["sym_s"] + io["write_s"]) + n_rect * (m["rect_s"] + io["write_s"])
        compile_s += 2 * m["sym_first_s"] + m["rect_first_s"] - m["sym_s"] - m["rect_s"]
    n_models = len(model_grid(params))
    cache = 2 * n_models * (2 * io["call_s"] + (n_sym + n_rect) * io["read_s"])
    f = _h6_fits(params)
    fit_s = {int(k): v for k, v in cal["fit_s"].items()}
    per_kernel = sum(c * _power(n, fit_s) for n, c in f["fits"].items())
    pairs = sum(c * _power(n, fit_s) for n, c in f["pair"].items())
    n_pair_models = sum(1 for fam, _ in model_grid(params) if fam in NULL_PAIR_FAMILIES)
    regressions = 2 * 2 * n_models * (per_kernel + cal["grid_s"]) + 2 * n_pair_models * pairs
    parts = {"prepare": cal["prepare_s"], "kernels": kernels, "compile": compile_s, "cache": cache,
             "regressions": regressions}
    parts["total"] = sum(parts.values())
    return parts


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
            t0 = _now()
            p, losses = model.train(p0, X, y, steps=probe_steps, lr=lr, rho=float(sec["rho"]))
            np.asarray(losses)
            tt.append(_now() - t0)
            t0 = _now()
            scaling.worst_case_linearisation_error(jax.random.PRNGKey(1), p0, X, float(sec["rho"]), probe_lin)
            ta.append(_now() - t0)
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
                 backend: str, cal: Mapping[str, Any], scale: str, compiled: set[str]) -> dict[str, Any]:
    from ntkrepro.kernels.device_regression import TALLY
    from ntkrepro.run import execute

    params = h4_params(sections, tier, out_stage, data_root, cache, backend)
    res_path = out_stage / RESULTS["H4"]
    res_path.parent.mkdir(parents=True, exist_ok=True)
    TALLY.clear()
    t0 = _now()
    results = execute(COMPUTE["H4"], params, res_path, scale=scale,
                      outputs={"predictions": out_stage / "hron2020" / "H4_cifar10_kernels_predictions.npz"})
    wall = _now() - t0  # the run's clock (CLOCK)
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


def provenance_commit() -> str | None:
    """Why a sealed cell could not carry its commit (None: it can). ``decisive.verify_cell`` refuses a cell
    without one; where this copy of the repository has no ``.git`` (a device call may send only the working
    tree), the caller declares the commit it sent: ``NTKREPRO_GIT_COMMIT=<sha>`` (and
    ``NTKREPRO_GIT_DIRTY=1`` if the tree had uncommitted changes), recorded with ``"declared": true``."""
    from ntkrepro import provenance

    if provenance.git_state().get("commit"):
        return None
    sha = os.environ.get("NTKREPRO_GIT_COMMIT", "").strip()
    if not (len(sha) == 40 and all(ch in "0123456789abcdef" for ch in sha.lower())):
        return ("no git commit here (no .git in this copy) and no NTKREPRO_GIT_COMMIT=<40-hex sha> declared: "
                "decisive.verify refuses a cell without its commit")
    state = {"commit": sha.lower(), "dirty": os.environ.get("NTKREPRO_GIT_DIRTY", "") not in ("", "0"),
             "declared": True}
    provenance.git_state = lambda root=None: dict(state)  # what provenance.collect records in every cell
    return None


def _run_cells_tier(name: str, claim: str, spec: Mapping[str, Any], section: Mapping[str, Any],
                    todo: Sequence[Mapping[str, Any]], pred: Mapping[str, Any], out_stage: Path, tarball: Path,
                    archive_rel: str, seconds_left: Callable[[], float]) -> dict[str, Any]:
    """The decisive cells ``todo`` of ``claim``, one at a time, each only if its predicted time x
    :data:`MARGIN` fits ``seconds_left()`` (else this and the later cells are left, recorded): each sealed as
    ``decisive.fill`` seals it (``execute`` of the entry's ``cell_function`` on ``decisive.cell_params`` with
    ``section``, scale ``decisive``, config hash = the plan section's) into
    ``<out_stage>/<archive_rel>/<claim>/cells/<cell>.json``, then the tier's tarball rewritten with the
    tier's throughput so far (a cut-off keeps every finished cell)."""
    from ntkrepro import decisive
    from ntkrepro.io import canonical_hash
    from ntkrepro.run import execute

    cells_dir = out_stage / archive_rel / claim / "cells"
    cells_dir.mkdir(parents=True, exist_ok=True)
    run_spec = {**spec, "section": dict(section)}
    config_hash = canonical_hash(spec["section"])  # the plan's section, as `snakemake decide` and fill hash it
    rec: dict[str, Any] = {"claim": claim, "tier": name, "cell_function": spec["cell_function"],
                           "archive": f"{archive_rel}/{claim}/cells", "archived_before": pred["archived_before"],
                           "cells": {}, "cells_left": {}}
    t0 = _now()
    for k, c in enumerate(todo):
        p_cell = pred["cells"][c["name"]]
        left = seconds_left()
        if p_cell * MARGIN > left:
            why = f"predicted {p_cell:.0f} s x {MARGIN} > {left:.0f} s left"
            rec["cells_left"] = {x["name"]: why if j == 0 else "after a cell that did not fit"
                                 for j, x in enumerate(todo[k:])}
            log.info("%s cell %s not run: %s", claim, c["name"], why)
            break
        c0 = _now()
        with tempfile.TemporaryDirectory(prefix=f"decisive-{claim}-") as d:
            tmp = Path(d) / f"{c['name']}.json"
            res = execute(spec["cell_function"], decisive.cell_params(run_spec, c), tmp, scale="decisive",
                          config_hash=config_hash)
            shutil.move(str(tmp), cells_dir / tmp.name)
        measured = _now() - c0
        rec["cells"][c["name"]] = {"predicted_s": p_cell, "measured_s": measured, "wall_seconds": res["wall_seconds"],
                                   "measured_over_predicted": measured / p_cell if p_cell > 0 else None}
        rec["measured_s"] = _now() - t0
        _write_json_atomic(out_stage / f"{name}_throughput.json", {**rec, "status": "running"})
        bundle(out_stage, tarball)
        log.info("%s cell %s: %.1f s (predicted %.1f s)", claim, c["name"], measured, p_cell)
    rec["measured_s"] = _now() - t0
    rec["n_cells"] = len(rec["cells"])
    # what the tier ran, predicted (the budget check's numbers; the cells not run are not counted)
    rec["predicted_run_s"] = sum(v["predicted_s"] for v in rec["cells"].values())
    return rec


def _run_h6_tier(name: str, params: Mapping[str, Any], out_stage: Path, scale: str) -> dict[str, Any]:
    from ntkrepro.run import execute

    res_path = out_stage / RESULTS["H6"]
    res_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = _now()
    execute(COMPUTE["H6"], dict(params), res_path, scale=scale,
            outputs={"table": out_stage / "hron2020" / "H6_imdb_table.csv"})
    return {"claim": "H6", "tier": name, "measured_s": _now() - t0, "results": RESULTS["H6"],
            "sizes": {k: params[k] for k in ("n_train", "n_valid", "n_test", "seq_len")},
            "glove": {k: params["glove"][k] for k in ("source", "sha256")}}


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
    h4_tiers, h5_tiers, a1_tiers, h6_tiers = ((TIERS, H5_TIERS, A1_TIERS, H6_TIERS) if plan == "gpu"
                                              else (SMOKE_TIERS, SMOKE_H5_TIERS, SMOKE_A1_TIERS, SMOKE_H6_TIERS))
    planned = {t for _, t in steps}
    h4_tiers, h5_tiers, a1_tiers, h6_tiers = ({k: v for k, v in d.items() if k in planned}
                                              for d in (h4_tiers, h5_tiers, a1_tiers, h6_tiers))
    if isinstance(archive, str) and archive == "repo":
        archive = REPO / decisive_plan()["archive"] if plan == "gpu" else None
    try:
        return _run(out, budget_s, data_root, steps, h4_tiers, h5_tiers, a1_tiers, scale, cache, regression_backend,
                    t_start, h6_tiers, None if archive is None else Path(archive))
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


def _run(out, budget_s, data_root, steps, h4_tiers, h5_tiers, a1_tiers, scale, cache, backend, t_start, h6_tiers=None,
         archive=None):
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
        if claim == "H5" and not (_importable("flax") and _importable("optax")):
            skipped_why[t] = "flax / optax not importable here"
        elif claim == "A1" and not _importable("torch"):  # the authors' teacher inputs (teacher.authors_inputs)
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
            skipped_why[t] = (f"no prepared GloVe subset in {data_root} (python -m ntkrepro.hron2020.device_inputs "
                              "on the CPU, then carry its folder)")
            continue
        cal[t] = calibrate_h6(p6, cal.get("io"))
        predicted[t] = predict_h6(p6, cal[t])
    t_cal = time.perf_counter() - t_start
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
    _write_json_atomic(top, record)
    log.info("calibration %.1f s; predicted %s", t_cal, {t: round(v["total"], 1) for t, v in predicted.items()})
    first_h4 = True
    for claim, name in steps:
        if name in skipped_why:
            continue
        left = budget_s - (time.perf_counter() - t_start)
        pred = predicted[name]["total"]
        need = predicted[name].get("first_cell", pred)  # a decisive tier: its first cell (each is checked)
        if need * MARGIN > left and not (claim == "H4" and first_h4):
            record["tiers"][name] = {"status": "skipped", "why": f"predicted {need:.0f} s x {MARGIN} > {left:.0f} s left",
                                     "predicted_s": pred}
            _write_json_atomic(top, record)
            log.info("tier %s skipped: predicted %.1f s, %.1f s left", name, pred, left)
            continue
        stage = cache / "stage" / name
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        tarball = out / f"{name}.tar.gz"
        log.info("tier %s (%s): predicted %.1f s, %.1f s left", name, claim, pred, left)
        w0, c0 = time.perf_counter(), time.process_time()
        if claim == "H4":
            rec = _run_h4_tier(name, h4_tiers[name], sections, stage, data_root, cache, backend, cal, scale, compiled)
            compiled |= tier_shapes(h4_params(sections, h4_tiers[name], stage, data_root, cache, backend),
                                    h4_tiers[name], cal)
            rec["fits_budget"] = pred * MARGIN <= left
            first_h4 = False
        elif claim == "H6":
            rec = _run_h6_tier(name, h6_params(sections, h6_tiers[name], data_root, cache), stage, scale)
        else:  # H5, A1: decisive cells
            d = dec[name]
            rec = _run_cells_tier(name, claim, d["spec"], d["section"], d["todo"], predicted[name], stage, tarball,
                                  plan["archive"], lambda: budget_s - (time.perf_counter() - t_start))
        rec.update(wall_s=time.perf_counter() - w0, cpu_s=time.process_time() - c0, clock=CLOCK["name"])
        pred_run = rec.get("predicted_run_s", pred)  # a decisive tier: the cells it ran
        rec.update(status="done", predicted_s=pred,
                   measured_over_predicted=rec["measured_s"] / pred_run if pred_run else None,
                   left_before_s=left, device=precision_record()["devices"], jax=jax.__version__)
        if claim == "H4":
            rec["measured_over_predicted_realised"] = rec["measured_s"] / rec["predicted_realised_s"]["total"]
        _write_json_atomic(stage / f"{name}_throughput.json", rec)
        rec["archive_bytes"] = bundle(stage, tarball)
        record["tiers"][name] = rec
        record["total_wall_s"] = time.perf_counter() - t_start
        _write_json_atomic(top, record)
        log.info("tier %s done: %.1f s (%s clock; predicted %.1f s)", name, rec["measured_s"], CLOCK["name"], pred)
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
    snap = {"H4": cfg["hron2020"]["H4"], "H5": cfg["hron2020"]["H5"], "H6": cfg["hron2020"]["H6"], "data": cfg["data"],
            "A1": paper["arda2026"]["A1"], "teacher": paper["arda2026"]["teacher"]}
    PARAMS_SNAPSHOT.write_text(json.dumps(snap, indent=1, sort_keys=True) + "\n")
    from ntkrepro import decisive

    plan = decisive.load_plan(REPO / "config" / "decisive.yaml")
    DECISIVE_SNAPSHOT.write_text(json.dumps(plan, indent=1, sort_keys=True) + "\n")
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
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="the clock of the calibration and of "
                    "the tiers' measured times: wall (the device) or cpu (this process's CPU time; the CI tests on a "
                    "shared CPU, single-threaded); the budget is wall time either way")
    ap.add_argument("--archive", default=None, help="the decisive archive whose cells the A1 / H5 tiers skip "
                    "(default: the repository's archive/decisive for --tiers gpu, none for the smoke plans)")
    ap.add_argument("--write-params-snapshot", action="store_true",
                    help=f"rewrite {PARAMS_SNAPSHOT.name} and {DECISIVE_SNAPSHOT.name} and exit")
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
        print(write_params_snapshot(), DECISIVE_SNAPSHOT)
        return 0
    CLOCK["name"] = args.clock
    data_root = Path(args.data_root) if args.data_root else default_data_root()
    if not data_root.is_dir():  # else a traceback ending in the CIFAR loader's ArchiveError, after the set-up
        ap.error(f"--data-root {data_root}: no such folder; give the folder holding the data archives "
                 "(device-inputs, prepared by `python -m ntkrepro.hron2020.device_inputs`, or ../shared/data)")
    run(Path(args.out), args.budget_s, data_root, args.tiers,
        cache=Path(args.cache) if args.cache else None, regression_backend=args.regression_backend,
        archive=Path(args.archive) if args.archive else "repo")
    return 0


if __name__ == "__main__":
    sys.exit(main())
