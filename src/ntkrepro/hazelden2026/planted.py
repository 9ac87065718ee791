r"""G3's primary test (issue 38): the authors' planted-fixed-point comparison, at reduced sizes.

Hazelden et al. (abstract): "[this] explains why some RNN initializations yield better learning,
while some plateau, by biasing the GeNTK". The authors' own comparison is kpflow's
``examples/mem_pro_init_example`` (``train_cases.py``, ``at_init_fig.py: construct_model``,
``record_stats.py``): the same rate RNN initialised at :math:`g = 1` with 0 or 5 planted fixed points;
the planted network has the lower-rank GeNTK and plateaus. This module computes that comparison
(read beside the authors' code, not copied); the criterion that judges it is
:func:`ntkrepro.hazelden2026.claims.evaluate_g3` once the rule runs it (not yet: until then G3 is
inconclusive with that reason).

**Model** (kpflow ``architecture.BasicRNN`` inside ``Model``): a rate RNN without recurrent bias,
hidden state :math:`h_t \in \mathbb R^H`, :math:`h_{-1} = 0`,

.. math::

    h_t = (1 - \Delta t)\,h_{t-1} + \Delta t\,\big(W \tanh(h_{t-1}) + U x_t\big), \qquad
    o_t = C h_t + c,

with :math:`\Delta t = 0.7`. **Initialisation** as PyTorch's ``nn.Linear`` default (what kpflow
inherits): :math:`W \sim \mathcal U(\pm 1/\sqrt H)` times the scale :math:`g`,
:math:`U \sim \mathcal U(\pm 1/\sqrt{n_\mathrm{in}})`, :math:`C, c \sim \mathcal U(\pm 1/\sqrt H)`.

**Planted fixed points** (``construct_model``): for each direction :math:`v \sim \mathcal N(0, I_H)` in
turn, with :math:`s = \tanh v`,

.. math::

    W \leftarrow \frac{v s^\top}{\lVert s\rVert^2} + W\Big(I - \frac{s s^\top}{\lVert s\rVert^2}\Big),

so that :math:`W \tanh(v) = v`: :math:`v` is a fixed point of the input-free dynamics (exactly for
the last one planted; the earlier ones are moved by the later projections, as in the authors' code).

**Task** (kpflow ``custom_tasks/memory_pro.py``): inputs [fixation, :math:`\cos\alpha`, :math:`\sin\alpha`]
over :math:`T = T_\mathrm{stim} + T_\mathrm{mem} + T_\mathrm{resp}` steps; fixation 1 until the
response period, the stimulus during the first period only; targets: the fixation channel, and
:math:`(\cos\alpha, \sin\alpha)` during the response period; training inputs carry Gaussian noise of
standard deviation :math:`0.1\sqrt2` and random angles, kernel sequences are noise-free with evenly
spaced angles (``record_stats.py``).

**GeNTK effective dimension** at initialisation: the participation ratio of
:math:`\Theta_h = J J^\top`, :math:`J = \partial h / \partial(W, U)` over the hidden states of the
kernel sequences (kpflow's ``HiddenNTKOperator``; the readout does not move :math:`h`),
:math:`\mathrm{PR} = (\operatorname{tr}\Theta)^2 / \lVert\Theta\rVert_F^2
= \lVert J\rVert_F^4 / \lVert J^\top J\rVert_F^2` computed exactly from :math:`J` (kpflow's
``effdim`` estimates the same quantity stochastically with 40 probes).

**Learning**: minibatch SGD without momentum on the MSE of all outputs (kpflow ``train.py``:
``torch.optim.SGD``, a fresh random batch each step from a fixed noisy training set), the batch loss
recorded at every step.

**Arms** per seed (one base draw of :math:`W, U, C, c` shared by the arms, the same data and batches):
``none`` (the base draw), ``planted`` (``n_fixed_points`` planted into it) and ``matched`` (the base draw
plus a random rank-``n_fixed_points`` matrix with the planted change's Frobenius norm: a perturbation of
the same size that plants nothing) and ``redraw`` (a second, independent draw of :math:`W` at the same
scale, :math:`U, C, c` shared: two unplanted initialisations, the negative control's pair).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ntkrepro.io import read_json

ARMS = ("none", "planted", "matched", "redraw")


def memory_pro(n: int, periods: Sequence[int], noise_std: float, rng: np.random.Generator | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """Memory-pro inputs and targets ``(n, T, 3)`` (module docstring): random angles and input noise
    when ``rng`` is given, else ``n`` evenly spaced angles without noise."""
    t_stim, t_mem, t_resp = (int(p) for p in periods)
    if min(t_stim, t_mem, t_resp) < 1 or n < 1:
        raise ValueError(f"memory_pro needs n >= 1 and three periods >= 1, got n={n}, periods={tuple(periods)}")
    t_len = t_stim + t_mem + t_resp
    angles = (rng.random(n) * 2 * np.pi) if rng is not None else np.linspace(0, 2 * np.pi, n + 1)[:-1]
    x = np.zeros((n, t_len, 3))
    y = np.zeros_like(x)
    x[:, : t_stim + t_mem, 0] = 1.0
    y[:, :, 0] = x[:, :, 0]
    x[:, :t_stim, 1] = np.cos(angles)[:, None]
    x[:, :t_stim, 2] = np.sin(angles)[:, None]
    y[:, t_stim + t_mem:, 1] = np.cos(angles)[:, None]
    y[:, t_stim + t_mem:, 2] = np.sin(angles)[:, None]
    if rng is not None and noise_std > 0:
        x = x + noise_std * rng.standard_normal(x.shape)
    return x.astype(np.float32), y.astype(np.float32)


def init_params(hidden: int, n_in: int, n_out: int, g: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """PyTorch ``nn.Linear`` default initialisation (module docstring), ``W`` scaled by ``g``."""
    def uniform(shape, fan_in):
        b = 1.0 / np.sqrt(fan_in)
        return rng.uniform(-b, b, shape)

    return {"W": g * uniform((hidden, hidden), hidden), "U": uniform((hidden, n_in), n_in),
            "C": uniform((n_out, hidden), hidden), "c": uniform((n_out,), hidden)}


def plant_fixed_points(w: np.ndarray, directions: Sequence[np.ndarray]) -> np.ndarray:
    r""":math:`W \leftarrow v s^\top/\lVert s\rVert^2 + W (I - s s^\top/\lVert s\rVert^2)`, :math:`s = \tanh v`,
    for each direction in turn (module docstring)."""
    w = np.array(w, np.float64)
    eye = np.eye(w.shape[0])
    for v in directions:
        v = np.asarray(v, np.float64)
        s = np.tanh(v)
        ss = float(s @ s)
        w = np.outer(v, s) / ss + w @ (eye - np.outer(s, s) / ss)
    return w


def matched_perturbation(w: np.ndarray, norm: float, rank: int, rng: np.random.Generator) -> np.ndarray:
    """``w`` plus a random rank-``rank`` matrix (Gaussian factors) scaled to Frobenius norm ``norm``."""
    a = rng.standard_normal((w.shape[0], rank))
    b = rng.standard_normal((w.shape[1], rank))
    d = a @ b.T
    return np.asarray(w, np.float64) + d * (norm / np.linalg.norm(d))


def _hidden_fn(dt: float):
    import jax
    import jax.numpy as jnp

    def hidden(w, u, x):
        """Hidden states ``(n, T, H)`` of inputs ``x (n, T, n_in)``."""
        def step(h, xt):
            h = (1 - dt) * h + dt * (jnp.tanh(h) @ w.T + xt @ u.T)
            return h, h
        _, hs = jax.lax.scan(step, jnp.zeros((x.shape[0], w.shape[0]), x.dtype), jnp.swapaxes(x, 0, 1))
        return jnp.swapaxes(hs, 0, 1)
    return hidden


def hidden_states(p: dict[str, Any], x: np.ndarray, dt: float) -> np.ndarray:
    """The rate RNN's hidden states ``(n, T, H)`` (module docstring)."""
    import jax.numpy as jnp

    return np.asarray(_hidden_fn(dt)(jnp.asarray(p["W"], jnp.float32), jnp.asarray(p["U"], jnp.float32),
                                     jnp.asarray(x, jnp.float32)))


