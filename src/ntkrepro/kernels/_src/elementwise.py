r"""The ReLU arc-cosine kernel, elementwise, with a branch-free ``atan2`` that XLA vectorises.

neural-tangents' ``stax.Relu`` (``ABRelu(0, 1)``) maps a covariance :math:`c = K(x, y)_{st}` with
variances :math:`v_1 = K(x, x)_{ss}`, :math:`v_2 = K(y, y)_{tt}` to

.. math::
    q = \max(v_1 v_2 - c^2, 0),\qquad \theta = \operatorname{atan2}(\sqrt q, c)
    \ (\theta = \pi/2 \text{ if } q = c = 0),

    \dot\sigma = \tfrac12 - \tfrac{\theta}{2\pi},\qquad
    K' = \tfrac{1}{2\pi}\sqrt q + \dot\sigma\, c,\qquad \Theta' = \dot\sigma\,\Theta .

The expressions are the same as neural-tangents' (same operands, same order), except ``atan2``:
XLA's CPU ``atan2`` is a scalar libm call (about 30 ns per element on this machine, which made
ReLU a large part of neural-tangents' time on full spatial covariances). :func:`atan2_nonneg`
is Cephes' ``atan`` (rational approximation on :math:`|u| \le 0.66`, reduction
:math:`u = (t - 1)/(t + 1)` above, relative error below :math:`10^{-16}` in float64 and a few ulp in
float32) after the octant reduction :math:`t = \min(y, |x|)/\max(y, |x|) \in [0, 1]`, all
branches computed and selected with ``where`` so that the loop vectorises.

**float32 pair pass: the correlation form** (:func:`relu_kernel_corr`). Even branch-free, that
``atan2`` costs four divisions per entry, and the ReLU of a full :math:`S = 64` covariance took as
long as the conv before it (2.6 ms per 256 pairs, issue 36). In float32 the pair pass computes the
same map from the correlation :math:`\rho = c\,v_1^{-1/2} v_2^{-1/2}` (the inverse square roots
are per input, so no division per entry) clamped to :math:`[-1, 1]`, :math:`a = |\rho|`:

.. math::
    \theta_a = \arccos a = \begin{cases} 2\arcsin\sqrt{(1 - a)/2} & a > 1/2 \\
        \pi/2 - \arcsin a & a \le 1/2 \end{cases},\qquad
    \theta = \theta_a \ (\rho \ge 0),\ \pi - \theta_a\ (\rho < 0),

    \sqrt q = \sqrt{v_1}\sqrt{v_2}\,\sqrt{(1 - a)(1 + a)},

with Cephes' ``asinf`` polynomial on :math:`[0, 1/2]` (:math:`\arcsin u = u + u z P(z)`,
:math:`z = u^2`, degree 4, relative error :math:`\sim 2\cdot 10^{-7}`): two square roots, no
division. :math:`\sqrt q` is computed from the same rounded :math:`\rho` as :math:`\theta`, so that
in :math:`K' = (\sqrt q + (\pi - \theta)c)/2\pi` the rounding of :math:`\theta` cancels to first
order (:math:`\partial_\theta(\sin\theta - \theta\cos\theta_0) = 0` at :math:`\theta_0`), as it
does in the ``atan2`` form. Zero variance (masked positions) gives :math:`\rho = 0`,
:math:`\theta = \pi/2` (neural-tangents' fill). float64 keeps the ``atan2`` form above (exact to
:math:`4\cdot 10^{-16}`, the path for claims that need exactness). Near :math:`|\rho| = 1` (not an input
with itself) neural-tangents' :math:`q = v_1v_2 - c^2` loses half the digits, so there the two
backends differ by neural-tangents' own error (relative :math:`\sqrt{\epsilon}` at worst, far below
the tests' tolerance for correlations under :math:`1 - 10^{-5}`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax.numpy as jnp

from ntkrepro.kernels._src.base import (Info, Layer, Pair, Single, _coincident, _diag_of_single, _kernel_slices, _nt_stax,
                                        _pair_var, _single_var, _stack, stax_keywords)

# Cephes atan.c: atan(u) = u + u z P(z)/Q(z), z = u^2, |u| <= 0.66
_P = (-8.750608600031904122785e-1, -1.615753718733365076637e1, -7.500855792314704667340e1,
      -1.228866684490136173410e2, -6.485021904942025371773e1)
_Q = (2.485846490142306297962e1, 1.650270098316988542046e2, 4.328810604912902668951e2,
      4.853903996359136964868e2, 1.945506571482613964425e2)
_PI = math.pi
_FACTOR = 1.0 / (2.0 * math.pi)  # (a - b)^2 / (2 pi) for a = 0, b = 1


def _atan_unit(t: jnp.ndarray) -> jnp.ndarray:
    r""":math:`\arctan t` for :math:`t \in [0, 1]` (Cephes reduction and rational approximation)."""
    big = t > 0.66
    u = jnp.where(big, (t - 1.0) / (t + 1.0), t)
    z = u * u
    p = (((_P[0] * z + _P[1]) * z + _P[2]) * z + _P[3]) * z + _P[4]
    q = ((((z + _Q[0]) * z + _Q[1]) * z + _Q[2]) * z + _Q[3]) * z + _Q[4]
    r = u + u * (z * p / q)
    return jnp.where(big, _PI / 4 + r, r)


def atan2_nonneg(y: jnp.ndarray, x: jnp.ndarray) -> jnp.ndarray:
    r""":math:`\operatorname{atan2}(y, x) \in [0, \pi]` for :math:`y \ge 0`, and :math:`\pi/2` at
    :math:`y = x = 0` (neural-tangents' ``_arctan2(..., fill_zero=pi/2)``)."""
    ax = jnp.abs(x)
    swap = y > ax
    # t = min(y, |x|) / max(y, |x|) written as a select of two quotients: XLA vectorises this form
    # (a min/max quotient ran ~5x slower on the CPU); 0/0 at y = x = 0 is replaced below.
    a = _atan_unit(jnp.where(swap, ax / y, y / ax))
    a = jnp.where(swap, _PI / 2 - a, a)
    a = jnp.where(x < 0, _PI - a, a)
    return jnp.where((y == 0) & (x == 0), _PI / 2, a)


# Cephes asinf.c: asin(u) = u + u z P(z), z = u^2, 0 <= u <= 1/2 (float32)
_ASIN_P = (4.2163199048e-2, 2.4181311049e-2, 4.5470025998e-2, 7.4953002686e-2, 1.6666752422e-1)


def acos_unit_f32(a: jnp.ndarray) -> jnp.ndarray:
    r""":math:`\arccos a` for :math:`a \in [0, 1]` in float32 (Cephes ``acosf``: :math:`2\arcsin
    \sqrt{(1-a)/2}` above 1/2, :math:`\pi/2 - \arcsin a` below, ``asinf``'s polynomial; both
    branches computed and selected, no division)."""
    big = a > 0.5
    z = jnp.where(big, 0.5 - 0.5 * a, a * a)
    u = jnp.where(big, jnp.sqrt(z), a)
    p = (((_ASIN_P[0] * z + _ASIN_P[1]) * z + _ASIN_P[2]) * z + _ASIN_P[3]) * z + _ASIN_P[4]
    r = u + u * z * p
    return jnp.where(big, 2.0 * r, _PI / 2 - r)


def relu_kernel_corr(c: jnp.ndarray, sd1: jnp.ndarray, sd2: jnp.ndarray, isd1: jnp.ndarray, isd2: jnp.ndarray,
                     coincident: jnp.ndarray | None = None) -> tuple[jnp.ndarray, jnp.ndarray]:
    r"""The ReLU update of :func:`relu_kernel` in the correlation form (module docstring; float32
    pair pass): ``sd1``, ``sd2`` the standard deviations :math:`\sqrt{v_1}, \sqrt{v_2}` and ``isd1``,
    ``isd2`` their inverses (0 where the variance is 0), all broadcastable against ``c``. Returns
    :math:`(K', \dot\sigma)`; ``coincident`` entries get :math:`\rho = 1`, :math:`\theta = 0` exactly."""
    rho = c * isd1 * isd2
    a = jnp.minimum(jnp.abs(rho), 1.0)
    if coincident is not None:
        a = jnp.where(coincident, jnp.ones((), a.dtype), a)
    theta_a = acos_unit_f32(a)
    theta = jnp.where(rho < 0, _PI - theta_a, theta_a)
    square_root = sd1 * sd2 * jnp.sqrt((1.0 - a) * (1.0 + a))
    dot_sigma = 0.5 - _FACTOR * theta
    return _FACTOR * square_root + dot_sigma * c, dot_sigma


def relu_kernel(c: jnp.ndarray, prod: jnp.ndarray, coincident: jnp.ndarray | None = None
                ) -> tuple[jnp.ndarray, jnp.ndarray]:
    r"""ReLU update of covariances ``c`` with variance products ``prod`` = :math:`v_1 v_2`
    (broadcastable): returns :math:`(K', \dot\sigma)`, the NTK update being
    :math:`\Theta' = \dot\sigma\,\Theta` (see the module docstring).

    ``coincident`` (broadcastable bool) marks entries that pair a position of an input with itself,
    where the correlation is exactly 1 and :math:`q = 0`. There :math:`\theta` is ill-conditioned:
    computed from rounded :math:`c` and :math:`v_1v_2`, :math:`q \sim \epsilon\, c^2` gives
    :math:`\theta \sim \sqrt{2\epsilon}` (about :math:`5\cdot 10^{-4}` in float32) and an error of
    :math:`\theta/\pi` in :math:`\dot\sigma`. neural-tangents carries that error on the diagonal of
    :math:`K(X, X)`; setting :math:`q = 0` there gives the exact :math:`\theta = 0`."""
    q = prod - c ** 2
    if coincident is not None:
        q = jnp.where(coincident, jnp.zeros((), q.dtype), q)
    square_root = jnp.sqrt(jnp.maximum(q, 0.0))
    angles = atan2_nonneg(square_root, c)
    dot_sigma = 0.5 - _FACTOR * angles
    return _FACTOR * square_root + dot_sigma * c, dot_sigma


@stax_keywords(do_stabilize=False)
@dataclass(frozen=True, repr=False)
class Relu(Layer):
    r"""``stax.Relu()``: the arc-cosine map of :mod:`.elementwise` on every entry, with variance
    product :math:`C(x)_{ss} C(y)_{tt}` (``elementwise.py: ABRelu``, :math:`a=0, b=1`):
    :math:`K' = \frac{1}{2\pi}\sqrt{q} + \dot\sigma K`, :math:`\Theta' = \dot\sigma\Theta`. The
    per-input covariance gets the same map with :math:`C(x)_{ss}C(x)_{tt}` (on a diagonal:
    :math:`C/2`)."""

    def _build_stax(self):
        stax = _nt_stax()
        return stax.Relu(**self.stax_kwargs())

    def info(self, i):
        self.check_keywords()
        self.require_gaussian(i, ValueError)  # the arc-cosine map is the ReLU kernel of a Gaussian only
        return Info(i.shape, i.channels, False)

    def single(self, st, plan):
        var = _diag_of_single(st.cov, plan.in_mode)
        if plan.in_mode == "full":
            r, c = _single_var(var, "full")
            cov, _ = relu_kernel(st.cov, r * c)
        else:
            cov = st.cov * 0.5  # (a^2 + b^2)/2 * cov: neural-tangents' nngp_fn_diag
        return Single(cov, st.mask), var

    def pair(self, p, aux1, aux2, plan):
        mode = plan.in_mode
        parts = _kernel_slices(p.k)

        def broadcast(a1, a2):  # per-input (n, S) arrays against the NNGP slice (no kernel axis)
            b1, b2 = _pair_var(a1, a2, mode)
            return (b1[:, :, 0], b2[:, :, 0]) if mode != "none" else (b1[:, 0], b2[:, 0])

        if p.k.dtype == jnp.float32:  # the correlation form: no division per entry (module docstring)
            sd1, sd2 = jnp.sqrt(aux1), jnp.sqrt(aux2)
            isd1, isd2 = (jnp.where(v > 0, 1.0 / jnp.where(v > 0, s, 1.0), 0.0) for v, s in ((aux1, sd1), (aux2, sd2)))
            (sd1, sd2), (isd1, isd2) = broadcast(sd1, sd2), broadcast(isd1, isd2)
            nngp, dot_sigma = relu_kernel_corr(parts[0], sd1, sd2, isd1, isd2, _coincident(p, mode))
        else:
            v1, v2 = broadcast(aux1, aux2)
            nngp, dot_sigma = relu_kernel(parts[0], v1 * v2, _coincident(p, mode))
        if p.ntk in ("array", "copy"):
            ntk = (parts[1] if p.ntk == "array" else parts[0]) * dot_sigma
            return Pair(_stack([nngp, ntk], mode), "array", p.offset)
        return Pair(_stack([nngp], mode), p.ntk, p.offset)
