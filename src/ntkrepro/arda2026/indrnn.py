r"""IndRNN baseline of the lag-L experiment (A4).

.. math::

    h_t = \tanh(W_{in} x_t + u\odot h_{t-1}),\quad h_0 = 0,\qquad
    f(x_{1:T}) = \frac{1}{\sqrt m}\sum_{i=1}^m c_i\, h_{T,i}

with :math:`W_{in}\in\mathbb R^{m\times d_{in}}` standard normal, recurrent weights initialised
:math:`u_i \in \{\pm 1.5\}` (random signs), :math:`c_i` Rademacher. All of :math:`W_{in}, u, c`
are trained. Inputs are ``(n, d_in, T)`` like the transformer's.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp


class IndRNNParams(NamedTuple):
    W_in: jax.Array  # (m, d_in)
    u: jax.Array  # (m,)
    c: jax.Array  # (m,)


def init_indrnn(key: jax.Array, m: int, d_in: int, u_scale: float = 1.5) -> IndRNNParams:
    """Standard-normal input weights, recurrent weights ``+-u_scale``, Rademacher readout."""
    if m < 1 or d_in < 1:
        raise ValueError("m and d_in must be positive")
    kw, ku, kc = jax.random.split(key, 3)
    return IndRNNParams(jax.random.normal(kw, (m, d_in)), u_scale * jax.random.rademacher(ku, (m,), jnp.float32),
                        jax.random.rademacher(kc, (m,), jnp.float32))


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