@functools.lru_cache(maxsize=None)
def _jacobian_fn(dt: float):
    """Jitted ``(W, U, x) -> (dh/dW, dh/dU)`` for one ``dt`` (compiled once per input shape, not per call)."""
    import jax

    hidden = _hidden_fn(dt)
    return jax.jit(jax.jacrev(lambda w_, u_, xs: hidden(w_, u_, xs).reshape(-1), argnums=(0, 1)))


def gentk_jacobian(p: dict[str, Any], x: np.ndarray, dt: float) -> np.ndarray:
    r""":math:`J = \partial h/\partial(W, U)`, shape ``(n T H, H^2 + H n_in)`` (float32, reverse mode: at hidden
    64 and two 90-step sequences 4 CPU-s, against 18 for forward mode over the 4,288 weights)."""
    import jax.numpy as jnp

    w, u = jnp.asarray(p["W"], jnp.float32), jnp.asarray(p["U"], jnp.float32)
    jw, ju = _jacobian_fn(float(dt))(w, u, jnp.asarray(x, jnp.float32))
    return np.concatenate([np.asarray(jw).reshape(jw.shape[0], -1), np.asarray(ju).reshape(ju.shape[0], -1)], 1)


def participation_ratio_of_jacobian(jac: np.ndarray) -> float:
    r"""PR of :math:`J J^\top`: :math:`\lVert J\rVert_F^4 / \lVert J^\top J\rVert_F^2` (the smaller Gram,
    the same nonzero eigenvalues); the Gram in the Jacobian's precision (float32: an effective dimension,
    not an exactness claim; at hidden 64, two 90-step sequences, the float64 Gram took 27 CPU-s), its
    traces in float64."""
    j = np.asarray(jac)
    gram = (j.T @ j if j.shape[0] >= j.shape[1] else j @ j.T).astype(np.float64)
    tr = float(np.trace(gram))
    return tr * tr / float(np.sum(gram * gram))


