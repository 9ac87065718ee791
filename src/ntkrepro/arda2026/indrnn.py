r"""IndRNN baseline of the lag-L experiment (A4).

.. math::

    h_t = \tanh(W_{in} x_t + u\odot h_{t-1}),\quad h_0 = 0,\qquad
    f(x_{1:T}) = \frac{1}{\sqrt m}\sum_{i=1}^m c_i\, h_{T,i}

**Initialisation** (pairwise symmetric, as the authors' ``IndiRNN(symmetric_init=True)`` and the
transformer of :mod:`.model`): for :math:`i\le m/2`, :math:`W_{in,i}\sim\mathcal N(0, I)`,
:math:`u_i\in\{\pm 1.5\}` (random signs), :math:`c_i` Rademacher; unit :math:`m/2+i` copies
:math:`W_{in,i}, u_i` and takes :math:`-c_i`, so :math:`f(\cdot;\theta_0) = 0` exactly (``m`` even).
All of :math:`W_{in}, u, c` are trained. Inputs are ``(n, d_in, T)`` like the transformer's.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp


class IndRNNParams(NamedTuple):
    W_in: jax.Array  # (m, d_in)
    u: jax.Array  # (m,)
    c: jax.Array  # (m,)


def init_indrnn(key: jax.Array, m: int, d_in: int, u_scale: float = 1.5) -> IndRNNParams:
    """Pairwise-symmetric init: standard-normal ``W_in``, ``u = +-u_scale``, Rademacher ``c`` on the first
    half; the second half copies ``W_in`` and ``u`` and negates ``c`` (``f(.; theta_0) = 0``)."""
    if m < 2 or m % 2 or d_in < 1:
        raise ValueError(f"m must be a positive even number and d_in positive, got m={m}, d_in={d_in}")
    kw, ku, kc = jax.random.split(key, 3)
    half = m // 2
    W = jax.random.normal(kw, (half, d_in))
    u = u_scale * jax.random.rademacher(ku, (half,), jnp.float32)
    c = jax.random.rademacher(kc, (half,), jnp.float32)
    return IndRNNParams(jnp.concatenate([W, W]), jnp.concatenate([u, u]), jnp.concatenate([c, -c]))


def indrnn_forward(params: IndRNNParams, X: jax.Array) -> jax.Array:
    """Readout of the last hidden state for inputs ``X (n, d_in, T)``; shape ``(n,)``."""
    if X.ndim != 3 or X.shape[1] != params.W_in.shape[1]:
        raise ValueError(f"inputs must be (n, {params.W_in.shape[1]}, T), got {X.shape}")
    drive = jnp.einsum("ndt,md->tnm", X, params.W_in)  # (T, n, m)

    def step(h, x):
        h = jnp.tanh(x + params.u * h)
        return h, None

    h, _ = jax.lax.scan(step, jnp.zeros(drive.shape[1:], X.dtype), drive)
    return h @ params.c / jnp.sqrt(params.c.shape[0])


def project_indrnn(params: IndRNNParams, params0: IndRNNParams, rho: float | jax.Array) -> IndRNNParams:
    r"""Per-unit projection onto :math:`\lVert W_{in,i}-W_{in,i}(0)\rVert, |u_i-u_i(0)|, |c_i-c_i(0)|\le\rho/\sqrt m`
    (the authors' ``IndiRNN.project_``)."""
    r = rho / jnp.sqrt(params.c.shape[0])
    dW = params.W_in - params0.W_in
    nW = jnp.sqrt(jnp.sum(dW**2, axis=1, keepdims=True))
    dW = dW * jnp.minimum(1.0, r / jnp.maximum(nW, 1e-30))
    return IndRNNParams(params0.W_in + dW, params0.u + jnp.clip(params.u - params0.u, -r, r),
                        params0.c + jnp.clip(params.c - params0.c, -r, r))


def indrnn_mse(params: IndRNNParams, X: jax.Array, y: jax.Array) -> jax.Array:
    """Mean squared error of the IndRNN on ``(X, y)``."""
    return jnp.mean((indrnn_forward(params, X) - y) ** 2)


@partial(jax.jit, static_argnames=("steps",))
def train_indrnn(params0: IndRNNParams, X: jax.Array, y: jax.Array, *, steps: int, lr: float,
                 rho: float) -> tuple[IndRNNParams, jax.Array]:
    r"""Full-batch projected GD on the MSE (autodiff through the recurrence); ``losses[k]`` is the loss
    before step ``k`` -- the IndRNN counterpart of :func:`ntkrepro.arda2026.model.train`."""
    vg = jax.value_and_grad(indrnn_mse)

    def step(p, _):
        loss, g = vg(p, X, y)
        p = jax.tree_util.tree_map(lambda a, b: a - lr * b, p, g)
        return project_indrnn(p, params0, rho), loss

    return jax.lax.scan(step, params0, None, length=steps)
