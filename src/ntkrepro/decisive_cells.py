"""The decisive tier's cell records and their verification (issue 29; split from :mod:`ntkrepro.decisive`, issue 40).

A decisive cell is one shard of a claim's decisive size, computed once on some machine and sealed into the
committed ``archive/decisive/<CLAIM>/cells/``. This module knows what a cell is and whether one can be used:

- the hash of the code that computed it (:func:`compute_code_hash`: the sources listed in
  :data:`COMPUTE_CODE` and the module constants they use, not the whole import closure, so that an edit
  to the statistics or the report does not invalidate hours of archived training); a cell whose hash
  differs from today's code is STALE and never used silently (the two schemes, and how the cells
  archived before constants were hashed are checked: see the notes above :data:`ARCHIVED_CONSTANTS`);
- the cells a plan entry names (:func:`cells`, :func:`cell_name`, :func:`cell_params`, :func:`cell_path`,
  :func:`archived_cells`) and the check of one archived cell (:func:`verify_cell`: budget, seal, claim,
  name, provenance, staleness);
- the plan, ``config/decisive.yaml`` (:func:`load_plan`, :func:`check_plan`, :func:`check_spec`,
  :func:`check_archive`, :func:`is_overlay`), which the Snakefile reads at every parse.

Orchestration (judging the archived cells by the current criterion, filling missing cells, the CLI) is
:mod:`ntkrepro.decisive`, above the ledger; this module imports only the bottom layer
(:mod:`ntkrepro.io`), ``configcheck`` when it reads a plan, and, to hash them, the compute modules it
names (by name, at call time).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import inspect
import itertools
import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ntkrepro.io import TamperedFileError, check_seal, read_json, sha256_file

#: Per claim: the code that computes an archived cell -- whole modules (``"pkg.mod"``) or single
#: functions (``"pkg.mod:name"``). Editing any of them makes the claim's archived cells STALE.
COMPUTE_CODE: dict[str, tuple[str, ...]] = {
    "A1": (
        "ntkrepro.arda2026.model",
        "ntkrepro.arda2026.teacher",
        *(f"ntkrepro.arda2026.scaling:{f}" for f in (
            "run_a1_cell", "run_a1_unit", "run_a1_width_fixed", "width_fixed_stream", "train_student",
            "student_key", "teacher_data", "_make_teacher", "worst_case_linearisation_error", "_ascend_impl",
            "_ascend_jit", "_ascend", "_edge", "linearisation_gap")),
    ),
    # the forecasting functions a cell runs (not aggregate_a4, which the judge re-runs on the archive);
    # model (shared with A1) and indrnn whole
    "A4": (
        "ntkrepro.arda2026.model",
        "ntkrepro.arda2026.indrnn",
        *(f"ntkrepro.arda2026.forecasting:{f}" for f in (
            "run_a4_cell", "chunk_seeds", "run_point", "make_task", "lag_series", "lag_windows",
            "positional_channels", "_gd_recorded", "_train_recorded", "_train_recorded_batched", "block_max_mean",
            "_rnn_loss", "_tf_gnorm", "_rnn_gnorm")),
    ),
    # a cell's training and its data (the CIFAR-10 reader and split whole), not aggregate_h5
    "H5": (
        *(f"ntkrepro.hron2020.finite_nets:{f}" for f in (
            "run_h5_cell", "h5_cell_runs", "attention_weights", "make_model", "make_trainer", "run_seed",
            "_run_record")),
        "ntkrepro.hron2020.cifar10:load_splits",
        "ntkrepro.hron2020.regime:permuted_labels",
        "ntkrepro.data.cifar10",
    ),
    # H5's second plan (config/decisive.yaml ``H5.n``, archive/decisive/H5.n/): ten times the training images;
    # the first plan's cell function wrapped (its own source unchanged, so H5's archived cells stay current)
    "H5.n": (
        *(f"ntkrepro.hron2020.finite_nets:{f}" for f in (
            "run_h5n_cell", "run_h5_cell", "h5_cell_runs", "attention_weights", "make_model", "make_trainer",
            "run_seed", "_run_record")),
        "ntkrepro.hron2020.cifar10:load_splits",
        "ntkrepro.hron2020.regime:permuted_labels",
        "ntkrepro.data.cifar10",
    ),
    # a cell's kernels (the sweep model's description; the fast engine is not listed: it is tested equal to
    # neural-tangents, and each cell records its fingerprint), data, labels, resampling plans and refits;
    # not aggregate_h4, which the judge re-runs on the archive
    "H4": (
        *(f"ntkrepro.hron2020.h4_decisive:{f}" for f in (
            "run_h4_cell", "run_sweep_cell", "run_final_cell", "tree_kernels", "_cache_dir", "_labels", "_select",
            "_boot", "_curve", "_two_draws", "cell_pairs", "predict_seconds")),
        *(f"ntkrepro.hron2020.cifar10:{f}" for f in (
            "load_splits", "build_sweep_model", "_readout", "_conv_stack", "_attention")),
        *(f"ntkrepro.hron2020.regime:{f}" for f in (
            "permuted_labels", "training_resample_plan", "learning_curve_plan")),
        "ntkrepro.kernels.resampling",
        "ntkrepro.data.cifar10",
    ),
    # a cell's run (run_f2 at one width) and the modules it trains and measures with, whole (not aggregate_f2)
    "F2": (
        *(f"ntkrepro.framework.kernel_regime:{f}" for f in ("run_f2_cell", "run_f2", "block_spec")),
        "ntkrepro.framework.training",
        "ntkrepro.framework.models",
        "ntkrepro.framework.spectra",
    ),
    # a cell's run (one seed's arm of the planted-fixed-point comparison) and what it computes with (not
    # aggregate_planted, which the judge re-runs on the archive)
    "G3": (
        *(f"ntkrepro.hazelden2026.planted:{f}" for f in (
            "run_planted_cell", "planted_run", "memory_pro", "init_params", "plant_fixed_points",
            "matched_perturbation", "arm_params", "_hidden_fn", "gentk_jacobian", "_jacobian_fn",
            "gentk_participation_ratio", "participation_ratio_of_jacobian", "_sgd_fn", "train_sgd")),
    ),
    # a cell's inputs, networks, Monte Carlo estimates and distances (not aggregate_h3)
    "H3": (
        *(f"ntkrepro.hron2020.convergence:{f}" for f in (
            "run_h3_cell", "_setup", "_replicates", "_heads", "attention_net", "make_estimator")),
        "ntkrepro.hron2020.cifar10:load_splits",
        "ntkrepro.data.cifar10",
    ),
    # H3's second plan (config/decisive.yaml ``H3.dk``, its own archive folder archive/decisive/H3.dk/): key/query
    # dimension growing with width, NNGP readout integrated; the first plan's inputs, replicates and layout
    # (listed here too, so that editing them makes both plans' cells STALE)
    "H3.dk": (
        *(f"ntkrepro.hron2020.convergence_dk:{f}" for f in (
            "run_h3dk_cell", "make_estimator_exact_readout", "feature_net")),
        *(f"ntkrepro.hron2020.convergence:{f}" for f in ("_setup", "_replicates", "_heads", "attention_net")),
        "ntkrepro.hron2020.cifar10:load_splits",
        "ntkrepro.data.cifar10",
    ),
    # as H4: a cell's kernels (model descriptions, not the fast engine), data, labels, plans and refits
    "H6": (
        *(f"ntkrepro.hron2020.h6_decisive:{f}" for f in (
            "run_h6_cell", "_params", "_ok", "_boot", "_curve", "_two_draws")),
        "ntkrepro.kernels.blocks:compute_kernel_blocks_sorted",
        *(f"ntkrepro.hron2020.imdb:{f}" for f in (
            "_prepare", "build_kernel_fn", "_pos_decay", "model_grid", "model_name", "model_kernel_fn", "mask_margin",
            "padding_invariance", "pad_check_indices", "h6_resample_plans")),
        *(f"ntkrepro.hron2020.regime:{f}" for f in (
            "permuted_labels", "training_resample_plan", "learning_curve_plan")),
        "ntkrepro.kernels.resampling",
        "ntkrepro.data.imdb",
        "ntkrepro.data.text",
        "ntkrepro.data.glove",
    ),
}


def claim_of(plan: str) -> str:
    """The claim a plan key of config/decisive.yaml decides: ``H3`` for ``H3`` and for ``H3.dk``.

    A claim has one plan under its own id; a later plan for the same claim (issue 38: H3 with the key/query
    dimension growing) is keyed ``<CLAIM>.<name>``, with its own archive folder (``archive/decisive/H3.dk/``)
    and its own compute code (:data:`COMPUTE_CODE` ``["H3.dk"]``), so that the first plan's archived cells
    stay as they are, judged and current. Its cells record ``claim`` = the claim (judged by its criterion)."""
    return plan.split(".", 1)[0]


def _source(ref: str) -> str:
    module, _, name = ref.partition(":")
    mod = importlib.import_module(module)
    if not name:
        return inspect.getsource(mod)
    obj = getattr(mod, name)
    return inspect.getsource(inspect.unwrap(obj))


def code_hash_of(refs: Sequence[str]) -> str:
    """SHA-256 over the sources of ``refs`` (each name, then its source text, in the order given)."""
    h = hashlib.sha256()
    for ref in refs:
        h.update(ref.encode() + b"\0" + _source(ref).encode() + b"\0")
    return h.hexdigest()


def compute_code_hash(claim: str) -> str:
    """Hash of the code computing ``claim``'s decisive cells today, scheme 2 (issue 39): ``"v2:"`` + the
    SHA-256 of the listed sources (:func:`code_hash_of` of :data:`COMPUTE_CODE`) and of the module constants
    they use (:func:`compute_constants`). What a cell records as ``compute_code`` (the notes below).

    Why a second scheme and not a new field: an archived cell is sealed, so it cannot gain a constants
    field, and the source hash of today's code with constants folded in necessarily differs from the hash
    the archived cells recorded. So the cells archived before this scheme keep their (scheme-1) hash and
    are checked against the constants pinned in :data:`ARCHIVED_CONSTANTS` (:func:`code_state`), while every
    new cell records this scheme-2 hash, which changes with any listed source or used constant."""
    h = hashlib.sha256()
    h.update(code_hash_of(COMPUTE_CODE[claim]).encode() + b"\0" + compute_constants_hash(claim).encode())
    return CODE_SCHEME + h.hexdigest()


# Module constants (issue 39, defect 3). Scheme 1 hashed the SOURCE of the listed functions only, so
# ``N_FREQ = 8`` at the top of forecasting.py (used by positional_channels) or H5's ``CONTROL_SEED_OFFSET``
# was outside it: changing one left cells computed under the old value judged as current. Scheme 2:
#
# - :func:`compute_constants` lists the module-level constants the listed functions use, BY VALUE: every
#   name a listed function's source mentions (body, defaults, decorators) that its module assigns at top
#   level and whose value is plain data (numbers, text, tuples, lists, dicts; functions, loggers, jitted
#   code are code, not constants). Modules listed whole are hashed with their source, constants included.
# - :func:`compute_code_hash` (what a cell function records as ``compute_code``) hashes both, prefixed
#   ``v2:``; a cell recording another value is STALE.
# - The cells archived under scheme 1 (A1, A4, H5, 2026-12-04/05; sealed, so they cannot gain a field)
#   record the bare source hash. Such a cell is current when its hash equals today's scheme-1 hash
#   (:func:`code_hash_of`) AND today's constants equal the values its claim's cells were computed with,
#   pinned in :data:`ARCHIVED_CONSTANTS` (those values were today's when the pin was written: the same
#   code computed them). Change ``N_FREQ`` and A4's pin differs: every archived A4 cell is STALE. A
#   scheme-1 cell of a claim without a pin is STALE: its constants cannot be told.
# - Snakemake's ``params`` trigger of ``decisive_cell`` keeps the scheme-1 hash (unchanged for the archived
#   cells, so no archived cell is recomputed by the change of scheme); a STALE cell is deleted and
#   recomputed (``verify --delete-stale``, then ``snakemake decide``), as before.
#
# Not covered: constants imported from other modules (``from x import C``) and values read at call time
# (environment, files): list such a module whole in COMPUTE_CODE when it matters.

#: The prefix of a scheme-2 ``compute_code`` (:func:`compute_code_hash`); a bare hash is scheme 1.
CODE_SCHEME = "v2:"

#: Per claim, the module constants its scheme-1 cells (archived before issue 39) were computed with:
#: :func:`compute_constants` of the code that computed them, which was today's when this was written.
#: Never edit a value to make cells current: a changed constant means the cells are recomputed.
ARCHIVED_CONSTANTS: dict[str, dict[str, str]] = {
    "A1": {},
    "A4": {"ntkrepro.arda2026.forecasting:N_FREQ": "8"},
    "H5": {"ntkrepro.hron2020.finite_nets:CONTROL_SEED_OFFSET": "100000",
           "ntkrepro.hron2020.finite_nets:LAYER_NORMS": "tuple('none', 'per_head', 'output')",
           "ntkrepro.hron2020.finite_nets:MECHANISMS": "tuple('softmax', 'relu', 'identity')"},
    # H4's cells of the run started at 995c05d (before issue 39 landed) record the scheme-1 hash; these are
    # the values that commit's code used (unchanged since: compute_constants("H4") printed them)
    "H4": {"ntkrepro.hron2020.cifar10:FAMILIES": "tuple('flatten', 'gap', 'lap', 'vanilla', 'struct', 'residual')",
           "ntkrepro.hron2020.h4_decisive:CACHE": "'.cache/decisive-kernels'",
           "ntkrepro.hron2020.h4_decisive:LABELS": "tuple('real', 'permuted_labels')",
           "ntkrepro.hron2020.h4_decisive:PERMUTE_TRAIN": "99991",
           "ntkrepro.hron2020.h4_decisive:PERMUTE_VAL": "99992"},
}


def _plain(value):
    """A canonical text of ``value`` when it is plain data (else None: code, not a constant)."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return repr(value)
    if isinstance(value, (tuple, list)):
        items = [_plain(v) for v in value]
        return None if None in items else type(value).__name__ + "(" + ", ".join(items) + ")"
    if isinstance(value, (set, frozenset)):
        items = [_plain(v) for v in value]
        return None if None in items else type(value).__name__ + "(" + ", ".join(sorted(items)) + ")"
    if isinstance(value, dict):
        items = [(_plain(k), _plain(v)) for k, v in value.items()]
        if any(k is None or v is None for k, v in items):
            return None
        return "dict(" + ", ".join(f"{k}: {v}" for k, v in items) + ")"
    return None


