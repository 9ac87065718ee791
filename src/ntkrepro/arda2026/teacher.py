r"""Teacher-student data of Arda et al. (2026): inputs, the infinite-width teacher, transport.

**Inputs.** :math:`X\in\mathbb R^{d\times T}` with i.i.d. :math:`\mathcal N(0, I_d)` tokens, each
rescaled to norm :math:`\le 1`: :math:`x_t \leftarrow x_t/\max(1, \lVert x_t\rVert)`.

**Teacher** (infinite-width limit model through a transportation mapping). Write
:math:`\phi(X;w) = \nabla_w \psi(X; w)` for one head :math:`\psi(X;w) = c\,\tanh(U^\top a(X;W))`,
:math:`w = (W, U, c)`, so that :math:`\langle\phi(X;w),\phi(X';w)\rangle =
\sigma'\sigma''(g^\top g')(x_T^\top x_T') + \sigma'\sigma''\,a^\top a' + h h'` (see
:mod:`.model`). With :math:`R` anchor inputs :math:`\tilde X_r` (drawn like the data) and
coefficients :math:`\beta\sim\mathcal N(0, I_R)`, the transport map is

.. math::

    v(w) = \nu\,\frac{u(w)}{\lVert u(w)\rVert},\qquad u(w) = \sum_{r=1}^R \beta_r\,\phi(\tilde X_r; w),

so :math:`\sup_w\lVert v(w)\rVert = \nu` (the norm bound), and the teacher is

.. math::

    f^\star(X) = \mathbb E_{w\sim w(0)}\big[\langle v(w), \phi(X;w)\rangle\big]
    \approx \frac{1}{M}\sum_{k=1}^M \nu\,\frac{\sum_r\beta_r\,k_{w_k}(X,\tilde X_r)}
    {\sqrt{\beta^\top k_{w_k}(\tilde X,\tilde X)\beta}},

estimated by Monte Carlo over :math:`M` (8192) independent head draws. (The authors' exact
construction is not available offline; this is the construction the setting describes: R anchors,
norm bound :math:`\nu`, MC expectation.) The value is independent of the sign of :math:`c`.

**Width-m transport** (approximation error). For a width-m initialisation
:math:`w_i(0)`, the linearised model at :math:`\theta_i = \theta_i(0) + v(w_i(0))/\sqrt m` is
:math:`\hat f_m(X) = \frac1m\sum_i\langle v(w_i(0)), \phi(X; w_i(0))\rangle`; it lies in the
projection set when :math:`\nu\le\rho`. The approximation error is
:math:`\max_j |\hat f_m(X_j) - f^\star(X_j)|`.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ntkrepro.arda2026.model import head_features


_BLOCK = 256


class TeacherSpec(NamedTuple):
    """Anchors ``(R, d, T)`` and coefficients ``beta (R,)`` that define :math:`v(w)`."""

    anchors: jax.Array
    beta: jax.Array
    nu: float


def sample_inputs(key: jax.Array, n: int, d: int, T: int, dtype=jnp.float32) -> jax.Array:
    """``n`` inputs of shape ``(d, T)``: Gaussian tokens rescaled to norm at most 1.

    Drawn in blocks of 256 from ``fold_in(key, block)``, so the first ``n`` inputs are the same
    for every larger ``n`` (nested datasets for the sample-size sweep).
    """
    if min(n, d, T) < 1:
        raise ValueError(f"n, d, T must be positive, got {(n, d, T)}")
    blocks = [jax.random.normal(jax.random.fold_in(key, b), (_BLOCK, d, T), dtype)
              for b in range(-(-n // _BLOCK))]
    X = jnp.concatenate(blocks)[:n]
    norms = jnp.sqrt(jnp.sum(X**2, axis=1, keepdims=True))
    return X / jnp.maximum(1.0, norms)


def make_teacher(key: jax.Array, d: int, T: int, R: int, nu: float) -> TeacherSpec:
    """Draw the ``R`` anchors and their coefficients."""
    if R < 1 or nu <= 0:
        raise ValueError("need R >= 1 anchors and a positive norm bound nu")
    ka, kb = jax.random.split(key)
    return TeacherSpec(sample_inputs(ka, R, d, T), jax.random.normal(kb, (R,)), float(nu))


def _feature_kernels(W: jax.Array, U: jax.Array, X1: jax.Array, X2: jax.Array) -> jax.Array:
    r"""Per-head feature kernels :math:`k_{w_i}(X_1, X_2)` (c-independent), shape ``(m, n1, n2)``."""
    F1 = head_features(W, U, X1)
    F2 = head_features(W, U, X2)
    s1 = 1.0 - F1.h**2
    s2 = 1.0 - F2.h**2
    kW = jnp.einsum("imd,jmd->mij", F1.g, F2.g) * (F1.xT @ F2.xT.T)[None]
    kU = jnp.einsum("imd,jmd->mij", F1.a, F2.a)
    return s1.T[:, :, None] * s2.T[:, None, :] * (kW + kU) + F1.h.T[:, :, None] * F2.h.T[:, None, :]


@jax.jit
def transport_values(W: jax.Array, U: jax.Array, teacher: TeacherSpec, X: jax.Array) -> jax.Array:
    r"""Per-head :math:`\langle v(w_i), \phi(X_j; w_i)\rangle`, shape ``(m, n)``."""
    kXA = _feature_kernels(W, U, X, teacher.anchors)  # (m, n, R)
    kAA = _feature_kernels(W, U, teacher.anchors, teacher.anchors)  # (m, R, R)
    unorm = jnp.sqrt(jnp.einsum("r,mrs,s->m", teacher.beta, kAA, teacher.beta))
    return teacher.nu * (kXA @ teacher.beta) / unorm[:, None]


HEAD_CHUNK = 64
X_CHUNK = 256


def _padded(a: jax.Array, size: int) -> jax.Array:
    """Pad axis 0 of ``a`` to a multiple of ``size`` by repeating its first rows (results are sliced off)."""
    k = (-a.shape[0]) % size
    return a if k == 0 else jnp.concatenate([a, jnp.repeat(a[:1], k, axis=0)])


def transport_matrix(W: jax.Array, U: jax.Array, teacher: TeacherSpec, X: jax.Array) -> np.ndarray:
    r""":func:`transport_values` for any numbers of heads and inputs, in fixed-size blocks (one compile)."""
    m, n = W.shape[0], X.shape[0]
    Wp, Up, Xp = _padded(W, HEAD_CHUNK), _padded(U, HEAD_CHUNK), _padded(X, X_CHUNK)
    out = np.zeros((Wp.shape[0], Xp.shape[0]), np.float64)
    for i in range(0, Wp.shape[0], HEAD_CHUNK):
        for j in range(0, Xp.shape[0], X_CHUNK):
            out[i:i + HEAD_CHUNK, j:j + X_CHUNK] = np.asarray(
                transport_values(Wp[i:i + HEAD_CHUNK], Up[i:i + HEAD_CHUNK], teacher, Xp[j:j + X_CHUNK]))
    return out[:m, :n]


def teacher_labels(key: jax.Array, teacher: TeacherSpec, X: jax.Array, n_mc: int, chunk: int = 512) -> jax.Array:
    r""":math:`f^\star(X_j)` by Monte Carlo over ``n_mc`` head draws (drawn ``chunk`` at a time)."""
    if n_mc < 1:
        raise ValueError("n_mc must be positive")
    d = X.shape[1]
    total = np.zeros(X.shape[0], np.float64)
    done = 0
    i = 0
    while done < n_mc:
        k = min(chunk, n_mc - done)
        kW, kU = jax.random.split(jax.random.fold_in(key, i), 2)
        W = jax.random.normal(kW, (k, d, d))
        U = jax.random.normal(kU, (k, d))
        total += transport_matrix(W, U, teacher, X).sum(axis=0)
        done += k
        i += 1
    return jnp.asarray(total / n_mc, jnp.float32)


def transport_prediction(W: jax.Array, U: jax.Array, teacher: TeacherSpec, X: jax.Array) -> jax.Array:
    r"""Width-m linearised model at the transported parameters, :math:`\hat f_m(X_j)`, shape ``(n,)``."""
    return jnp.asarray(transport_matrix(W, U, teacher, X).mean(axis=0), jnp.float32)


def make_dataset(seed: int, n: int, d: int, T: int, R: int, nu: float, n_mc: int,
                 train_frac: float = 0.8) -> dict[str, np.ndarray | TeacherSpec]:
    """Inputs, teacher and labels, deterministic in ``seed``; 80/20 train/validation split."""
    if not 0 < train_frac <= 1:
        raise ValueError("train_frac must be in (0, 1]")
    key = jax.random.PRNGKey(seed)
    kx, kt, kmc = jax.random.split(key, 3)
    X = sample_inputs(kx, n, d, T)
    teacher = make_teacher(kt, d, T, R, nu)
    y = teacher_labels(kmc, teacher, X, n_mc)
    n_train = int(round(train_frac * n))
    return {"X_train": X[:n_train], "y_train": y[:n_train], "X_val": X[n_train:], "y_val": y[n_train:],
            "teacher": teacher}