#: Largest float32 Jacobian :func:`gentk_participation_ratio` forms whole (bytes); above it, column chunks.
JACOBIAN_BYTES = 1 << 31


def gentk_participation_ratio(p: dict[str, Any], x: np.ndarray, dt: float, *, max_jacobian_bytes: int = JACOBIAN_BYTES,
                              chunk: int = 1024) -> float:
    r"""The participation ratio of :math:`\Theta_h = J J^\top` (:func:`participation_ratio_of_jacobian`), exact.
    Small cases form :math:`J` whole (:func:`gentk_jacobian`); when it would exceed ``max_jacobian_bytes``
    (hidden 256: :math:`23{,}040 \times 66{,}304`, 6 GB), :math:`\Theta_h = \sum_c J_c J_c^\top` is accumulated
    over ``chunk`` columns at a time, each by forward mode (``jax.linearize``, vmapped over the chunk's basis
    directions): memory :math:`N^2` floats for :math:`\Theta_h` (:math:`N` = kernel sequences x T x H) plus one
    chunk; traces in float64."""
    import jax
    import jax.numpy as jnp

    w, u = np.asarray(p["W"], np.float32), np.asarray(p["U"], np.float32)
    h, n_in = w.shape[0], u.shape[1]
    n_rows, n_cols = int(x.shape[0] * x.shape[1] * h), h * h + h * n_in
    if n_rows * n_cols * 4 <= max_jacobian_bytes:
        return participation_ratio_of_jacobian(gentk_jacobian(p, x, dt))
    hidden = _hidden_fn(float(dt))
    xs = jnp.asarray(x, jnp.float32)

    def f(theta):
        return hidden(theta[: h * h].reshape(h, h), theta[h * h:].reshape(h, n_in), xs).reshape(-1)

    _, f_jvp = jax.linearize(f, jnp.concatenate([jnp.asarray(w).reshape(-1), jnp.asarray(u).reshape(-1)]))
    columns = jax.jit(lambda idx: jax.vmap(f_jvp)(jax.nn.one_hot(idx, n_cols, dtype=jnp.float32)))
    accumulate = jax.jit(lambda g, jc: g + jc.T @ jc, donate_argnums=0)
    gram = jnp.zeros((n_rows, n_rows), jnp.float32)
    for start in range(0, n_cols, chunk):
        idx = jnp.minimum(jnp.arange(start, start + chunk), n_cols - 1)
        jc = columns(idx)  # (chunk, N): J's columns start .. start + chunk - 1 (the last chunk repeats its last)
        if start + chunk > n_cols:
            jc = jc * (jnp.arange(start, start + chunk) < n_cols)[:, None]
        gram = accumulate(gram, jc)
    g = np.asarray(gram)
    tr = float(np.trace(g.astype(np.float64)))
    fro2 = sum(float(np.sum(g[i: i + 2048].astype(np.float64) ** 2)) for i in range(0, n_rows, 2048))
    return tr * tr / fro2


