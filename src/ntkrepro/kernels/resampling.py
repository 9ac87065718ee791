r"""Kernel-regression refits for resampled training sets at :math:`n \approx 10^4`: the same numbers as
refitting :func:`ntkrepro.kernels.inference.kernel_regression` on the resampled rows, at a fraction
of the cost (issue 37, item 2).

A bootstrap draw of the training rows repeats some rows and leaves out others (about
:math:`1 - 1/e \approx 63\,\%` of the rows are distinct). Refitting on the drawn rows ``b`` (with
repeats) solves an :math:`n \times n` system with repeated rows. With ``u`` the distinct rows and
:math:`W = \operatorname{diag}(w)` their multiplicities, :math:`P` the :math:`n \times |u|` matrix that
copies row :math:`i` of ``u`` :math:`w_i` times (:math:`P^\top P = W`, :math:`K_{bb} = P K_{uu} P^\top`,
:math:`y_b = P y_u`), the push-through identity
:math:`P^\top (P K P^\top + c I)^{-1} = (W K + c I)^{-1} P^\top` gives

.. math::
    \hat Y_* = K_{*b} (K_{bb} + c I)^{-1} y_b = K_{*u} \alpha_u,\qquad
    \alpha_u = W^{1/2} \bigl(W^{1/2} K_{uu} W^{1/2} + c I\bigr)^{-1} W^{1/2} y_u,

with :math:`c = (\lambda + \epsilon)\,\bar k` and :math:`\bar k = \operatorname{tr}(K_{bb})/n_b =
\sum_i w_i K_{ii} / n_b`, the mean diagonal of the *resampled* kernel, as the direct refit uses. The
system is symmetric positive definite of size :math:`|u| \approx 0.63\,n`: a Cholesky factorisation
costs :math:`0.63^3 \approx 0.25` of the direct one, and one factorisation serves every label set
fitted at the same :math:`\lambda` (the real labels and the permuted-label control). Its eigenvalues are
bounded below by :math:`c` as the direct system's are, and the jitter rule is
:func:`ntkrepro.kernels.inference.regularised_cholesky`'s (:math:`\epsilon = 0`, then
:math:`10^{-10}, 10^{-9}, \dots`); a draw that needs jitter may need a different one than the direct
system would (never seen at these regularisers; the jitter is returned).

:func:`weighted_refit` is tested equal to the direct refit (``tests/test_h4_decisive.py``, float64,
relative 1e-9). Costs measured here (2 cores, float64): a direct Cholesky at :math:`n = 10^4` takes
4.2 s, the weighted one at :math:`|u| \approx 6{,}300` about 1.1 s plus 0.3 s for the gather.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import scipy.linalg as sla

from ntkrepro.kernels.inference import CholeskyError, NonFiniteError

log = logging.getLogger("ntkrepro.kernels")

#: Largest jitter relative to the mean diagonal (as :func:`ntkrepro.kernels.inference.regularised_cholesky`).
MAX_JITTER = 1e-2


def _factor(a: np.ndarray, scale: float, diag_reg: float) -> tuple[tuple[np.ndarray, bool], float]:
    """Cholesky of ``a + (diag_reg + eps) * scale * I`` with the jitter rule of ``regularised_cholesky``."""
    n = a.shape[0]
    jitter = 0.0
    while True:
        try:
            m = a.copy()
            m[np.diag_indices(n)] += (diag_reg + jitter) * scale
            return sla.cho_factor(m, lower=True, overwrite_a=True, check_finite=False), jitter
        except np.linalg.LinAlgError:
            nxt = 1e-10 if jitter == 0.0 else jitter * 10
            if nxt > MAX_JITTER:
                raise CholeskyError(f"Cholesky failed with diag_reg={diag_reg} and jitter up to {jitter:g} "
                                    "(relative to the mean diagonal); the kernel is far from PSD") from None
            log.warning("Cholesky failed for diag_reg=%g with jitter %g; retrying with jitter %g", diag_reg, jitter, nxt)
            jitter = nxt


def weighted_refit(k_train: np.ndarray, k_test: np.ndarray, ys: Sequence[np.ndarray], rows: np.ndarray,
                   diag_reg: float) -> tuple[list[np.ndarray], float]:
    r"""Predictions on the test rows of the model refitted on training ``rows`` (indices into
    ``k_train``, repeats allowed), for each target matrix in ``ys`` (``(n, C)`` each, one
    factorisation for all): equal to ``kernel_regression(k_train[rows][:, rows], k_test[:, rows],
    y[rows], diag_reg)`` (module docstring). Returns ``([pred, ...], jitter)``."""
    rows = np.asarray(rows)
    if rows.ndim != 1 or rows.size == 0:
        raise ValueError("rows must be a non-empty 1-D index array")
    u, w = np.unique(rows, return_counts=True)
    diag = np.diagonal(k_train)
    scale = float(np.dot(w, diag[u].astype(np.float64)) / rows.size)
    if not scale > 0:
        raise ValueError(f"kernel has a non-positive mean diagonal ({scale:g}) on the resampled rows")
    sw = np.sqrt(w.astype(np.float64))
    a = np.asarray(k_train[np.ix_(u, u)], np.float64)
    a *= sw[:, None]
    a *= sw[None, :]
    factor, jitter = _factor(a, scale, float(diag_reg))
    kt = np.asarray(k_test[:, u], np.float64)
    preds = []
    for y in ys:
        yu = np.asarray(y, np.float64)[u]
        alpha = sw[:, None] * sla.cho_solve(factor, sw[:, None] * yu.reshape(len(u), -1), check_finite=False)
        pred = (kt @ alpha).reshape((kt.shape[0],) + yu.shape[1:])
        if not np.all(np.isfinite(pred)):
            raise NonFiniteError(f"weighted refit with diag_reg={diag_reg} (jitter {jitter:g}) gave non-finite predictions")
        preds.append(pred)
    return preds, jitter


def subset_refit(k_train: np.ndarray, k_test: np.ndarray, ys: Sequence[np.ndarray], rows: np.ndarray,
                 diag_reg: float) -> tuple[list[np.ndarray], float]:
    """:func:`weighted_refit` for rows without repeats (learning-curve subsets, halves): the direct
    refit on ``rows``, one factorisation for every target matrix in ``ys``."""
    rows = np.asarray(rows)
    if np.unique(rows).size != rows.size:
        raise ValueError("subset_refit takes rows without repeats (use weighted_refit)")
    return weighted_refit(k_train, k_test, ys, rows, diag_reg)


def select_many(k_tt: np.ndarray, k_vt: np.ndarray, ys_t: Sequence[np.ndarray], ys_v: Sequence[np.ndarray],
                grid: Sequence[float]) -> list[tuple[float, list[dict[str, float]], np.ndarray]]:
    r""":func:`ntkrepro.kernels.inference.select_diag_reg` for several label sets on the same kernels,
    one factorisation per :math:`\lambda` for all of them. For each label set: ``(best, scores,
    predictions at best)`` with the same scores and tie rule (accuracy, then lower validation MSE,
    then the smaller :math:`\lambda`)."""
    from ntkrepro.kernels.inference import accuracy

    if len(grid) == 0:
        raise ValueError("empty diag_reg grid")
    n = k_tt.shape[0]
    rows = np.arange(n)
    per_lam = []
    for lam in grid:
        preds, jitter = weighted_refit(k_tt, k_vt, ys_t, rows, float(lam))
        per_lam.append((float(lam), preds, jitter))
    out = []
    for j, yv in enumerate(ys_v):
        yv = np.asarray(yv, np.float64)
        scores = [{"diag_reg": lam, "accuracy": accuracy(preds[j], yv),
                   "mse": float(np.mean((preds[j].reshape(yv.shape) - yv) ** 2)), "jitter": float(jit)}
                  for lam, preds, jit in per_lam]
        k = min(range(len(scores)), key=lambda i: (-scores[i]["accuracy"], scores[i]["mse"], scores[i]["diag_reg"]))
        out.append((scores[k]["diag_reg"], scores, per_lam[k][1][j]))
    return out
