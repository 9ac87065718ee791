r"""H6 (Hron et al. 2020, Sec. 5 / Fig. 3 details): IMDb sentiment with GloVe inputs and
variable-length NNGP/NTK kernels of attention and pooling networks.

Inputs: review :math:`n` becomes :math:`X_n \in \mathbb R^{L\times 50}` -- GloVe 6B 50-d vectors of
its first :math:`L` tokens (:mod:`ntkrepro.data.text`; unknown words -> 0), the remaining positions
filled with ``mask_constant`` so that neural-tangents treats them as absent
(``kernel_fn(x1, x2, get, mask_constant=c)``): attention puts :math:`-\infty` on masked keys and
``GlobalAvgPool`` averages over unmasked positions only. Targets :math:`y=\pm 0.5`.

Model families (infinite width, neural-tangents ``stax``; defaults of its layers, i.e.
:math:`\sigma_w = 1`, no bias, as in ``examples/imdb.py``):

* ``gap``      -- GAP-only:  Dense(1) -> GlobalAvgPool -> Dense(1);
  NNGP :math:`K(X,X') = \frac{1}{|X||X'|\,D}\sum_{\ell,\ell'} x_\ell\cdot x'_{\ell'}` (unmasked
  :math:`\ell,\ell'`), NTK :math:`= 2K`;
* ``gap_fcn``  -- GAP-FCN:   Dense(1) -> GlobalAvgPool -> [Dense -> Relu] x depth -> Dense(1);
* ``cnn_gap``  -- CNN-GAP:   [Conv(k, VALID) -> Relu] x depth -> GlobalAvgPool -> Dense(1);
* ``struct``   -- Struct:    Conv(k, VALID) -> Relu -> [GlobalSelfAttention(1 head, positional
  embedding 'SUM', :math:`\sigma_{pos}=1`, decay :math:`d\mapsto 1/(1+d^2)`) -> Relu] x depth
  -> GlobalAvgPool -> Dense(1). ``depth = 1`` is exactly the network of ``examples/imdb.py``.

The leading token-wise ``Dense`` of ``gap``/``gap_fcn`` is there because neural-tangents' pooling
layers accept only a channel-independent mask and the input mask has one entry per channel;
``Dense`` collapses it (``jnp.all`` over channels). A linear token-wise layer commutes with
average pooling and with :math:`\sigma_w=1` leaves the NNGP unchanged (``tests/test_hron2020_h6.py``
checks GAP-only against the formula above); it only adds its own weights to the NTK.

Inference: :math:`\hat y_* = K_*(K + \lambda \bar k I)^{-1} y` (:mod:`ntkrepro.kernels.inference`)
with the NNGP (Bayesian posterior mean) or the NTK (infinite-time gradient descent) kernel;
:math:`\lambda` from ``diag_reg_grid`` by validation accuracy. The diagonal jitter :math:`\epsilon` that
:func:`ntkrepro.kernels.inference.kernel_regression` adds when the Cholesky factorisation fails
(:math:`K + (\lambda+\epsilon)\bar k I`; 0 when it does not) is recorded with every test-set
regression (``jitter``). Each family is represented by the
(depth, kernel) with the best validation accuracy; test accuracies get bootstrap intervals and
family differences *paired* bootstrap intervals over the same test reviews (the criterion,
:func:`ntkrepro.hron2020.claims.evaluate_h6`). Kernels are computed
in resumable, cached blocks (:func:`ntkrepro.kernels.blocks.compute_kernel_blocks`) where the
example uses ``nt.batch(batch_size=15)``; the numbers are the same.

Variable length (:func:`padding_invariance`): appending extra masked positions to a batch of
reviews must leave every kernel entry unchanged. Reviews are truncated to ``seq_len`` tokens and
the arrays carry :func:`mask_margin` further masked positions, so this holds for truncated
reviews too (see :func:`mask_margin`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ntkrepro.hron2020 import substitutes as _subs
from ntkrepro.hron2020.regime import boot_accuracies, curve_accuracies, permuted_labels, two_draws
from ntkrepro.hron2020.substitutes import h6_substitutes
from ntkrepro.hron2020.substitutes import is_official_imdb as is_official_archive
from ntkrepro.io import atomic_path
from ntkrepro.kernels.blocks import compute_kernel_blocks_sorted, describe
from ntkrepro.kernels.fast import BACKENDS, from_stax_builder
from ntkrepro.kernels.fast import kernel_fn as backend_kernel_fn
from ntkrepro.kernels.inference import accuracy, accuracy_with_ci, kernel_regression, select_diag_reg

# Imports inside functions (issue 40): those left in a function listed in
# ntkrepro.decisive_cells.COMPUTE_CODE stay there, as its source is hashed into the archived decisive cells
# (H6: data, io and regime in _prepare, h6_resample_plans; nt in build_kernel_fn). ntkrepro.nt is imported
# where it is used: it loads neural-tangents, absent from the current-jax environment and the GPU machine.

log = logging.getLogger("ntkrepro")

FAMILIES = ("gap", "gap_fcn", "cnn_gap", "struct")
# the paper's labels and sizes live in the numpy-only ntkrepro.hron2020.substitutes (issue 40: the criteria import
# them without this module); assigned here, not imported, as H6's compute-code hash reads FAMILY_LABELS by value
FAMILY_LABELS = _subs.FAMILY_LABELS
#: State of the art quoted by the paper for IMDb (accuracy).
SOTA_ACCURACY = _subs.SOTA_ACCURACY
#: The paper's selection protocol (train/valid/test reviews, tokens).
H6_PAPER_SIZES = _subs.H6_PAPER_SIZES
#: ``kernel_backend`` config value -> the backend name keyed into the kernel-block cache.
BACKEND_NAMES = {"nt": "neural-tangents", "fast": "ntkrepro.kernels.fast"}


def _pos_decay(d):
    return 1.0 / (1.0 + d ** 2)


def build_kernel_fn(family: str, depth: int, *, filter_size: int = 9, W_pos_emb_std: float = 1.0):
    """neural-tangents ``kernel_fn`` of one model (see the module docstring for the families)."""
    from ntkrepro.nt import stax

    if family not in FAMILIES:
        raise ValueError(f"unknown model family {family!r}; expected one of {FAMILIES}")
    if family != "gap" and depth < 1:
        raise ValueError(f"{family} needs depth >= 1, got {depth}")
    if family == "gap" and depth != 0:
        raise ValueError("the GAP-only family has depth 0")
    conv = lambda: stax.Conv(out_chan=1, filter_shape=(filter_size,), strides=(1,), padding="VALID")  # noqa: E731
    if family == "gap":
        layers = [stax.Dense(1), stax.GlobalAvgPool()]
    elif family == "gap_fcn":
        layers = [stax.Dense(1), stax.GlobalAvgPool()] + [l for _ in range(depth) for l in (stax.Dense(1), stax.Relu())]
    elif family == "cnn_gap":
        layers = [l for _ in range(depth) for l in (conv(), stax.Relu())] + [stax.GlobalAvgPool()]
    else:
        attn = lambda: stax.GlobalSelfAttention(  # noqa: E731
            n_chan_out=1, n_chan_key=1, n_chan_val=1, n_heads=1, pos_emb_type="SUM",
            W_pos_emb_std=W_pos_emb_std, pos_emb_decay_fn=_pos_decay)
        layers = [conv(), stax.Relu()] + [l for _ in range(depth) for l in (attn(), stax.Relu())]
        layers += [stax.GlobalAvgPool()]
    _, _, kernel_fn = stax.serial(*layers, stax.Dense(1))
    return kernel_fn


def model_grid(params: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(family, depth) pairs of the config: GAP-only, then each depth of the other families."""
    grid = [("gap", 0)]
    grid += [("gap_fcn", int(d)) for d in params["fcn_depths"]]
    grid += [("cnn_gap", int(d)) for d in params["cnn_depths"]]
    grid += [("struct", int(d)) for d in params["attention_layers"]]
    return grid


