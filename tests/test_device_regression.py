"""Kernel regressions on the default JAX device (ntkrepro.kernels.device_regression, issue 30 item 1):
the same numbers as the scipy path (ntkrepro.kernels.inference) in float64 -- predictions to 1e-8
relative, accuracies equal -- the same guards and jitter rule, batched refits equal to one-by-one
refits, and the backends' regression tally. Runs on the CPU (jax's default device here)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from ntkrepro.hron2020 import regime
from ntkrepro.kernels import inference
from ntkrepro.kernels.device_regression import (TALLY, DeviceRegression, ScipyRegression, regression_backend)

pytest.importorskip("jax")


def _problem(n=120, n_test=50, seed=0, float32=True):
    rng = np.random.default_rng(seed)
    f = rng.standard_normal((n + n_test, 30))
    k = f @ f.T / 30
    if float32:  # as the kernels arrive (float32 blocks, not exactly symmetric on the diagonal blocks)
        k = k.astype(np.float32).astype(np.float64)
        k[:n, :n] = np.tril(k[:n, :n]) + np.tril(k[:n, :n], -1).T
    labels = rng.integers(0, 10, n + n_test)
    return k[:n, :n], k[n:, :n], np.eye(10)[labels[:n]], labels[n:]


@pytest.mark.parametrize("lam", [1e-4, 1e-2, 1.0])
def test_device_predictions_equal_the_scipy_path_in_float64(lam):
    ktt, kst, y, _ = _problem()
    ref, jit_ref = inference.kernel_regression(ktt, kst, y, lam, return_jitter=True)
    got, jit = DeviceRegression().kernel_regression(ktt, kst, y, lam, return_jitter=True)
    assert got.dtype == np.float64 and got.shape == ref.shape and jit == jit_ref
    assert np.max(np.abs(got - ref)) <= 1e-8 * np.max(np.abs(ref))
    # a wrong formula (no relative scaling of the ridge) would not pass the same check
    wrong = kst @ np.linalg.solve(ktt + lam * np.eye(ktt.shape[0]), y)
    assert np.max(np.abs(wrong - ref)) > 1e-8 * np.max(np.abs(ref))


def test_scalar_targets_and_the_grid_scores_equal():
    ktt, kst, y, yt = _problem(seed=1)
    ys = np.where(y.argmax(1) < 5, 0.5, -0.5)
    a = inference.kernel_regression(ktt, kst, ys, 1e-3)
    b = DeviceRegression().kernel_regression(ktt, kst, ys, 1e-3)
    assert b.shape == a.shape == (kst.shape[0],) and np.allclose(a, b, rtol=1e-8, atol=1e-12 * np.abs(a).max())
    grid = [1e-4, 1e-3, 1e-2, 0.1, 1.0]
    yv = np.eye(10)[yt]
    best_s, sc_s = inference.select_diag_reg(ktt, kst, y, yv, grid)
    best_d, sc_d = DeviceRegression().select_diag_reg(ktt, kst, y, yv, grid)
    assert best_d == best_s
    for s, d in zip(sc_s, sc_d):
        assert d["accuracy"] == s["accuracy"] and d["jitter"] == s["jitter"]
        assert abs(d["mse"] - s["mse"]) <= 1e-8 * s["mse"]


def test_batched_bootstrap_and_curve_refits_equal_the_one_by_one_refits():
    ktt, kst, y, yt = _problem(n=100, n_test=40, seed=2)
    plan = regime.training_resample_plan(100, 40, 12, seed=3)
    curve = regime.learning_curve_plan(100, [0.25, 0.5, 1.0], 3, seed=4, min_size=10)
    lam = 1e-3

    def fit(a, b, c):
        return inference.predicted_classes(inference.kernel_regression(a, b, c, lam)) == yt

    dev = DeviceRegression(batch_bytes=5 * 8 * 3 * 100 * 100)  # small chunks: several vmapped batches
    many = dev.correct_many(ktt, kst, y, lam, yt)
    assert dev.chunk(100, 100, 40, 10) < 12
    assert regime.boot_accuracies(fit, ktt, kst, y, plan, correct_many=many) == regime.boot_accuracies(
        fit, ktt, kst, y, plan)
    assert regime.curve_accuracies(fit, ktt, kst, y, curve, correct_many=many) == regime.curve_accuracies(
        fit, ktt, kst, y, curve)
    # and the predictions themselves, draw by draw
    rows = [plan["train"][0], curve[0][1]]
    for (p, j), r in zip(dev.predict_many(ktt, kst, y, lam, rows), rows):
        ref = inference.kernel_regression(ktt[np.ix_(r, r)], kst[:, r], y[r], lam)
        assert j == 0.0 and np.max(np.abs(p - ref)) <= 1e-8 * np.max(np.abs(ref))


def test_jitter_escalation_is_the_same_and_logged(caplog):
    rng = np.random.default_rng(5)
    f = rng.standard_normal((40, 3))
    k = f @ f.T  # rank 3: the zero ridge fails, the jitter rule rescues it
    k -= 1e-9 * np.trace(k) / 40 * np.eye(40)  # slightly indefinite
    y = np.eye(4)[rng.integers(0, 4, 40)]
    with caplog.at_level(logging.WARNING, logger="ntkrepro.kernels"):
        ref, j_ref = inference.kernel_regression(k, k[:7], y, 0.0, return_jitter=True)
        n_ref = len(caplog.records)
        got, j = DeviceRegression().kernel_regression(k, k[:7], y, 0.0, return_jitter=True)
    assert j_ref > 0 and j == j_ref
    assert len(caplog.records) == 2 * n_ref and "retrying with jitter" in caplog.records[-1].getMessage()
    # condition number ~1e8 at this jitter: the two LAPACK paths agree to its round-off, not to 1e-8
    assert np.array_equal(inference.predicted_classes(got), inference.predicted_classes(ref))
    assert np.max(np.abs(got - ref)) <= 1e-3 * np.max(np.abs(ref))


def test_guards_refuse_what_the_scipy_path_refuses():
    ktt, kst, y, _ = _problem(n=30, n_test=5)
    dev = DeviceRegression()
    with pytest.raises(ValueError, match="not symmetric"):
        dev.kernel_regression(np.triu(ktt) + 1.0, kst, y, 1e-3)
    bad = kst.copy()
    bad[0, 0] = np.nan
    with pytest.raises(inference.NonFiniteError):
        dev.kernel_regression(ktt, bad, y, 1e-3)
    with pytest.raises(ValueError, match="finite"):
        dev.kernel_regression(ktt, kst, y, float("inf"))
    with pytest.raises(ValueError, match="non-positive mean diagonal"):
        dev.kernel_regression(-np.eye(30), kst, y, 1e-3)
    with pytest.raises(inference.CholeskyError):
        dev.kernel_regression(np.diag(np.r_[np.ones(29), -5.0]), kst, y, 0.0)  # far from PSD
    with pytest.raises(ValueError, match="regression_backend"):
        regression_backend("cuda")


def test_both_backends_count_every_regression_in_the_tally():
    ktt, kst, y, yt = _problem(n=40, n_test=10)
    TALLY.clear()
    sp, dev = ScipyRegression(), DeviceRegression()
    sp.kernel_regression(ktt, kst, y, 1e-3)
    sp.select_diag_reg(ktt, kst, y, np.eye(10)[yt], [1e-3, 1e-2])
    dev.select_diag_reg(ktt, kst, y, np.eye(10)[yt], [1e-3, 1e-2, 1e-1])
    dev.correct_many(ktt, kst, y, 1e-3, yt)([np.arange(20), np.arange(20), np.arange(40)])
    assert sp.counts == {40: 3} and dev.counts == {40: 4, 20: 2}
    assert dict(TALLY) == {40: 7, 20: 2}
    assert sp.correct_many(ktt, kst, y, 1e-3, yt) is None
