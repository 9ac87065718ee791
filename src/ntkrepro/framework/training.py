r"""Trained finite transformer blocks: the synthetic task, gradient descent, the linearised model,
and the runs of F4 (attention vs NTK eigenvectors) and F6 (architecture variants).

**Task** (:func:`make_task`). Gaussian tokens :math:`x_t \in \mathbb R^d` (plus sinusoidal
encodings when ``pos_enc``); target :math:`y_s = \sum_t A^\star_{st}\, u^\top x_t/\sqrt d` with a
fixed teacher attention :math:`A^\star_{st} \propto \exp(-|s-t|/\ell)` (row-normalised,
:math:`\ell` = ``teacher_length``) and a random direction :math:`u`, standardised. The target
needs mixing across positions, so attention matters. Draw ``r`` of the task (inputs and
:math:`u`) comes from ``numpy.random.default_rng((seed, r, .))``; runs pair data draw ``r`` with
initialisation ``r`` so that an interval over seeds resamples both.

**Training** (:func:`gd_train`). Full-batch gradient descent on
:math:`L(\theta) = \frac1n\sum_{a,s}(f_s(x_a;\theta) - y_{as})^2` (:math:`n` = number of outputs),
:math:`\theta_{k+1} = \theta_k - \eta\nabla L(\theta_k)`, in NTK parameterisation (the same
:math:`\eta` at every width).

**Linearised model** (:func:`linearised_gd_train`). The first-order Taylor model at the same
initialisation, :math:`f^\mathrm{lin}(x;\theta) = f(x;\theta_0) + J_0(x)(\theta-\theta_0)`, trained by
the same gradient descent: :math:`\delta_{k+1} = \delta_k - \eta\,J_0^\top\,\tfrac2n(f_0 + J_0\delta_k - y)`
(:math:`\delta = \theta - \theta_0`). Its function-space trajectory is kernel gradient descent
with the *initial* empirical NTK :math:`\Theta_0 = J_0 J_0^\top`,
:math:`f^\mathrm{lin}_{k+1} = f^\mathrm{lin}_k - \tfrac{2\eta}{n}\Theta_0(f^\mathrm{lin}_k - y)` -- the
"NTK prediction" of the training dynamics. :func:`kernel_regime_fit` trains both from one
initialisation and returns both functions on training and test inputs; the kernel-regime gap is
:func:`relative_gap`.

All per-seed functions take an ``apply_fn(params, x)`` and are written for one seed; the runs map
them over seeds with :func:`map_over_seeds` (``jax.lax.map`` in batches: one compilation per
width, bounded memory).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ntkrepro.framework import models
from ntkrepro.framework import spectra as sp
from ntkrepro.stats import effective_rank


# ------------------------------------------------------------------------------------ the task
def teacher_attention(seq_len: int, length: float) -> np.ndarray:
    r""":math:`A^\star_{st} = e^{-|s-t|/\ell} / \sum_{t'} e^{-|s-t'|/\ell}`."""
    dist = np.abs(np.arange(seq_len)[:, None] - np.arange(seq_len)[None, :])
    a = np.exp(-dist / length)
    return a / a.sum(1, keepdims=True)


def make_task(p: Mapping, draw: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_test, y_test, teacher attention) of draw ``draw`` of the task (module docstring).

    ``p`` needs ``seed, seq_len, d_in, n_train, n_test, teacher_length, pos_enc``. Inputs are
    float32, targets ``(N, S, 1)``.
    """
    S, d = int(p["seq_len"]), int(p["d_in"])
    a_star = teacher_attention(S, float(p["teacher_length"]))
    u = np.random.default_rng((int(p["seed"]), int(draw), 1)).standard_normal(d)
    n = int(p["n_train"])
    x = np.random.default_rng((int(p["seed"]), int(draw), 0)).standard_normal((n + int(p["n_test"]), S, d))
    y = np.einsum("st,ntd,d->ns", a_star, x, u) / np.sqrt(d)
    y = (y - y.mean()) / y.std()
    x = models.make_inputs(x, bool(p["pos_enc"]))
    f32 = np.float32
    return x[:n].astype(f32), y[:n, :, None].astype(f32), x[n:].astype(f32), y[n:, :, None].astype(f32), a_star


