"""Infinite-width attention NNGP and NTK on current JAX, without neural-tangents.

Run from the repository root (any environment with jax, numpy and ``src/`` importable)::

    PYTHONPATH=src python examples/attention_kernel.py

It needs only ``jax`` and ``numpy``: ``.venv-jax-current`` (Python 3.12, jax 0.11.2, no
neural-tangents; ``bash envs/setup-current-jax.sh``) runs it in CI, and so does the main ``.venv``
(jax 0.5.3) through ``tests/test_examples.py``, and so does a fresh Python 3.12 venv holding only the
package installed alone (``pip install .``: jax, numpy, scipy; ``bash .ci/kernels-alone.sh``). Where neural-tangents happens to be installed the
last step also compares with its ``stax`` kernel (skipped otherwise). See ``docs/kernels.md``.

What it does, in seconds on a CPU:

1. builds a small attention network with :mod:`ntkrepro.kernels.fast` (the ``stax`` names and
   arguments): Dense -> softmax self-attention -> ReLU -> Dense -> Flatten -> Dense;
2. computes its NNGP and NTK on 5 random sequences of 6 tokens (float32, matmul precision
   ``highest``), prints the shapes and checks that both are symmetric positive semi-definite;
3. checks one layer against its closed form in float64: for ``GlobalSelfAttention`` with the
   ``IDENTITY`` mechanism on raw inputs followed by ``Flatten``,
   ``NNGP(x, y) = (1/S) sum_s [G(x) K(x, y) G(y)^T]_ss`` with ``K(x, y) = x y^T / d``,
   ``G(x) = K(x, x)`` (all weight stds 1), and ``NTK = 2 NNGP`` (value and output weights);
4. (if neural-tangents is installed) the same network through ``stax`` agrees.

Exit status 0 iff every check passes.
"""

from __future__ import annotations

import sys

import numpy as np


def model():
    """Dense -> softmax attention -> ReLU -> Dense -> Flatten -> Dense (the readout ends without
    spatial axes, as the fast backend requires)."""
    from ntkrepro.kernels import fast

    return fast.serial(
        fast.Dense(32, W_std=1.0, b_std=0.1),
        fast.GlobalSelfAttention(32, 32, 32, 1, attention_mechanism="SOFTMAX", W_key_std=1.0, W_query_std=1.0,
                                 W_value_std=1.2, W_out_std=1.0),
        fast.Relu(),
        fast.Dense(32, W_std=2 ** 0.5, b_std=0.1),
        fast.Flatten(),
        fast.Dense(1, W_std=1.0),
    )


def psd_margin(k: np.ndarray) -> float:
    """Smallest eigenvalue of the symmetrised ``k`` over its largest (>= -tol for PSD)."""
    w = np.linalg.eigvalsh((k + k.T) / 2)
    return float(w[0] / w[-1])


def identity_attention_closed_form(x: np.ndarray) -> np.ndarray:
    """NNGP of ``serial(GlobalSelfAttention(..., 'IDENTITY'), Flatten())`` on inputs ``x (n, S, d)``
    with every weight std 1 and no bias, in numpy float64 (independent of the library)."""
    d = x.shape[-1]
    cov = np.einsum("xsc,ytc->xsyt", x, x) / d        # K(x, y)_{st} = x_s . y_t / d
    g = np.einsum("xsc,xtc->xst", x, x) / d           # G(x) = sigma_QK * C(x), C(x) = K(x, x)
    out = np.einsum("xsu,xuyv,ytv->xsyt", g, cov, g)  # G(x) K(x, y) G(y)^T
    return np.einsum("xsys->xy", out) / x.shape[1]    # Flatten: mean of the diagonal s = t


