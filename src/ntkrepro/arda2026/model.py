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

**The training step** (:func:`gd_step`, :func:`train`; issue 13.5). One full-batch step at the
authors' sizes (m = 256, n = 5000, d = 8, T = 16) is ~1.9 GFLOP of contractions with an inner
dimension of 8 or 16, so it is bound by moving the ``(n, T, m)`` blocks (20.5 M floats = 82 MB
each) between operations, not by arithmetic. :func:`loss_and_grad_batch` therefore

* uses the closed-form Lemma-1 gradient contracted with the residuals (no autodiff graph, no
  ``(n, m, d, d)`` per-example gradients): logits, softmax numerators ``e``, values
  :math:`v = X^\top U_i`, then two weighted blocks ``P = k e`` and ``G = k e (v - s)`` whose
  contractions with the tokens give :math:`\nabla_U` and :math:`\nabla_W` (:func:`_chunk_grads`);
* keeps the head index minor, ``(chunk, T, m)``, so reductions over ``t`` are vectorised over heads
  and every product is a plain (batched) matrix product -- XLA inserts no transposed copy of a big
  block (the previous step, built on the ``(n, m, T)`` layout of :func:`head_features`, made three
  such copies per step and ran at about half the speed of the PyTorch step);
* runs a ``lax.scan`` over chunks of inputs (:func:`chunk_size`: 32 inputs at m = 256, T = 16 on CPU,
  one 512-KiB block), so the blocks stay in the core's L2 cache instead of round-tripping through
  memory, and the gradient is accumulated across chunks; on an accelerator the batch is one chunk.

Bytes moved per step (operand reads + result writes of every operation, fp32; leading terms,
:func:`step_bytes`): per chunk XLA writes six ``(chunk, T, m)`` blocks (logits ``z``, ``e``,
``v``, ``e v``, ``P``, ``G``) and reads eleven (``z`` twice: max, exp; ``e`` four times; ``v`` twice;
``e v``, ``P``, ``G`` once), plus two ``(chunk, d, m)`` blocks (``W_i x_T`` and the per-input
:math:`\nabla_W` factor) written and read once, plus the tokens read four times:
:math:`4\,[17\,nTm + 4\,ndm + 4\,nTd]` bytes = 1.57 GB at the authors' sizes (XLA's own cost
analysis of the compiled step: 1.80 GB, it also counts the per-chunk parameter reads and the
``(n, m)`` vectors). Only the inputs and parameters (~2.7 MB) must come from memory.
The plain PyTorch-autograd step (:mod:`ntkrepro.arda2026.torch_reference`) moves fewer bytes by
the same count (1.18 GB counted per ATen kernel: ``bmm`` and softmax, forward and backward) but each
of its blocks is a fresh 82-MB allocation that goes through memory, not cache (the benchmark
reports its minor page faults per step).

Where the time goes (JAX profiler, 2 shared cores, chunk = 32, m = 256, n = 5000): about half in
the six matrix products -- the two per-input batched products (:math:`\nabla_W` factor
:math:`X^\top G` 16 %, logits :math:`X^\top(W_i x_T)` 11 %), the values :math:`X U^\top` 9 %,
:math:`\nabla_U` 6 %, :math:`\nabla_W` 4 %, :math:`W_i x_T` 4 % -- and half in the passes over the
blocks: ``exp`` 13 %, ``e v`` 8 %, ``G`` 7 %, max over ``t`` 6 %, ``P`` 5 %, the two sums over
``t`` 5 %. Measured speed (``snakemake benchmarks``, results/benchmarks/arda2026_training_throughput.json):
see the README; the benchmark reports both steps in one run with bytes/step and bandwidth fractions.
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


# ----------------------------------------------------------------------------- training step
#: Target size (elements) of one ``(chunk, T, m)`` block of the training step on CPU: 2**17 float32
#: = 512 KiB, so the blocks a chunk works on stay in the 2 MiB L2 cache of one core.
CHUNK_ELEMENTS = 1 << 17


