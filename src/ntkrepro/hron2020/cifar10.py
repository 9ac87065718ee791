r"""H4 -- CIFAR-10 with closed-form NNGP/NTK regression: attention kernels vs Flatten/GAP/LAP.

Hron et al. (2020), Sec. 5 / Fig. 2 / Table 2. Every model is a stack of ``depth`` blocks
``Conv(3x3, SAME) -> ReLU`` (the *preceding depth*) followed by a readout, then ``Dense(10)``:

============  ===========================================================================
family        readout after the conv stack
============  ===========================================================================
flatten       ``Flatten``
gap           ``GlobalAvgPool``
lap           ``AvgPool(w x w, stride w) -> Flatten`` (local average pooling)
vanilla       ``GlobalSelfAttention`` (no positional embedding) ``-> Flatten``
struct        ``GlobalSelfAttention`` with positional covariance
              :math:`\Sigma_{pq} = \phi(\lVert p - q\rVert_2^2)`,
              :math:`\phi(r) = 1/(1 + r/\ell^2)` (decaying with pixel distance, ``pos_emb_type='SUM'``)
              ``-> LayerNorm -> Flatten``
residual      ``Conv(1x1) -> FanOut(2) -> [Identity, Struct attention] -> FanInSum -> LayerNorm -> Flatten``
============  ===========================================================================

Attention layers use neural-tangents' ``linear_scaling=True`` (the analytic :math:`d^{-1}` kernel
with tied query/key weights) and ``attention_mechanism`` from the config (identity by default, the
mechanism Sec. 4.1 keeps for its remaining experiments).

Protocol (the paper's, at the configured sizes): images downsampled to ``image_size`` and
standardised (:mod:`ntkrepro.data.cifar10`); a class-balanced train/validation split of the
official training set selects, per family and kernel (NNGP, NTK), the preceding depth and the
diagonal regulariser by validation accuracy; the final model is refit on train :math:`\cup`
validation and evaluated on (a class-balanced subset of) the official test set, with a bootstrap
CI. Orderings are measured as paired bootstrap intervals of accuracy differences on the same test
points (:func:`ntkrepro.stats.paired_bootstrap`); the per-image validation correctness of every
(family, depth, kernel) is stored for the depth ordering. The criterion is
:func:`ntkrepro.hron2020.claims.evaluate_h4`. Every kernel is computed by
:func:`ntkrepro.kernels.blocks.compute_kernel_blocks` (resumable) and inference is :func:`ntkrepro.kernels.inference.kernel_regression`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ntkrepro.data.cifar10 import (N_CLASSES, draw_splits, load_cifar10, preprocess,
                                   resolve_cifar10)
from ntkrepro.hron2020.regime import (boot_accuracies, curve_accuracies, learning_curve_plan, permuted_labels,
                                      training_resample_plan, two_draws)
from ntkrepro.hron2020.substitutes import h4_substitutes
from ntkrepro.hron2020.substitutes import is_official_cifar10 as is_official_archive
from ntkrepro.io import canonical_hash, sha256_file, write_npz
from ntkrepro.kernels.blocks import block_grid, compute_kernel_blocks, describe
from ntkrepro.kernels.device_regression import regression_backend
from ntkrepro.kernels.fast import BACKENDS, from_stax_builder
from ntkrepro.kernels.fast import kernel_fn as backend_kernel_fn
from ntkrepro.kernels.inference import one_hot, predicted_classes
from ntkrepro.run import RunContext
from ntkrepro.stats import bootstrap_ci, paired_bootstrap

# Imports inside functions (issue 40): those left in a function listed in
# ntkrepro.decisive_cells.COMPUTE_CODE stay there, as its source is hashed into the archived decisive cells
# (H4: kernels.fast in build_sweep_model). ntkrepro.nt is imported where it is used (build_model,
# jitted_kernel_fn): it loads neural-tangents, absent from the current-jax environment and the GPU machine,
# where this module runs with the fast kernels.

log = logging.getLogger("ntkrepro.hron2020")

FAMILIES = ("flatten", "gap", "lap", "vanilla", "struct", "residual")
ATTENTION_FAMILIES = ("vanilla", "struct", "residual")
KERNELS = ("nngp", "ntk")


# --------------------------------------------------------------------------------------------
# Models

def _attention(arch: Mapping[str, Any], structured: bool, stax):
    width = int(arch.get("width", 64))
    kw: dict[str, Any] = dict(linear_scaling=True, attention_mechanism=str(arch.get("attention_mechanism", "IDENTITY")),
                              W_key_std=float(arch.get("W_qk_std", 1.0)), W_query_std=float(arch.get("W_qk_std", 1.0)),
                              W_value_std=float(arch.get("W_std", 1.0)), W_out_std=1.0, b_std=None)
    if structured:
        ell2 = float(arch.get("pos_emb_length", 1.0)) ** 2
        kw.update(pos_emb_type="SUM", pos_emb_p_norm=2, pos_emb_decay_fn=lambda r: 1.0 / (1.0 + r / ell2),
                  W_pos_emb_std=float(arch.get("W_pos_emb_std", 1.0)))
    return stax.GlobalSelfAttention(width, width, width, int(arch.get("n_heads", 1)), **kw)


def _readout(stax, family: str, arch: Mapping[str, Any], n_out: int) -> list:
    """The layers of ``family`` after the conv stack, ending in ``Dense(n_out)`` (module table)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; one of {FAMILIES}")
    width = int(arch.get("width", 64))
    w_std, b_std = float(arch.get("W_std", 2.0 ** 0.5)), float(arch.get("b_std", 0.05))
    if family == "flatten":
        tail = [stax.Flatten()]
    elif family == "gap":
        tail = [stax.GlobalAvgPool()]
    elif family == "lap":
        w = int(arch.get("lap_window", 2))
        tail = [stax.AvgPool((w, w), strides=(w, w), padding="VALID"), stax.Flatten()]
    elif family == "vanilla":
        tail = [_attention(arch, False, stax), stax.Flatten()]
    elif family == "struct":
        tail = [_attention(arch, True, stax), stax.LayerNorm(axis=-1), stax.Flatten()]
    else:  # residual
        tail = [stax.Conv(width, (1, 1), W_std=w_std, b_std=b_std), stax.FanOut(2),
                stax.parallel(stax.Identity(), _attention(arch, True, stax)), stax.FanInSum(),
                stax.LayerNorm(axis=-1), stax.Flatten()]
    return [*tail, stax.Dense(n_out, W_std=1.0, b_std=0.0)]


