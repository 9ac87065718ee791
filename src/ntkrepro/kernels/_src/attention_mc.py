r"""``GlobalSelfAttention(..., linear_scaling=False)``: the infinite-head kernel of attention at the
standard :math:`d^{-1/2}` scaling, by Monte Carlo over the Gaussian logits. **An extension beyond
the four papers this project replicates** (neural-tangents raises ``NotImplementedError`` for every
mechanism but ``IDENTITY``; its issue #117).

Derivation (Hron et al. 2020, *Infinite attention*, arXiv:2006.10540, Sec. 3 and App.; checked
term by term against neural-tangents 0.6.5 ``stax/linear.py: GlobalSelfAttention``, the
``not linear_scaling`` / ``IDENTITY`` branch of its ``kernel_fn``, and its ``apply_fn``)
------------------------------------------------------------------------------------------------
One head of the layer (neural-tangents ``apply_fn``, independent query and key weights, NTK
parameterisation, :math:`d` input channels, :math:`d_k` key channels):

.. math::
    q_j(x)_s = x_s\cdot W^Q_{:j}/\sqrt d,\quad k_j(x)_u = x_u\cdot W^K_{:j}/\sqrt d,\quad
    G(x)_{su} = \frac{\sigma_Q\sigma_K}{\sqrt{d_k}}\sum_{j\le d_k} q_j(x)_s\,k_j(x)_u,

    f(x)_s = \frac{\sigma_O\sigma_V}{\sqrt{H d_v}}\sum_{h\le H,\,c\le d_v}
        W^O_{hc}\sum_u A_h(x)_{su} V_h(x)_{uc},\qquad A_h = \phi(G_h)

(:math:`\phi` the mechanism: softmax over keys :math:`u`, identity, abs, relu; masked keys
:math:`-\infty` before the softmax, 0 otherwise). The :math:`q_j, k_j` are independent centred
Gaussian processes over (input, position) with covariance the input kernel :math:`K`. As
:math:`d_k\to\infty` the logits of one head tend (CLT over :math:`j`) to a centred Gaussian field,
jointly over inputs and positions, with

.. math:: \mathbb E[G(x)_{su}\,G(y)_{tv}] = \sigma_{QK}^2\, K(x,y)_{st}\, K(x,y)_{uv}

(independent :math:`W^Q, W^K`, as neural-tangents' ``apply_fn`` at ``linear_scaling=False``; tied
:math:`W^Q = W^K` would add :math:`\sigma_{QK}^2 K_{sv}K_{ut}` -- not implemented, the test of
:mod:`tests.test_attention_softmax_mc` uses it as the near alternative that must *not* match), and
the logits are independent of the values :math:`V` (independent :math:`W^V`). The output of one
head is not Gaussian (Hron et al.'s H1), but as :math:`H, d_v\to\infty` the output is a Gaussian
process (CLT over heads) with

.. math:: K'(x,y) = \sigma_{OV}^2\;\mathbb E\big[A(x)\,K(x,y)\,A(y)^\top\big] + \sigma_b^2,

an expectation over the pair :math:`(G(x), G(y))` of the Gaussian above. For ``IDENTITY`` it is
:math:`\sigma_{OV}^2\sigma_{QK}^2 K_{st}\sum_{uv}K_{uv}^2`, neural-tangents' closed form.

**NTK** (gradient inner products; each term's weights are independent of the others, so cross
terms vanish in the limit):

* :math:`W^O` and :math:`W^V`: :math:`2(K' - \sigma_b^2)`; bias: :math:`\sigma_b^2`;
* the input's own parameters through the values: :math:`\sigma_{OV}^2\,\mathbb E[A(x)\Theta A(y)^\top]`
  (the same expectation, :math:`\Theta` in place of :math:`K`);
* :math:`W^Q`, :math:`W^K` and the input's parameters through the logits: with the softmax Jacobian
  :math:`J(x)_{s,uu'} = \partial A_{su}/\partial G_{su'} = A_{su}(\delta_{uu'} - A_{su'})` and the
  logits' (deterministic, :math:`d_k\to\infty`) gradient inner product
  :math:`\langle\nabla G(x)_{su'},\nabla G(y)_{tv'}\rangle = \sigma_{QK}^2[(2K_{st} + \Theta_{st})K_{u'v'}
  + K_{st}\Theta_{u'v'}]` (:math:`W^Q`, :math:`W^K`, queries' inputs, keys' inputs),

  .. math:: \sigma_{OV}^2\sigma_{QK}^2\,\mathbb E\big[(2K + \Theta)\circ P(K, K) + K\circ P(K, \Theta)\big],
      \qquad P(X, Y)_{st} = \sum_{uu'vv'} J(x)_{s,uu'}\,X_{uv}\,J(y)_{t,vv'}\,Y_{u'v'},

  the values' covariance :math:`X = K` on the un-primed keys. With :math:`a = A(x), b = A(y)`:

  .. math:: P(X,Y) = a(X\circ Y)b^\top - a\big((Xb^\top)\circ(Yb^\top)\big)
      - \big((aX)\circ(aY)\big)b^\top + (aXb^\top)\circ(aYb^\top)

  (matrix products only, :math:`O(S^3)`); an elementwise mechanism has :math:`J_{s,uu'} =
  \phi'(G_{su})\delta_{uu'}` and :math:`P(X,Y) = D(x)(X\circ Y)D(y)^\top`, :math:`D = \phi'(G)`.

So :math:`\Theta' = \sigma_{OV}^2\,\mathbb E[A\Theta A'^\top + 2AKA'^\top + \sigma_{QK}^2((2K+\Theta)\circ
P(K,K) + K\circ P(K,\Theta))] + \sigma_b^2`. For ``IDENTITY`` (:math:`P(X,Y)_{st} = \sum_{uv}X_{uv}
Y_{uv}`) this is neural-tangents' :math:`\sigma^2[4K\,\Sigma K^2 + \Theta\,\Sigma K^2 + 2K\,\Sigma K\Theta]`.

Monte Carlo
-----------
Per input pair :math:`(x, y)`: :math:`R` = the symmetric PSD square root (``eigh``, eigenvalues
clipped, :func:`psd_sqrt`) of the :math:`2S\times2S` joint covariance
:math:`\begin{pmatrix}C(x) & K(x,y)\\ K(x,y)^\top & C(y)\end{pmatrix}`; with :math:`Z` a
:math:`2S\times2S` matrix of iid standard normals, :math:`\sigma_{QK} R Z R^\top` has exactly the
covariance :math:`\sigma_{QK}^2\,\mathcal K\otimes\mathcal K`; its diagonal blocks are :math:`(G(x),
G(y))`. Draw :math:`n` is :math:`Z_{\lfloor n/2\rfloor}` for even :math:`n` and its block swap
:math:`P Z_{\lfloor n/2\rfloor} P^\top` for odd :math:`n` (``mc_samples`` must be even): the sample
set is closed under exchanging :math:`x` and :math:`y`, so :math:`\hat K'(y,x) = \hat K'(x,y)^\top`
(to rounding) and a symmetric block :math:`K(X,X)` comes out symmetric. :math:`Z_m` is
``jax.random.normal(fold_in(PRNGKey(mc_seed), m))`` (float32, cast), the same for every pair of a call, of a block,
of any chunking: an entry depends on its two inputs, the seed and ``mc_samples`` only (blocks of
``compute_kernel_blocks`` assemble consistently). The per-input covariance :math:`C'(x)` uses the
same draws as the pair :math:`(x, x)` (:math:`R = \frac1{\sqrt2}\begin{pmatrix}C^{1/2} & C^{1/2}\\
C^{1/2}&C^{1/2}\end{pmatrix}`, so :math:`G(x) = C^{1/2}\bar Z C^{1/2}`, :math:`\bar Z = \frac12\sum`
of the four blocks of :math:`Z`), so :math:`C'(x)` and :math:`K'(x,x)` agree to rounding.

Samples run in chunks (``mc_chunk``, or as many as fit :data:`MC_MEMORY_BUDGET` bytes), summed in a
``fori_loop``: memory is one chunk's ``chunk x n1 x n2 x S x 2S`` arrays, not ``samples x ...``.

Error: each entry is a mean of ``mc_samples`` bounded terms (softmax weights are in [0, 1]), so its
standard error falls as ``mc_samples**-0.5`` (tested); the draws are shared across pairs (common
random numbers), so errors of entries are correlated, and the estimated kernel matrix is not
guaranteed positive semi-definite (each pair has its own square root). :func:`mc_kernel` gives the
per-entry standard error of a whole model's kernel from independent replicate seeds (downstream
layers included).

Cost per pair and draw: logits :math:`24S^3` FLOPs (:math:`RZR^\top` for both inputs), NNGP
:math:`4S^3`, NTK another :math:`\approx 22S^3` (softmax); plus one ``eigh`` of
:math:`2S\times2S` per pair (once, not per draw).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

#: Bytes of per-draw arrays per chunk of draws (see module docstring) when ``mc_chunk`` is None.
MC_MEMORY_BUDGET = 32 * 2 ** 20
_NEG_INF = -1e20  # neural-tangents' masked-key logit
#: live ``S x S`` arrays per pair and draw (logits, weights, products), for the chunk size
_LIVE = 24


def psd_sqrt(m: Any) -> Any:
    r"""Symmetric PSD square root of (a batch of) symmetric matrices: eigenvalues below
    :math:`10\,n\,\epsilon\,\lambda_{max}` (rounding noise of a singular matrix, e.g. masked
    positions or the pair :math:`(x, x)`, whose square root would be :math:`O(\sqrt\epsilon)`) set to 0."""
    w, u = jnp.linalg.eigh(m)
    tol = 10 * m.shape[-1] * jnp.finfo(w.dtype).eps * jnp.max(jnp.abs(w), axis=-1, keepdims=True)
    r = jnp.sqrt(jnp.where(w > tol, w, jnp.zeros((), w.dtype)))
    return jnp.einsum("...ij,...j,...kj->...ik", u, r, u)


def draws(key: Any, idx: Any, s: int, dtype: Any) -> Any:
    """Draws ``idx (m,)`` of the module docstring, ``(m, 2S, 2S)``: :math:`Z_{\\lfloor n/2\\rfloor}`,
    block-swapped for odd ``n``; drawn in float32 and cast to ``dtype`` (float32 and float64 runs
    use the same draws)."""
    def one(i):
        z = jax.random.normal(jax.random.fold_in(key, i // 2), (2 * s, 2 * s), jnp.float32).astype(dtype)
        return jnp.where(i % 2 == 1, jnp.roll(z, (s, s), axis=(0, 1)), z)
    return jax.vmap(one)(idx)


def attend(g: Any, key_mask: Any | None, mech: str) -> tuple[Any, Any | None]:
    r"""Attention weights :math:`A = \phi(G)` over the last axis (keys) and, for elementwise
    mechanisms, :math:`D = \phi'(G)` (``None`` for the softmax). ``key_mask`` broadcasts against
    ``g[..., 0, :]`` (``True`` = masked key: :math:`-10^{20}` before the softmax, else weight 0)."""
    km = None if key_mask is None else key_mask[..., None, :]
    if mech == "SOFTMAX":
        if km is not None:
            g = jnp.where(km, jnp.asarray(_NEG_INF, g.dtype), g)
        return jax.nn.softmax(g, axis=-1), None
    if mech == "IDENTITY":
        a, d = g, jnp.ones_like(g)
    elif mech == "ABS":
        a, d = jnp.abs(g), jnp.sign(g)
    elif mech == "RELU":
        a, d = jnp.maximum(g, 0.0), (g > 0).astype(g.dtype)
    else:
        raise ValueError(f"unknown attention_mechanism {mech!r}")
    if km is not None:
        zero = jnp.zeros((), g.dtype)
        a, d = jnp.where(km, zero, a), jnp.where(km, zero, d)
    return a, d


def _t(a: Any) -> Any:
    return jnp.swapaxes(a, -1, -2)


def jacobian_term(a: Any, b: Any, da: Any | None, db: Any | None, x: Any, y: Any, xbt: Any, ybt: Any,
                  axbt: Any, aybt: Any) -> Any:
    r""":math:`P(X, Y)` of the module docstring for weights ``a = A(x)``, ``b = A(y)`` (batched
    ``(..., S, S)``), given :math:`Xb^\top`, :math:`Yb^\top`, :math:`aXb^\top`, :math:`aYb^\top`;
    ``da, db`` = :math:`\phi'(G)` for an elementwise mechanism (``None``: the softmax)."""
    if da is not None:
        return da @ (x * y) @ _t(db)
    return a @ (x * y) @ _t(b) - a @ (xbt * ybt) - ((a @ x) * (a @ y)) @ _t(b) + axbt * aybt


def chunk_size(mc_chunk: int | None, samples: int, pairs: int, s: int, itemsize: int) -> int:
    """Draws per chunk: ``mc_chunk`` if given, else as many as fit :data:`MC_MEMORY_BUDGET`."""
    if mc_chunk:
        return max(1, min(int(mc_chunk), samples))
    per = max(1, pairs) * _LIVE * s * s * itemsize
    return int(max(1, min(samples, MC_MEMORY_BUDGET // per)))


def _sum_draws(fn, n_draws: int, m: int, init: Any) -> Any:
    """:math:`\\sum_{n < n\\_draws}` ``fn(idx, weight)`` over chunks of ``m`` draw indices (the last
    chunk padded with weight 0): one ``fori_loop``."""
    n_chunks = -(-n_draws // m)

    def body(c, acc):
        idx = c * m + jnp.arange(m)
        w = (idx < n_draws)
        parts = fn(idx, w)
        return jax.tree_util.tree_map(jnp.add, acc, parts)

    return jax.lax.fori_loop(0, n_chunks, body, init)


def _key(layer: Any, key: Any | None) -> Any:
    return jax.random.PRNGKey(int(layer.mc_seed)) if key is None else key


def single_mc(layer: Any, cov: Any, mask: Any | None, out_mode: str, key: Any | None = None) -> Any:
    r""":math:`\mathbb E[A(x) C(x) A(x)^\top]` (full ``(n, S, S)``, or its diagonal ``(n, S)``) over
    the draws of the pair :math:`(x, x)` (module docstring), before the output affine map. ``key``:
    the PRNG key (default ``PRNGKey(layer.mc_seed)``; may be traced, e.g. vmapped over seeds)."""
    n, s = cov.shape[0], cov.shape[-1]
    dtype = cov.dtype
    key = _key(layer, key)
    qk = layer.W_query_std * layer.W_key_std
    sq = psd_sqrt(cov)
    base = int(layer.mc_samples) // 2  # Z and its block swap give the same Zbar
    m = chunk_size(layer.mc_chunk, base, n, s, jnp.dtype(dtype).itemsize)
    km = None if mask is None else mask[None]

    def fn(idx, w):
        z = draws(key, 2 * idx, s, dtype)
        zbar = (z[:, :s, :s] + z[:, :s, s:] + z[:, s:, :s] + z[:, s:, s:]) / 2
        g = qk * (sq[None] @ zbar[:, None] @ sq[None])  # (m, n, S, S)
        a, _ = attend(g, km, layer.attention_mechanism)
        ac = a @ cov[None]
        out = ac @ _t(a) if out_mode == "full" else jnp.sum(ac * a, axis=-1)
        return jnp.sum(jnp.where(w.reshape((-1,) + (1,) * (out.ndim - 1)), out, 0), axis=0)

    shape = (n, s, s) if out_mode == "full" else (n, s)
    return _sum_draws(fn, base, m, jnp.zeros(shape, dtype)) / base


def pair_mc(layer: Any, c1: Any, c2: Any, m1: Any | None, m2: Any | None, k: Any, theta: Any | None,
            compute_ntk: bool, out_mode: str, key: Any | None = None) -> tuple[Any, Any | None]:
    r"""Monte Carlo of the module docstring for a block: ``c1 (n1, S, S)``, ``c2 (n2, S, S)``,
    ``k``, ``theta (n1, n2, S, S)`` (``theta`` ``None``: the input NTK is 0). Returns
    :math:`\mathbb E[AKA'^\top]` and (if ``compute_ntk``) :math:`\mathbb E[A\Theta A'^\top + 2AKA'^\top
    + \sigma_{QK}^2(\dots)]`, ``(n1, n2, S, S)`` or their diagonals ``(n1, n2, S)``, before the
    output affine map (:math:`\sigma_{OV}^2`, bias). ``key`` as in :func:`single_mc`."""
    n1, n2, s = k.shape[0], k.shape[1], k.shape[-1]
    dtype = k.dtype
    key = _key(layer, key)
    qk = layer.W_query_std * layer.W_key_std
    mech = layer.attention_mechanism
    top = jnp.concatenate([jnp.broadcast_to(c1[:, None], (n1, n2, s, s)), k], axis=-1)
    bot = jnp.concatenate([_t(k), jnp.broadcast_to(c2[None], (n1, n2, s, s))], axis=-1)
    r = psd_sqrt(jnp.concatenate([top, bot], axis=-2))  # (n1, n2, 2S, 2S)
    rx, ry = r[..., :s, :], r[..., s:, :]
    km1 = None if m1 is None else m1[:, None, :]
    km2 = None if m2 is None else m2[None, :, :]
    n_draws = int(layer.mc_samples)
    m = chunk_size(layer.mc_chunk, n_draws, n1 * n2, s, jnp.dtype(dtype).itemsize)
    full = out_mode == "full"

    def out(a):
        return a if full else jnp.diagonal(a, axis1=-2, axis2=-1)

    def fn(idx, w):
        z = draws(key, idx, s, dtype)[:, None, None]  # (m, 1, 1, 2S, 2S)
        gx = qk * (rx @ z @ _t(rx))  # (m, n1, n2, S, S)
        gy = qk * (ry @ z @ _t(ry))
        a, da = attend(gx, km1, mech)
        b, db = attend(gy, km2, mech)
        kbt = k @ _t(b)
        akbt = a @ kbt
        parts = [out(akbt)]
        if compute_ntk:
            pkk = jacobian_term(a, b, da, db, k, k, kbt, kbt, akbt, akbt)
            if theta is None:
                nt = 2 * akbt + qk ** 2 * (2 * k) * pkk
            else:
                tbt = theta @ _t(b)
                atbt = a @ tbt
                pkt = jacobian_term(a, b, da, db, k, theta, kbt, tbt, akbt, atbt)
                nt = atbt + 2 * akbt + qk ** 2 * ((2 * k + theta) * pkk + k * pkt)
            parts.append(out(nt))
        wb = w.reshape((-1,) + (1,) * (parts[0].ndim - 1))
        return tuple(jnp.sum(jnp.where(wb, p, 0), axis=0) for p in parts)

    shape = (n1, n2, s, s) if full else (n1, n2, s)
    init = tuple(jnp.zeros(shape, dtype) for _ in range(2 if compute_ntk else 1))
    sums = _sum_draws(fn, n_draws, m, init)
    res = tuple(x / n_draws for x in sums)
    return res[0], (res[1] if compute_ntk else None)


def flops_per_pair(layer: Any, s: int, compute_ntk: bool) -> float:
    """FLOPs per input pair of the Monte Carlo layer (module docstring): ``mc_samples`` draws of
    :math:`28S^3` (NNGP) or :math:`50S^3` (NNGP and NTK)."""
    return float(layer.mc_samples) * (50.0 if compute_ntk else 28.0) * float(s) ** 3
