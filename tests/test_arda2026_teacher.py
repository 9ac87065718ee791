"""Arda et al. (2026) teachers: the authors' construction (diagonal logits) and the paper's (full W_k).

* the authors' labels, as produced by their code, are reproduced (fp32);
* both teachers equal a direct, loop-by-loop Monte-Carlo evaluation of the formula in
  CLAIMS.md ("Teacher") on the same seed stream, in float64, to 1e-10;
* the two teachers differ exactly by the off-diagonal entries of W_k in the logits.
"""

import numpy as np
import pytest
import torch
from jax.experimental import enable_x64

from ntkrepro.arda2026 import teacher

# Labels written by the authors' code (enesarda22/nonasymptotic-transformer @ c67d351) on a CPU:
#   set_seed(seed); X, y = make_dataset(n, d, T, R=16, num_mc=M, nu=3.0, method="teacher", seed=seed)
#   torch.randperm(n)   # their train/validation split
# Two cases: n < R (anchors repeat) with M = 2100 (two Monte-Carlo chunks), and n > R.
AUTHORS_LABELS = {
    (10, 3, 4, 2100, 5): ([-0.233517945, -0.190206394, 0.0214306172, -0.135999814, 0.130324915, 0.260117739,
                           -0.207376704, 0.0821293592, -0.132253453, 0.214322701],
                          [6, 8, 0, 1, 5, 3, 4, 9, 2, 7]),
    (24, 4, 6, 300, 11): ([0.0180370603, 0.12761727, -0.0411533937, 0.00506389001, -0.0585156903, -0.112214357,
                           -0.184794828, 0.120623909, 0.107186176, 0.148824215, 0.0917229876, -0.0223777033,
                           -0.164640754, -0.0365092643, -0.098219946, 0.131078929, 0.0309492964, 0.0771528706,
                           -0.0135860601, 0.0832694694, 0.0578545891, 0.119462572, -0.0063647097, 0.0128196562],
                          [3, 12, 22, 11, 13, 15, 18, 23, 1, 8, 16, 14, 20, 6, 5, 4, 0, 17, 10, 19, 21, 2, 7, 9]),
}


