r"""Kernel regression on the default JAX device, float64, batched: the same numbers as
:func:`ntkrepro.kernels.inference.kernel_regression` (issue 30, item 1).

The formula, the jitter rule and the guards are those of :mod:`ntkrepro.kernels.inference`:

* :math:`\hat Y_* = K_*(K + (\lambda + \epsilon)\bar k I)^{-1} Y` with :math:`\bar k = \operatorname{tr}(K)/n`
  of the (gathered) training kernel, by a Cholesky factorisation in float64 (``jax.enable_x64``
  scoped, :func:`ntkrepro.kernels.numerics.enable_x64`; nothing outside the block changes);
* :math:`\epsilon = 0` first; a factor that fails (XLA returns NaN where LAPACK / cuSOLVER report a
  non-positive pivot) is retried with :math:`\epsilon = 10^{-10}, 10^{-9}, \dots \le 10^{-2}`, each
  escalation logged as a warning (the same text as the scipy path), past that
  :class:`~ntkrepro.kernels.inference.CholeskyError`;
* ``k_train_train`` symmetric (:func:`~ntkrepro.kernels.inference.check_symmetric`) and every input
  finite, checked once on the whole kernel (a principal submatrix ``K[rows][:, rows]`` of a
  symmetric, finite matrix is symmetric and finite, so the row gathers need no new check); the
  predictions finite (:class:`~ntkrepro.kernels.inference.NonFiniteError`). The factor reads the
  lower triangle only (``symmetrize_input=False``), as ``scipy.linalg.cho_factor(lower=True)`` does.

What is new is *where* and *how many*: the kernel is moved to the device once, the rows of every
refit (bootstrap draw, learning-curve subset) are gathered there, and the refits run as one
``vmap`` over a chunk of draws (:data:`DEFAULT_CPU_BATCH_BYTES` of working memory per chunk on a
CPU, a quarter of the accelerator's memory otherwise). ``K_*[:, rows] A`` is computed as ``K_*``
times the coefficients scattered back onto the rows (duplicated rows summed), which avoids
gathering the test-train kernel.

:func:`regression_backend` returns the backend a compute function asks for by name (params key
``regression_backend``: ``"scipy"``, the default, or ``"jax"``); both backends have the same
methods, and every regression either performs is counted in :attr:`counts` (``{n: fits}``) and in
:data:`TALLY`, which is what the device call (:mod:`ntkrepro.hron2020.device_tiers`) checks its predictor against.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ntkrepro.kernels import inference
from ntkrepro.kernels.inference import SYM_RTOL, CholeskyError, NonFiniteError
from ntkrepro.kernels.numerics import enable_x64

log = logging.getLogger("ntkrepro.kernels")

#: Working memory of one batched chunk on a CPU device (bytes).
DEFAULT_CPU_BATCH_BYTES = 512 * 2 ** 20
#: Largest jitter (relative to the mean diagonal), as :func:`inference.regularised_cholesky`.
MAX_JITTER = 1e-2
BACKENDS = ("scipy", "jax")
#: Every regression any backend performed in this process, ``{n: fits}`` (reset it to start a tally;
#: :mod:`ntkrepro.hron2020.device_tiers` compares it with its predictor's count).
TALLY: Counter[int] = Counter()


class _Counts(Counter):
    """A backend's own count that also adds to :data:`TALLY`."""

    def __setitem__(self, key, value):
        TALLY[key] += value - self.get(key, 0)
        super().__setitem__(key, value)


def _next_jitter(jitter: float) -> float:
    return 1e-10 if jitter == 0.0 else jitter * 10