def stacked_tasks(p: Mapping, n_draws: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`make_task` for draws ``0..n_draws-1`` stacked on a leading axis (x_train, y_train, x_test, y_test)."""
    tasks = [make_task(p, r)[:4] for r in range(n_draws)]
    return tuple(np.stack([t[i] for t in tasks]) for i in range(4))  # type: ignore[return-value]


# ------------------------------------------------------------------------------ small helpers
def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of two arrays (flattened); 0.0 if either is constant."""
    a, b = np.ravel(a).astype(float), np.ravel(b).astype(float)
    a, b = a - a.mean(), b - b.mean()
    den = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / den) if den > 0 else 0.0


def offdiag_pearson(a: np.ndarray, b: np.ndarray) -> float:
    r"""Pearson correlation of the strictly upper-triangular entries (:math:`s<t`) of two symmetric
    :math:`S\times S` matrices: the coupling between *different* positions, without the diagonal."""
    iu = np.triu_indices(np.asarray(a).shape[-1], k=1)
    return pearson(np.asarray(a)[iu], np.asarray(b)[iu])


def topk_reconstruction(k: np.ndarray, topk: int) -> np.ndarray:
    r""":math:`\sum_{i\le k}\lambda_i v_i v_i^\top` of a symmetric matrix."""
    w, v = sp.eigh_desc(k)
    return (v[:, :topk] * w[:topk]) @ v[:, :topk].T


def relative_gap(f: np.ndarray, f_lin: np.ndarray, f0: np.ndarray) -> float:
    r"""Kernel-regime gap :math:`\lVert f_T - f^\mathrm{lin}_T\rVert_F / \lVert f^\mathrm{lin}_T - f_0\rVert_F`:
    the distance between the trained network and its linearised model, relative to how far the
    linearised model moved from the common initial function (0 when training is exactly linear)."""
    f, f_lin, f0 = (np.asarray(a, np.float64) for a in (f, f_lin, f0))
    den = np.linalg.norm(f_lin - f0)
    if den == 0:
        raise ValueError("the linearised model did not move: the relative gap is undefined")
    return float(np.linalg.norm(f - f_lin) / den)


# --------------------------------------------------------------------------- training (per seed)
ApplyFn = Callable[..., "object"]