@functools.lru_cache(maxsize=None)
def _sgd_fn(dt: float, batch: int):
    """Jitted ``(theta, x, y, keys, lr) -> losses`` of :func:`train_sgd` (compiled once per shape)."""
    import jax
    import jax.numpy as jnp

    hidden = _hidden_fn(dt)

    def loss_fn(th, xb, yb):
        out = hidden(th["W"], th["U"], xb) @ th["C"].T + th["c"]
        return jnp.mean((out - yb) ** 2)

    grad = jax.value_and_grad(loss_fn)

    def run(theta, xs, ys, keys, lr):
        def step(th, key):
            idx = jax.random.permutation(key, xs.shape[0])[:batch]
            loss, g = grad(th, xs[idx], ys[idx])
            return jax.tree_util.tree_map(lambda a, b: a - lr * b, th, g), loss

        return jax.lax.scan(step, theta, keys)[1]

    return jax.jit(run)


def train_sgd(p: dict[str, Any], x: np.ndarray, y: np.ndarray, *, steps: int, lr: float, batch: int, dt: float,
              seed: int) -> np.ndarray:
    """Minibatch SGD (no momentum) on the MSE of all outputs for ``steps`` steps, one jitted scan; a fresh
    batch of ``batch`` distinct training sequences per step (the same for every arm given ``seed``).
    Returns the batch loss before each step, ``(steps,)``."""
    import jax
    import jax.numpy as jnp

    if not 1 <= batch <= x.shape[0]:
        raise ValueError(f"batch must be in 1..{x.shape[0]} (training sequences), got {batch}")
    xs, ys = jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32)
    theta = {k: jnp.asarray(v, jnp.float32) for k, v in p.items()}
    keys = jax.random.split(jax.random.PRNGKey(seed), steps)
    losses = _sgd_fn(float(dt), int(batch))(theta, xs, ys, keys, jnp.float32(lr))
    return np.asarray(losses, np.float64)


def arm_params(base: dict[str, np.ndarray], arm: str, directions: Sequence[np.ndarray], rng: np.random.Generator,
               g: float = 1.0) -> dict[str, np.ndarray]:
    """The parameters of ``arm`` (:data:`ARMS`) from the seed's base draw: ``planted`` plants ``directions``;
    ``matched`` adds a random matrix of rank ``len(directions)`` with the planted change's Frobenius norm;
    ``redraw`` draws ``W`` afresh at scale ``g`` (``U``, ``C``, ``c`` kept)."""
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    if arm == "redraw":
        hidden = base["W"].shape[0]
        return {**base, "W": g * rng.uniform(-1.0 / np.sqrt(hidden), 1.0 / np.sqrt(hidden), (hidden, hidden))}
    if arm == "none" or not len(directions):
        return dict(base)
    planted = plant_fixed_points(base["W"], directions)
    if arm == "planted":
        return {**base, "W": planted}
    norm = float(np.linalg.norm(planted - base["W"]))
    return {**base, "W": matched_perturbation(base["W"], norm, len(directions), rng)}


#: The sizes a planted run records beside its runs.
RECORDED = ("hidden", "dt", "periods", "noise_std", "n_fixed_points", "g", "n_train", "batch", "steps", "lr",
            "kernel_samples", "n_seeds", "seed")


