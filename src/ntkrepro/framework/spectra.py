r"""Kernel-over-positions tools shared by F2-F6: data, distances, spectra, Fourier content.

A sequence model's NTK on inputs :math:`x_1..x_N` (length :math:`S`) is the array
:math:`\Theta_{ab,st} = \nabla_\theta f_s(x_a)\cdot\nabla_\theta f_t(x_b)` of shape ``(N, N, S, S)``;
its *position kernel* for sequence :math:`a` is the :math:`S\times S` block :math:`\Theta_{aa}`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ntkrepro.stats import Interval, bootstrap_slope, effective_rank  # noqa: F401  (effective_rank re-exported)


def gaussian_sequences(seed: int, n: int, seq_len: int, dim: int, dtype=np.float32) -> np.ndarray:
    """``n`` synthetic sequences of i.i.d. standard-normal tokens, shape ``(n, seq_len, dim)``."""
    if min(n, seq_len, dim) < 1:
        raise ValueError("n, seq_len and dim must be positive")
    return np.random.default_rng(seed).standard_normal((n, seq_len, dim)).astype(dtype)


def flatten_kernel(theta: np.ndarray) -> np.ndarray:
    """``(N, N, S, S)`` -> the ``(N S) x (N S)`` matrix indexed by (sequence, position)."""
    n1, n2, s1, s2 = theta.shape
    return np.asarray(theta).transpose(0, 2, 1, 3).reshape(n1 * s1, n2 * s2)


def position_kernels(theta: np.ndarray) -> np.ndarray:
    """The per-sequence position kernels :math:`\\Theta_{aa}` (``(N, S, S)``) of an ``(N, N, S, S)`` NTK."""
    theta = np.asarray(theta)
    if theta.ndim != 4 or theta.shape[0] != theta.shape[1]:
        raise ValueError(f"expected an (N, N, S, S) kernel, got shape {theta.shape}")
    return np.einsum("aast->ast", theta)


def relative_frobenius(a: np.ndarray, ref: np.ndarray) -> float:
    r""":math:`\lVert a - \mathrm{ref}\rVert_F / \lVert\mathrm{ref}\rVert_F`."""
    a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    if a.shape != ref.shape:
        raise ValueError(f"shape mismatch {a.shape} vs {ref.shape}")
    den = np.linalg.norm(ref)
    if den == 0:
        raise ValueError("reference kernel is zero")
    return float(np.linalg.norm(a - ref) / den)


def eigh_desc(mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and eigenvectors (columns) of a symmetric matrix (symmetrised first)."""
    m = np.asarray(mat, np.float64)
    w, v = np.linalg.eigh(0.5 * (m + m.T))
    return w[::-1], v[:, ::-1]


def spectrum_energy(vecs: np.ndarray) -> np.ndarray:
    r"""Fourier energy of each column :math:`v` over frequencies :math:`k = 0..\lfloor S/2\rfloor`
    (cycles per sequence), normalised to sum 1: :math:`E_k \propto |\hat v_k|^2` (one-sided, the
    two mirror bins of :math:`0<k<S/2` added). Returns ``(n_freq, n_vecs)``."""
    v = np.asarray(vecs, np.float64)
    if v.ndim == 1:
        v = v[:, None]
    S = v.shape[0]
    F = np.abs(np.fft.rfft(v, axis=0)) ** 2
    F[1:(S + 1) // 2] *= 2.0
    return F / F.sum(axis=0, keepdims=True)


def low_freq_fraction(vecs: np.ndarray, cutoff: int) -> np.ndarray:
    """Share of each column's Fourier energy at frequencies ``k <= cutoff`` (cycles per sequence)."""
    return spectrum_energy(vecs)[: cutoff + 1].sum(axis=0)


def white_low_freq_fraction(seq_len: int, cutoff: int) -> float:
    """The same share for a white (flat-spectrum) vector: what an uninformative basis averages to."""
    return float(low_freq_fraction(np.eye(seq_len), cutoff).mean())


def spectral_centroid(vecs: np.ndarray) -> np.ndarray:
    r"""Mean frequency :math:`\sum_k k E_k` (cycles per sequence) of each column."""
    E = spectrum_energy(vecs)
    return (np.arange(E.shape[0])[:, None] * E).sum(axis=0)


def offdiag_fraction(k: np.ndarray) -> np.ndarray:
    r"""Coupling of positions: :math:`\lVert K - \mathrm{diag} K\rVert_F/\lVert K\rVert_F` per ``(..., S, S)`` matrix."""
    k = np.asarray(k, np.float64)
    off = k * (1.0 - np.eye(k.shape[-1]))
    return np.linalg.norm(off, axis=(-2, -1)) / np.linalg.norm(k, axis=(-2, -1))


def distance_profile(k: np.ndarray) -> np.ndarray:
    r"""Mean of :math:`K_{st}/\overline{K_{ss}}` over pairs at each distance :math:`\delta=|s-t|\ge1`,
    per ``(..., S, S)`` matrix -> ``(..., S-1)``."""
    k = np.asarray(k, np.float64)
    S = k.shape[-1]
    scale = np.einsum("...ii->...i", k).mean(-1)
    out = np.stack([np.mean(np.diagonal(k, offset=d, axis1=-2, axis2=-1), axis=-1) for d in range(1, S)], -1)
    return out / scale[..., None]


def positional_bias(k: np.ndarray) -> np.ndarray:
    """Standard deviation over distances of :func:`distance_profile`: 0 when the kernel does not
    depend on how far apart two positions are (exchangeable positions)."""
    return distance_profile(k).std(axis=-1)


def width_slope(widths: Sequence[float], values: np.ndarray, *, n_boot: int, seed: int) -> Interval:
    """Log-log slope of the median over seeds of ``values`` (``(len(widths), n_seeds)``) vs width,
    with a bootstrap over seeds (:func:`ntkrepro.stats.bootstrap_slope`)."""
    return bootstrap_slope(np.asarray(widths, float), np.asarray(values, float), log=True, n_boot=n_boot,
                           seed=seed)
