"""ntkrepro.kernels.inference: closed-form regression vs neural-tangents predict, jitter, accuracy CIs."""

import logging

import numpy as np
import pytest

from ntkrepro.kernels.inference import (CholeskyError, accuracy, accuracy_with_ci, kernel_regression, one_hot,
                                        select_diag_reg)
from ntkrepro.nt import nt, stax


def _kernels(n_train=12, n_test=5, seed=0):
    from jax.experimental import enable_x64
    rng = np.random.default_rng(seed)
    xt, xs = rng.normal(size=(n_train, 4)), rng.normal(size=(n_test, 4))
    _, _, kfn = stax.serial(stax.Dense(32), stax.Relu(), stax.Dense(1))
    with enable_x64():
        ktt = kfn(xt, None, ("nngp", "ntk"))
        kst = kfn(xs, xt, ("nngp", "ntk"))
        ks_s = kfn(xs, None, ("nngp", "ntk"))
    return kfn, xt, xs, ktt, kst, ks_s


@pytest.mark.parametrize("get", ["nngp", "ntk"])
def test_matches_neural_tangents_predict(get):
    from jax.experimental import enable_x64
    kfn, xt, xs, ktt, kst, _ = _kernels()
    y = one_hot(np.arange(12) % 3, 3)
    with enable_x64():
        predict = nt.predict.gradient_descent_mse_ensemble(kfn, xt, y, diag_reg=1e-3)
        ref = np.asarray(predict(None, xs, get, compute_cov=False))
    got = kernel_regression(np.asarray(getattr(ktt, get)), np.asarray(getattr(kst, get)), y, 1e-3)
    np.testing.assert_allclose(got, ref, rtol=1e-8, atol=1e-10)


def test_interpolates_training_set_without_regulariser():
    _, _, _, ktt, _, _ = _kernels()
    k = np.asarray(ktt.nngp)
    y = one_hot(np.arange(12) % 3, 3)
    np.testing.assert_allclose(kernel_regression(k, k, y, 0.0), y, atol=1e-6)


def test_jitter_escalation_is_logged(caplog):
    v = np.random.default_rng(0).normal(size=(6, 2))
    k = v @ v.T - 1e-6 * np.eye(6)  # rank-deficient and slightly indefinite
    y = np.ones((6, 1))
    with caplog.at_level(logging.WARNING, logger="ntkrepro.kernels"):
        pred, jitter = kernel_regression(k, k, y, 0.0, return_jitter=True)
    assert jitter > 0 and "Cholesky failed" in caplog.text
    assert np.all(np.isfinite(pred))
    with pytest.raises(CholeskyError):
        kernel_regression(np.diag([1.0, 1.0, 1.0, -2.9]), np.eye(4), np.ones(4), 0.0)


def test_bad_inputs():
    with pytest.raises(ValueError, match="square"):
        kernel_regression(np.ones((3, 4)), np.ones((2, 3)), np.ones(3), 0.1)
    with pytest.raises(ValueError, match="NaN"):
        kernel_regression(np.full((2, 2), np.nan), np.ones((1, 2)), np.ones(2), 0.1)
    with pytest.raises(ValueError):
        one_hot([0, 3], 3)


def test_accuracy_and_ci():
    labels = np.array([0, 1, 2, 1] * 25)
    pred = one_hot(labels, 3)
    pred[:20] = one_hot((labels[:20] + 1) % 3, 3)
    assert accuracy(pred, labels) == pytest.approx(0.8)
    ci = accuracy_with_ci(pred, labels, n_boot=500, seed=1)
    assert ci.value == pytest.approx(0.8) and ci.low < 0.8 < ci.high and ci.high - ci.low < 0.2
    assert accuracy_with_ci(pred, labels, n_boot=500, seed=1) == ci  # deterministic
    # binary ±0.5 targets
    yb = np.where(np.arange(10) % 2, 0.5, -0.5)
    assert accuracy(yb * 0.3, yb) == 1.0 and accuracy(-yb, yb) == 0.0
    with pytest.raises(ValueError, match="lengths"):
        accuracy(pred[:5], labels)