def mask_margin(params: Mapping[str, Any]) -> int:
    r"""Trailing masked positions every review needs so that its kernel does not depend on the
    array length: :math:`\lfloor (k-1)/2\rfloor` per VALID convolution on the deepest path.

    neural-tangents masks a VALID convolution's output iff the input at the window *centre* is
    masked (``_pool_mask``), so an output whose centre is the last real token reads
    :math:`(k-1)/2` positions past it; those must exist (masked, hence zero) for the kernel to
    be the same as with any longer padding. The margin restores exactly that.
    """
    convs = [int(d) for d in params["cnn_depths"]] + ([1] if params["attention_layers"] else [])
    return (int(params["filter_size"]) - 1) // 2 * max(convs, default=0)


def model_name(family: str, depth: int) -> str:
    return FAMILY_LABELS[family] + ("" if family == "gap" else f" (depth {depth})")


def _jitted(kernel_fn):
    """``kernel_fn`` jitted (``get``, ``mask_constant`` static), neural-tangents' warning about
    linear-scaling attention silenced for the call only."""
    import warnings

    import jax

    jk = jax.jit(kernel_fn, static_argnames=("get", "mask_constant"))

    def call(x1, x2=None, get=("nngp", "ntk"), mask_constant=None):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Linear scaling attention used")
            return jk(x1, x2, get=get if isinstance(get, str) else tuple(get), mask_constant=mask_constant)

    return call