def step_bytes(m: int, n: int, d: int, T: int, itemsize: int = 4) -> int:
    r"""Analytic bytes moved by one :func:`gd_step` (leading terms; see the module docstring).

    :math:`\text{itemsize}\cdot[17\,nTm + 4\,ndm + 4\,nTd]`: six ``(n, T, m)`` blocks written and
    eleven read, two ``(n, d, m)`` blocks written and read once, the tokens read four times.
    """
    return int(itemsize * (17 * n * T * m + 4 * n * d * m + 4 * n * T * d))


class Batch(NamedTuple):
    """A training set laid out for :func:`loss_and_grad_batch`: tokens as rows, split in chunks.

    ``Xt (n_chunks, chunk, T, d)`` holds :math:`x_{j,t}` at ``Xt[., ., t, :]``; ``y (n_chunks, chunk)``;
    ``mask (n_chunks, chunk)`` is 1 for a real input and 0 for the zero padding that fills the last
    chunk. Build it once with :func:`prepare_batch` and reuse it for every step.
    """

    Xt: jax.Array
    y: jax.Array
    mask: jax.Array


def chunk_size(n: int, m: int, T: int, backend: str | None = None) -> int:
    """Inputs per chunk: all ``n`` on an accelerator; on CPU the largest chunk with ``chunk*T*m <= CHUNK_ELEMENTS``."""
    backend = jax.default_backend() if backend is None else backend
    if backend != "cpu":
        return max(1, n)
    return max(1, min(n, CHUNK_ELEMENTS // (T * m)))


def prepare_batch(X: jax.Array, y: jax.Array, m: int, chunk: int | None = None) -> Batch:
    """Lay out ``X (n, d, T)``, ``y (n,)`` for the chunked step (``m`` = width, used to size the chunk)."""
    _check_inputs(X)
    n, d, T = X.shape
    chunk = chunk_size(n, m, T) if chunk is None else int(chunk)
    if chunk < 1:
        raise ValueError(f"chunk must be positive, got {chunk}")
    k = -(-n // chunk)
    pad = k * chunk - n
    Xt = jnp.pad(jnp.swapaxes(X, 1, 2), ((0, pad), (0, 0), (0, 0)))
    mask = jnp.pad(jnp.ones(n, X.dtype), (0, pad))
    return Batch(Xt.reshape(k, chunk, T, d), jnp.pad(y.astype(X.dtype), (0, pad)).reshape(k, chunk),
                 mask.reshape(k, chunk))


def _chunk_grads(params: Params, Wp: jax.Array, Xt: jax.Array, y: jax.Array, mask: jax.Array,
                 n: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    r"""One chunk's share of :math:`\sum_j r_j^2` and of the Lemma-1 gradient, in transposed layout.

    With :math:`e_{jti} = \exp(z_{jti} - \max_t z_{jti})`, :math:`D_{ji} = \sum_t e_{jti}`
    (so :math:`\alpha = e/D`), :math:`v_{jti} = U_i^\top x_{jt}`, :math:`s_{ji} = \sum_t e_{jti} v_{jti}/D_{ji}`,
    :math:`r_j = f_j - y_j` and :math:`k_{ji} = \frac{2 r_j}{n}\,\frac{c_i\sigma'(s_{ji})}{\sqrt m D_{ji}}`:

    .. math::

        \nabla_{U_i}\mathcal L = \sum_{j,t} k_{ji} e_{jti}\, x_{jt},\qquad
        \nabla_{W_i}\mathcal L = \sum_j \Big[\sum_t k_{ji} e_{jti}(v_{jti}-s_{ji})\, x_{jt}\Big] x_{jT}^\top,\qquad
        \partial_{c_i}\mathcal L = \sum_j \tfrac{2 r_j}{n}\tfrac{h_{ji}}{\sqrt m},

    i.e. Lemma 1 contracted with the residuals (:math:`X J X^\top U_i = \sum_t \alpha_t (v_t - s) x_t`).
    Arrays are ``(chunk, T, m)`` with the head index minor, so every reduction over ``t`` and every
    contraction is a plain (batched) matrix product without a transposed copy of a big block.
    Returns ``(sum of masked r^2, grad W as (e, d, m), grad U as (d, m), grad c)``.
    """
    nc, T, d = Xt.shape
    m = params.c.shape[0]
    sm = jnp.sqrt(jnp.asarray(m, Xt.dtype))
    xT = Xt[:, -1, :]  # (nc, d)
    qT = (xT @ Wp).reshape(nc, d, m)  # W_i x_T as (nc, d, m)
    z = jnp.einsum("ntd,ndm->ntm", Xt, qT)  # logits (nc, T, m)
    e = jnp.exp(z - jnp.max(z, axis=1, keepdims=True))
    den = jnp.sum(e, axis=1)  # (nc, m)
    v = (Xt.reshape(nc * T, d) @ params.U.T).reshape(nc, T, m)  # U_i^T x_t
    s = jnp.sum(e * v, axis=1) / den
    h = jnp.tanh(s)
    r = (h @ params.c / sm - y) * mask
    w = 2.0 * r / n  # dL/df_j
    k = w[:, None] * params.c * (1.0 - h * h) / (sm * den)
    P = e * k[:, None, :]
    G = P * (v - s[:, None, :])
    gUT = Xt.reshape(nc * T, d).T @ P.reshape(nc * T, m)  # (d, m)
    gT = jnp.einsum("ntd,ntm->ndm", Xt, G)  # (nc, d, m)
    gWT = (xT.T @ gT.reshape(nc, d * m)).reshape(d, d, m)  # [e, d, i]
    gc = w @ h / sm
    return jnp.sum(r * r), gWT, gUT, gc


def loss_and_grad_batch(params: Params, batch: Batch) -> tuple[jax.Array, Params]:
    r"""MSE and its Lemma-1 gradient on a :class:`Batch`: a ``lax.scan`` over chunks (see :func:`_chunk_grads`)."""
    m, d, _ = params.W.shape
    dtype = batch.Xt.dtype
    n = jnp.sum(batch.mask)
    Wp = jnp.transpose(params.W, (2, 1, 0)).reshape(d, d * m)  # Wp[e, (d, i)] = W_i[d, e]

    def body(acc, xs):
        out = _chunk_grads(params, Wp, *xs, n)
        return tuple(a + b for a, b in zip(acc, out)), None

    init = (jnp.zeros((), dtype), jnp.zeros((d, d, m), dtype), jnp.zeros((d, m), dtype), jnp.zeros((m,), dtype))
    (sse, gWT, gUT, gc), _ = jax.lax.scan(body, init, (batch.Xt, batch.y, batch.mask))
    return sse / n, Params(jnp.transpose(gWT, (2, 1, 0)), gUT.T, gc)


def loss_and_grad(params: Params, X: jax.Array, y: jax.Array, chunk: int | None = None) -> tuple[jax.Array, Params]:
    r"""MSE :math:`\mathcal L = \frac1n\sum_j (f_j - y_j)^2` and its analytic gradient (Lemma 1 contracted with residuals).

    Chunked over inputs (:func:`chunk_size`); inside a training loop prefer :func:`prepare_batch` once
    and :func:`loss_and_grad_batch` per step.
    """
    return loss_and_grad_batch(params, prepare_batch(X, y, params.c.shape[0], chunk))


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


def gd_step(params: Params, params0: Params, batch: Batch, lr: float | jax.Array, rho: float | jax.Array,
            project_every_step: bool = True) -> tuple[Params, jax.Array]:
    r"""One projected-GD step :math:`\theta \leftarrow \Pi(\theta - \eta\nabla\mathcal L)`; returns the new parameters and :math:`\mathcal L(\theta)` before it."""
    loss, g = loss_and_grad_batch(params, batch)
    p = jax.tree_util.tree_map(lambda a, b: a - lr * b, params, g)
    return (project(p, params0, rho) if project_every_step else p), loss


@partial(jax.jit, static_argnames=("steps", "project_every_step", "record_every", "chunk"))
def train(params0: Params, X: jax.Array, y: jax.Array, *, steps: int, lr: float, rho: float,
          project_every_step: bool = True, record_every: int = 1, chunk: int | None = None) -> tuple[Params, jax.Array]:
    r"""Full-batch (projected) GD for ``steps`` steps; returns final parameters and the loss curve.

    ``losses[k]`` is :math:`\mathcal L(\theta(k\cdot\text{record\_every}))` (before the step).
    """
    batch = prepare_batch(X, y, params0.c.shape[0], chunk)

    def step(p, _):
        p, loss = gd_step(p, params0, batch, lr, rho, project_every_step)
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
