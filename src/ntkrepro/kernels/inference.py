r"""Closed-form NNGP/NTK regression (infinite training time, MSE loss) and its evaluation.

For a train kernel :math:`K = K(X, X)` (:math:`n\times n`), test-train kernel
:math:`K_* = K(X_*, X)` and targets :math:`Y` (:math:`n\times C` one-hot, or :math:`\pm 0.5`
scalars for binary tasks) the posterior mean / infinite-time gradient-descent prediction is

.. math::

    \hat Y_* = K_* \big(K + \lambda\, \bar k\, I\big)^{-1} Y, \qquad
    \bar k = \operatorname{tr}(K)/n,

i.e. ``diag_reg`` :math:`\lambda` is *relative* to the mean diagonal, as in neural-tangents'
``predict.gradient_descent_mse_ensemble`` (``diag_reg_absolute_scale=False``). The same formula
gives the NNGP posterior mean (NNGP kernels) and the NTK infinite-time mean (NTK kernels).

The solve uses a Cholesky factorisation in float64. If it fails (a numerically indefinite matrix),
a jitter :math:`\epsilon\,\bar k` with :math:`\epsilon = 10^{-10}, 10^{-9}, \dots` is added and a
warning is logged for every escalation -- never silently; past ``max_jitter`` it raises. The jitter
actually used is returned with ``kernel_regression(..., return_jitter=True)`` so that results can
record it.

Guards (nothing numerically wrong passes silently):

* ``k_train_train`` must be symmetric: :math:`\max|K - K^\top| \le` ``sym_rtol`` :math:`\cdot
  \max|K|` (default :data:`SYM_RTOL` = 1e-4, about 100x the float32 round-off of
  neural-tangents kernels); the Cholesky reads only the lower triangle, so a cross-kernel passed
  by mistake, or a mis-assembled block, would otherwise be used half-read;
* every input must be finite, and so must the predictions: :func:`predicted_classes` (hence
  :func:`accuracy`, :func:`accuracy_with_ci`, :func:`select_diag_reg`) raises on NaN / inf
  instead of scoring an all-NaN prediction as class 0 (accuracy 0.5 on a balanced binary task).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.linalg as sla

from ntkrepro.stats import Interval, bootstrap_ci

log = logging.getLogger("ntkrepro.kernels")

#: Largest accepted :math:`\max|K - K^\top| / \max|K|` of a train-train kernel.
SYM_RTOL = 1e-4


class NonFiniteError(ValueError):
    """Predictions (or kernels) contain NaN or inf."""


def check_symmetric(k: np.ndarray, name: str = "k_train_train", rtol: float = SYM_RTOL) -> float:
    r"""Relative asymmetry :math:`\max|K-K^\top| / \max|K|`; raises ``ValueError`` above ``rtol``."""
    scale = float(np.max(np.abs(k))) if k.size else 0.0
    asym = float(np.max(np.abs(k - k.T))) / scale if scale > 0 else 0.0
    if not asym <= rtol:
        raise ValueError(f"{name} is not symmetric: max|K - K^T| / max|K| = {asym:.3g} > {rtol:g}. A train-train "
                         "kernel K(X, X) is symmetric; was a cross-kernel K(X*, X) (or a mis-assembled block) "
                         "passed instead?")
    return asym


class CholeskyError(np.linalg.LinAlgError):
    """The regularised kernel could not be factorised even with the largest allowed jitter."""


def one_hot(labels: Sequence[int] | np.ndarray, n_classes: int, dtype: Any = np.float64) -> np.ndarray:
    """One-hot targets :math:`Y_{ic} = [\\mathrm{label}_i = c]` (the paper's C-dim MSE targets)."""
    lab = np.asarray(labels)
    if lab.ndim != 1 or not np.issubdtype(lab.dtype, np.integer):
        raise ValueError("labels must be a 1-D integer array")
    if lab.size and (lab.min() < 0 or lab.max() >= n_classes):
        raise ValueError(f"labels must lie in [0, {n_classes})")
    return np.eye(n_classes, dtype=dtype)[lab]


def _check(k_train_train: np.ndarray, k_test_train: np.ndarray, y_train: np.ndarray,
           sym_rtol: float = SYM_RTOL) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    k = np.asarray(k_train_train, np.float64)
    ks = np.asarray(k_test_train, np.float64)
    y = np.asarray(y_train, np.float64)
    n = k.shape[0]
    if k.ndim != 2 or k.shape != (n, n):
        raise ValueError(f"k_train_train must be square, got {k.shape}")
    if ks.ndim != 2 or ks.shape[1] != n:
        raise ValueError(f"k_test_train must be (n_test, {n}), got {ks.shape}")
    if y.shape[0] != n or y.ndim not in (1, 2):
        raise ValueError(f"y_train must be ({n},) or ({n}, C), got {y.shape}")
    for name, a in (("k_train_train", k), ("k_test_train", ks), ("y_train", y)):
        if not np.all(np.isfinite(a)):
            raise NonFiniteError(f"{name} contains NaN or inf")
    check_symmetric(k, rtol=sym_rtol)
    return k, ks, y


def regularised_cholesky(k: np.ndarray, diag_reg: float, *, max_jitter: float = 1e-2) -> tuple[tuple[np.ndarray, bool], float]:
    r"""Cholesky factor of :math:`K + (\lambda + \epsilon)\bar k I`; returns (factor, :math:`\epsilon`).

    :math:`\epsilon = 0` first, then :math:`10^{-10}, 10^{-9}, \dots \le` ``max_jitter``, each
    escalation logged as a warning.
    """
    if not np.isfinite(diag_reg):
        raise ValueError(f"diag_reg must be finite, got {diag_reg!r}: an infinite ridge gives all-zero predictions "
                         "(chance accuracy); check diag_reg_grid in the config")
    if diag_reg < 0:
        raise ValueError(f"diag_reg must be >= 0, got {diag_reg!r}")
    n = k.shape[0]
    if n == 0:
        raise ValueError("empty training set: the train kernel is 0 x 0, nothing to regress on "
                         "(check n_train and the data the run selected)")
    scale = float(np.trace(k) / n)
    if not scale > 0:
        raise ValueError(f"kernel has a non-positive mean diagonal ({scale:g}); a kernel's diagonal is "
                         "k(x, x) >= 0, so the kernel is wrong or every input is zero")
    jitter = 0.0
    while True:
        try:
            a = k + (diag_reg + jitter) * scale * np.eye(n)
            return sla.cho_factor(a, lower=True, check_finite=False), jitter
        except np.linalg.LinAlgError:
            nxt = 1e-10 if jitter == 0.0 else jitter * 10
            if nxt > max_jitter:
                raise CholeskyError(f"Cholesky failed with diag_reg={diag_reg} and jitter up to {jitter:g} "
                                    "(relative to the mean diagonal); the kernel is far from PSD") from None
            log.warning("Cholesky failed for diag_reg=%g with jitter %g; retrying with jitter %g "
                        "(relative to the mean diagonal %g)", diag_reg, jitter, nxt, scale)
            jitter = nxt


def kernel_regression(k_train_train: np.ndarray, k_test_train: np.ndarray, y_train: np.ndarray,
                      diag_reg: float, *, return_jitter: bool = False,
                      sym_rtol: float = SYM_RTOL) -> np.ndarray | tuple[np.ndarray, float]:
    r""":math:`\hat Y_* = K_*(K + (\lambda + \epsilon) \bar k I)^{-1} Y` (module docstring), in float64.

    With ``return_jitter=True`` returns ``(predictions, epsilon)``, the jitter actually added
    (0.0 unless the Cholesky needed it), for the results to record. Raises ``ValueError`` for a
    non-symmetric ``k_train_train`` (beyond ``sym_rtol``) and :class:`NonFiniteError` for
    non-finite inputs or predictions.
    """
    k, ks, y = _check(k_train_train, k_test_train, y_train, sym_rtol)
    if not np.isfinite(float(diag_reg)):
        raise ValueError(f"diag_reg must be finite, got {diag_reg!r}: an infinite ridge gives all-zero predictions "
                         "(chance accuracy); check diag_reg_grid in the config")
    if k.shape[0] and not np.isfinite(float(diag_reg) * (float(np.trace(k)) / k.shape[0]) * (1 + 1e-2)):
        # a finite but huge ridge (1e308) times the mean diagonal overflows to inf inside the Cholesky
        raise ValueError(f"diag_reg={diag_reg!r} times the kernel's mean diagonal overflows float64: the ridge would "
                         "be infinite and every prediction 0 (chance accuracy); check diag_reg_grid in the config")
    factor, jitter = regularised_cholesky(k, float(diag_reg))
    pred = ks @ sla.cho_solve(factor, y, check_finite=False)
    if not np.all(np.isfinite(pred)):
        raise NonFiniteError(f"kernel regression with diag_reg={diag_reg} (jitter {jitter:g}) gave "
                             f"{int(np.size(pred) - np.isfinite(pred).sum())} non-finite predictions")
    return (pred, jitter) if return_jitter else pred


def predicted_classes(pred: np.ndarray) -> np.ndarray:
    """Argmax over classes for ``(n, C)`` predictions; ``pred > 0`` for scalar (±0.5) predictions.

    Raises :class:`NonFiniteError` if any prediction is NaN or inf (a NaN would otherwise count as
    class 0 / negative and an all-NaN prediction would score chance accuracy).
    """
    p = np.asarray(pred)
    bad = int(p.size - np.isfinite(p).sum()) if np.issubdtype(p.dtype, np.number) else 0
    if bad:
        raise NonFiniteError(f"{bad} of {p.size} predictions are NaN or inf; refusing to score them")
    if p.ndim == 2 and p.shape[1] > 1:
        return np.argmax(p, axis=1)
    return (p.reshape(-1) > 0).astype(int)


def _label_indices(labels: np.ndarray) -> np.ndarray:
    """Class indices from integer labels, one-hot targets, or ±0.5 scalar targets (-> 0/1)."""
    lab = np.asarray(labels)
    if lab.ndim == 2 and lab.shape[1] > 1:
        return np.argmax(lab, axis=1)
    lab = lab.reshape(-1)
    if np.issubdtype(lab.dtype, np.integer):
        return lab.astype(int)
    if np.all(np.isin(lab, (-0.5, 0.5))):
        return (lab > 0).astype(int)
    raise ValueError("labels must be integer class ids, one-hot rows, or ±0.5 targets")


def accuracy(pred: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of correct class predictions (raises on an empty prediction set: no accuracy)."""
    p, lab = predicted_classes(pred), _label_indices(labels)
    if p.size != lab.size:
        raise ValueError(f"pred ({p.size}) and labels ({lab.size}) have different lengths")
    if p.size == 0:
        raise ValueError("accuracy of zero predictions is undefined (empty test or validation set; "
                         "check n_test / n_val)")
    return float(np.mean(p == lab))


def accuracy_with_ci(pred: np.ndarray, labels: np.ndarray, n_boot: int = 1000, seed: int = 0,
                     level: float = 0.95) -> Interval:
    """Test accuracy with a percentile bootstrap interval over test points."""
    p, lab = predicted_classes(pred), _label_indices(labels)
    if p.size != lab.size:
        raise ValueError(f"pred ({p.size}) and labels ({lab.size}) have different lengths")
    if p.size == 0:
        raise ValueError("accuracy of zero predictions is undefined (empty test or validation set; "
                         "check n_test / n_val)")
    correct = (p == lab).astype(float)
    return bootstrap_ci(correct, np.mean, n_boot=n_boot, level=level, seed=seed)


def select_diag_reg(k_tt: np.ndarray, k_vt: np.ndarray, y_t: np.ndarray, y_v: np.ndarray,
                    grid: Sequence[float]) -> tuple[float, list[dict[str, float]]]:
    r"""Choose :math:`\lambda` from ``grid`` by validation accuracy (ties: lower validation MSE,
    then the smaller :math:`\lambda`).

    ``k_tt`` is the train-train kernel, ``k_vt`` the validation-train kernel, ``y_t``/``y_v`` the
    train/validation targets (one-hot or ±0.5). Returns ``(best, scores)`` with one
    ``{"diag_reg", "accuracy", "mse", "jitter"}`` per grid value.
    """
    if len(grid) == 0:
        raise ValueError("empty diag_reg grid")
    yv = np.asarray(y_v, np.float64)
    scores = []
    for lam in grid:
        pred, jitter = kernel_regression(k_tt, k_vt, y_t, float(lam), return_jitter=True)
        scores.append({"diag_reg": float(lam), "accuracy": accuracy(pred, yv),
                       "mse": float(np.mean((pred.reshape(yv.shape) - yv) ** 2)), "jitter": float(jitter)})
    best = min(scores, key=lambda s: (-s["accuracy"], s["mse"], s["diag_reg"]))
    return best["diag_reg"], scores