def model_kernel_fn(family: str, depth: int, params: Mapping[str, Any], **fast_options: Any):
    """``kernel_fn(x1, x2, get, mask_constant=c)`` of one model computed by the configured
    ``kernel_backend``: ``"nt"`` (neural-tangents, the reference; jitted :func:`build_kernel_fn`)
    or ``"fast"`` (:class:`ntkrepro.kernels.fast.FastKernelFn` of the same description, equal to
    neural-tangents to rounding: ``tests/test_fast_kernels.py``; ``fast_options`` are its keyword
    arguments)."""
    backend = _backend(params)
    kw = dict(filter_size=int(params["filter_size"]), W_pos_emb_std=float(params["W_pos_emb_std"]))
    if backend == "fast":
        return backend_kernel_fn(from_stax_builder(build_kernel_fn, family, depth, **kw), "fast", **fast_options)
    return _jitted(build_kernel_fn(family, depth, **kw))


def _backend(params: Mapping[str, Any]) -> str:
    """The configured ``kernel_backend`` (``nt`` for configs written before the key existed)."""
    backend = str(params.get("kernel_backend", "nt"))
    if backend not in BACKENDS:
        raise ValueError(f"kernel_backend must be one of {BACKENDS}, got {backend!r}")
    return backend


def padding_invariance(kernel_fn, x: np.ndarray, extra: int, mask_constant: float,
                       get: Sequence[str] = ("nngp", "ntk")) -> dict[str, float]:
    r"""Max relative change of :math:`K(X, X)` when ``extra`` masked positions are appended.

    Returns, per kernel in ``get``, :math:`\max_{ij}|K'_{ij}-K_{ij}| / \max_{ij}|K_{ij}|`.
    """
    x = np.asarray(x, np.float32)
    pad = np.full((x.shape[0], extra, x.shape[2]), mask_constant, np.float32)
    xp = np.concatenate([x, pad], axis=1)
    k0 = kernel_fn(x, x, tuple(get), mask_constant=mask_constant)
    k1 = kernel_fn(xp, xp, tuple(get), mask_constant=mask_constant)
    out = {}
    for g in get:
        a, b = np.asarray(getattr(k0, g), np.float64), np.asarray(getattr(k1, g), np.float64)
        out[g] = float(np.max(np.abs(a - b)) / np.max(np.abs(a)))
    return out


# --------------------------------------------------------------------------------------------
# the compute rule