def _conv_stack(stax, depth: int, arch: Mapping[str, Any]) -> list:
    """``depth`` blocks ``Conv(3x3, SAME) -> ReLU`` (the preceding depth)."""
    if depth < 0:
        raise ValueError("depth must be >= 0")
    width = int(arch.get("width", 64))
    w_std, b_std = float(arch.get("W_std", 2.0 ** 0.5)), float(arch.get("b_std", 0.05))
    layers = []
    for _ in range(depth):
        layers += [stax.Conv(width, (3, 3), padding="SAME", W_std=w_std, b_std=b_std), stax.Relu()]
    return layers


def build_model(family: str, depth: int, arch: Mapping[str, Any], n_out: int = N_CLASSES):
    """``(init_fn, apply_fn, kernel_fn)`` of the model ``family`` with ``depth`` conv blocks (module table)."""
    from ntkrepro.nt import stax

    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; one of {FAMILIES}")
    return stax.serial(*_conv_stack(stax, depth, arch), *_readout(stax, family, arch, n_out))


def build_sweep_model(families: Sequence[str], depth: int, arch: Mapping[str, Any], n_out: int = N_CLASSES):
    r"""One :mod:`ntkrepro.kernels.fast` model whose outputs are the models of every family in
    ``families`` at ``depth``: the shared conv stack, then ``FanOut`` into one readout per family
    (``parallel``, no ``FanInSum``). Its ``kernel_fn`` returns one ``Kernel`` per family, each equal to
    :func:`build_model`'s (a readout's NNGP and NTK depend only on the layers on its own path: the
    other branches' weights do not reach its output; ``tests/test_h4_decisive.py`` checks it against
    the standalone models and neural-tangents). The conv stack -- the costly part at 8x8, a
    full-covariance stencil and ReLU per pair and layer -- is computed once for all families."""
    from ntkrepro.kernels import fast

    for f in families:
        if f not in FAMILIES:
            raise ValueError(f"unknown family {f!r}; one of {FAMILIES}")
    branches = [fast.serial(*_readout(fast, f, arch, n_out)) for f in families]
    return fast.serial(*_conv_stack(fast, depth, arch), fast.FanOut(len(branches)), fast.parallel(*branches))


