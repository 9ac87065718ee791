"""Arda et al. (2026) model: Lemma-1 gradients vs autodiff, NTK split vs full NTK, init, projection."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import enable_x64

from ntkrepro.arda2026 import model
from ntkrepro.arda2026.indrnn import indrnn_forward, init_indrnn
from ntkrepro.arda2026.teacher import sample_inputs


def _setup(m=6, d=3, T=5, n=4, dtype=jnp.float64, seed=0):
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(seed), 3)
    X = jax.random.normal(k1, (n, d, T), dtype)
    p = model.init_params(k2, m, d, dtype)
    # move away from the symmetric point so every term of the gradient is exercised
    noise = jax.tree_util.tree_map(lambda a: 0.3 * jax.random.normal(k3, a.shape, dtype), p)
    p = jax.tree_util.tree_map(lambda a, b: a + b, p, noise)
    return p, X


def test_symmetric_init_gives_zero_output_and_copies():
    p = model.init_params(jax.random.PRNGKey(1), 8, 4)
    X = sample_inputs(jax.random.PRNGKey(2), 10, 4, 6)
    assert np.allclose(model.forward(p, X), 0.0, atol=1e-6)
    assert np.array_equal(p.W[:4], p.W[4:]) and np.array_equal(p.c[:4], -p.c[4:])
    assert set(np.unique(np.abs(p.c))) == {1.0}
    with pytest.raises(ValueError):
        model.init_params(jax.random.PRNGKey(0), 7, 4)


def test_forward_matches_explicit_formula_and_loop():
    with enable_x64():
        p, X = _setup()
        f = model.forward(p, X)
        ref = []
        for j in range(X.shape[0]):
            Xj = np.asarray(X[j])
            tot = 0.0
            for i in range(p.c.shape[0]):
                z = Xj.T @ np.asarray(p.W[i]) @ Xj[:, -1]
                a = Xj @ (np.exp(z - z.max()) / np.exp(z - z.max()).sum())
                tot += float(p.c[i]) * np.tanh(np.asarray(p.U[i]) @ a)
            ref.append(tot / np.sqrt(p.c.shape[0]))
        np.testing.assert_allclose(f, ref, rtol=1e-12)
        np.testing.assert_allclose(model.forward_loop(p, X), f, rtol=1e-12)


def test_lemma1_per_example_gradients_match_autodiff_fp64():
    with enable_x64():
        p, X = _setup()
        analytic = model.per_example_grads(p, X)
        auto = jax.jacrev(model.forward)(p, X)
        for a, b in zip(analytic, auto):
            np.testing.assert_allclose(a.reshape(b.shape) if a.ndim == b.ndim else a, b, rtol=1e-10, atol=1e-12)


def test_loss_gradient_matches_autodiff_fp64_and_fp32():
    with enable_x64():
        p, X = _setup()
        y = jnp.linspace(-1, 1, X.shape[0])
        loss, g = model.loss_and_grad(p, X, y)
        l2, g2 = jax.value_and_grad(model.mse)(p, X, y)
        assert abs(loss - l2) < 1e-14
        for a, b in zip(g, g2):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    p32, X32 = _setup(dtype=jnp.float32)
    y32 = jnp.linspace(-1, 1, X32.shape[0])
    _, g = model.loss_and_grad(p32, X32, y32)
    _, g2 = jax.value_and_grad(model.mse)(p32, X32, y32)
    for a, b in zip(g, g2):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_ntk_parts_sum_to_full_empirical_ntk_fp64():
    with enable_x64():
        p, X = _setup(n=5)
        X2 = X[:3] * 0.7
        parts = model.ntk_parts(p, X, X2)
        full = model.empirical_ntk(p, X, X2)
        np.testing.assert_allclose(sum(parts.values()), full, rtol=1e-10, atol=1e-12)
        # each part equals the NTK restricted to its parameter block
        J = jax.jacrev(model.forward)(p, X)
        J2 = jax.jacrev(model.forward)(p, X2)
        for name, a, b in [("attention", J.W, J2.W), ("value", J.U, J2.U), ("output", J.c, J2.c)]:
            ref = a.reshape(a.shape[0], -1) @ b.reshape(b.shape[0], -1).T
            np.testing.assert_allclose(parts[name], ref, rtol=1e-10, atol=1e-12)
        assert float(jnp.trace(model.ntk_parts(p, X)["attention"])) > 0


def test_linear_term_matches_jvp():
    with enable_x64():
        p, X = _setup()
        d = jax.tree_util.tree_map(lambda a: jnp.cos(jnp.arange(a.size, dtype=a.dtype)).reshape(a.shape), p)
        _, jvp = jax.jvp(lambda q: model.forward(q, X), (p,), (d,))
        np.testing.assert_allclose(model.linear_term(p, d, X), jvp, rtol=1e-10)


def test_projection_per_head_balls():
    p0 = model.init_params(jax.random.PRNGKey(0), 16, 3)
    big = jax.tree_util.tree_map(lambda a: a + 5.0, p0)
    rho = 2.0
    q = model.project(big, p0, rho)
    r = rho / 4.0
    np.testing.assert_allclose(jnp.sqrt(jnp.sum((q.W - p0.W) ** 2, axis=(1, 2))), r, rtol=1e-5)
    np.testing.assert_allclose(jnp.linalg.norm(q.U - p0.U, axis=1), r, rtol=1e-5)
    np.testing.assert_allclose(jnp.abs(q.c - p0.c), r, rtol=1e-5)
    small = jax.tree_util.tree_map(lambda a: a + 1e-3, p0)
    for a, b in zip(model.project(small, p0, rho), small):
        np.testing.assert_allclose(a, b)


def test_projected_gd_decreases_loss_and_stays_in_ball():
    X = sample_inputs(jax.random.PRNGKey(3), 64, 4, 6)
    y = jnp.sin(3 * X[:, 0, -1])
    p0 = model.init_params(jax.random.PRNGKey(4), 32, 4)
    p, losses = model.train(p0, X, y, steps=50, lr=0.5, rho=1.0)
    assert float(model.mse(p, X, y)) < float(losses[0])
    r = 1.0 / np.sqrt(32)
    assert float(jnp.max(jnp.abs(p.c - p0.c))) <= r + 1e-6
    assert float(jnp.max(jnp.linalg.norm(p.U - p0.U, axis=1))) <= r + 1e-6
    p2, _ = model.train(p0, X, y, steps=50, lr=0.5, rho=1.0)
    np.testing.assert_array_equal(p.W, p2.W)  # deterministic on CPU


def test_bad_inputs_raise():
    p = model.init_params(jax.random.PRNGKey(0), 4, 3)
    with pytest.raises(ValueError):
        model.ntk_parts(p, jnp.zeros((2, 5, 4)))
    with pytest.raises(ValueError):
        model.per_example_grads(p, jnp.zeros((5, 4)))


def test_indrnn_forward_matches_loop():
    p = init_indrnn(jax.random.PRNGKey(0), 6, 3)
    X = jax.random.normal(jax.random.PRNGKey(1), (4, 3, 7))
    assert np.allclose(indrnn_forward(p, X), 0.0, atol=1e-6)  # pairwise-symmetric init
    assert set(np.abs(np.asarray(p.u)).tolist()) == {1.5}
    # break the symmetry of the readout so the comparison below is not 0 == 0
    p = p._replace(c=jax.random.normal(jax.random.PRNGKey(2), (6,)))
    h = np.zeros((4, 6))
    for t in range(7):
        h = np.tanh(np.asarray(X[:, :, t]) @ np.asarray(p.W_in).T + np.asarray(p.u) * h)
    ref = h @ np.asarray(p.c) / np.sqrt(6)
    assert np.max(np.abs(ref)) > 1e-2
    np.testing.assert_allclose(indrnn_forward(p, X), ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError):
        init_indrnn(jax.random.PRNGKey(0), 5, 3)


# ---- the chunked training step and the plain PyTorch-autograd baseline (issue 13.5) ----------------
def test_chunked_loss_and_grad_independent_of_chunking_fp64():
    """Every chunk size (with zero padding of the last chunk) gives the same loss and gradient."""
    with enable_x64():
        p, X = _setup(n=7)
        y = jnp.linspace(-1, 1, 7)
        l_ref, g_ref = jax.value_and_grad(model.mse)(p, X, y)
        for chunk in (1, 3, 7, None):
            batch = model.prepare_batch(X, y, p.c.shape[0], chunk)
            assert batch.Xt.shape[0] * batch.Xt.shape[1] >= 7 and float(jnp.sum(batch.mask)) == 7
            loss, g = model.loss_and_grad_batch(p, batch)
            np.testing.assert_allclose(loss, l_ref, rtol=1e-12)
            for a, b in zip(g, g_ref):
                np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    with pytest.raises(ValueError):
        model.prepare_batch(X, y, 6, chunk=0)


def test_chunk_size_rule():
    assert model.chunk_size(5000, 256, 16, backend="cpu") == model.CHUNK_ELEMENTS // (16 * 256)
    assert model.chunk_size(10, 256, 16, backend="cpu") == 10
    assert model.chunk_size(5000, 256, 16, backend="gpu") == 5000


def _torch_ref(p, X, y, lr=0.1, rho=1.0, dtype=None):
    import torch

    from ntkrepro.arda2026.torch_reference import AutogradStep

    return AutogradStep(p.W, p.U, p.c, X, y, lr=lr, rho=rho, dtype=dtype or torch.float64)


def test_torch_autograd_forward_and_gradients_equal_lemma1_fp64():
    from ntkrepro.arda2026 import torch_reference

    with enable_x64():
        p, X = _setup(m=8, d=4, T=6, n=9)
        y = jnp.sin(jnp.arange(9.0))
        ref = _torch_ref(p, X, y)
        np.testing.assert_allclose(torch_reference.forward(ref.W, ref.U, ref.c, ref.X).detach().numpy(),
                                   model.forward(p, X), rtol=1e-12, atol=1e-14)
        loss_t, g_t = ref.grads()
        loss, g = model.loss_and_grad(p, X, y, chunk=4)
        assert abs(loss_t - float(loss)) < 1e-12
        for a, b in zip(g, g_t):
            np.testing.assert_allclose(a, b.numpy(), rtol=1e-10, atol=1e-13)


def test_torch_autograd_gradients_equal_lemma1_fp32_relative():
    import torch

    p, X = _setup(m=16, d=8, T=16, n=40, dtype=jnp.float32, seed=3)
    y = 0.1 * jnp.cos(jnp.arange(40.0, dtype=jnp.float32))
    _, g_t = _torch_ref(p, X, y, dtype=torch.float32).grads()
    _, g = model.loss_and_grad(p, X, y, chunk=16)
    for a, b in zip(g, g_t):
        b = b.numpy()
        assert np.max(np.abs(np.asarray(a) - b)) <= 1e-5 * np.max(np.abs(b))


def test_projected_step_equals_torch_autograd_step_fp64():
    """Several projected-GD steps (projection active) agree with the PyTorch-autograd baseline."""
    with enable_x64():
        p0, X = _setup(m=8, d=4, T=6, n=9)
        y = jnp.sin(jnp.arange(9.0))
        lr, rho, steps = 2.0, 0.05, 4
        ref = _torch_ref(p0, X, y, lr=lr, rho=rho)
        losses_t = [ref.step() for _ in range(steps)]
        p, losses = model.train(p0, X, y, steps=steps, lr=lr, rho=rho, chunk=4)
        np.testing.assert_allclose(losses, losses_t, rtol=1e-10)
        for a, b in zip(p, ref.params()):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
        # the projection was binding (otherwise this would only test plain GD)
        r = rho / np.sqrt(8)
        assert np.isclose(np.max(np.abs(np.asarray(p.c - p0.c))), r) or np.isclose(
            np.max(np.linalg.norm(np.asarray(p.U - p0.U), axis=1)), r)
        q, _ = model.gd_step(p0, p0, model.prepare_batch(X, y, 8), lr, rho)
        one = _torch_ref(p0, X, y, lr=lr, rho=rho)
        one.step()
        for a, b in zip(q, one.params()):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)


def test_benchmark_counts_and_tiny_run():
    """The benchmark's byte counter counts what an op reads and writes; a tiny run reports agreeing steps."""
    import torch

    from ntkrepro.arda2026 import benchmark

    a, b = torch.ones(1000), torch.ones(1000)
    assert benchmark.torch_step_bytes(lambda: a.add_(b)) == 3 * 4000  # reads a, b; writes a
    assert benchmark.torch_step_bytes(lambda: a.view(10, 100)) == 0  # a view moves nothing
    r = benchmark.benchmark_size(4, 10, 3, 5, steps=1, repeats=2, bandwidth=1e9)
    assert set(r["variants"]) == {"project", "torch_autograd", "torch_autograd_1thread"}
    assert r["agreement"]["grad_max_rel_diff"] < 1e-5 and r["agreement"]["loss_rel_diff"] < 1e-5
    p = r["variants"]["project"]
    assert p["bytes_per_step"] > 0 and p["bytes_per_step_analytic"] == model.step_bytes(4, 10, 3, 5)
    assert r["speedup"] == min(v["wall_median"] for v in r["speedup_vs"].values())
    bw = benchmark.memory_bandwidth(1.0, repeats=1)
    assert bw["triad"] > 0 and bw["copy"] > 0