@pytest.mark.parametrize("case", sorted(AUTHORS_LABELS))
def test_authors_labels_reproduced(case):
    n, d, T, M, seed = case
    y_ref, perm_ref = AUTHORS_LABELS[case]
    D = teacher.make_teacher(seed, n, d, T, R=16, nu=3.0, n_mc=M, kind="authors")
    np.testing.assert_allclose(D["y"], y_ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(D["order"], perm_ref)
    n_val = int(0.2 * n)
    np.testing.assert_array_equal(D["X_val"], D["X"][perm_ref[:n_val]])
    np.testing.assert_allclose(D["y_train"], np.asarray(y_ref)[perm_ref[n_val:]], rtol=1e-5, atol=1e-7)


def _softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def direct_labels(X, anchors, alpha, nu, draws, logits):
    """The CLAIMS.md formula, one draw, one anchor, one input at a time (float64, explicit matrices).

    ``logits(W)`` is the matrix D_k in z_t = x_t^T D_k x_T. Returns the labels and the fraction of
    (anchor, draw) pairs whose attention-branch map was clipped.
    """
    def feats(Xi, U, W):
        xT = Xi[:, -1]
        alph = _softmax(Xi.T @ logits(W) @ xT)
        a = Xi @ alph
        s = U @ a
        J = np.diag(alph) - np.outer(alph, alph)
        g = Xi @ J @ Xi.T @ U
        sp = 1.0 - np.tanh(s) ** 2
        return np.tanh(s), sp * a, sp * np.outer(g, xT)  # phi_c, phi_u, phi_w (d x d)

    y = np.zeros(len(X))
    clipped, pairs, M = 0, 0, 0
    for U_chunk, W_chunk in draws:
        for U, W in zip(U_chunk.astype(np.float64), W_chunk.astype(np.float64)):
            M += 1
            vc, vu, vw = 0.0, 0.0, 0.0
            for r in range(len(anchors)):
                c_r, u_r, w_r = feats(anchors[r], U, W)
                fro = np.linalg.norm(w_r)
                scale = min(1.0, nu / fro)
                clipped += scale < 1.0
                pairs += 1
                vc = vc + alpha[r] * nu * c_r
                vu = vu + alpha[r] * nu * u_r
                vw = vw + alpha[r] * scale * w_r
            for j in range(len(X)):
                c, u, w = feats(X[j], U, W)
                y[j] += c * vc + u @ vu + np.sum(w * vw)
    return y / M, clipped / pairs


@pytest.mark.parametrize("nu", [3.0, 0.05])
def test_both_teachers_equal_direct_formula_fp64_and_differ_by_offdiagonal(nu):
    n, d, T, R, M, seed = 6, 3, 4, 4, 150, 2
    with enable_x64():
        auth = teacher.make_teacher(seed, n, d, T, R=R, nu=nu, n_mc=M, kind="authors", dtype=np.float64)
        paper = teacher.make_teacher(seed, n, d, T, R=R, nu=nu, n_mc=M, kind="paper", dtype=np.float64)
    inp = teacher.authors_inputs(seed, n, d, T, R)
    X = inp["X"].astype(np.float64)
    A = X[inp["anchor_idx"]]
    al = inp["alpha"].astype(np.float64)
    assert np.isclose(np.abs(al).sum(), 1.0) and np.allclose(auth["teacher"].anchors, A)
    draws = lambda: teacher.head_draws(seed + M, M, d)  # noqa: E731  the teacher's stream: seed + M
    y_diag, clip_frac = direct_labels(X, A, al, nu, draws(), lambda W: np.diag(np.diag(W)))
    y_full, _ = direct_labels(X, A, al, nu, draws(), lambda W: W)
    np.testing.assert_allclose(auth["y"], y_diag, rtol=0, atol=1e-10)   # authors' teacher = diagonal logits
    np.testing.assert_allclose(paper["y"], y_full, rtol=0, atol=1e-10)  # paper's teacher = full W_k
    # the off-diagonal entries of W_k change the labels by far more than the tolerance
    assert np.max(np.abs(auth["y"] - paper["y"])) > 1e-4 * np.max(np.abs(auth["y"]))
    assert np.max(np.abs(auth["y"] - y_full)) > 1e-6
    if nu < 1:
        assert clip_frac > 0.5  # the Frobenius clip is exercised


def test_stream_is_seed_plus_M_in_authors_chunks():
    U, W = next(teacher.head_draws(17, 3000, 3))
    g = torch.Generator().manual_seed(17)
    np.testing.assert_array_equal(U, torch.randn((2048, 3), generator=g).numpy())
    np.testing.assert_array_equal(W, torch.randn((2048, 3, 3), generator=g).numpy())
    sizes = [u.shape[0] for u, _ in teacher.head_draws(17, 3000, 3)]
    assert sizes == [2048, 952]


def test_width_m_model_converges_to_teacher_and_streams_are_disjoint():
    D = teacher.make_teacher(4, 60, 4, 5, R=8, nu=3.0, n_mc=4096, kind="authors")
    errs = [np.max(np.abs(teacher.width_m_prediction(s, m, D["X"], D["teacher"]) - D["y"]))
            for m in (8, 512) for s in (1, 2, 3)]
    assert np.median(errs[3:]) < 0.4 * np.median(errs[:3])  # MC error ~ m^-1/2: 64x draws -> ~8x smaller
    streams = {teacher.approx_stream(s, m) for s in range(1, 21) for m in (8, 16, 32, 64, 128, 256, 512)}
    assert len(streams) == 140 and not streams & {s + M for s in range(1, 21) for M in (512, 2048, 8192)}


def test_label_stats_and_kind_check():
    st = teacher.label_stats(np.array([1.0, -1.0, 3.0]))
    assert st["mean_y2"] == pytest.approx(11 / 3) and st["var"] == pytest.approx(np.var([1, -1, 3]))
    with pytest.raises(ValueError, match="teacher kind"):
        teacher.make_teacher(0, 10, 3, 4, R=2, nu=3.0, n_mc=8, kind="full")