def gd_train(apply_fn: ApplyFn, params0, x, y, *, lr: float, steps: int, n_curve: int = 50):
    r"""Full-batch GD on the MSE (module docstring) for ``steps`` steps; returns ``(params_T, curve)``
    with the training loss at ``n_curve`` evenly spaced steps (first step's loss included)."""
    import jax
    import jax.numpy as jnp

    def loss(pr):
        return jnp.mean((apply_fn(pr, x) - y) ** 2)

    def step(pr, _):
        val, g = jax.value_and_grad(loss)(pr)
        return jax.tree.map(lambda a, b: a - lr * b, pr, g), val

    params, curve = jax.lax.scan(step, params0, None, length=steps)
    stride = max(1, steps // max(1, n_curve))
    return params, curve[::stride]


def linearised_gd_train(apply_fn: ApplyFn, params0, x, y, *, lr: float, steps: int):
    r"""GD on the linearised model (module docstring); returns ``(delta_T, f0, jvp)``: the parameter
    displacement, the initial outputs on ``x`` and the linear map :math:`\delta\mapsto J_0\delta`.

    Uses ``jax.linearize`` once (:math:`J_0` applied by a Jacobian-vector product, :math:`J_0^\top`
    by its transpose), so each step costs about one forward and one backward pass.
    """
    import jax
    import jax.numpy as jnp

    f0, jvp = jax.linearize(lambda pr: apply_fn(pr, x), params0)
    vjp = jax.linear_transpose(jvp, params0)
    n = y.size

    def step(delta, _):
        (g,) = vjp(2.0 * (f0 + jvp(delta) - y) / n)
        return jax.tree.map(lambda a, b: a - lr * b, delta, g), None

    delta, _ = jax.lax.scan(step, jax.tree.map(jnp.zeros_like, params0), None, length=steps)
    return delta, f0, jvp


def kernel_regime_fit(apply_fn: ApplyFn, params0, x_train, y_train, x_test, *, lr: float, steps: int,
                      n_curve: int = 50) -> dict:
    r"""Train the network and its linearised model from ``params0`` by the same GD.

    Returns ``params_T`` and, on training and test inputs, the initial outputs ``f0_*``, the trained
    network ``f_*`` and the linearised model ``lin_*`` (:math:`f_0 + J_0\delta_T`), plus the
    training-loss curve ``curve``.
    """
    import jax

    params_t, curve = gd_train(apply_fn, params0, x_train, y_train, lr=lr, steps=steps, n_curve=n_curve)
    delta, f0_tr, jvp_tr = linearised_gd_train(apply_fn, params0, x_train, y_train, lr=lr, steps=steps)
    f0_te, jd_te = jax.jvp(lambda pr: apply_fn(pr, x_test), (params0,), (delta,))
    return {"params_T": params_t, "curve": curve,
            "f0_train": f0_tr, "f_train": apply_fn(params_t, x_train), "lin_train": f0_tr + jvp_tr(delta),
            "f0_test": f0_te, "f_test": apply_fn(params_t, x_test), "lin_test": f0_te + jd_te}


def map_over_seeds(fn: Callable, *stacked, batch_size: int = 1):
    """``jax.jit`` of ``jax.lax.map(fn, stacked)`` over the leading (seed) axis, ``batch_size`` seeds
    vectorised at a time (one compilation; memory grows with ``batch_size``). Returns numpy arrays."""
    import jax

    out = jax.jit(lambda *a: jax.lax.map(lambda z: fn(*z), a, batch_size=batch_size))(*stacked)
    return jax.tree.map(np.asarray, out)


def seed_batch(spec: models.BlockSpec, x_shape: tuple[int, ...], n_seeds: int, per_seed_copies: int,
               budget_floats: float = 2 ** 27) -> int:
    """Seeds to vectorise at once so that ``per_seed_copies`` parameter-sized arrays per seed fit in
    ``budget_floats`` floats (512 MB in fp32)."""
    import jax

    n_params = sum(int(np.prod(a.shape)) for a in jax.tree.leaves(models.param_shapes(spec, x_shape)))
    return int(max(1, min(n_seeds, budget_floats // (n_params * per_seed_copies))))


def init_seeds(p: Mapping, width: int, n_seeds: int) -> list[tuple[int, int, int]]:
    """Initialisation seeds ``(config seed, width, r)``, ``r = 0..n_seeds-1`` (independent across widths)."""
    return [(int(p["seed"]), int(width), r) for r in range(n_seeds)]


# ------------------------------------------------------------------------------------------ F4
def f4_block(p: Mapping, width: int) -> models.BlockSpec:
    """The F4 block: softmax attention (tied :math:`d^{-1}` logits), LayerNorm as configured, FFN with
    ``p['activation']``."""
    return models.BlockSpec(width=width, n_heads=p["n_heads"], attention="SOFTMAX", scaling="linear",
                            layernorm=p["layernorm"], ffn_mult=1, activation=p["activation"])


def infinite_position_kernels(spec: models.BlockSpec, x: np.ndarray, chunk: int = 8) -> np.ndarray:
    """Infinite-width NTK position kernels :math:`\\Theta_\\infty(x_a, x_a)` of every sequence, ``(N, S, S)``."""
    import jax.numpy as jnp

    import jax

    kfn = jax.jit(spec.kernel_fn(), static_argnames="get")
    out = []
    for i in range(0, x.shape[0], chunk):
        k = np.asarray(kfn(jnp.asarray(x[i:i + chunk]), None, "ntk"), np.float64)
        out.append(sp.position_kernels(k))
    return np.concatenate(out)


def run_f4(params: dict, ctx) -> dict:
    r"""F4: per test sequence, trained attention vs the NTK eigenvector prediction, per width and seed.

    For seed :math:`r` (initialisation :math:`r` at every width, data draw :math:`r`) the block is
    trained (:func:`gd_train`); for each test sequence :math:`a` the head-averaged attention
    :math:`\bar A_a` is symmetrised, :math:`\tfrac12(\bar A_a + \bar A_a^\top)`, and correlated
    (:func:`offdiag_pearson`, entries :math:`s<t` only) with the rank-``topk`` reconstruction of the
    infinite-width NTK position kernel :math:`\Theta_\infty(x_a, x_a)` (:func:`topk_reconstruction`).
    The same correlation before training (``corr_init``) and with the teacher's pattern are
    recorded as descriptions. Returns arrays ``(n_widths, n_seeds, n_test)``.
    """
    import jax.numpy as jnp

    p = dict(params)
    widths = [int(w) for w in p["widths"]]
    n_seeds, topk = int(p["n_seeds"]), int(p["topk"])
    xtr, ytr, xte, _yte = stacked_tasks(p, n_seeds)
    a_star = teacher_attention(int(p["seq_len"]), float(p["teacher_length"]))
    ref_spec = f4_block(p, widths[0])
    refs = np.stack([[topk_reconstruction(k, topk) for k in infinite_position_kernels(ref_spec, xte[r])]
                     for r in range(n_seeds)])                                   # (n_seeds, n_test, S, S)
    out = {k: [] for k in ("corr", "corr_init", "corr_teacher", "test_loss", "train_loss")}
    curves, attn_mean = [], []
    for w in ctx.progress(widths, desc="F4 widths"):
        spec = f4_block(p, w)
        model = spec.flax()

        def apply_fn(pr, x):
            return model.apply({"params": pr}, x)

        def one(pr0, x_tr, y_tr, x_te):
            pr_t, curve = gd_train(apply_fn, pr0, x_tr, y_tr, lr=p["lr"], steps=p["steps"])
            return {"attn": models.attention_maps(spec, pr_t, x_te).mean(axis=1),
                    "attn0": models.attention_maps(spec, pr0, x_te).mean(axis=1),
                    "pred": apply_fn(pr_t, x_te), "curve": curve}

        p0 = models.draw_params(spec, xtr.shape[1:], init_seeds(p, w, n_seeds))
        res = map_over_seeds(one, p0, jnp.asarray(xtr), jnp.asarray(ytr), jnp.asarray(xte),
                             batch_size=seed_batch(spec, xtr.shape[1:], n_seeds, per_seed_copies=4))
        sym = 0.5 * (res["attn"] + np.swapaxes(res["attn"], -1, -2))
        sym0 = 0.5 * (res["attn0"] + np.swapaxes(res["attn0"], -1, -2))
        out["corr"].append([[offdiag_pearson(sym[r, a], refs[r, a]) for a in range(xte.shape[1])]
                            for r in range(n_seeds)])
        out["corr_init"].append([[offdiag_pearson(sym0[r, a], refs[r, a]) for a in range(xte.shape[1])]
                                 for r in range(n_seeds)])
        ta = 0.5 * (a_star + a_star.T)
        out["corr_teacher"].append([[offdiag_pearson(sym[r, a], ta) for a in range(xte.shape[1])]
                                    for r in range(n_seeds)])
        out["test_loss"].append(np.mean((res["pred"] - _yte) ** 2, axis=(1, 2, 3)).tolist())
        out["train_loss"].append(res["curve"][:, -1].tolist())
        curves.append(res["curve"][0].tolist())
        attn_mean.append(sym[0].mean(0).tolist())
    return {"widths": widths, **out, "loss_curves_seed0": curves, "attention_seed0_mean": attn_mean,
            "ntk_reference_seed0_mean": refs[0].mean(0).tolist(), "teacher_attention": a_star.tolist(),
            "block": f4_block(p, widths[-1]).as_dict()}


# ------------------------------------------------------------------------------------------ F6
#: Keys a variant may override, with the base block's defaults.
VARIANT_KEYS = ("attention", "layernorm", "activation", "pos_enc")
#: The architecture variants of F6 (config ``framework.F6.variants`` names a subset): overrides of the base block.
VARIANTS: dict[str, dict] = {
    "base": {},
    "no_pos_enc": {"pos_enc": False},
    "no_layernorm": {"layernorm": False},
    "identity_attention": {"attention": "IDENTITY"},
    "relu_ffn": {"activation": "relu"},
    "no_attention": {"attention": "NONE"},
}


def variant_block(p: Mapping, variant: Mapping, width: int) -> tuple[models.BlockSpec, bool]:
    """(block, pos_enc) of a variant: the F6 base block (``p``'s ``layernorm``, ``activation``,
    ``pos_enc``, softmax attention) with the variant's overrides."""
    bad = set(variant) - set(VARIANT_KEYS)
    if bad:
        raise ValueError(f"unknown variant keys {sorted(bad)} (allowed: {VARIANT_KEYS})")
    spec = models.BlockSpec(width=width, n_heads=p["n_heads"], attention=variant.get("attention", "SOFTMAX"),
                            scaling="linear", layernorm=variant.get("layernorm", p["layernorm"]), ffn_mult=1,
                            activation=variant.get("activation", p["activation"]))
    return spec, bool(variant.get("pos_enc", p["pos_enc"]))


def run_f6(params: dict, ctx) -> dict:
    r"""F6 (ii): architecture variants trained at matched widths.

    For every variant (``p['variants']``: names in :data:`VARIANTS`), width and seed
    (initialisation :math:`r`, data draw :math:`r`, the same draws for every variant): the test loss
    after ``steps`` GD steps, the entropy effective rank of the initial empirical NTK position kernel
    :math:`\Theta_0(x_a, x_a)` averaged over the first ``n_probe`` training sequences (the paper's
    :math:`n\times n` NTK over positions, Sec. 4.2), and the effective rank of the whole probe-set NTK
    (``(n_probe S)`` square; a description). Also the infinite-width position-kernel effective rank of
    each variant (stax; a description). (The NTK's movement during training, F6 part i, is measured
    by the F2 run, :mod:`ntkrepro.framework.kernel_regime`, up to larger widths.)
    """
    import jax.numpy as jnp

    p = dict(params)
    widths = [int(w) for w in p["widths"]]
    n_seeds, n_probe = int(p["n_seeds"]), int(p["n_probe"])
    names = list(p["variants"])
    keys = ("test_loss", "train_loss", "eff_rank_init", "eff_rank_probe_kernel")
    out: dict = {k: {} for k in keys}
    inf_rank: dict = {}
    blocks: dict = {}
    for name in ctx.progress(names, desc="F6 variants"):
        variant = VARIANTS[name]
        spec0, pos_enc = variant_block(p, variant, widths[0])
        blocks[name] = {**spec0.as_dict(), "pos_enc": pos_enc}
        xtr, ytr, xte, yte = stacked_tasks({**p, "pos_enc": pos_enc}, n_seeds)
        pk_inf = infinite_position_kernels(spec0, xtr[:, :n_probe].reshape(-1, *xtr.shape[2:]))
        inf_rank[name] = float(np.mean([effective_rank(np.linalg.eigvalsh(k)) for k in pk_inf]))
        rows = {k: [] for k in keys}
        for w in widths:
            spec, _ = variant_block(p, variant, w)
            model = spec.flax()
            ntk = models.ntk_fn(spec)

            def apply_fn(pr, x):
                return model.apply({"params": pr}, x)

            def one(pr0, x_tr, y_tr, x_te):
                pr_t, curve = gd_train(apply_fn, pr0, x_tr, y_tr, lr=p["lr"], steps=p["steps"])
                return {"ntk0": ntk(pr0, x_tr[:n_probe]), "pred": apply_fn(pr_t, x_te), "train_loss": curve[-1]}

            p0 = models.draw_params(spec, xtr.shape[1:], init_seeds(p, w, n_seeds))
            res = map_over_seeds(one, p0, jnp.asarray(xtr), jnp.asarray(ytr), jnp.asarray(xte),
                                 batch_size=seed_batch(spec, xtr.shape[1:], n_seeds,
                                                       per_seed_copies=4 + n_probe * p["seq_len"]))
            k0 = res["ntk0"].astype(np.float64)
            rows["test_loss"].append(np.mean((res["pred"] - yte) ** 2, axis=(1, 2, 3)).tolist())
            rows["train_loss"].append(res["train_loss"].tolist())
            rows["eff_rank_init"].append([float(np.mean([effective_rank(np.linalg.eigvalsh(k))
                                                         for k in sp.position_kernels(k0[r])]))
                                          for r in range(n_seeds)])
            rows["eff_rank_probe_kernel"].append([effective_rank(np.linalg.eigvalsh(sp.flatten_kernel(k0[r])))
                                                  for r in range(n_seeds)])
        for k in keys:
            out[k][name] = rows[k]
    return {"widths": widths, "variants": names, **out, "eff_rank_infinite": inf_rank, "blocks": blocks,
            "variant_overrides": {n: VARIANTS[n] for n in names}}