@functools.lru_cache(maxsize=None)
def _module_assigned(module: str) -> frozenset[str]:
    """The names a module assigns at top level (``X = ...``, ``X: T = ...``); cached per module (its source
    does not change while a process runs; the VALUES are read afresh each time)."""
    names: set[str] = set()
    for node in ast.parse(inspect.getsource(importlib.import_module(module))).body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    names.add(n.id)
    return frozenset(names)


@functools.lru_cache(maxsize=None)
def _names_in(source: str) -> frozenset[str]:
    """Every name a function's source mentions (body, defaults, decorators)."""
    return frozenset(n.id for n in ast.walk(ast.parse(textwrap.dedent(source))) if isinstance(n, ast.Name))


def compute_constants(claim: str) -> dict[str, str]:
    """``"module:NAME" -> value`` of every module-level constant a function listed for ``claim`` in
    :data:`COMPUTE_CODE` mentions (its body, defaults and decorators), by value (see the notes above)."""
    out: dict[str, str] = {}
    for ref in COMPUTE_CODE[claim]:
        module, _, name = ref.partition(":")
        if not name:
            continue  # a whole module: its source, constants included, is in compute_code
        mod = importlib.import_module(module)
        for const in sorted(_names_in(_source(ref)) & _module_assigned(module)):
            text = _plain(getattr(mod, const, None)) if hasattr(mod, const) else None
            if text is not None:
                out[f"{module}:{const}"] = text
    return dict(sorted(out.items()))