class ScipyRegression:
    """The host path (:mod:`ntkrepro.kernels.inference`), with the same interface and counters as
    :class:`DeviceRegression`."""

    name = "scipy"

    def __init__(self) -> None:
        self.counts: Counter[int] = _Counts()

    def kernel_regression(self, k_train_train, k_test_train, y_train, diag_reg, *, return_jitter=False,
                          sym_rtol=SYM_RTOL):
        self.counts[int(np.shape(k_train_train)[0])] += 1
        return inference.kernel_regression(k_train_train, k_test_train, y_train, diag_reg,
                                           return_jitter=return_jitter, sym_rtol=sym_rtol)

    def select_diag_reg(self, k_tt, k_vt, y_t, y_v, grid):
        self.counts[int(np.shape(k_tt)[0])] += len(grid)
        return inference.select_diag_reg(k_tt, k_vt, y_t, y_v, grid)

    def correct_many(self, k_tt, k_st, y_fit, diag_reg, y_test) -> Callable[[Sequence[np.ndarray]], list] | None:
        """``None``: the callers' own loop (``regime._correct``) refits one draw at a time; counted there
        through :meth:`kernel_regression`."""
        return None


@lru_cache(maxsize=None)
def _jitted() -> dict[str, Callable[..., Any]]:
    import jax
    import jax.numpy as jnp

    def fit(k, ks, y, rows, lam):
        """One refit on ``rows`` of the full kernel ``k``: predictions ``(n_test, C)`` and whether the
        factor succeeded."""
        m = rows.shape[0]
        kb = jnp.take(jnp.take(k, rows, axis=0), rows, axis=1)
        scale = jnp.sum(jnp.diagonal(kb)) / m
        a = kb + (lam * scale) * jnp.eye(m, dtype=kb.dtype)
        low = jax.lax.linalg.cholesky(a, symmetrize_input=False)
        ok = jnp.all(jnp.isfinite(jnp.diagonal(low)))
        yr = jnp.take(y, rows, axis=0)
        z = jax.lax.linalg.triangular_solve(low, yr, left_side=True, lower=True)
        coef = jax.lax.linalg.triangular_solve(low, z, left_side=True, lower=True, transpose_a=True)
        full = jnp.zeros((k.shape[0], y.shape[1]), coef.dtype).at[rows].add(coef)
        return ks @ full, ok, scale

    def fit_full(k, ks, y, lam):
        """A fit on every row (no gather): the grid over ``lam``."""
        n = k.shape[0]
        scale = jnp.sum(jnp.diagonal(k)) / n
        a = k + (lam * scale) * jnp.eye(n, dtype=k.dtype)
        low = jax.lax.linalg.cholesky(a, symmetrize_input=False)
        ok = jnp.all(jnp.isfinite(jnp.diagonal(low)))
        z = jax.lax.linalg.triangular_solve(low, y, left_side=True, lower=True)
        coef = jax.lax.linalg.triangular_solve(low, z, left_side=True, lower=True, transpose_a=True)
        return ks @ coef, ok, scale

    return {"rows": jax.jit(jax.vmap(fit, in_axes=(None, None, None, 0, 0))),
            "full": jax.jit(jax.vmap(fit_full, in_axes=(None, None, None, 0)))}


