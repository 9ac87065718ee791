"""The plan of the device call, declared before any run: the tiers, their order, the budget margin, and
each tier's parameters (the Snakemake rule's, at the tier's sizes) and decisive cells.

* H4 in size tiers (:data:`TIERS`: config/default.yaml's H4 at 1,000, 2,000 and 5,000 images of the
  official training set's class-balanced train + validation split, 4:1, and 2,000 test images, 8x8, every
  family and depth, kernel blocks of 200 x 200, regressions on the default JAX device);
* the decisive cells of config/decisive.yaml's H5 (250 epochs, one cell = one seed at one LayerNorm
  placement) and A1 (the paper's settings, one cell = one seed at one width) entries, unchanged
  (:data:`H5_TIERS`, :data:`A1_TIERS`; :func:`decisive_spec`, :func:`pending_cells`: the cells not yet in
  the repository's ``archive/decisive``);
* H6 (:data:`H6_TIERS`: config/default.yaml's H6 at 800 / 200 / 800 reviews of length 128) from the inputs
  prepared on the CPU (:mod:`ntkrepro.device.inputs`).

:data:`PLANS` orders them; the ``smoke`` plans are CPU-sized versions for the tests (not results)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ntkrepro import decisive
from ntkrepro.device.inputs import glove_config

#: Pre-declared H4 tiers: (train, validation, test) images and the kernel block size.
TIERS: dict[str, dict[str, Any]] = {
    "t1000": {"n_train": 800, "n_val": 200, "n_test": 2000, "block_size": 200},
    "t2000": {"n_train": 1600, "n_val": 400, "n_test": 2000, "block_size": 200},
    "t5000": {"n_train": 4000, "n_val": 1000, "n_test": 2000, "block_size": 200},
}
#: H5 and A1 on the device: the DECISIVE CELLS of config/decisive.yaml's H5 (250 epochs, seed x LayerNorm)
#: and A1 (the paper's settings, seed x width) entries, unchanged -- each cell sealed as the archive wants it
#: (``ntkrepro.decisive.fill``'s ``execute`` of the entry's ``cell_function`` on ``decisive.cell_params``), the
#: cells already in the repository's archive skipped. ``section``: overrides of the entry's section (smoke only).
H5_TIERS: dict[str, dict[str, Any]] = {"h5_decisive": {"claim": "H5"}}
A1_TIERS: dict[str, dict[str, Any]] = {"a1_decisive": {"claim": "A1"}}
#: H6 on the device: config/default.yaml's H6 (length 128, every family and depth) at 800 / 200 / 800
#: reviews (issue 11 asks >= 800 test reviews at length >= 128; default runs 160 / 40 / 240), from the
#: prepared inputs (:mod:`ntkrepro.device.inputs`: GloVe cut to the IMDb subset's words).
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
#: A tier starts only if its prediction times MARGIN fits the time left.
MARGIN = 1.2


def tiers_of(plan: str) -> tuple[dict[str, dict[str, Any]], ...]:
    """``(H4, H5, A1, H6)`` tiers of the named plan (:data:`PLANS`), each cut to the tiers the plan runs."""
    tiers = ((TIERS, H5_TIERS, A1_TIERS, H6_TIERS) if plan == "gpu"
             else (SMOKE_TIERS, SMOKE_H5_TIERS, SMOKE_A1_TIERS, SMOKE_H6_TIERS))
    planned = {t for _, t in PLANS[plan]}
    return tuple({k: v for k, v in d.items() if k in planned} for d in tiers)


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
    (:func:`ntkrepro.device.inputs.glove_config`; ``None`` when not prepared)."""
    glove = glove_config(data_root)
    p = {k: v for k, v in dict(sections["H6"]).items() if k != "benchmark"}
    p.update(tier, imdb={**dict(sections["data"]["imdb"]),
                         "archive": str(Path(data_root) / sections["data"]["imdb"]["archive"])},
             glove=glove, cache_dir=str(cache / "kernels" / "hron2020_H6"))
    return p


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
    todo, have = [], []
    for c in decisive.cells(spec):
        if archive is not None and decisive.cell_path(archive, claim, c["name"]).exists():
            have.append(c["name"])
        else:
            todo.append(c)
    return todo, have


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
