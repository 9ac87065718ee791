r"""Benchmark: full-batch training steps/s of the m-head transformer (m=256, n=5000 at paper size).

* **vectorised** -- one jitted projected-GD step, all heads at once (:func:`.model.loss_and_grad`,
  ``einsum`` over heads), as used by every A claim.
* **per-head loop** -- the naive implementation: a Python loop over heads, each head's forward and
  its gradient by a jitted per-head function (residuals from a first loop over heads).

Compile time is excluded (one warm-up step each); the loop variant is timed over ``loop_steps``.
"""

from __future__ import annotations

import time

import numpy as np


def run_throughput(params: dict, ctx) -> dict:
    import jax
    import jax.numpy as jnp

    from ntkrepro.arda2026 import model
    from ntkrepro.arda2026.teacher import sample_inputs

    m, n, d, T = (int(params[k]) for k in ("m", "n", "d", "T"))
    X = sample_inputs(jax.random.PRNGKey(0), n, d, T)
    y = jnp.asarray(np.random.default_rng(0).normal(size=n), jnp.float32)
    p0 = model.init_params(jax.random.PRNGKey(1), m, d)
    lr, rho = 0.03, 3.0

    @jax.jit
    def step(p):
        _, g = model.loss_and_grad(p, X, y)
        p = jax.tree_util.tree_map(lambda a, b: a - lr * b, p, g)
        return model.project(p, p0, rho)

    p = jax.block_until_ready(step(p0))
    t0 = time.perf_counter()
    for _ in range(int(params["steps"])):
        p = step(p)
    jax.block_until_ready(p)
    vec = int(params["steps"]) / (time.perf_counter() - t0)

    def head_out(W, U, X):
        z = jnp.einsum("ndt,nd->nt", X, X[..., -1] @ W.T)
        return jnp.tanh(jnp.einsum("ndt,nt->nd", X, jax.nn.softmax(z, axis=-1)) @ U)

    head_fwd = jax.jit(head_out)
    head_vjp = jax.jit(lambda W, U, X, w: jax.vjp(lambda W, U: head_out(W, U, X), W, U)[1](w))

    def loop_step(p):
        hs = [head_fwd(p.W[i], p.U[i], X) for i in range(m)]
        f = sum(p.c[i] * hs[i] for i in range(m)) / np.sqrt(m)
        w = 2.0 * (f - y) / n
        gW, gU, gc = [], [], []
        for i in range(m):
            a, b = head_vjp(p.W[i], p.U[i], X, w * p.c[i] / np.sqrt(m))
            gW.append(a)
            gU.append(b)
            gc.append(w @ hs[i] / np.sqrt(m))
        g = model.Params(jnp.stack(gW), jnp.stack(gU), jnp.stack(gc))
        return model.project(jax.tree_util.tree_map(lambda a, b: a - lr * b, p, g), p0, rho), g

    q, g_loop = jax.block_until_ready(loop_step(p0))
    g_vec = model.loss_and_grad(p0, X, y)[1]
    err = max(float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b))) for a, b in zip(g_loop, g_vec))
    t0 = time.perf_counter()
    for _ in range(int(params["loop_steps"])):
        q, _ = loop_step(q)
    jax.block_until_ready(q)
    loop = int(params["loop_steps"]) / (time.perf_counter() - t0)
    return {"m": m, "n": n, "d": d, "T": T, "steps_per_s_vectorised": vec, "steps_per_s_per_head_loop": loop,
            "speedup": vec / loop, "max_rel_diff_gradients_loop_vs_vectorised": err, "device": str(jax.devices()[0])}