class DeviceRegression:
    """Kernel regressions on ``jax.devices()[0]`` in float64 (module docstring)."""

    name = "jax"

    def __init__(self, batch_bytes: int | None = None) -> None:
        self.counts: Counter[int] = _Counts()
        self._batch_bytes = batch_bytes
        self.jitter_escalations = 0

    # -- helpers
    def batch_bytes(self) -> int:
        if self._batch_bytes is not None:
            return int(self._batch_bytes)
        import jax

        dev = jax.devices()[0]
        if dev.platform == "cpu":
            return DEFAULT_CPU_BATCH_BYTES
        try:
            return int(dev.memory_stats()["bytes_limit"]) // 4
        except (AttributeError, KeyError, TypeError, RuntimeError):
            return 8 * 2 ** 30

    def chunk(self, m: int, n_full: int, n_test: int, n_out: int) -> int:
        """Draws per vmapped chunk: ~3 m x m float64 matrices each (gathered kernel, its regularised
        copy, the factor) plus the scattered coefficients and the predictions."""
        per = 8 * (3 * m * m + 2 * n_full * n_out + n_test * n_out + m * n_out)
        return max(1, int(self.batch_bytes() // per))

    @staticmethod
    def _put(*arrays: np.ndarray):
        import jax.numpy as jnp

        return tuple(jnp.asarray(np.asarray(a, np.float64)) for a in arrays)

    def _escalate(self, fn, args: tuple, diag_reg: float, scale: float) -> tuple[np.ndarray, float]:
        """Retry one failed factor with growing jitter (logged), as the scipy path does."""
        import jax.numpy as jnp

        jitter = 0.0
        while True:
            nxt = _next_jitter(jitter)
            if nxt > MAX_JITTER:
                raise CholeskyError(f"Cholesky failed with diag_reg={diag_reg} and jitter up to {jitter:g} "
                                    "(relative to the mean diagonal); the kernel is far from PSD")
            log.warning("Cholesky failed for diag_reg=%g with jitter %g; retrying with jitter %g "
                        "(relative to the mean diagonal %g)", diag_reg, jitter, nxt, scale)
            self.jitter_escalations += 1
            jitter = nxt
            pred, ok, _ = fn(*args, jnp.asarray([diag_reg + jitter], jnp.float64))
            if bool(np.asarray(ok)[0]):
                return np.asarray(pred)[0], jitter

    @staticmethod
    def _check_reg(diag_reg: float) -> float:
        lam = float(diag_reg)
        if not np.isfinite(lam):
            raise ValueError(f"diag_reg must be finite, got {diag_reg!r}: an infinite ridge gives all-zero "
                             "predictions (chance accuracy); check diag_reg_grid in the config")
        if lam < 0:
            raise ValueError(f"diag_reg must be >= 0, got {diag_reg!r}")
        return lam

    @staticmethod
    def _check_scale(k: np.ndarray) -> None:
        n = k.shape[0]
        if n == 0:
            raise ValueError("empty training set: the train kernel is 0 x 0, nothing to regress on "
                             "(check n_train and the data the run selected)")
        if not float(np.trace(k) / n) > 0:
            raise ValueError("kernel has a non-positive mean diagonal; a kernel's diagonal is k(x, x) >= 0, so the "
                             "kernel is wrong or every input is zero")

    @staticmethod
    def _finite(pred: np.ndarray, diag_reg: float, jitter: float) -> np.ndarray:
        if not np.all(np.isfinite(pred)):
            raise NonFiniteError(f"kernel regression with diag_reg={diag_reg} (jitter {jitter:g}) gave "
                                 f"{int(np.size(pred) - np.isfinite(pred).sum())} non-finite predictions")
        return pred

    # -- the interface shared with ScipyRegression
    def predict_many(self, k_tt, k_st, y_fit, diag_reg: float, rows_list: Sequence[np.ndarray], *,
                     sym_rtol: float = SYM_RTOL) -> list[tuple[np.ndarray, float]]:
        """``[(predictions, jitter), ...]`` of the model refitted on each ``rows`` of ``rows_list``
        (training rows of ``k_tt``, duplicates allowed), equal to
        ``kernel_regression(k_tt[np.ix_(rows, rows)], k_st[:, rows], y_fit[rows], diag_reg)``."""
        k, ks, y = inference._check(k_tt, k_st, y_fit, sym_rtol)
        lam = self._check_reg(diag_reg)
        squeeze = y.ndim == 1
        y2 = y[:, None] if squeeze else y
        out: list[tuple[np.ndarray, float]] = [None] * len(rows_list)  # type: ignore[list-item]
        by_size: dict[int, list[int]] = {}
        for i, r in enumerate(rows_list):
            by_size.setdefault(int(np.shape(r)[0]), []).append(i)
        with enable_x64():
            import jax.numpy as jnp

            fn = _jitted()["rows"]
            kd, ksd, yd = self._put(k, ks, y2)
            for m, idx in by_size.items():
                if m == 0:
                    raise ValueError("empty training set: the train kernel is 0 x 0, nothing to regress on "
                                     "(check n_train and the data the run selected)")
                c = self.chunk(m, k.shape[0], ks.shape[0], y2.shape[1])
                for s in range(0, len(idx), c):
                    part = idx[s:s + c]
                    rows = jnp.asarray(np.stack([np.asarray(rows_list[i], np.int64) for i in part]))
                    pred, ok, scale = (np.asarray(v) for v in fn(kd, ksd, yd, rows, jnp.full(len(part), lam)))
                    for j, i in enumerate(part):
                        if not scale[j] > 0:
                            raise ValueError(f"kernel has a non-positive mean diagonal ({scale[j]:g}); a kernel's "
                                             "diagonal is k(x, x) >= 0, so the kernel is wrong or every input is zero")
                        p, jit = pred[j], 0.0
                        if not ok[j]:
                            p, jit = self._escalate(fn, (kd, ksd, yd, rows[j:j + 1]), lam, float(scale[j]))
                        p = self._finite(p, lam, jit)
                        out[i] = (p[:, 0] if squeeze else p, jit)
                    self.counts[m] += len(part)
        return out

    def kernel_regression(self, k_train_train, k_test_train, y_train, diag_reg, *, return_jitter=False,
                          sym_rtol=SYM_RTOL):
        """:func:`ntkrepro.kernels.inference.kernel_regression` on the device."""
        n = int(np.shape(k_train_train)[0]) if np.ndim(k_train_train) == 2 else -1
        ((pred, jitter),) = self.predict_many(k_train_train, k_test_train, y_train, diag_reg, [np.arange(max(n, 0))],
                                              sym_rtol=sym_rtol)
        return (pred, jitter) if return_jitter else pred

    def select_diag_reg(self, k_tt, k_vt, y_t, y_v, grid: Sequence[float]):
        """:func:`ntkrepro.kernels.inference.select_diag_reg` with the grid as one batch on the device."""
        if len(grid) == 0:
            raise ValueError("empty diag_reg grid")
        k, ks, y = inference._check(k_tt, k_vt, y_t)
        self._check_scale(k)
        lams = [self._check_reg(v) for v in grid]
        yv = np.asarray(y_v, np.float64)
        squeeze = y.ndim == 1
        y2 = y[:, None] if squeeze else y
        preds: list[tuple[np.ndarray, float]] = []
        with enable_x64():
            import jax.numpy as jnp

            fn = _jitted()["full"]
            kd, ksd, yd = self._put(k, ks, y2)
            c = self.chunk(k.shape[0], k.shape[0], ks.shape[0], y2.shape[1])
            for s in range(0, len(lams), c):
                part = lams[s:s + c]
                pred, ok, scale = (np.asarray(v) for v in fn(kd, ksd, yd, jnp.asarray(part, jnp.float64)))
                for j, lam in enumerate(part):
                    p, jit = pred[j], 0.0
                    if not ok[j]:
                        p, jit = self._escalate(fn, (kd, ksd, yd), lam, float(scale[j]))
                    p = self._finite(p, lam, jit)
                    preds.append((p[:, 0] if squeeze else p, jit))
        self.counts[k.shape[0]] += len(lams)
        scores = []
        for lam, (pred, jitter) in zip(lams, preds):
            scores.append({"diag_reg": float(lam), "accuracy": inference.accuracy(pred, yv),
                           "mse": float(np.mean((pred.reshape(yv.shape) - yv) ** 2)), "jitter": float(jitter)})
        best = min(scores, key=lambda s: (-s["accuracy"], s["mse"], s["diag_reg"]))
        return best["diag_reg"], scores

    def correct_many(self, k_tt, k_st, y_fit, diag_reg, y_test) -> Callable[[Sequence[np.ndarray]], list]:
        """A batched ``predict_correct`` for :func:`ntkrepro.hron2020.regime.boot_accuracies` /
        ``curve_accuracies``: ``rows_list -> [0/1 per test point, ...]``."""
        yt = np.asarray(y_test)

        def many(rows_list: Sequence[np.ndarray]) -> list[np.ndarray]:
            return [inference.predicted_classes(p) == yt
                    for p, _ in self.predict_many(k_tt, k_st, y_fit, diag_reg, rows_list)]

        return many


def regression_backend(name: str | None = None, **kwargs: Any) -> ScipyRegression | DeviceRegression:
    """The regression backend called ``name`` (``None`` -> ``"scipy"``)."""
    name = name or "scipy"
    if name == "scipy":
        return ScipyRegression()
    if name == "jax":
        return DeviceRegression(**kwargs)
    raise ValueError(f"regression_backend must be one of {BACKENDS}, got {name!r}")