def main() -> int:
    import jax

    from ntkrepro import nt
    from ntkrepro.kernels import fast
    from ntkrepro.kernels.numerics import MATMUL_PRECISION, enable_x64

    ok = True

    def check(name: str, passed: bool, detail: str) -> None:
        nonlocal ok
        ok &= bool(passed)
        print(f"  [{'ok' if passed else 'FAIL'}] {name}: {detail}")

    print(f"jax {jax.__version__} ({jax.default_backend()}), neural-tangents installed: {nt.available()}, "
          f"fast-kernel matmul precision: {MATMUL_PRECISION}")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 6, 4)).astype(np.float32)  # 5 sequences, 6 tokens, 4 channels

    # 1-2. NNGP and NTK of the attention network (float32)
    net = model()
    kernel_fn = fast.kernel_fn(net, "fast")
    k = kernel_fn(x, None, ("nngp", "ntk"))
    nngp, ntk = np.asarray(k.nngp), np.asarray(k.ntk)
    print(f"\n1. attention network on x {x.shape} ({x.dtype}): nngp {nngp.shape} {nngp.dtype}, "
          f"ntk {ntk.shape} {ntk.dtype}")
    print("   nngp =\n" + np.array2string(nngp, precision=4, suppress_small=True))
    for name, a in (("nngp", nngp), ("ntk", ntk)):
        asym = float(np.max(np.abs(a - a.T)) / np.max(np.abs(a)))
        check(f"{name} symmetric", asym <= 1e-6, f"max|K - K^T| / max|K| = {asym:.1e}")
        margin = psd_margin(a)
        check(f"{name} positive semi-definite", margin >= -1e-5, f"lambda_min / lambda_max = {margin:.2e}")
    check("ntk >= nngp on the diagonal", bool(np.all(np.diag(ntk) >= np.diag(nngp))),
          "the NTK adds the gradient terms of every layer")
    cross = np.asarray(kernel_fn(x[:2], x, "nngp"))
    check("cross block K(x[:2], x) = rows of K(x, x)", np.allclose(cross, nngp[:2], rtol=1e-5, atol=1e-6),
          f"shape {cross.shape}")

    # 3. closed form of one identity-attention layer, float64
    with enable_x64():
        x64 = x.astype(np.float64)
        one = fast.serial(fast.GlobalSelfAttention(8, 8, 8, 1, attention_mechanism="IDENTITY"), fast.Flatten())
        k64 = fast.kernel_fn(one, "fast")(x64, None, ("nngp", "ntk"))
        got, got_ntk = np.asarray(k64.nngp), np.asarray(k64.ntk)
    want = identity_attention_closed_form(x64)
    rel = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    print(f"\n2. identity attention + Flatten, float64: nngp {got.shape} {got.dtype}")
    check("nngp = (1/S) sum_s [G(x) K(x,y) G(y)^T]_ss", rel <= 1e-12, f"max relative difference {rel:.1e}")
    rel_ntk = float(np.max(np.abs(got_ntk - 2 * got)) / np.max(np.abs(got)))
    check("ntk = 2 nngp (value and output weights)", rel_ntk <= 1e-12, f"max relative difference {rel_ntk:.1e}")

    # 4. the reference, where neural-tangents is installed
    if nt.available():
        ref = fast.kernel_fn(net, "nt")(x, None, ("nngp", "ntk"))
        for name, a in (("nngp", nngp), ("ntk", ntk)):
            b = np.asarray(getattr(ref, name))
            off = ~np.eye(len(a), dtype=bool)
            rel = float(np.max(np.abs(a - b)[off]) / np.max(np.abs(b)))
            check(f"{name} = neural-tangents stax (off-diagonal)", rel <= 1e-5, f"max relative difference {rel:.1e}")
            # the diagonal: the fast backend's ReLU uses the exact theta = 0 where neural-tangents carries
            # an error of order sqrt(float32 eps) (docs/kernels.md, "float32 and float64")
            rel = float(np.max(np.abs(np.diag(a) - np.diag(b))) / np.max(np.abs(b)))
            check(f"{name} = neural-tangents stax (diagonal)", rel <= 1e-3, f"max relative difference {rel:.1e}")
    else:
        print("\n3. neural-tangents not installed: no stax comparison (the fast backend does not need it)")

    print("\nall checks passed" if ok else "\nSOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