#: ``kernel_backend`` config value -> the backend name keyed into the kernel-block cache.
BACKEND_NAMES = {"nt": "neural-tangents", "fast": "ntkrepro.kernels.fast"}


def jitted_kernel_fn(family: str, depth: int, arch: Mapping[str, Any], nt_batch_size: int = 0,
                     backend: str = "nt"):
    """A ``kernel_fn(x1, x2, get)`` of :func:`build_model`'s model, computed by ``backend``:

    * ``"nt"``: neural-tangents' ``kernel_fn`` (the reference), jitted; with ``nt_batch_size > 0``
      wrapped by ``nt.batch`` over all local devices (paper scale);
    * ``"fast"``: :class:`ntkrepro.kernels.fast.FastKernelFn` of the same description (equal to
      neural-tangents to rounding, ``tests/test_fast_kernels.py``); it chunks rows itself, so
      ``nt_batch_size`` is not used.
    """
    if backend not in BACKENDS:
        raise ValueError(f"kernel_backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "fast":
        kf = backend_kernel_fn(from_stax_builder(build_model, family, depth, dict(arch)), "fast")
        return lambda a, b, get: kf(a, b, tuple(get))
    import jax

    from ntkrepro.nt import nt

    kfn = build_model(family, depth, arch)[2]
    if nt_batch_size > 0:
        batched = nt.batch(kfn, batch_size=int(nt_batch_size), device_count=-1, store_on_device=False)
        return lambda a, b, get: batched(a, b, get)
    jk = jax.jit(kfn, static_argnames=("get",))
    return lambda a, b, get: jk(a, b, get=tuple(get))


def _backend(params: Mapping[str, Any]) -> str:
    """The configured ``kernel_backend`` (``nt`` for configs written before the key existed)."""
    return str(params.get("kernel_backend", "nt"))


def _kernel_fn(params: Mapping[str, Any], family: str, depth: int):
    return jitted_kernel_fn(family, depth, dict(params["arch"]), int(params.get("nt_batch_size", 0)), _backend(params))


# --------------------------------------------------------------------------------------------
# Data

def load_splits(params: Mapping[str, Any], ctx: RunContext | None, *, need_test: bool = True) -> dict[str, Any]:
    """Class-balanced train / validation (from the official training set) and test subsets,
    preprocessed (downsample to ``image_size``, standardise). ``params['data']`` holds ``root``
    and the ``data: cifar10:`` section."""
    data_cfg = dict(params["data"])
    root = data_cfg.pop("root", None)
    path = resolve_cifar10(data_cfg, root)
    if ctx is not None:
        ctx.use_data(path)
    ds = load_cifar10(path)
    seed = int(params["seed"])
    n_train, n_val = int(params["n_train"]), int(params.get("n_val", 0))
    # replicate r >= 1 (ntkrepro.replicates): a draw disjoint from replicates 0..r-1; r = 0 as before
    idx = draw_splits(ds.train_y, ds.test_y, seed=seed, n_train=n_train, n_val=n_val,
                      n_test=int(params["n_test"]) if need_test else None, replicate=int(data_cfg.get("replicate") or 0))
    i_train, i_val = idx["train"], idx["val"]
    size = int(params["image_size"])
    out = {"x_train": preprocess(ds.train_x[i_train], size), "y_train": ds.train_y[i_train],
           "x_val": preprocess(ds.train_x[i_val], size), "y_val": ds.train_y[i_val],
           "archive": str(path), "archive_sha256": sha256_file(path),
           "n_available": {"train": int(ds.train_y.size), "test": int(ds.test_y.size)}}
    if need_test:
        i_test = idx["test"]
        out.update(x_test=preprocess(ds.test_x[i_test], size), y_test=ds.test_y[i_test])
    return out


# --------------------------------------------------------------------------------------------
# Compute

#: The kernel matrices H4 uses per (family, depth): name -> (rows, columns); ``None`` = symmetric.
KERNEL_PAIRS = {"train": ("train", None), "val": ("val", "train"), "valval": ("val", None),
                "test": ("test", "train"), "testval": ("test", "val")}


def _arch_tag(params: Mapping[str, Any]) -> str:
    return canonical_hash(describe(arch=dict(params["arch"]), image_size=int(params["image_size"])))[:12]


def _kernel(params: Mapping[str, Any], data: Mapping[str, np.ndarray], fam: str, depth: int, which: str, kfn=None,
            only_blocks=None) -> dict[str, np.ndarray]:
    """The (cached, resumable) kernel ``which`` of :data:`KERNEL_PAIRS` for ``fam`` at ``depth``."""
    rows, cols = KERNEL_PAIRS[which]
    if kfn is None:
        kfn = _kernel_fn(params, fam, depth)
    return compute_kernel_blocks(kfn, data[f"x_{rows}"], None if cols is None else data[f"x_{cols}"],
                                 block_size=int(params["block_size"]), cache_dir=params["cache_dir"], get=KERNELS,
                                 dtype=str(params.get("dtype", "float32")),
                                 desc=f"H4 {fam}-d{depth} {which} [{_arch_tag(params)}]", only_blocks=only_blocks,
                                 backend=BACKEND_NAMES[_backend(params)])


def shard_blocks(params: Mapping[str, Any], data: Mapping[str, np.ndarray], shard: int, n_shards: int
                 ) -> list[tuple[str, int, str, list[tuple[int, int]]]]:
    """Shard ``shard`` of ``n_shards`` of every kernel block H4 can need (all families, depths and
    :data:`KERNEL_PAIRS`), dealt round-robin: ``[(family, depth, which, blocks), ...]``."""
    if not 0 <= shard < n_shards:
        raise ValueError(f"shard {shard} not in [0, {n_shards})")
    depths = sorted({int(v) for v in params["depths"]} | {int(v) for v in dict(params.get("final_depth", {})).values()})
    b = int(params["block_size"])
    out, k = [], 0
    for fam in params["families"]:
        for depth in depths:
            for which, (rows, cols) in KERNEL_PAIRS.items():
                n1 = data[f"x_{rows}"].shape[0]
                n2 = n1 if cols is None else data[f"x_{cols}"].shape[0]
                mine = []
                for blk in block_grid(n1, n2, b, cols is None):
                    if k % n_shards == shard:
                        mine.append(blk)
                    k += 1
                if mine:
                    out.append((fam, depth, which, mine))
    return out


def run_h4_shard(params: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """Rule ``H4_hron2020_kernel_shard`` (paper scale): compute and cache one shard of H4's kernel
    blocks, so a cluster spreads the kernels over many jobs; ``run_h4`` then only assembles them."""
    shard, n_shards = int(params["shard"]), int(params["n_shards"])
    d = load_splits(params, ctx)
    jobs = shard_blocks(params, d, shard, n_shards)
    n_blocks = 0
    for fam, depth, which, blocks in ctx.progress(jobs, desc=f"H4 shard {shard}/{n_shards}"):
        _kernel(params, d, fam, depth, which, only_blocks=blocks)
        n_blocks += len(blocks)
    return {"claim": "H4", "shard": shard, "n_shards": n_shards, "n_blocks": n_blocks,
            "kernels": [[f, dp, w, len(b)] for f, dp, w, b in jobs]}


def _regression(params: Mapping[str, Any]):
    """The kernel-regression backend of params ``regression_backend`` (``scipy``, the default, or ``jax``:
    the default JAX device, batched; :mod:`ntkrepro.kernels.device_regression`, the same numbers)."""
    return regression_backend(params.get("regression_backend"))


def select_on_validation(params: Mapping[str, Any], d: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Step 1 of :func:`run_h4`: for every (family, depth, kernel) the diagonal regulariser with the
    best validation accuracy (:func:`ntkrepro.kernels.inference.select_diag_reg`), that accuracy,
    the scores of the whole grid and the per-image validation correctness at the selected value
    (the H4 depth ordering resamples images)."""
    yt, yv = d["y_train"], d["y_val"]
    grid = [float(v) for v in params["diag_reg_grid"]]
    reg = _regression(params)
    sweep = []
    for fam in params["families"]:
        for depth in (int(v) for v in params["depths"]):
            kfn = _kernel_fn(params, fam, depth)
            k_tt = _kernel(params, d, fam, depth, "train", kfn)
            k_vt = _kernel(params, d, fam, depth, "val", kfn)
            for g in KERNELS:
                best, scores = reg.select_diag_reg(k_tt[g], k_vt[g], one_hot(yt, N_CLASSES), one_hot(yv, N_CLASSES),
                                                   grid)
                val_acc = max(s["accuracy"] for s in scores)
                val_ok = predicted_classes(reg.kernel_regression(k_tt[g], k_vt[g], one_hot(yt, N_CLASSES), best)) == yv
                sweep.append({"family": fam, "depth": depth, "kernel": g, "diag_reg": best, "val_accuracy": val_acc,
                              "scores": scores, "val_correct": val_ok.astype(int).tolist()})
                log.info("H4 %s-d%d %s: val acc %.3f (diag_reg %g)", fam, depth, g, val_acc, best)
    return sweep


def final_test(params: Mapping[str, Any], d: Mapping[str, Any], sweep: list[dict[str, Any]], *,
               null_pairs: bool = False) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
    """Step 2 of :func:`run_h4`: per family and kernel, the validation-selected depth (ties ->
    shallower; ``final_depth`` overrides) and regulariser, refit on train :math:`\\cup` validation,
    test accuracy with a bootstrap CI. Returns the ``final`` rows and the per-image test
    correctness ``{"<family>_<kernel>": 0/1 array}``.

    Each row also gets, from the same kernels (issue 21, no new kernel compute): ``boot_accuracy``,
    the test accuracy on every draw of the two-way bootstrap (training rows of train :math:`\\cup`
    validation and test images resampled jointly, the same draws for every model:
    :func:`ntkrepro.hron2020.regime.boot_accuracies`), and ``curve_accuracy``, the test accuracy
    refitted on each random training subset of the learning curve (:func:`h4_resample_plans`).
    With ``null_pairs``, each attention family's rows also get ``two_draws``: the model fitted on two
    disjoint halves of train :math:`\\cup` validation (:func:`ntkrepro.hron2020.regime.two_draws`),
    the ordering control's null pair (issue 28)."""
    seed, n_boot = int(params["seed"]), int(params["n_boot"])
    override = {k: int(v) for k, v in dict(params.get("final_depth", {})).items()}
    y_full = one_hot(np.concatenate([d["y_train"], d["y_val"]]), N_CLASSES)
    plan, curve = h4_resample_plans(params, y_full.shape[0], d["y_test"].shape[0])
    reg = _regression(params)
    final, correct = [], {}
    for fam in params["families"]:
        for g in KERNELS:
            rows = [r for r in sweep if r["family"] == fam and r["kernel"] == g]
            sel = min(rows, key=lambda r: (-r["val_accuracy"], r["depth"]))
            depth = override.get(fam, sel["depth"])
            kfn = _kernel_fn(params, fam, depth)
            k_tt, k_vt, k_vv, k_st, k_sv = (_kernel(params, d, fam, depth, w, kfn)[g]
                                            for w in ("train", "val", "valval", "test", "testval"))
            k_full = np.block([[k_tt, k_vt.T], [k_vt, k_vv]])
            k_test = np.concatenate([k_st, k_sv], axis=1)
            pred, jitter = reg.kernel_regression(k_full, k_test, y_full, sel["diag_reg"], return_jitter=True)
            ok = (predicted_classes(pred) == d["y_test"]).astype(np.int8)
            correct[f"{fam}_{g}"] = ok
            acc = bootstrap_ci(ok.astype(float), np.mean, n_boot=n_boot, seed=seed)

            def fit(ktt, kst, y, lam=sel["diag_reg"]):
                return predicted_classes(reg.kernel_regression(ktt, kst, y, lam)) == d["y_test"]

            many = reg.correct_many(k_full, k_test, y_full, sel["diag_reg"], d["y_test"])

            final.append({"family": fam, "kernel": g, "depth": depth, "selected_depth": sel["depth"],
                          "diag_reg": sel["diag_reg"], "val_accuracy": sel["val_accuracy"],
                          "test_accuracy": acc.as_dict(), "jitter": jitter,
                          "boot_accuracy": boot_accuracies(fit, k_full, k_test, y_full, plan, correct_many=many),
                          "curve_accuracy": curve_accuracies(fit, k_full, k_test, y_full, curve, correct_many=many)})
            if null_pairs and fam in ATTENTION_FAMILIES:
                rs = dict(params.get("train_resample") or {})
                final[-1]["two_draws"] = two_draws(
                    fit, k_full, k_test, y_full, n_boot=int(rs.get("n_boot", 200)),
                    fractions=rs.get("curve_fractions", [0.125, 0.25, 0.5, 1.0]), n_draws=int(rs.get("curve_draws", 5)),
                    seed=seed + 11, min_size=N_CLASSES,
                    correct_many_for=lambda kt, ks, y, lam=sel["diag_reg"]: reg.correct_many(kt, ks, y, lam,
                                                                                             d["y_test"]))
            log.info("H4 final %s %s depth %d: test acc %.3f [%.3f, %.3f]", fam, g, depth, acc.value, acc.low, acc.high)
    return final, correct


def h4_resample_plans(params: Mapping[str, Any], n_fit: int, n_test: int):
    """The two-way bootstrap plan and the learning-curve plan of H4's final models (config
    ``train_resample``: ``n_boot``, ``curve_fractions``, ``curve_draws``; seeds derived from ``seed``)."""
    rs = dict(params.get("train_resample") or {})
    seed = int(params["seed"])
    plan = training_resample_plan(n_fit, n_test, int(rs.get("n_boot", 200)), seed + 7)
    curve = learning_curve_plan(n_fit, rs.get("curve_fractions", [0.125, 0.25, 0.5, 1.0]),
                                int(rs.get("curve_draws", 5)), seed + 8, min_size=N_CLASSES)
    return plan, curve


def h4_resample_record(params: Mapping[str, Any], n_fit: int, n_test: int) -> dict[str, Any]:
    """What the results record of the plans of :func:`h4_resample_plans` (the criterion reads it)."""
    plan, curve = h4_resample_plans(params, n_fit, n_test)
    return {"n_boot": int(plan["train"].shape[0]), "n_fit": int(n_fit), "curve_sizes": [int(m) for m, _ in curve],
            "paper_n_fit": 50000, "chance": 1.0 / N_CLASSES}


def orderings(params: Mapping[str, Any], final: list[dict[str, Any]], correct: Mapping[str, np.ndarray]
              ) -> list[dict[str, Any]]:
    """Step 3 of :func:`run_h4`: paired bootstrap intervals of test-accuracy differences for the
    paper's orderings, per kernel: Struct - Vanilla, Residual - Vanilla, and (best attention family
    on validation) - GAP and - LAP."""
    seed, n_boot = int(params["seed"]), int(params["n_boot"])
    families = list(params["families"])

    def val_of(fam: str, g: str) -> float:
        return next(r["val_accuracy"] for r in final if r["family"] == fam and r["kernel"] == g)

    comparisons = []
    for g in KERNELS:
        att = [f for f in ATTENTION_FAMILIES if f in families]
        best_att = max(att, key=lambda f: (val_of(f, g), -ATTENTION_FAMILIES.index(f))) if att else None
        pairs = [("struct", "vanilla"), ("residual", "vanilla")]
        if best_att:
            pairs += [(best_att, "gap"), (best_att, "lap")]
        for k, (a, b) in enumerate(pairs):
            if a in families and b in families:
                diff = paired_bootstrap(correct[f"{a}_{g}"], correct[f"{b}_{g}"], n_boot=n_boot, seed=seed + 1 + k)
                comparisons.append({"kernel": g, "a": a, "b": b, "a_is_best_attention_on_val": a == best_att,
                                    "difference": diff.as_dict()})
    return comparisons


def null_ordering_control(body: Mapping[str, Any]) -> dict[str, Any]:
    r"""The H4 ordering control (issue 28): the real run with every ordering A > B replaced by its null
    pair, A fitted on one random half of train :math:`\cup` validation against A fitted on the other
    half (the same family and kernel, two independent training draws of equal size: true difference
    zero). The final models (and so the regime rule) and the depth ordering are the real run's."""
    model = {(f["family"], f["kernel"]): f for f in body["final"]}
    ordering_models, comparisons, seen = [], [], set()
    for c in body["comparisons"]:
        a, g = c["a"], c["kernel"]
        if (a, g) in seen or "two_draws" not in model[(a, g)]:
            continue
        seen.add((a, g))
        names = [f"{a} (half 1)", f"{a} (half 2)"]
        for name, half in zip(names, model[(a, g)]["two_draws"]):
            ordering_models.append({"family": name, "kernel": g, **half})
        h1, h2 = model[(a, g)]["two_draws"]
        comparisons.append({"kernel": g, "a": names[0], "b": names[1], "a_is_best_attention_on_val": False,
                            "difference": {"value": h1["accuracy"] - h2["accuracy"]}})
    final = [{k: v for k, v in f.items() if k != "two_draws"} for f in body["final"]]
    return {**body, "final": final, "ordering_models": ordering_models, "comparisons": comparisons,
            "control_note": "each ordering A > B replaced by A (one half of the training rows) > A (the other half)"}


def run_h4(params: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """Compute rule ``H4_hron2020_cifar10_kernels``: depth/regulariser selection on validation
    (:func:`select_on_validation`), final test accuracies with CIs (:func:`final_test`), paired
    accuracy differences for the paper's orderings (:func:`orderings`); kernels by the configured
    ``kernel_backend``. The result records its substitutes (:func:`h4_substitutes`) for the figure."""
    d = load_splits(params, ctx)

    def run(data: Mapping[str, Any], null_pairs: bool = False) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        sweep = select_on_validation(params, data)
        final, correct = final_test(params, data, sweep, null_pairs=null_pairs)
        n_fit = int(data["x_train"].shape[0] + data["x_val"].shape[0])
        return ({"image_size": int(params["image_size"]), "n_train": int(data["x_train"].shape[0]),
                 "n_val": int(data["x_val"].shape[0]), "n_test": int(data["x_test"].shape[0]),
                 "families": list(params["families"]), "depths": [int(v) for v in params["depths"]],
                 "arch": dict(params["arch"]), "kernel_backend": _backend(params),
                 "archive": Path(data["archive"]).name, "archive_sha256": data["archive_sha256"],
                 "archive_official": is_official_archive(data["archive_sha256"]),
                 "n_available": data["n_available"], "sweep": sweep, "final": final,
                 "comparisons": orderings(params, final, correct),
                 "train_resample": h4_resample_record(params, n_fit, int(data["x_test"].shape[0]))}, correct)

    body, correct = run(d, null_pairs=True)
    if ctx.outputs.get("predictions"):
        write_npz(ctx.outputs["predictions"],
                  {**{f"correct_{k}": v for k, v in correct.items()}, "y_test": d["y_test"]}, provenance=ctx.provenance())
    # negative control (issue 21): the same pipeline on the same (cached) kernels with the training
    # and validation labels permuted; the test labels are the real ones
    seed = int(params["seed"])
    ctrl, _ = run({**d, "y_train": permuted_labels(d["y_train"], seed + 99_991),
                   "y_val": permuted_labels(d["y_val"], seed + 99_992)})
    ctrl["control_note"] = "training and validation labels permuted (each split separately); same kernels, test set"
    ctrl["substitutes"] = h4_substitutes(ctrl, ctx.scale)
    out = {"claim": "H4", **body, "controls": {"permuted_labels": {"claim": "H4", **ctrl},
                                               "same_family_two_draws": {"claim": "H4", **null_ordering_control(body)}}}
    out["substitutes"] = h4_substitutes(out, ctx.scale)
    return out