def compute_constants_hash(claim: str, constants: Mapping[str, str] | None = None) -> str:
    """SHA-256 of :func:`compute_constants` (or of ``constants``), part of :func:`compute_code_hash`."""
    consts = compute_constants(claim) if constants is None else constants
    h = hashlib.sha256()
    for k, v in sorted(consts.items()):
        h.update(k.encode() + b"\0" + v.encode() + b"\0")
    return h.hexdigest()


def pinned_constants_changed(claim: str) -> list[str] | None:
    """The module constants of ``claim`` whose value today differs from the value its scheme-1 cells were
    computed with (:data:`ARCHIVED_CONSTANTS`): ``[]`` when none, None when the claim has no pin."""
    pin = ARCHIVED_CONSTANTS.get(claim)
    if pin is None or claim not in COMPUTE_CODE:
        return None
    now = compute_constants(claim)
    return sorted(k for k in set(pin) | set(now) if pin.get(k) != now.get(k))


def code_state(claim: str, recorded: Any, code_hash: str | None = None) -> tuple[bool, str]:
    """(stale, why) of a cell that recorded ``compute_code`` = ``recorded``: current when it equals today's
    hash (``code_hash`` when given, else :func:`compute_code_hash`), or, for a scheme-1 cell, when its hash
    equals today's scheme-1 hash and the claim's pinned constants are today's (the notes above)."""
    want = code_hash if code_hash is not None else compute_code_hash(claim)
    if recorded == want:
        return False, ""
    if code_hash is None and isinstance(recorded, str) and not recorded.startswith(CODE_SCHEME) \
            and claim in COMPUTE_CODE and recorded == code_hash_of(COMPUTE_CODE[claim]):
        changed = pinned_constants_changed(claim)
        if changed is None:
            return True, (f"computed before module constants were hashed (scheme 1), and {claim} has no pin in "
                          "ntkrepro.decisive_cells.ARCHIVED_CONSTANTS: its constants cannot be told")
        if changed:
            return True, f"module constants changed since it was computed: {', '.join(changed)}"
        return False, ""
    return True, "computed by other code than today's (compute_code differs)"




