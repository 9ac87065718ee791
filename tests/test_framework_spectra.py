"""Kernel-over-positions tools: effective rank, Fourier content, coupling and positional bias."""

import numpy as np
import pytest

from ntkrepro.framework import spectra as sp


def test_effective_rank():
    assert sp.effective_rank(np.ones(7)) == pytest.approx(7)
    assert sp.effective_rank([3.0, 0, 0]) == pytest.approx(1)
    assert 1 < sp.effective_rank([4.0, 1.0]) < 2
    with pytest.raises(ValueError):
        sp.effective_rank(np.zeros(3))


def test_fourier_content():
    S = 16
    t = np.arange(S)
    E = sp.spectrum_energy(np.stack([np.ones(S), np.cos(2 * np.pi * 3 * t / S)], 1))
    np.testing.assert_allclose(E[:, 0], np.eye(S // 2 + 1)[0], atol=1e-12)
    np.testing.assert_allclose(E[:, 1], np.eye(S // 2 + 1)[3], atol=1e-12)
    np.testing.assert_allclose(sp.spectral_centroid(np.cos(2 * np.pi * 3 * t / S)), [3.0])
    assert sp.white_low_freq_fraction(8, 1) == pytest.approx(3 / 8)
    assert sp.low_freq_fraction(np.ones(S), 1)[0] == pytest.approx(1.0)


def test_coupling_and_positional_bias():
    S = 10
    d = np.abs(np.arange(S)[:, None] - np.arange(S)[None])
    assert sp.offdiag_fraction(np.eye(S)) == pytest.approx(0.0)
    exch = np.eye(S) + 0.3
    assert sp.positional_bias(exch) == pytest.approx(0.0, abs=1e-12)
    toeplitz = np.exp(-d / 2.0)
    assert sp.positional_bias(toeplitz) > 0.1
    np.testing.assert_allclose(sp.distance_profile(toeplitz), np.exp(-np.arange(1, S) / 2.0))
    assert sp.offdiag_fraction(toeplitz) > sp.offdiag_fraction(np.eye(S) + 0.01)


def test_kernel_reshapes_and_distances():
    th = np.random.default_rng(0).normal(size=(2, 2, 3, 3))
    flat = sp.flatten_kernel(th)
    assert flat.shape == (6, 6)
    assert flat[4, 2] == th[1, 0, 1, 2]
    np.testing.assert_array_equal(sp.position_kernels(th)[1], th[1, 1])
    assert sp.relative_frobenius(th, th) == 0.0
    with pytest.raises(ValueError):
        sp.relative_frobenius(th, th[:1])
    with pytest.raises(ValueError):
        sp.position_kernels(th[:, :1])
    w, v = sp.eigh_desc(np.diag([1.0, 3.0, 2.0]))
    np.testing.assert_allclose(w, [3, 2, 1])
