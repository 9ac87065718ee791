r"""Teacher-student data of Arda et al. (2026): the authors' teacher and the paper's teacher.

Both teachers are the infinite-width limit model written through a *transport map*, estimated by
Monte Carlo, exactly as in the authors' code (``transformer_ntk.data.make_dataset(method="teacher")``
and ``lin_and_tilde_outputs_multianchor``, repository enesarda22/nonasymptotic-transformer, commit
c67d351; read, not copied). One teacher draw is fixed by an integer ``seed``:

**Inputs** (:func:`authors_inputs`). One CPU ``torch.Generator`` seeded with ``seed`` draws, in
this order: :math:`X\in\mathbb R^{n\times d\times T}` standard normal, each token (column)
rescaled to norm :math:`\le 1` (:math:`x_t \leftarrow x_t\min(1, 1/\lVert x_t\rVert)`); a
permutation of the :math:`n` inputs whose first :math:`R` entries are the **anchors**
:math:`X_r` (drawn from the inputs themselves); :math:`a\sim\mathcal N(0, I_R)` and the
coefficients :math:`\alpha = a/\sum_r|a_r|` (so :math:`\sum_r|\alpha_r| = 1`); a second
permutation that splits the inputs 80/20 into train and validation (the first
:math:`\lfloor 0.2n\rfloor` are validation). This is the authors' global-RNG sequence after
``set_seed(seed)`` on a CPU.

**Head features** of one Monte-Carlo draw :math:`\varphi_k = (U_k, W_k)`,
:math:`U_k\sim\mathcal N(0, I_d)`, :math:`W_k\sim\mathcal N(0, I_{d\times d})` (the sign of
:math:`c` cancels): with logits :math:`z_t = x_t^\top D_k x_T`, :math:`\alpha^{(k)} =
\operatorname{softmax}(z)`, :math:`a = X\alpha^{(k)}`, :math:`s = U_k^\top a`,
:math:`g = X J(z) X^\top U_k` (:mod:`.model`, Lemma 1),

.. math::

    \phi_c(X;\varphi_k) = \sigma(s),\quad \phi_u(X;\varphi_k) = \sigma'(s)\,a,\quad
    \phi_w(X;\varphi_k) = \sigma'(s)\,g\,x_T^\top ,\qquad \sigma=\tanh .

**Transport map** per anchor and branch, :math:`\nu = 3`:
:math:`v_c^{(r)} = \nu\,\phi_c(X_r)`, :math:`v_u^{(r)} = \nu\,\phi_u(X_r)`,
:math:`v_w^{(r)} = \phi_w(X_r)\min\big(1, \nu/\lVert\phi_w(X_r)\rVert_F\big)` (Frobenius clip;
:math:`\lVert\phi_w\rVert_F = \lVert\sigma'(s)g\rVert\,\lVert x_T\rVert`), and
:math:`v = \sum_r\alpha_r v^{(r)}`. **Labels**

.. math::

    y(X) = \frac1M\sum_{k=1}^M \langle \phi(X;\varphi_k), v(\varphi_k)\rangle
    = \frac1M\sum_{k}\sum_r \alpha_r\Big[\nu\,\phi_c(X)\phi_c(X_r) + \nu\,\langle\phi_u(X),\phi_u(X_r)\rangle
      + \min\!\Big(1,\tfrac{\nu}{\lVert\phi_w(X_r)\rVert_F}\Big)\langle\sigma'(s)g,\sigma'(s_r)g_r\rangle\,
        \langle x_T, x_{T,r}\rangle\Big]

over :math:`M` (``n_mc``) draws from a second CPU ``torch.Generator`` seeded with
``seed + M``, drawn in chunks of 2048 (per chunk: all :math:`U_k` of the chunk, then all
:math:`W_k`). No label noise, no standardisation.

**The two teachers differ only in** :math:`D_k`:

* ``kind="authors"`` -- the **authors' teacher, diagonal logits**: their code writes
  :math:`W_kx_T` as ``einsum("kdd,bd->bkd", W, X_T)``, which reads only the diagonal of
  :math:`W_k`, so :math:`D_k = \operatorname{diag}(W_k)` and the logits are
  :math:`x_t^\top\operatorname{diag}(W_k)x_T` (in the teacher's features at the inputs *and* at
  the anchors; the student uses its full :math:`W_i`). Fig. 1 was produced with these labels.
* ``kind="paper"`` -- the **paper's teacher**: the same construction with the full
  :math:`D_k = W_k` (the paper's mathematics).

**Width-m transport** (approximation error). The width-m linearised model at the transported
parameters is the same sum over :math:`m` draws (:func:`transport_mean` with ``M = m``), from an
independent stream seeded :math:`10^6(\text{seed}+1) + m` (the authors use ``seed + m``, which makes
different seeds share draws: :math:`1 + 16 = 9 + 8`).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ntkrepro.arda2026.model import head_features

_BLOCK = 256

#: The two teacher constructions (see module doc).
TEACHER_KINDS = ("authors", "paper")
#: The authors' Monte-Carlo chunk: per chunk all U_k, then all W_k, from one generator.
DRAW_CHUNK = 2048
#: Fraction of the inputs held out for validation (the authors' ``val_frac``).
VAL_FRAC = 0.2


def sample_inputs(key: jax.Array, n: int, d: int, T: int, dtype=jnp.float32) -> jax.Array:
    """``n`` inputs of shape ``(d, T)``: Gaussian tokens rescaled to norm at most 1 (JAX stream).

    Drawn in blocks of 256 from ``fold_in(key, block)``, so the first ``n`` inputs are the same
    for every larger ``n``. Used where no teacher is involved (A5's NTK inputs, benchmarks); the
    teachers draw their inputs with :func:`authors_inputs`.
    """
    if min(n, d, T) < 1:
        raise ValueError(f"n, d, T must be positive, got {(n, d, T)}")
    blocks = [jax.random.normal(jax.random.fold_in(key, b), (_BLOCK, d, T), dtype)
              for b in range(-(-n // _BLOCK))]
    X = jnp.concatenate(blocks)[:n]
    norms = jnp.sqrt(jnp.sum(X**2, axis=1, keepdims=True))
    return X / jnp.maximum(1.0, norms)


# --------------------------------------------------------------------------------------------
# Random streams (torch CPU generators, the authors' order)


class Teacher(NamedTuple):
    """One teacher draw: anchors ``(R, d, T)``, coefficients ``alpha (R,)`` with sum|alpha| = 1."""

    anchors: np.ndarray
    alpha: np.ndarray
    nu: float
    kind: str
    seed: int
    n_mc: int


def _check_kind(kind: str) -> str:
    if kind not in TEACHER_KINDS:
        raise ValueError(f"teacher kind must be one of {TEACHER_KINDS}, got {kind!r}")
    return kind


def authors_inputs(seed: int, n: int, d: int, T: int, R: int) -> dict[str, np.ndarray]:
    r"""Inputs, anchor indices, coefficients and the train/validation permutation of teacher ``seed``.

    Returns ``X (n, d, T)`` float32, ``anchor_idx (R,)``, ``alpha (R,)`` (:math:`\sum|\alpha| = 1`)
    and ``perm (n,)``; see the module doc for the order of the draws. With fewer than ``R`` inputs
    the anchors repeat (the authors' rule).
    """
    import torch

    if min(n, d, T, R) < 1:
        raise ValueError(f"n, d, T, R must be positive, got {(n, d, T, R)}")
    g = torch.Generator().manual_seed(int(seed))
    X = torch.randn(n, d, T, generator=g)
    norms = torch.linalg.vector_norm(X, ord=2, dim=-2, keepdim=True).clamp_min(1e-12)
    X = X * torch.clamp(1.0 / norms, max=1.0)
    idx = torch.randperm(n, generator=g)[:min(n, R)]
    if idx.numel() < R:
        idx = idx.repeat(-(-R // idx.numel()))[:R]
    a = torch.randn(R, generator=g)
    alpha = a / a.abs().sum().clamp_min(1e-12)
    perm = torch.randperm(n, generator=g)
    return {"X": X.numpy(), "anchor_idx": idx.numpy(), "alpha": alpha.numpy(), "perm": perm.numpy()}


def head_draws(stream_seed: int, M: int, d: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The Monte-Carlo draws ``(U (k, d), W (k, d, d))`` of a stream, chunk by chunk (float32).

    One CPU ``torch.Generator`` seeded ``stream_seed``; per chunk of at most :data:`DRAW_CHUNK`
    draws, all ``U`` then all ``W`` (the authors' ``_mc_estimate``).
    """
    import torch

    if M < 1:
        raise ValueError("need at least one Monte-Carlo draw")
    g = torch.Generator().manual_seed(int(stream_seed))
    done = 0
    while done < M:
        k = min(DRAW_CHUNK, M - done)
        done += k
        U = torch.randn((k, d), generator=g)
        W = torch.randn((k, d, d), generator=g)
        yield U.numpy(), W.numpy()


def approx_stream(seed: int, m: int) -> int:
    """Seed of the width-``m`` draws of teacher ``seed`` (independent of every teacher stream)."""
    return 1_000_000 * (int(seed) + 1) + int(m)


# --------------------------------------------------------------------------------------------
# Features and the transport sum


def logit_weights(W: jax.Array, kind: str) -> jax.Array:
    r""":math:`D_k`: ``diag(W_k)`` embedded as a diagonal matrix (``authors``) or ``W_k`` (``paper``)."""
    if _check_kind(kind) == "authors":
        return W * jnp.eye(W.shape[-1], dtype=W.dtype)
    return W


def branch_features(W: jax.Array, U: jax.Array, X: jax.Array, kind: str):
    r"""Per-(input, draw) :math:`\phi_c = \sigma(s)`, :math:`\phi_u = \sigma'(s)a`, the rank-1 factor
    :math:`\sigma'(s)g` of :math:`\phi_w = \sigma'(s)g\,x_T^\top`, and :math:`x_T`.

    Shapes ``(n, k)``, ``(n, k, d)``, ``(n, k, d)``, ``(n, d)``. Uses the one model implementation
    (:func:`ntkrepro.arda2026.model.head_features`) with logit matrices :func:`logit_weights`.
    """
    F = head_features(logit_weights(W, kind), U, X)
    sp = (1.0 - F.h**2)[..., None]
    return F.h, sp * F.a, sp * F.g, F.xT


@partial(jax.jit, static_argnames=("kind",))
def transport_sum(W: jax.Array, U: jax.Array, X: jax.Array, anchors: jax.Array, alpha: jax.Array, nu: float,
                  kind: str, mask: jax.Array) -> jax.Array:
    r""":math:`\sum_k \mathrm{mask}_k\langle\phi(X_j;\varphi_k), v(\varphi_k)\rangle` over the draws given, ``(n,)``.

    ``mask`` (``(k,)``, 0 or 1) drops the padding draws of a short last block.

    :math:`= \sum_k \nu h_{jk}\,(\alpha^\top h^A_{\cdot k}) + \nu\langle\phi_{u,jk}, \sum_r\alpha_r\phi^A_{u,rk}\rangle
    + \sum_d (\sigma'g)_{jkd}\,Q_{jkd}` with
    :math:`Q_{jk} = \sum_r \alpha_r\langle x_{T,j}, x_{T,r}\rangle\min(1, \nu/\lVert\phi^A_{w,rk}\rVert_F)\,(\sigma'g)^A_{rk}`.
    """
    hX, uX, wX, xT = branch_features(W, U, X, kind)
    hA, uA, wA, aT = branch_features(W, U, anchors, kind)
    fro = jnp.linalg.norm(wA, axis=-1) * jnp.linalg.norm(aT, axis=-1)[:, None]  # (R, k)
    clip = jnp.minimum(1.0, nu / jnp.maximum(fro, 1e-12))
    vc = nu * (alpha @ hA)  # (k,)
    vu = nu * jnp.einsum("r,rkd->kd", alpha, uA)
    P = alpha[None, :] * (xT @ aT.T)  # (n, R)
    Q = jnp.einsum("nr,rkd->nkd", P, clip[..., None] * wA)
    per_draw = hX * vc + jnp.einsum("nkd,kd->nk", uX, vu) + jnp.einsum("nkd,nkd->nk", wX, Q)
    return per_draw @ mask


def _compute_chunk(n: int, T: int) -> int:
    """Draws per compiled call: about 4M (input, draw, token) entries, a power of two in [16, 512]."""
    k = max(16, min(512, (4_000_000 // max(1, n * T))))
    return 1 << (k.bit_length() - 1)


def transport_mean(stream_seed: int, M: int, X: np.ndarray, teacher: Teacher, *,
                   dtype: Any = np.float32) -> np.ndarray:
    r""":math:`\frac1M\sum_{k\le M}\langle\phi(X_j;\varphi_k), v(\varphi_k)\rangle` over the draws of
    :func:`head_draws` (``stream_seed``), accumulated in float64; shape ``(n,)``.

    ``dtype`` is the compute precision (float64 for the exactness tests, under ``jax_enable_x64``).
    Draws are evaluated in fixed-size blocks (one compile per shape); a short last block is padded
    and the padding masked out.
    """
    X = np.asarray(X, dtype)
    n, d, T = X.shape
    Xj = jnp.asarray(X)
    A = jnp.asarray(np.asarray(teacher.anchors, dtype))
    al = jnp.asarray(np.asarray(teacher.alpha, dtype))
    kc = _compute_chunk(n + A.shape[0], T)
    total = np.zeros(n, np.float64)
    for U, W in head_draws(stream_seed, M, d):
        block = min(kc, U.shape[0])
        for s in range(0, U.shape[0], block):
            u, w = U[s:s + block].astype(dtype), W[s:s + block].astype(dtype)
            mask = np.zeros(block, dtype)
            mask[:u.shape[0]] = 1.0
            if u.shape[0] < block:  # pad the last block to the compiled size; the mask drops the copies
                u = np.concatenate([u, np.repeat(u[:1], block - u.shape[0], 0)])
                w = np.concatenate([w, np.repeat(w[:1], block - w.shape[0], 0)])
            total += np.asarray(transport_sum(jnp.asarray(w), jnp.asarray(u), Xj, A, al, teacher.nu, teacher.kind,
                                              jnp.asarray(mask)), np.float64)
    return total / M


def make_teacher(seed: int, n: int, d: int, T: int, *, R: int, nu: float, n_mc: int, kind: str,
                 dtype: Any = np.float32) -> dict[str, Any]:
    r"""Teacher ``seed`` of ``kind``: inputs, labels :math:`y(X_j)` over all ``n`` inputs, split.

    Returns ``X`` / ``y`` (all inputs, drawing order), ``X_train``, ``y_train``, ``X_val``,
    ``y_val`` (the authors' permutation split; the first :math:`\lfloor 0.2 n\rfloor` of the
    permutation are validation), ``order`` (the permutation: ``X[order]`` lists validation first),
    ``teacher`` (:class:`Teacher`) and ``label_stats`` (mean :math:`y^2`, std, variance of the
    training labels).
    """
    if nu <= 0:
        raise ValueError("the norm bound nu must be positive")
    inp = authors_inputs(seed, n, d, T, R)
    X = inp["X"].astype(dtype)
    tch = Teacher(X[inp["anchor_idx"]], inp["alpha"].astype(dtype), float(nu), _check_kind(kind), int(seed),
                  int(n_mc))
    y = transport_mean(int(seed) + int(n_mc), int(n_mc), X, tch, dtype=dtype)
    n_val = int(VAL_FRAC * n)
    perm = inp["perm"]
    val, tr = perm[:n_val], perm[n_val:]
    return {"X": X, "y": y, "X_train": X[tr], "y_train": y[tr].astype(dtype), "X_val": X[val],
            "y_val": y[val].astype(dtype), "order": perm, "teacher": tch, "label_stats": label_stats(y[tr])}


def label_stats(y: np.ndarray) -> dict[str, float]:
    """Scale of a label vector: mean of :math:`y^2`, standard deviation, variance, mean."""
    y = np.asarray(y, np.float64)
    return {"mean_y2": float(np.mean(y**2)), "std": float(np.std(y)), "var": float(np.var(y)),
            "mean": float(np.mean(y))}


def width_m_prediction(seed: int, m: int, X: np.ndarray, teacher: Teacher) -> np.ndarray:
    r"""Width-m linearised model at the transported parameters, :math:`\hat f_m(X_j)`: the teacher's
    sum over ``m`` draws of the independent stream :func:`approx_stream` ``(seed, m)``."""
    return transport_mean(approx_stream(seed, m), int(m), X, teacher, dtype=np.asarray(X).dtype)