# --------------------------------------------------------------------------------------------
# The archive: where cells live, their names, the check of one cell

#: Where the archive lives (config/decisive.yaml ``decisive.archive``), relative to the repository root.
ARCHIVE = "archive/decisive"
#: Size budget of one archived file (config/decisive.yaml ``decisive.max_file_bytes``).
MAX_FILE_BYTES = 1 << 20
#: The tier's name in the ledger entry, table and report.
TIER = "decisive"

#: The command that computes (or recomputes) missing archived cells.
DECIDE = "snakemake decide --configfile config/decisive.yaml"

class ArchiveError(ValueError):
    """An archived file that is not a sealed, current, in-budget result of the decisive tier."""


def cells(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The cells of a ``run`` claim of config/decisive.yaml: the product of its ``cell`` keys' lists in the
    section, each ``{"name": ..., <key>: value}``; the name is e.g. ``seed01_m008`` for (seeds, widths)."""
    keys = list(spec["cell"])
    out = []
    for combo in itertools.product(*(spec["section"][k] for k in keys)):
        cell = {_singular(k): int(v) for k, v in zip(keys, combo)}
        cell["name"] = cell_name(cell)
        out.append(cell)
    return out


def _singular(key: str) -> str:
    return {"seeds": "seed", "widths": "width"}.get(key, key[:-1] if key.endswith("s") else key)


_SHORT = {"seed": ("seed", 2), "width": ("m", 3), "chunk": ("chunk", 2), "ln": ("ln", 1)}


def cell_name(cell: Mapping[str, Any]) -> str:
    """``seed01_m008`` for ``{"seed": 1, "width": 8}`` (other keys: ``<key><value>``)."""
    parts = []
    for k, v in cell.items():
        if k == "name":
            continue
        short, pad = _SHORT.get(k, (k, 1))
        parts.append(f"{short}{int(v):0{pad}d}")
    return "_".join(parts)


def cell_params(spec: Mapping[str, Any], cell: Mapping[str, Any]) -> dict[str, Any]:
    """The compute function's parameters of one cell: the claim's section plus the cell's values."""
    return {**spec["section"], **{k: v for k, v in cell.items() if k != "name"}}


def cell_path(archive: str | Path, claim: str, name: str) -> Path:
    return Path(archive) / claim / "cells" / f"{name}.json"


def archived_cells(archive: str | Path, claim: str) -> list[Path]:
    """The cell files of ``claim`` in the archive, sorted by name."""
    return sorted((Path(archive) / claim / "cells").glob("*.json"))


def entry_plan(claim: str, plan: Mapping[str, Any], archive: str | Path) -> str | None:
    """The plan key whose judgement claim ``claim``'s ledger entry shows (the claims table's decisive
    column; the tier table lists every plan): the **last** of the claim's ``run`` plans in
    config/decisive.yaml's order whose planned cells are all archived; while none is, the claim's own plan
    if it has archived cells; else None. A later plan is stated because an earlier one could not decide
    (H3.dk after H3's first plan, H5.n after H5's), so a complete later plan supersedes it in the entry,
    whatever either verdict; the earlier plan's row stays in the tier table. (Rule stated 2026-12-07, while
    H3.dk had 26 of 36 cells and no verdict; ``H5.n`` had none.)"""
    keys = [k for k, s in plan["claims"].items()
            if claim_of(k) == claim and s.get("status") == "run" and "cell" in s]
    complete = [k for k in keys
                if {c["name"] for c in cells(plan["claims"][k])} <= {p.stem for p in archived_cells(archive, k)}]
    if complete:
        return complete[-1]
    return claim if claim in keys and archived_cells(archive, claim) else None


def verify_cell(path: str | Path, claim: str, *, max_bytes: int = MAX_FILE_BYTES,
                code_hash: str | None = None) -> dict[str, Any]:
    """Read an archived cell and verify it: within the size budget, sealed and intact (a hand edit
    raises :class:`~ntkrepro.io.TamperedFileError`), of ``claim``, with provenance (commit, device, date,
    wall time). Returns ``{"path", "data", "sha256", "stale", "stale_why"}``; ``stale`` is True when the code that
    computed it (``compute_code``) is not today's (:func:`code_state`: :func:`compute_code_hash`, or
    ``code_hash``; a scheme-1 cell against its claim's pinned constants). A directory, an empty or broken
    JSON file, an unsealed or hand-edited cell, a cell of another claim or under another cell's name, and a
    cell without provenance are refused (:class:`ArchiveError` / :class:`~ntkrepro.io.TamperedFileError`),
    naming the file and what to do."""
    p = Path(path)
    if p.is_dir():
        raise ArchiveError(f"{p}: a directory, not an archived cell file; move it out of the archive")
    size = p.stat().st_size
    if size > max_bytes:
        raise ArchiveError(f"{p}: {size} bytes, over the archive's budget of {max_bytes} bytes per file "
                           "(results only: no kernel matrices)")
    try:
        data = read_json(p)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ArchiveError(f"{p}: not a JSON cell ({size} bytes{'' if size else ', empty'}; {err}): a truncated or "
                           f"broken copy; delete it and run `{DECIDE}`") from None
    try:
        sealed = isinstance(data, dict) and check_seal(data, p)
    except TamperedFileError as err:  # its advice "rerun snakemake" recomputes a result, not an archived cell
        raise TamperedFileError(str(err).replace(
            "rerun snakemake to recompute it",
            f"run `{DECIDE}` to recompute it (an archived cell is never recomputed by `snakemake all`)")) from None
    if not sealed:
        raise ArchiveError(f"{p}: not sealed (provenance.sealed missing): not an archived result; delete it "
                           "and run `snakemake decide --configfile config/decisive.yaml`")
    if data.get("claim") != claim_of(claim) or data.get("plan", claim_of(claim)) != claim:
        raise ArchiveError(f"{p}: a result of {data.get('plan') or data.get('claim')!r}, archived under {claim}")
    cell = data.get("cell")
    if isinstance(cell, Mapping):  # the file's name is the cell it holds (a copy under another name is refused)
        ints = {k: v for k, v in cell.items() if isinstance(v, int) and not isinstance(v, bool)}
        if ints and cell_name(ints) != p.stem:
            held = ", ".join(f"{k} {v}" for k, v in ints.items())
            raise ArchiveError(f"{p}: holds the cell {cell_name(ints)} ({held}), "
                               f"not {p.stem}: a copy under another name; delete it and run `{DECIDE}`")
    prov = data.get("provenance") or {}
    if not (prov.get("git") or {}).get("commit") or not prov.get("created_utc") or "wall_seconds" not in data:
        raise ArchiveError(f"{p}: no provenance (commit, date, wall time)")
    stale, why = code_state(claim, data.get("compute_code"), code_hash)  # code and module constants (issue 39)
    return {"path": str(p), "data": data, "sha256": sha256_file(p), "stale": stale, "stale_why": why}


# --------------------------------------------------------------------------------------------
# The plan (config/decisive.yaml): read and checked here, so that the Snakefile reads it without the ledger

def load_plan(path: str | Path = "config/decisive.yaml") -> dict[str, Any]:
    """The ``decisive`` section of config/decisive.yaml, checked (:func:`check_plan`); every refusal names the file."""
    # imported here, not at the top: pyyaml (configcheck's) is not installed where the cell records and fill run
    # without Snakemake (the GPU machine, .venv-jax-current: ntkrepro.hron2020.gpu_run, tests/test_gpu_run.py)
    from ntkrepro.configcheck import ConfigError, load_strict

    p = Path(path)
    if not p.is_file():
        raise ArchiveError(f"{p}: {'a directory' if p.is_dir() else 'no such file'}, not the decisive plan; give "
                           "--plan config/decisive.yaml (paths are relative to the repository root)")
    try:
        data = load_strict(p)
    except ConfigError as err:
        raise ArchiveError(str(err).replace("--configfile ", "", 1)) from None
    if set(data) != {"decisive"}:
        raise ArchiveError(f"{path}: an overlay sets only `decisive` (got {sorted(data)})")
    here = p.parent if (p.parent / "paper.yaml").is_file() else Path("config")
    check_plan(data["decisive"], str(p), here)
    return data["decisive"]


#: The keys a ``run`` claim of the plan needs (workflow/schemas/decisive.schema.yaml says what each is).
RUN_KEYS = ("cell", "cell_function", "aggregate_function", "results_stem", "section", "scale")


def check_spec(claim: str, spec: Any, where: str = "config/decisive.yaml") -> None:
    """Refuse a claim entry of the plan that :func:`cells` / :func:`ntkrepro.decisive.judge` /
    :func:`ntkrepro.decisive.fill` cannot use, naming the key."""
    key = f"{where}: decisive.claims.{claim}"
    if not isinstance(spec, Mapping):
        raise ArchiveError(f"{key} is a {type(spec).__name__}, not a mapping (status, scale, ...)")
    if spec.get("status") != "run":
        return
    missing = [k for k in RUN_KEYS if k not in spec]
    if missing:
        raise ArchiveError(f"{key}: a `run` claim needs {', '.join(missing)} (see the other run claims)")
    if not isinstance(spec["section"], Mapping):
        raise ArchiveError(f"{key}.section is a {type(spec['section']).__name__}, not a mapping of the claim's "
                           "settings")
    if not isinstance(spec["cell"], list) or not spec["cell"]:
        raise ArchiveError(f"{key}.cell must be a list of section keys (e.g. [seeds, widths]), got {spec['cell']!r}")
    for k in spec["cell"]:
        v = spec["section"].get(k) if isinstance(k, str) else None
        if not isinstance(v, list) or not v or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            got = "missing" if v is None else repr(v)[:60]
            raise ArchiveError(f"{key}.cell names {k!r}, but section.{k} is {got}: "
                               "each cell key must be a section key holding a list of whole numbers")
    for k in ("cell_function", "aggregate_function"):  # the format only: importing them here would load jax
        ref = spec[k]
        if not isinstance(ref, str) or not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", ref):
            raise ArchiveError(f"{key}.{k}: {ref!r} is not 'package.module:function'")


def check_plan(plan: Any, where: str = "config/decisive.yaml", config_dir: str | Path | None = "config") -> None:
    """Refuse a plan (the ``decisive`` section) whose keys are missing or of the wrong kind, naming the key;
    and each claim's ``scale`` label that its sizes contradict (issue 39: the check of
    :func:`ntkrepro.configcheck.check_scale_label`, on the claim's ``section`` or ``size`` placed where the
    scale files keep that claim): ``scale: paper`` on A4's default-run sizes would drop "[default settings]"."""
    from ntkrepro.configcheck import ConfigError, check_scale_label, load_strict  # pyyaml: see load_plan

    if not isinstance(plan, Mapping):
        raise ArchiveError(f"{where}: `decisive` is a {type(plan).__name__}, not a mapping of archive, "
                           "max_file_bytes and claims")
    for k in ("archive", "max_file_bytes", "claims"):
        if k not in plan:
            raise ArchiveError(f"{where}: decisive.{k} is missing (see config/decisive.yaml)")
    if not isinstance(plan["archive"], str) or not plan["archive"].strip():
        raise ArchiveError(f"{where}: decisive.archive must be a folder name (archive/decisive), "
                           f"got {plan['archive']!r}")
    mfb = plan["max_file_bytes"]
    if not isinstance(mfb, int) or isinstance(mfb, bool) or mfb <= 0:
        raise ArchiveError(f"{where}: decisive.max_file_bytes must be a positive whole number of bytes "
                           f"(1048576 = 1 MiB), got {mfb!r}{' (text)' if isinstance(mfb, str) else ''}")
    if not isinstance(plan["claims"], Mapping):
        raise ArchiveError(f"{where}: decisive.claims is a {type(plan['claims']).__name__}, "
                           "not a mapping claim -> entry")
    for claim, spec in plan["claims"].items():
        check_spec(claim, spec, where)
        # what Snakemake needs besides (SLURM limits) or a claim without cells states (the schema says the types)
        need = ("cell_runtime_min", "mem_mb") if spec.get("status") == "run" else ("status", "scale", "reason", "size")
        missing = [k for k in need if k not in spec]
        if missing:
            raise ArchiveError(f"{where}: decisive.claims.{claim} lacks {', '.join(missing)}: the plan is an overlay "
                               "and inherits nothing (see the other claims of config/decisive.yaml)")
    if config_dir is None or not (Path(config_dir) / "default.yaml").is_file():
        return
    try:
        default = load_strict(Path(config_dir) / "default.yaml")
        for claim, spec in plan["claims"].items():
            sizes = spec.get("section") if spec.get("section") is not None else spec.get("size")
            papers = [k for k, v in default.items() if isinstance(v, Mapping) and claim_of(claim) in v]
            if isinstance(sizes, Mapping) and sizes and papers:
                check_scale_label({"scale": spec.get("scale"), papers[0]: {claim_of(claim): sizes}},
                                  f"{where}: decisive.claims.{claim}", config_dir)
    except ConfigError as err:
        raise ArchiveError(str(err)) from None


def check_archive(archive: str | Path, plan: Mapping[str, Any] | None = None) -> Path:
    """Refuse an archive folder that does not exist (a mistyped ``--archive`` read as an empty archive would
    erase every decisive verdict) or that holds no cells folder of any planned ``run`` claim."""
    a = Path(archive)
    if not a.is_dir():
        raise ArchiveError(f"archive {a}: {'a file' if a.exists() else 'no such folder'}, not the decisive archive "
                           "(archive/decisive, relative to the repository root); nothing was changed")
    if plan is not None:
        run = [c for c, s in plan["claims"].items() if isinstance(s, Mapping) and s.get("status") == "run"]
        if run and not any((a / c / "cells").is_dir() for c in run):
            raise ArchiveError(f"archive {a}: holds no <CLAIM>/cells/ folder of the plan's claims ({', '.join(run)}): "
                               "not the decisive archive (archive/decisive); nothing was changed")
    return a


def is_overlay(configfiles) -> bool:
    """True when every ``--configfile`` sets only ``decisive`` (config/decisive.yaml): merged over
    config/default.yaml, it changes nothing of the default run, so it inherits nothing silently."""
    import yaml  # not at the top: no pyyaml where decisive runs without Snakemake (see load_plan)

    files = list(configfiles)
    return bool(files) and all(set((yaml.safe_load(Path(f).read_text()) or {})) == {"decisive"} for f in files)
