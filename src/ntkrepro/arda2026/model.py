r"""The shallow multi-head transformer of Arda, Cayci, Eryilmaz (2026) -- the one implementation.

Input :math:`X \in \mathbb R^{d\times T}` (tokens are columns), query = the last token
:math:`x_T`, keys = values = all :math:`T` tokens. Head :math:`i` with parameters
:math:`\theta_i = (W_i, U_i, c_i)`, :math:`W_i\in\mathbb R^{d\times d}`, :math:`U_i\in\mathbb R^d`,
:math:`c_i\in\mathbb R`:

.. math::

    z_i = X^\top W_i x_T \in \mathbb R^T,\quad \alpha_i = \operatorname{softmax}(z_i),\quad
    a_i = X\alpha_i \in \mathbb R^d,\quad s_i = U_i^\top a_i,\quad h_i = \sigma(s_i),

    f(X;\theta) = \frac{1}{\sqrt m}\sum_{i=1}^m c_i\,h_i ,\qquad \sigma = \tanh

(no :math:`1/\sqrt d` in the logits). All of :math:`W, U, c` are trained.

**Lemma 1 (gradients).** With :math:`J(z) = \operatorname{diag}\alpha - \alpha\alpha^\top`,

.. math::

    \partial_{c_i} f = \tfrac{1}{\sqrt m} h_i,\quad
    \nabla_{U_i} f = \tfrac{1}{\sqrt m} c_i\sigma'(s_i)\, a_i,\quad
    \nabla_{W_i} f = \tfrac{1}{\sqrt m} c_i\sigma'(s_i)\, \big[X J(z_i) X^\top U_i\big]\, x_T^\top .

We write :math:`g_i = X J(z_i) X^\top U_i` (computed as :math:`X(\alpha\odot(v-\alpha^\top v))`,
:math:`v = X^\top U_i`, never forming :math:`J`).

**NTK split.** :math:`K(X,X') = K_c + K_U + K_W` with
:math:`K_c = \frac1m\sum_i h_i h_i'`, :math:`K_U = \frac1m\sum_i c_i^2\sigma'_i\sigma_i'{}'\, a_i^\top a_i'`,
:math:`K_W = \frac1m\sum_i c_i^2\sigma'_i\sigma_i'{}'\,(g_i^\top g_i')(x_T^\top x_T')`
(output, value and attention parts).

**Initialisation** (pairwise symmetric): :math:`W_i, U_i \sim\mathcal N(0, I)`,
:math:`c_i` Rademacher for :math:`i\le m/2`; heads :math:`m/2+i` copy :math:`W_i, U_i` and take
:math:`-c_i`, so :math:`f(\cdot;\theta(0)) = 0`.

**Projected GD** on :math:`\mathcal L(\theta) = \frac1n\sum_j (f(X_j;\theta)-y_j)^2`:
:math:`\theta \leftarrow \Pi(\theta - \eta\nabla\mathcal L)` with :math:`\Pi` the per-head
projection onto :math:`\lVert W_i - W_i(0)\rVert_F\le\rho/\sqrt m`,
:math:`\lVert U_i-U_i(0)\rVert\le\rho/\sqrt m`, :math:`|c_i-c_i(0)|\le\rho/\sqrt m`.

Arrays: a batch of inputs is ``X`` of shape ``(n, d, T)``; parameters are :class:`Params` with
``W (m, d, d)``, ``U (m, d)``, ``c (m,)``. Everything is vectorised over heads (``einsum``).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp


class Params(NamedTuple):
    """Parameters of the m-head transformer: ``W (m,d,d)``, ``U (m,d)``, ``c (m,)``."""

    W: jax.Array
    U: jax.Array
    c: jax.Array


class HeadFeatures(NamedTuple):
    """Per-(input, head) intermediate quantities of the forward pass (shapes ``(n, m, ...)``)."""

    alpha: jax.Array  # (n, m, T) softmax weights
    a: jax.Array  # (n, m, d) attention output
    s: jax.Array  # (n, m) pre-activation U^T a
    h: jax.Array  # (n, m) tanh(s)
    g: jax.Array  # (n, m, d) X J(z) X^T U
    xT: jax.Array  # (n, d) query token


def _check_inputs(X: jax.Array, params: Params | None = None) -> None:
    if X.ndim != 3:
        raise ValueError(f"inputs must have shape (n, d, T), got {X.shape}")
    if params is not None:
        m, d, d2 = params.W.shape
        if d != d2 or params.U.shape != (m, d) or params.c.shape != (m,):
            raise ValueError(f"inconsistent parameter shapes W{params.W.shape} U{params.U.shape} c{params.c.shape}")
        if X.shape[1] != d:
            raise ValueError(f"input dimension {X.shape[1]} does not match the model's d={d}")


def init_params(key: jax.Array, m: int, d: int, dtype=jnp.float32) -> Params:
    """Pairwise-symmetric initialisation (``m`` even): ``f(.; theta(0)) = 0`` exactly."""
    if m < 2 or m % 2:
        raise ValueError(f"width m must be a positive even number, got {m}")
    kW, kU, kc = jax.random.split(key, 3)
    half = m // 2
    W = jax.random.normal(kW, (half, d, d), dtype)
    U = jax.random.normal(kU, (half, d), dtype)
    c = jax.random.rademacher(kc, (half,), dtype)
    return Params(jnp.concatenate([W, W]), jnp.concatenate([U, U]), jnp.concatenate([c, -c]))


def head_features(W: jax.Array, U: jax.Array, X: jax.Array) -> HeadFeatures:
    r"""Forward quantities per input and head: :math:`\alpha_i, a_i, s_i, h_i, g_i` and :math:`x_T`."""
    xT = X[..., -1]  # (n, d)
    q = jnp.einsum("mde,ne->nmd", W, xT)  # W_i x_T
    z = jnp.einsum("ndt,nmd->nmt", X, q)  # X^T W_i x_T
    alpha = jax.nn.softmax(z, axis=-1)
    a = jnp.einsum("ndt,nmt->nmd", X, alpha)
    s = jnp.einsum("nmd,md->nm", a, U)
    h = jnp.tanh(s)
    v = jnp.einsum("ndt,md->nmt", X, U)  # X^T U_i
    Jv = alpha * (v - jnp.sum(alpha * v, axis=-1, keepdims=True))  # J(z) X^T U_i
    g = jnp.einsum("ndt,nmt->nmd", X, Jv)
    return HeadFeatures(alpha, a, s, h, g, xT)


def forward(params: Params, X: jax.Array) -> jax.Array:
    r""":math:`f(X;\theta) = m^{-1/2}\sum_i c_i \tanh(U_i^\top X\operatorname{softmax}(X^\top W_i x_T))`, shape ``(n,)``."""
    xT = X[..., -1]
    q = jnp.einsum("mde,ne->nmd", params.W, xT)
    z = jnp.einsum("ndt,nmd->nmt", X, q)
    a = jnp.einsum("ndt,nmt->nmd", X, jax.nn.softmax(z, axis=-1))
    h = jnp.tanh(jnp.einsum("nmd,md->nm", a, params.U))
    return h @ params.c / jnp.sqrt(params.c.shape[0])


def forward_loop(params: Params, X: jax.Array) -> jax.Array:
    """Same as :func:`forward` with an explicit per-head Python loop (reference / benchmark baseline)."""
    m = params.c.shape[0]
    xT = X[..., -1]
    out = jnp.zeros(X.shape[0], X.dtype)
    for i in range(m):
        z = jnp.einsum("ndt,nd->nt", X, xT @ params.W[i].T)
        a = jnp.einsum("ndt,nt->nd", X, jax.nn.softmax(z, axis=-1))
        out = out + params.c[i] * jnp.tanh(a @ params.U[i])
    return out / jnp.sqrt(m)


def per_example_grads(params: Params, X: jax.Array) -> Params:
    """Lemma 1: analytic :math:`\\nabla_\\theta f(X_j)` for every input, shapes ``(n, m, ...)``."""
    _check_inputs(X, params)
    F = head_features(params.W, params.U, X)
    m = params.c.shape[0]
    cs = params.c * (1.0 - F.h**2) / jnp.sqrt(m)  # c_i sigma'(s_i) / sqrt(m)
    gW = cs[..., None, None] * F.g[..., :, None] * F.xT[:, None, None, :]
    gU = cs[..., None] * F.a
    gc = F.h / jnp.sqrt(m)
    return Params(gW, gU, gc)


def loss_and_grad(params: Params, X: jax.Array, y: jax.Array) -> tuple[jax.Array, Params]:
    r"""MSE :math:`\mathcal L = \frac1n\sum_j (f_j - y_j)^2` and its analytic gradient (Lemma 1 contracted with residuals)."""
    F = head_features(params.W, params.U, X)
    m = params.c.shape[0]
    f = F.h @ params.c / jnp.sqrt(m)
    r = f - y
    loss = jnp.mean(r**2)
    w = 2.0 * r / r.shape[0]  # dL/df_j
    cs = params.c * (1.0 - F.h**2) / jnp.sqrt(m)
    wcs = w[:, None] * cs  # (n, m)
    gW = jnp.einsum("nm,nmd,ne->mde", wcs, F.g, F.xT)
    gU = jnp.einsum("nm,nmd->md", wcs, F.a)
    gc = w @ F.h / jnp.sqrt(m)
    return loss, Params(gW, gU, gc)


def linear_term(params0: Params, delta: Params, X: jax.Array) -> jax.Array:
    r""":math:`\langle\nabla_\theta f(X_j;\theta_0), \delta\rangle` from Lemma 1 (no Jacobian formed), shape ``(n,)``."""
    F = head_features(params0.W, params0.U, X)
    m = params0.c.shape[0]
    cs = params0.c * (1.0 - F.h**2)
    tW = jnp.einsum("nmd,mde,ne->nm", F.g, delta.W, F.xT)
    tU = jnp.einsum("nmd,md->nm", F.a, delta.U)
    return (jnp.sum(cs * (tW + tU), axis=1) + F.h @ delta.c) / jnp.sqrt(m)


def mse(params: Params, X: jax.Array, y: jax.Array) -> jax.Array:
    """Mean squared error of the model on ``(X, y)``."""
    return jnp.mean((forward(params, X) - y) ** 2)


def project(params: Params, params0: Params, rho: float | jax.Array) -> Params:
    r"""Per-head projection onto the balls of radius :math:`\rho/\sqrt m` around ``params0``."""
    m = params.c.shape[0]
    r = rho / jnp.sqrt(m)
    dW = params.W - params0.W
    nW = jnp.sqrt(jnp.sum(dW**2, axis=(1, 2)))
    dW = dW * jnp.minimum(1.0, r / jnp.maximum(nW, 1e-30))[:, None, None]
    dU = params.U - params0.U
    nU = jnp.sqrt(jnp.sum(dU**2, axis=1))
    dU = dU * jnp.minimum(1.0, r / jnp.maximum(nU, 1e-30))[:, None]
    dc = jnp.clip(params.c - params0.c, -r, r)
    return Params(params0.W + dW, params0.U + dU, params0.c + dc)


@partial(jax.jit, static_argnames=("steps", "project_every_step", "record_every"))
def train(params0: Params, X: jax.Array, y: jax.Array, *, steps: int, lr: float, rho: float,
          project_every_step: bool = True, record_every: int = 1) -> tuple[Params, jax.Array]:
    r"""Full-batch (projected) GD for ``steps`` steps; returns final parameters and the loss curve.

    ``losses[k]`` is :math:`\mathcal L(\theta(k\cdot\text{record\_every}))` (before the step).
    """

    def step(p, _):
        loss, g = loss_and_grad(p, X, y)
        p = jax.tree_util.tree_map(lambda a, b: a - lr * b, p, g)
        if project_every_step:
            p = project(p, params0, rho)
        return p, loss

    def block(p, _):
        p, losses = jax.lax.scan(step, p, None, length=record_every)
        return p, losses[0]

    if steps % record_every:
        raise ValueError("steps must be a multiple of record_every")
    p, losses = jax.lax.scan(block, params0, None, length=steps // record_every)
    return p, losses


def ntk_parts(params: Params, X1: jax.Array, X2: jax.Array | None = None) -> dict[str, jax.Array]:
    """Empirical NTK split into output (``c``), value (``U``) and attention (``W``) parts, ``(n1, n2)`` each."""
    _check_inputs(X1, params)
    X2 = X1 if X2 is None else X2
    m = params.c.shape[0]
    F1 = head_features(params.W, params.U, X1)
    F2 = F1 if X2 is X1 else head_features(params.W, params.U, X2)
    cs1 = (params.c * (1.0 - F1.h**2))[..., None]
    cs2 = (params.c * (1.0 - F2.h**2))[..., None]
    n1, n2 = X1.shape[0], X2.shape[0]
    K_c = F1.h @ F2.h.T / m
    K_U = (cs1 * F1.a).reshape(n1, -1) @ (cs2 * F2.a).reshape(n2, -1).T / m
    K_W = ((cs1 * F1.g).reshape(n1, -1) @ (cs2 * F2.g).reshape(n2, -1).T) * (F1.xT @ F2.xT.T) / m
    return {"output": K_c, "value": K_U, "attention": K_W}


def empirical_ntk(params: Params, X1: jax.Array, X2: jax.Array | None = None) -> jax.Array:
    r"""Full empirical NTK :math:`J(X_1) J(X_2)^\top` by autodiff (reference for :func:`ntk_parts`)."""
    X2 = X1 if X2 is None else X2
    J1 = jax.jacrev(forward)(params, X1)
    J2 = jax.jacrev(forward)(params, X2)
    flat = lambda J: jnp.concatenate([l.reshape(l.shape[0], -1) for l in J], axis=1)  # noqa: E731
    return flat(J1) @ flat(J2).T
