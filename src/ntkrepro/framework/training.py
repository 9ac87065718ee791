r"""F4/F6: finite transformer blocks trained at several widths on a synthetic sequence task.

**Task.** Gaussian tokens :math:`x_t \in \mathbb R^d` (plus sinusoidal encodings when
``pos_enc``); target :math:`y_s = \sum_t A^\star_{st}\, u^\top x_t/\sqrt d` with a fixed teacher
attention :math:`A^\star_{st} \propto \exp(-|s-t|/\ell)` (row-normalised, :math:`\ell` =
``teacher_length``) and a fixed random direction :math:`u`, standardised. The target needs
mixing across positions, so attention matters.

**Training.** The block of :mod:`ntkrepro.framework.models` (softmax, tied :math:`d^{-1}`
logits, NTK parameterisation) is trained by full-batch gradient descent on the mean squared error
with learning rate ``lr`` for ``steps`` steps (NTK parameterisation: the same ``lr`` at every width).

**Measured per (width, seed).**

* F6 (i): :math:`\lVert\Theta_T - \Theta_0\rVert_F/\lVert\Theta_0\rVert_F`, the empirical NTK on the
  first ``n_probe`` training sequences before/after training;
* F6 (ii): the entropy effective rank of :math:`\Theta_0` on the same probe set, and the test loss;
* F4: Pearson correlation between the trained attention (average over heads and test sequences,
  symmetrised) and the rank-``topk`` reconstruction :math:`\sum_{i\le k}\lambda_i v_i v_i^\top` of the
  infinite-width NTK position kernel (average over test sequences, stax).
"""

from __future__ import annotations

import numpy as np

from ntkrepro.framework import models
from ntkrepro.framework import spectra as sp


def block_spec(p: dict, width: int) -> models.BlockSpec:
    return models.BlockSpec(width=width, n_heads=p["n_heads"], attention="SOFTMAX", scaling="linear",
                            layernorm=p["layernorm"], ffn_mult=1)


def make_task(p: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_test, y_test, teacher attention) of the synthetic task (module docstring)."""
    rng = np.random.default_rng(p["seed"] + 1000)
    S, d = p["seq_len"], p["d_in"]
    dist = np.abs(np.arange(S)[:, None] - np.arange(S)[None, :])
    a_star = np.exp(-dist / p["teacher_length"])
    a_star /= a_star.sum(1, keepdims=True)
    u = rng.standard_normal(d)
    x = sp.gaussian_sequences(p["seed"], p["n_train"] + p["n_test"], S, d, np.float64)
    y = np.einsum("st,ntd,d->ns", a_star, x, u) / np.sqrt(d)
    y = (y - y.mean()) / y.std()
    x = models.make_inputs(x, p["pos_enc"])
    n = p["n_train"]
    f32 = np.float32
    return x[:n].astype(f32), y[:n, :, None].astype(f32), x[n:].astype(f32), y[n:, :, None].astype(f32), a_star


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.ravel(a).astype(float), np.ravel(b).astype(float)
    a, b = a - a.mean(), b - b.mean()
    den = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / den) if den > 0 else 0.0


def topk_reconstruction(k: np.ndarray, topk: int) -> np.ndarray:
    r""":math:`\sum_{i\le k}\lambda_i v_i v_i^\top` of a symmetric matrix."""
    w, v = sp.eigh_desc(k)
    return (v[:, :topk] * w[:topk]) @ v[:, :topk].T


def train(spec: models.BlockSpec, params, x, y, *, lr: float, steps: int):
    """Full-batch gradient descent on the MSE; returns (params, training-loss curve)."""
    import jax
    import jax.numpy as jnp

    model = spec.flax()

    def loss(pr):
        return jnp.mean((model.apply({"params": pr}, x) - y) ** 2)

    @jax.jit
    def run(pr):
        def step(pr, _):
            val, g = jax.value_and_grad(loss)(pr)
            return jax.tree.map(lambda a, b: a - lr * b, pr, g), val
        return jax.lax.scan(step, pr, None, length=steps)

    params, curve = run(params)
    return params, np.asarray(curve)


def run_f6(params: dict, ctx) -> dict:
    """Train every (width, seed); NTK change, effective rank, test loss, attention-NTK correlation."""
    import jax
    import jax.numpy as jnp

    p = dict(params)
    widths = [int(w) for w in p["widths"]]
    xtr, ytr, xte, yte, a_star = make_task(p)
    probe = jnp.asarray(xtr[: p["n_probe"]])
    inf_pk = sp.position_kernels(models.infinite_ntk(block_spec(p, widths[0]), xte).astype(np.float64)).mean(0)
    ref = topk_reconstruction(inf_pk, p["topk"])
    key = jax.random.PRNGKey(p["seed"])
    out = {k: [] for k in ("ntk_rel_change", "eff_rank_init", "test_loss", "train_loss", "attention_ntk_corr",
                           "attention_teacher_corr")}
    curves, attn_mean = [], []
    for w in ctx.progress(widths, desc="F6 widths"):
        spec = block_spec(p, w)
        ntk_fn = models.fast_ntk_fn(spec)
        row = {k: [] for k in out}
        for s in range(p["n_seeds"]):
            p0 = models.init_params(spec, jax.random.fold_in(jax.random.fold_in(key, w), s), jnp.asarray(xtr))
            th0 = sp.flatten_kernel(np.asarray(ntk_fn(p0, probe), np.float64))
            pT, curve = train(spec, p0, jnp.asarray(xtr), jnp.asarray(ytr), lr=p["lr"], steps=p["steps"])
            thT = sp.flatten_kernel(np.asarray(ntk_fn(pT, probe), np.float64))
            pred = np.asarray(models.apply(spec, pT, jnp.asarray(xte)))
            attn = np.asarray(models.attention_maps(spec, pT, jnp.asarray(xte))).mean(axis=(0, 1))
            attn_sym = 0.5 * (attn + attn.T)
            row["ntk_rel_change"].append(sp.relative_frobenius(thT, th0))
            row["eff_rank_init"].append(sp.effective_rank(np.linalg.eigvalsh(th0)))
            row["test_loss"].append(float(np.mean((pred - yte) ** 2)))
            row["train_loss"].append(float(curve[-1]))
            row["attention_ntk_corr"].append(pearson(attn_sym, ref))
            row["attention_teacher_corr"].append(pearson(attn_sym, 0.5 * (a_star + a_star.T)))
            if s == 0:
                curves.append(curve[:: max(1, p["steps"] // 100)].tolist())
                attn_mean.append(attn.tolist())
        for k in out:
            out[k].append(row[k])
    return {"widths": widths, **out, "loss_curves_seed0": curves, "attention_seed0": attn_mean,
            "ntk_reference_topk": ref.tolist(), "teacher_attention": a_star.tolist()}
