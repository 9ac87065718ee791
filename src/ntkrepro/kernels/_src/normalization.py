r"""Normalisation: ``LayerNorm`` over channels (neural-tangents ``stax/linear.py: LayerNorm``).

For a mean-zero Gaussian input (the only kind neural-tangents and this backend accept: the
channel mean of such an input vanishes in the infinite-width limit, so normalising needs no
centring) the channel variance of position :math:`s` converges to :math:`C(x)_{ss}`, and

.. math::
    K'(x, y)_{st} = \frac{K(x, y)_{st}}{\sqrt{(\epsilon + C(x)_{ss})(\epsilon + C(y)_{tt})}},
    \qquad \Theta' \text{ and } C' \text{ alike}.

With ``axis`` = channels the mask does not enter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp

from ntkrepro.kernels._src.base import Layer, Single, stax_keywords, _diag_of_single, _nt_stax, _pair_var, _single_var


@stax_keywords(batch_axis=0, channel_axis=-1)
@dataclass(frozen=True, repr=False)
class LayerNorm(Layer):
    r"""``stax.LayerNorm(axis=-1, eps)`` over channels only:
    :math:`K'_{st} = K_{st}/\sqrt{(\epsilon + C(x)_{ss})(\epsilon + C(y)_{tt})}`, same for
    :math:`\Theta` and :math:`C` (``linear.py: LayerNorm``; with ``axis`` = channels the mask does
    not enter)."""

    axis: Any = -1
    eps: float = 1e-12

    def _build_stax(self):
        stax = _nt_stax()
        return stax.LayerNorm(axis=self.axis, eps=self.eps, **self.stax_kwargs())

    def info(self, i):
        # no mean-centring: exact for a mean-zero Gaussian input only (neural-tangents refuses others)
        self.require_gaussian(i, NotImplementedError)
        return super().info(i)

    def need(self, out_mode, in_shape):
        if self.axis not in (-1, (-1,)):
            raise self.unsupported("axis", self.axis, "channels only, axis=-1")
        return out_mode

    def single(self, st, plan):
        var = _diag_of_single(self.eps + st.cov, plan.in_mode)
        r, c = _single_var(var, plan.in_mode)
        return Single(st.cov / jnp.sqrt(r * c), st.mask), var

    def pair(self, p, aux1, aux2, plan):
        v1, v2 = _pair_var(aux1, aux2, plan.in_mode)
        return p._replace(k=p.k / jnp.sqrt(v1 * v2))