def _prepare(params: Mapping[str, Any], ctx, final: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Load IMDb, draw the protocol subsets, tokenize and embed them.

    Without ``final``: train/valid/test of the selection protocol. With ``final``
    (``{"n_train", "n_test"}``): the final-table split, drawn with seed ``seed + 1000``
    (``valid`` is then empty).
    """
    from ntkrepro.data import glove, imdb, text
    from ntkrepro.io import sha256_file

    path = imdb.resolve(params["imdb"])
    ctx.use_data(path)
    archive_sha256 = sha256_file(path)
    # replicate r >= 1 (ntkrepro.replicates): the reviews replicates 0..r-1 did not use; r = 0: all
    reviews = imdb.replicate_pool(imdb.read_reviews(path), params)
    if final is None:
        subsets = imdb.split_protocol(reviews, n_train=params["n_train"], n_valid=params["n_valid"],
                                      n_test=params["n_test"], seed=params["seed"])
    else:
        rng = np.random.default_rng(int(params["seed"]) + 1000)
        (train,) = imdb.balanced_draw(reviews["train"], [int(final["n_train"])], rng, "train")
        (test,) = imdb.balanced_draw(reviews["test"], [int(final["n_test"])], rng, "test")
        subsets = {"train": train, "valid": [], "test": test}
    tokens = {k: [text.tokenize(r.text) for r in v] for k, v in subsets.items()}
    vocab = text.vocabulary(t for v in tokens.values() for t in v)
    gcfg = dict(params.get("glove") or {})
    for p in glove.source_files(gcfg):
        ctx.use_data(p)
    vectors = glove.load_vectors(vocab, gcfg)
    L, c = int(params["seq_len"]), float(params["mask_constant"])
    total = L + mask_margin(params)
    xs, lengths = {}, {}
    for k in subsets:
        if not tokens[k]:
            continue
        xs[k], lengths[k] = text.embed(tokens[k], vectors, length=L, dim=int(gcfg.get("dim", 50)),
                                       mask_constant=c, array_length=total)
    all_tok = [t for v in tokens.values() for s in v for t in s[:L]]
    raw_len = np.array([len(s) for v in tokens.values() for s in v])
    stats = {
        "vocabulary": len(vocab),
        "vocabulary_with_vector": len(vectors),
        "token_oov_rate": float(np.mean([t not in vectors for t in all_tok])),
        "median_review_tokens": float(np.median(raw_len)),
        "fraction_truncated": float(np.mean(raw_len > L)),
        "mean_kept_tokens": float(np.mean(np.concatenate(list(lengths.values())))),
    }
    ys = {k: imdb.targets(v) for k, v in subsets.items() if v}
    ids = {k: [f"{r.split}/{'pos' if r.label else 'neg'}/{r.id}" for r in v] for k, v in subsets.items()}
    return {"x": xs, "y": ys, "lengths": lengths, "stats": stats, "ids": ids, "archive": Path(path).name,
            "archive_sha256": archive_sha256}


def h6_resample_plans(params: Mapping[str, Any], n_fit: int, n_test: int):
    """Two-way bootstrap plan and learning-curve plan of H6's regressions (config ``train_resample``:
    ``n_boot``, ``curve_fractions``, ``curve_draws``; seeds derived from ``seed``). Issue 21."""
    from ntkrepro.hron2020.regime import learning_curve_plan, training_resample_plan

    rs = dict(params.get("train_resample") or {})
    seed = int(params["seed"])
    plan = training_resample_plan(n_fit, n_test, int(rs.get("n_boot", 200)), seed + 7)
    curve = learning_curve_plan(n_fit, rs.get("curve_fractions", [0.125, 0.25, 0.5, 1.0]),
                                int(rs.get("curve_draws", 5)), seed + 8, min_size=4)
    return plan, curve


def h6_resample_record(params: Mapping[str, Any], n_fit: int, n_test: int, paper_n_fit: int) -> dict[str, Any]:
    """What the results record of :func:`h6_resample_plans` (the criterion reads it)."""
    plan, curve = h6_resample_plans(params, n_fit, n_test)
    return {"n_boot": int(plan["train"].shape[0]), "n_fit": int(n_fit), "curve_sizes": [int(m) for m, _ in curve],
            "paper_n_fit": int(paper_n_fit), "chance": 0.5}


def _resampled(params: Mapping[str, Any], kt: np.ndarray, ks: np.ndarray, y_fit: np.ndarray, y_test: np.ndarray,
               diag_reg: float, null_pair: bool = False) -> dict[str, Any]:
    """``boot_accuracy`` and ``curve_accuracy`` of one regression (:mod:`ntkrepro.hron2020.regime`);
    with ``null_pair`` also ``two_draws``, the regression on two disjoint halves of its training
    reviews (:func:`ntkrepro.hron2020.regime.two_draws`: the ordering control's null pair, issue 28)."""
    plan, curve = h6_resample_plans(params, kt.shape[0], ks.shape[0])
    pos = y_test.reshape(-1) > 0

    def fit_ok(ktt, kst, y):
        return (kernel_regression(ktt, kst, y, diag_reg).reshape(-1) > 0) == pos

    out: dict[str, Any] = {"boot_accuracy": boot_accuracies(fit_ok, kt, ks, y_fit, plan),
                           "curve_accuracy": curve_accuracies(fit_ok, kt, ks, y_fit, curve)}
    if null_pair:
        rs = dict(params.get("train_resample") or {})
        out["two_draws"] = two_draws(fit_ok, kt, ks, y_fit, n_boot=int(rs.get("n_boot", 200)),
                                     fractions=rs.get("curve_fractions", [0.125, 0.25, 0.5, 1.0]),
                                     n_draws=int(rs.get("curve_draws", 5)), seed=int(params["seed"]) + 11)
    return out


def _final_table(params: Mapping[str, Any], ctx, families: Mapping[str, Any], permute_seed: int | None = None
                 ) -> dict[str, Any]:
    """Refit each family's validation-selected (depth, kernel, diag_reg) on the final split
    (paper: 25K train / 25K test) and evaluate it on the final test reviews (with
    ``permute_seed``: the training labels permuted, the negative control)."""
    data = _prepare(params, ctx, final=params["final"])
    x, y, lens = data["x"], dict(data["y"]), data["lengths"]
    if permute_seed is not None:
        y["train"] = permuted_labels(y["train"], permute_seed)
    c = float(params["mask_constant"])
    out = {}
    for fam, sel in ctx.progress(list(families.items()), desc="H6 final table"):
        kfn = model_kernel_fn(fam, int(sel["depth"]), params)
        desc = "H6 final " + describe(family=fam, depth=sel["depth"], filter_size=params["filter_size"],
                                      W_pos_emb_std=params["W_pos_emb_std"])
        kw = dict(block_size=int(params["block_size"]), cache_dir=Path(params["cache_dir"]), get=(sel["kernel"],),
                  dtype=params["dtype"], desc=desc, backend=BACKEND_NAMES[_backend(params)], mask_constant=c)
        k_tt = compute_kernel_blocks_sorted(kfn, x["train"], lens["train"], **kw)[sel["kernel"]]
        k_st = compute_kernel_blocks_sorted(kfn, x["test"], lens["test"], x["train"], lens["train"],
                                            **kw)[sel["kernel"]]
        pred, jitter = kernel_regression(k_tt, k_st, y["train"], float(sel["diag_reg"]), return_jitter=True)
        acc = accuracy_with_ci(pred, y["test"], n_boot=int(params["n_boot"]), seed=int(params["seed"]))
        out[fam] = {**{k: sel[k] for k in ("label", "depth", "kernel", "diag_reg")},
                    "test_accuracy": acc.as_dict(), "jitter": float(jitter),
                    "test_correct": ((pred.reshape(-1) > 0) == (y["test"].reshape(-1) > 0)).astype(int).tolist(),
                    **_resampled(params, k_tt, k_st, y["train"], y["test"], float(sel["diag_reg"]),
                                 null_pair=fam in NULL_PAIR_FAMILIES and permute_seed is None)}
        log.info("final %s: test %.3f [%.3f, %.3f]", FAMILY_LABELS[fam], acc.value, acc.low, acc.high)
    return {"n_train": int(params["final"]["n_train"]), "n_test": int(params["final"]["n_test"]),
            "families": out, "text_stats": data["stats"],
            "train_resample": h6_resample_record(params, int(params["final"]["n_train"]),
                                                 int(params["final"]["n_test"]), 25000)}


def pad_check_indices(lengths: np.ndarray, n_reviews: int, seed: int) -> np.ndarray:
    """Test reviews of the padding check: the ``n_reviews // 2`` shortest (their own padding) and
    random others (mostly truncated), sorted."""
    shortest = np.argsort(lengths, kind="stable")[: n_reviews // 2]
    rest = np.setdiff1d(np.arange(len(lengths)), shortest)
    others = np.random.default_rng(seed + 1).choice(rest, n_reviews - len(shortest), replace=False)
    return np.sort(np.concatenate([shortest, others]))


#: Families whose regressions also get the ordering control's null pair (the A of ordering (a), Struct > GAP-only).
NULL_PAIR_FAMILIES = ("struct",)


def fit_model(params: Mapping[str, Any], data: Mapping[str, Any], family: str, depth: int, pad_idx: np.ndarray,
              pad: Mapping[str, float] | None = None, null_pair: bool = False
              ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """One model of :func:`model_grid`: its NNGP and NTK (cached length-sorted blocks,
    :func:`ntkrepro.kernels.blocks.compute_kernel_blocks_sorted`) train x train and
    (valid + test) x train, diag_reg selected on validation, test accuracy with a bootstrap CI,
    padding invariance on the reviews ``pad_idx`` (or ``pad``, when already measured), and the
    two-way bootstrap and learning curve of each regression (:func:`_resampled`). Returns the
    model's entry and its per-review test correctness per kernel."""
    x, y, lens = data["x"], data["y"], data["lengths"]
    c = float(params["mask_constant"])
    n_boot, seed = int(params["n_boot"]), int(params["seed"])
    n_valid = x["valid"].shape[0]
    name = model_name(family, depth)
    jk = model_kernel_fn(family, depth, params)
    desc = "H6 " + describe(family=family, depth=depth, filter_size=params["filter_size"],
                            W_pos_emb_std=params["W_pos_emb_std"])
    kw = dict(block_size=int(params["block_size"]), cache_dir=Path(params["cache_dir"]), get=("nngp", "ntk"),
              dtype=params["dtype"], desc=desc, backend=BACKEND_NAMES[_backend(params)], mask_constant=c)
    # length-aware blocks (issue 36): reviews of similar length share a block, computed at its own length
    k_tt = compute_kernel_blocks_sorted(jk, x["train"], lens["train"], **kw)
    k_et = compute_kernel_blocks_sorted(jk, np.concatenate([x["valid"], x["test"]]),
                                        np.concatenate([lens["valid"], lens["test"]]), x["train"], lens["train"], **kw)
    # the fast backend without its exact tail trimming: otherwise the check would compare two
    # computations on the same trimmed arrays and could not fail
    if pad is None:
        check_fn = model_kernel_fn(family, depth, params, trim=False) if _backend(params) == "fast" else jk
        pad = padding_invariance(check_fn, x["test"][pad_idx], int(params["pad_check"]["extra"]), c)
    entry = {"family": family, "depth": depth, "name": name, "padding_invariance": pad, "kernels": {}}
    correct = {}
    for g in ("nngp", "ntk"):
        kt, kv, ks = k_tt[g], k_et[g][:n_valid], k_et[g][n_valid:]
        best, scores = select_diag_reg(kt, kv, y["train"], y["valid"], [float(v) for v in params["diag_reg_grid"]])
        pred, jitter = kernel_regression(kt, ks, y["train"], best, return_jitter=True)
        acc = accuracy_with_ci(pred, y["test"], n_boot=n_boot, seed=seed)
        correct[g] = ((pred.reshape(-1) > 0) == (y["test"].reshape(-1) > 0)).astype(int)
        entry["kernels"][g] = {
            "diag_reg": best,
            "valid_accuracy": max(s["accuracy"] for s in scores if s["diag_reg"] == best),
            "valid_scores": scores,
            "test_accuracy": acc.as_dict(),
            "jitter": float(jitter),
            "train_accuracy": accuracy(kernel_regression(kt, kt, y["train"], best), y["train"]),
            **_resampled(params, kt, ks, y["train"], y["test"], best,
                         null_pair=null_pair and family in NULL_PAIR_FAMILIES),
        }
        log.info("%s %s: diag_reg %g, valid %.3f, test %.3f [%.3f, %.3f]", name, g, best,
                 entry["kernels"][g]["valid_accuracy"], acc.value, acc.low, acc.high)
    return entry, correct


def select_families(models: Sequence[Mapping[str, Any]], correct: Mapping[tuple[str, int, str], np.ndarray]
                    ) -> dict[str, dict[str, Any]]:
    """Each family's representative: the (depth, kernel) with the best validation accuracy (ties:
    first in config order, NNGP before NTK), with its test accuracy and per-review correctness."""
    families = {}
    for fam in FAMILIES:
        cands = [(m, g) for m in models if m["family"] == fam for g in ("nngp", "ntk")]
        if not cands:
            continue
        m, g = max(cands, key=lambda mg: mg[0]["kernels"][mg[1]]["valid_accuracy"])
        families[fam] = {"label": FAMILY_LABELS[fam], "depth": m["depth"], "kernel": g,
                         "diag_reg": m["kernels"][g]["diag_reg"],
                         "valid_accuracy": m["kernels"][g]["valid_accuracy"],
                         "test_accuracy": m["kernels"][g]["test_accuracy"],
                         "jitter": m["kernels"][g]["jitter"],
                         "test_correct": correct[(fam, m["depth"], g)].tolist(),
                         "boot_accuracy": m["kernels"][g]["boot_accuracy"],
                         "curve_accuracy": m["kernels"][g]["curve_accuracy"]}
        if "two_draws" in m["kernels"][g]:
            families[fam]["two_draws"] = m["kernels"][g]["two_draws"]
    return families


def null_ordering_control(body: Mapping[str, Any]) -> dict[str, Any]:
    """The H6 ordering control (issue 28): the real results with part (a), Struct > GAP-only, judged
    on the null pair Struct (one random half of the training reviews) against Struct (the other
    half) -- the same family and kernel, two independent training draws of equal size: true
    difference zero. Parts (b), (c), the padding check and the regime are the real run's."""
    fam = (body.get("final") or {}).get("families") or body["families"]
    if "two_draws" not in fam.get("struct", {}):
        raise ValueError("H6 null ordering control: the Struct representative lacks its two_draws")
    names = ["struct (half 1)", "struct (half 2)"]
    models = {n: {"label": f"Struct ({n.split('(')[1]}", **half} for n, half in zip(names, fam["struct"]["two_draws"])}
    return {**body, "ordering_models": models, "ordering_pair": names,
            "control_note": "part (a) judged on Struct (one half of the training reviews) vs Struct (the other half)"}


def run_h6(params: dict[str, Any], ctx) -> dict[str, Any]:
    """Compute rule ``H6_hron2020_imdb``: every model of :func:`model_grid` fitted and evaluated
    (:func:`fit_model`), family representatives chosen on validation (:func:`select_families`),
    the final table if configured (:func:`_final_table`). Kernels by the configured
    ``kernel_backend``. The result records its substitutes (:func:`h6_substitutes`) for the figure."""
    data = _prepare(params, ctx)
    pad_idx = pad_check_indices(data["lengths"]["test"], int(params["pad_check"]["n_reviews"]), int(params["seed"]))
    # negative control (issue 21): training and validation labels permuted, the same (cached)
    # kernels, test reviews and padding check
    seed = int(params["seed"])
    y_perm = {**data["y"], "train": permuted_labels(data["y"]["train"], seed + 99_991),
              "valid": permuted_labels(data["y"]["valid"], seed + 99_992)}
    models, correct, c_models, c_correct = [], {}, [], {}
    for family, depth in ctx.progress(model_grid(params), desc="H6 models"):
        entry, ok = fit_model(params, data, family, depth, pad_idx, null_pair=True)
        models.append(entry)
        correct.update({(family, depth, g): v for g, v in ok.items()})
        c_entry, c_ok = fit_model(params, {**data, "y": y_perm}, family, depth, pad_idx,
                                  pad=entry["padding_invariance"])
        c_models.append(c_entry)
        c_correct.update({(family, depth, g): v for g, v in c_ok.items()})
    families = select_families(models, correct)
    c_families = select_families(c_models, c_correct)
    final = _final_table(params, ctx, families) if params.get("final") else None
    c_final = _final_table(params, ctx, c_families, permute_seed=seed + 99_993) if params.get("final") else None
    if "table" in ctx.outputs:
        write_table(ctx.outputs["table"], models, families, final)

    def body(models, families, final) -> dict[str, Any]:
        return {
            "final": final,
            "protocol": {"archive": data["archive"], "archive_sha256": data["archive_sha256"],
                         "archive_official": is_official_archive(data["archive_sha256"]),
                         "n_train": params["n_train"], "n_valid": params["n_valid"], "n_test": params["n_test"],
                         "seq_len": params["seq_len"], "array_length": int(data["x"]["train"].shape[1]),
                         "mask_constant": float(params["mask_constant"]), "targets": "+-0.5"},
            "kernel_backend": _backend(params),
            "text_stats": data["stats"],
            "models": models,
            "families": families,
            "padding_invariance_max": max(v for m in models for v in m["padding_invariance"].values()),
            "padding_check": {"reviews": [data["ids"]["test"][i] for i in pad_idx],
                              "extra": params["pad_check"]["extra"]},
            "test_ids": data["ids"]["test"],
            "sota_accuracy": SOTA_ACCURACY,
            "train_resample": h6_resample_record(params, int(data["x"]["train"].shape[0]),
                                                 int(data["x"]["test"].shape[0]), H6_PAPER_SIZES["n_train"]),
        }

    out = body(models, families, final)
    ctrl = body(c_models, c_families, c_final)
    ctrl["control_note"] = "training and validation labels permuted; same kernels, test reviews, padding check"
    ctrl["substitutes"] = h6_substitutes(ctrl)
    out["controls"] = {"permuted_labels": ctrl, "same_family_two_draws": null_ordering_control(out)}
    out["substitutes"] = h6_substitutes(out)
    return out


def write_table(path, models: Sequence[Mapping[str, Any]], families: Mapping[str, Any],
                final: Mapping[str, Any] | None = None) -> None:
    """The H6 table as CSV (atomically): one row per model and kernel, plus the selected rows
    (``selected`` = family representative) and, if run, the final-table accuracies."""
    import csv
    import io as _io


    buf = _io.StringIO()
    w = csv.writer(buf)
    w.writerow(["model", "family", "depth", "kernel", "diag_reg", "valid_accuracy", "test_accuracy",
                "test_ci_low", "test_ci_high", "selected", "final_test_accuracy", "final_ci_low", "final_ci_high"])
    for m in models:
        for g, v in m["kernels"].items():
            sel = families.get(m["family"], {})
            chosen = sel.get("depth") == m["depth"] and sel.get("kernel") == g
            fin = (final or {}).get("families", {}).get(m["family"]) if chosen else None
            t = v["test_accuracy"]
            w.writerow([m["name"], FAMILY_LABELS[m["family"]], m["depth"], g, f"{v['diag_reg']:g}",
                        f"{v['valid_accuracy']:.4f}", f"{t['value']:.4f}", f"{t['ci_low']:.4f}", f"{t['ci_high']:.4f}",
                        int(chosen)] + ([f"{fin['test_accuracy'][k]:.4f}" for k in ("value", "ci_low", "ci_high")]
                                        if fin else ["", "", ""]))
    with atomic_path(path) as tmp:
        tmp.write_text(buf.getvalue())


# --------------------------------------------------------------------------------------------
# benchmark


def run_imdb_kernel_throughput(params: dict[str, Any], ctx) -> dict[str, Any]:
    """Kernel pairs per second of the Struct (1 attention layer) model at ``benchmark.seq_len``.

    ``n`` real test reviews (GloVe, padded with :func:`mask_margin`) against ``n`` others; the
    jitted ``kernel_fn`` is compiled once (timed separately), then timed ``repeats`` times.
    """
    import time

    import jax

    b = params["benchmark"]
    n = int(b["n"])
    p = {**params, "seq_len": int(b["seq_len"]), "n_train": 2, "n_valid": 2, "n_test": 2 * n}
    data = _prepare(p, ctx)
    x = data["x"]["test"]
    c = float(params["mask_constant"])
    jk = model_kernel_fn("struct", 1, params)
    t0 = time.perf_counter()
    jax.block_until_ready(jk(x[:n], x[n:], ("nngp", "ntk"), mask_constant=c))
    compile_s = time.perf_counter() - t0
    times = []
    for _ in ctx.progress(range(int(b["repeats"])), desc="H6 throughput"):
        t0 = time.perf_counter()
        jax.block_until_ready(jk(x[n:], x[:n], ("nngp", "ntk"), mask_constant=c))
        times.append(time.perf_counter() - t0)
    best = min(times)
    return {
        "benchmark": "hron2020_imdb_kernel_throughput",
        "model": "Struct (Conv9 VALID -> Relu -> GlobalSelfAttention -> Relu -> GAP -> Dense), NNGP+NTK",
        "seq_len": int(b["seq_len"]),
        "array_length": int(x.shape[1]),
        "pairs": n * n,
        "seconds": times,
        "compile_plus_first_call_seconds": compile_s,
        "pairs_per_second": n * n / best,
        "device": str(jax.devices()[0]),
        "kernel_backend": _backend(params),
        "dtype": "float32",
    }