def test_select_diag_reg_prefers_validation_accuracy():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(60, 3))
    labels = (x[:, 0] > 0).astype(int)
    noisy = labels.copy()
    noisy[:10] = 1 - noisy[:10]  # label noise in train: regularisation should help
    k = x @ x.T + 1e-3 * np.eye(60)  # linear kernel
    xv = rng.normal(size=(40, 3))
    kv = xv @ x.T
    yv = one_hot((xv[:, 0] > 0).astype(int), 2)
    grid = [1e-6, 1e-2, 1.0, 1e3]
    best, scores = select_diag_reg(k, kv, one_hot(noisy, 2), yv, grid)
    # independent reference: Y_v = K_v (K + lam tr(K)/n I)^-1 Y by a direct solve, scored on the validation labels
    ref = []
    for lam in grid:
        pred = kv @ np.linalg.solve(k + lam * np.trace(k) / len(k) * np.eye(len(k)), one_hot(noisy, 2))
        ref.append((float(np.mean(pred.argmax(1) == yv.argmax(1))), float(np.mean((pred - yv) ** 2)), lam))
    np.testing.assert_allclose([s["accuracy"] for s in scores], [r[0] for r in ref])
    np.testing.assert_allclose([s["mse"] for s in scores], [r[1] for r in ref], rtol=1e-8)
    assert best == min(ref, key=lambda r: (-r[0], r[1], r[2]))[2]
    assert len({r[0] for r in ref}) > 1  # the grid really discriminates: a wrong pick would be seen
    with pytest.raises(ValueError):
        select_diag_reg(k, kv, one_hot(noisy, 2), yv, [])


# ---- issue 14, item 8: numerical guards ---------------------------------------------------------

def test_non_symmetric_train_kernel_is_rejected():
    """Only the lower triangle was read: an asymmetric K (e.g. a cross-kernel passed by mistake)
    was accepted silently."""
    _, _, _, ktt, _, _ = _kernels()
    k = np.asarray(ktt.nngp)
    y = one_hot(np.arange(12) % 3, 3)
    bad = k.copy()
    bad[0, 5] += 0.1 * np.abs(k).max()  # upper triangle differs
    with pytest.raises(ValueError, match="not symmetric"):
        kernel_regression(bad, k[:5], y, 1e-3)
    rng = np.random.default_rng(3)
    with pytest.raises(ValueError, match="not symmetric"):
        kernel_regression(rng.normal(size=(12, 12)) + 12 * np.eye(12), k[:5], y, 1e-3)
    # float32 round-off of a real kernel is accepted (and gives the float64 answer to fp32 accuracy)
    k32 = k.astype(np.float32)
    k32[np.triu_indices(12, 1)] *= np.float32(1 + 1e-6)
    np.testing.assert_allclose(kernel_regression(k32, k[:5], y, 1e-3), kernel_regression(k, k[:5], y, 1e-3),
                               rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("pred", [np.full((6, 1), np.nan), np.full((6, 3), np.nan),
                                  np.array([[0.3], [np.nan], [-0.2], [0.1], [np.inf], [-0.4]])])
def test_nan_predictions_are_rejected(pred):
    """All-NaN predictions used to score 0.5 on a balanced binary task (NaN > 0 is False)."""
    labels = np.array([[0.5], [-0.5]] * 3) if pred.shape[1] == 1 else one_hot(np.arange(6) % 3, 3)
    with pytest.raises(ValueError, match="NaN or inf"):
        accuracy(pred, labels)
    with pytest.raises(ValueError, match="NaN or inf"):
        accuracy_with_ci(pred, labels, n_boot=10)


def test_jitter_actually_used_is_returned():
    _, _, _, ktt, kst, _ = _kernels()
    y = one_hot(np.arange(12) % 3, 3)
    pred, jitter = kernel_regression(np.asarray(ktt.ntk), np.asarray(kst.ntk), y, 1e-3, return_jitter=True)
    assert jitter == 0.0 and pred.shape == (5, 3)


# ---- issue 22, item 3 and messages: no chance accuracy from an infinite ridge; clear empty-set errors

@pytest.mark.parametrize("reg", [np.inf, -np.inf, np.nan])
def test_non_finite_diag_reg_is_refused(reg):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 3))
    k = x @ x.T + np.eye(6)
    y = one_hot(np.arange(6) % 2, 2)
    with pytest.raises(ValueError, match="diag_reg must be finite"):
        kernel_regression(k, k[:2], y, reg)
    with pytest.raises(ValueError, match="diag_reg must be finite"):
        select_diag_reg(k, k[:2], y, y[:2], [1e-3, reg])


def test_empty_training_set_and_empty_predictions_say_so():
    with pytest.raises(ValueError, match="empty training set"):
        kernel_regression(np.zeros((0, 0)), np.zeros((3, 0)), np.zeros((0, 2)), 0.1)
    with pytest.raises(ValueError, match="zero predictions"):
        accuracy(np.zeros((0, 2)), np.zeros(0, int))
    with pytest.raises(ValueError, match="zero predictions"):
        accuracy_with_ci(np.zeros((0, 2)), np.zeros(0, int))