def planted_run(params: dict[str, Any], s: int, arm: str) -> dict[str, Any]:
    """One seed's ``arm`` (module docstring): the GeNTK participation ratio at initialisation on
    ``kernel_samples`` noise-free sequences and the SGD loss curve. Seed ``s``'s data, base draw and planted
    directions come from ``default_rng([seed, s])`` in that order, the arm's own draw from ``[seed, s, 1 + arm
    index]``, the SGD batches from ``[seed, s, 99]``: one arm computed alone equals the same arm in a run of
    every arm (the decisive tier's cells)."""
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    dt, hidden = float(params["dt"]), int(params["hidden"])
    xk, _ = memory_pro(int(params["kernel_samples"]), params["periods"], 0.0)
    rng = np.random.default_rng([int(params["seed"]), int(s)])
    x, y = memory_pro(int(params["n_train"]), params["periods"], float(params["noise_std"]), rng)
    base = init_params(hidden, 3, 3, float(params["g"]), rng)
    directions = [rng.standard_normal(hidden) for _ in range(int(params["n_fixed_points"]))]
    arm_rng = np.random.default_rng([int(params["seed"]), int(s), 1 + ARMS.index(arm)])
    p = arm_params(base, arm, directions, arm_rng, g=float(params["g"]))
    pr = gentk_participation_ratio(p, xk, dt)
    losses = train_sgd(p, x, y, steps=int(params["steps"]), lr=float(params["lr"]), batch=int(params["batch"]),
                       dt=dt, seed=int(np.random.default_rng([int(params["seed"]), int(s), 99]).integers(2**31)))
    tail = losses[-max(1, len(losses) // 10):]
    return {"seed": int(s), "arm": arm, "pr": pr, "pr_dim": int(xk.shape[0] * xk.shape[1] * hidden),
            "w_fro": float(np.linalg.norm(p["W"])), "w_spectral": float(np.linalg.norm(p["W"], 2)),
            "loss": losses.tolist(), "loss_initial": float(losses[0]), "loss_final": float(np.mean(tail)),
            "diverged": bool(not np.all(np.isfinite(losses)))}


def run_planted(params: dict[str, Any], ctx) -> dict[str, Any]:
    """Every seed's arms (:func:`planted_run`). ``params``: ``hidden``, ``dt``, ``periods`` (three lengths),
    ``noise_std``, ``n_fixed_points``, ``g``, ``n_train``, ``batch``, ``steps``, ``lr``, ``kernel_samples``,
    ``n_seeds``, ``seed``, optional ``arms``."""
    arms = tuple(params.get("arms", ARMS))
    runs = [planted_run(params, s, arm)
            for s in ctx.progress(range(int(params["n_seeds"])), desc="G3 planted fixed points (seed)")
            for arm in arms]
    return {"runs": runs, "arms": list(arms), **{k: params[k] for k in RECORDED}}


def run_planted_cell(params: dict[str, Any], ctx) -> dict[str, Any]:
    """Decisive cell of ``G3`` (config/decisive.yaml: ``cell: [draws, conditions]``): seed ``draw``'s arm
    ``arms[condition]`` (:func:`planted_run`, equal to that arm of a whole :func:`run_planted`)."""
    import time

    from ntkrepro import decisive

    s, condition = int(params["draw"]), int(params["condition"])
    arms = list(params["arms"])
    if not 0 <= s < int(params["n_seeds"]) or not 0 <= condition < len(arms):
        raise ValueError(f"G3 cell: draw {s} / condition {condition} outside n_seeds {params['n_seeds']} / arms {arms}")
    t0 = time.process_time()
    run = planted_run(params, s, arms[condition])
    return {"claim": "G3", "cell": {"draw": s, "condition": condition}, "run": run,
            "cpu_seconds": round(time.process_time() - t0, 2), "compute_code": decisive.compute_code_hash("G3")}


def aggregate_planted(params: dict[str, Any], ctx) -> dict[str, Any]:
    """The cells (``shard_files``) assembled into :func:`run_planted`'s layout, for G3's criterion: every
    planned (draw, arm) present once."""
    cells = [read_json(ctx.use_data(f)) for f in params["shard_files"]]
    arms = list(params["arms"])
    got = sorted((int(c["cell"]["draw"]), int(c["cell"]["condition"])) for c in cells)
    want = sorted((s, a) for s in range(int(params["n_seeds"])) for a in range(len(arms)))
    if got != want:
        raise ValueError(f"G3 cells {got} do not match the plan's draws x arms {want}")
    runs = sorted((c["run"] for c in cells), key=lambda r: (r["seed"], arms.index(r["arm"])))
    return {"runs": runs, "arms": arms, **{k: params[k] for k in RECORDED}}
