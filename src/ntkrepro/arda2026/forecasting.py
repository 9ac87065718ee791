r"""A4: lag-L forecasting, transformer (:mod:`.model`) vs IndRNN (:mod:`.indrnn`).

**Series.** :math:`x_t = 0.9\,x_{t-L} + \varepsilon_t`, :math:`\varepsilon_t\sim\mathcal N(0, 0.1^2)`,
zero initial values, the first ``burn_in`` (800) samples dropped; the series is standardised
(its empirical mean and standard deviation), so the target :math:`y` is standardised.

**Windows.** Window :math:`j` is :math:`(x_j,\dots,x_{j+L})` (length :math:`T = L+1`), target
:math:`y_j = x_{j+L+1} = 0.9\,x_{j+1} + \varepsilon`: the informative token is the 2nd of the
window. Input channels: the value, plus 16 fixed positional channels
:math:`\sin(2\pi t/P_k), \cos(2\pi t/P_k)`, :math:`P_k = 32\cdot 2^k`, :math:`k = 0..7`
(:math:`d_{in} = 17`). :math:`n` windows, first 80 % train, last 20 % validation. The Bayes
risk of the standardised target is :math:`1 - 0.9^2 = 0.19`.

**Training.** Full-batch GD on MSE, learning rate ``lr`` (0.05), ``steps`` steps, no projection,
width ``m`` (64), tanh. Per step: validation MSE and the gradient norm of the transformer's
:math:`W` / the IndRNN's recurrent :math:`u`. Reported per (L, seed): the minimum validation MSE
and the mean over blocks of ``grad_block`` (500) steps of the block maximum of the gradient norm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ntkrepro import stats
from ntkrepro.arda2026.scaling import balance, collect, seed_groups, summarise
from ntkrepro.io import read_json

# Imports inside functions (issue 40): those left in a function listed in
# ntkrepro.decisive_cells.COMPUTE_CODE stay there, as its source is hashed into the archived decisive cells
# (A4: model, indrnn, decisive), and they load JAX, which the Snakefile's parse does without (see scaling.py).

N_FREQ = 8
BAYES_MSE = 1 - 0.9**2


def lag_series(rng: np.random.Generator, length: int, L: int, *, phi: float = 0.9, noise_std: float = 0.1,
               burn_in: int = 800) -> np.ndarray:
    r""":math:`x_t = \phi x_{t-L} + \varepsilon_t` after ``burn_in`` samples, standardised."""
    if L < 1 or length < 1:
        raise ValueError("L and length must be positive")
    total = length + burn_in
    x = np.zeros(total + L)
    eps = rng.normal(0.0, noise_std, size=total + L)
    for t in range(L, total + L):
        x[t] = phi * x[t - L] + eps[t]
    x = x[L + burn_in:]
    return (x - x.mean()) / x.std()


def positional_channels(T: int) -> np.ndarray:
    """The 16 fixed sin/cos channels (periods 32*2^k, k=0..7), shape ``(16, T)``."""
    t = np.arange(T)[None, :]
    P = 32.0 * 2.0 ** np.arange(N_FREQ)[:, None]
    return np.concatenate([np.sin(2 * np.pi * t / P), np.cos(2 * np.pi * t / P)], axis=0)


def lag_windows(series: np.ndarray, L: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` windows ``(n, 17, L+1)`` (value + positional channels) and targets ``(n,)``."""
    T = L + 1
    if series.size < n + T:
        raise ValueError(f"series of length {series.size} too short for {n} windows of length {T}")
    idx = np.arange(n)[:, None] + np.arange(T)[None, :]
    vals = series[idx]  # (n, T)
    y = series[np.arange(n) + T]
    pe = np.broadcast_to(positional_channels(T), (n, 2 * N_FREQ, T))
    X = np.concatenate([vals[:, None, :], pe], axis=1)
    return X.astype(np.float32), y.astype(np.float32)


def make_task(seed: int, L: int, n: int, burn_in: int, train_frac: float = 0.8):
    """Train/validation windows of the lag-L task, deterministic in ``seed`` and ``L``."""
    rng = np.random.default_rng([seed, L])
    s = lag_series(rng, n + L + 2, L, burn_in=burn_in)
    X, y = lag_windows(s, L, n)
    k = int(round(train_frac * n))
    return X[:k], y[:k], X[k:], y[k:]


def _gd_recorded(vg, grad_norm_fn, predict, steps: int, lr: float):
    """The un-jitted training of one seed: full-batch GD with per-step gradient norm (of the chosen
    block) and validation MSE, ``(params, Xtr, ytr, Xva, yva) -> (losses, vals, grad norms)``;
    ``vals`` has ``steps + 1`` entries (the last after the final step). ``vg(params, X, y) -> (loss, grads)``."""
    import jax
    import jax.numpy as jnp

    def run(p, Xtr, ytr, Xva, yva):
        def step(p, _):
            val = jnp.mean((predict(p, Xva) - yva) ** 2)
            loss, g = vg(p, Xtr, ytr)
            p = jax.tree_util.tree_map(lambda a, b: a - lr * b, p, g)
            return p, (loss, val, grad_norm_fn(g))

        p, (losses, vals, gn) = jax.lax.scan(step, p, None, length=steps)
        final_val = jnp.mean((predict(p, Xva) - yva) ** 2)
        return losses, jnp.concatenate([vals, final_val[None]]), gn

    return run


def _train_recorded(vg, grad_norm_fn, params, Xtr, ytr, Xva, yva, predict, steps: int, lr: float):
    """One seed (the sequential reference path): :func:`_gd_recorded`, jitted."""
    import jax

    return jax.jit(_gd_recorded(vg, grad_norm_fn, predict, steps, lr))(params, Xtr, ytr, Xva, yva)


def _train_recorded_batched(vg, grad_norm_fn, params, Xtr, ytr, Xva, yva, predict, steps: int, lr: float,
                            how: str = "map"):
    """A batch of seeds in ONE compiled program (issue 29: A4's seeds ran one after another, each
    compiled on its own). ``params`` and the data carry a leading seed axis.

    ``how="vmap"``: :func:`_gd_recorded` vectorised with ``jax.vmap``, every step one batched
    computation for all seeds (the choice on an accelerator). ``how="map"``: ``jax.lax.map`` over the
    seeds inside the compiled program -- compiled once, memory of one seed; on CPU it is the faster
    of the two (measured 2026-12-04, L=16, m=64, n=200, 300 steps, 8 seeds, CPU-s per seed: vmap
    0.99 + 0.66, map 0.74 + 0.49 for transformer + IndRNN, plus one compilation per task)."""
    import jax

    run = _gd_recorded(vg, grad_norm_fn, predict, steps, lr)
    if how == "vmap":
        f = jax.vmap(run)
    elif how == "map":
        def f(*xs):
            return jax.lax.map(lambda t: run(*t), xs)
    else:
        raise ValueError(f"how must be 'map' or 'vmap', got {how!r}")
    return jax.jit(f)(params, Xtr, ytr, Xva, yva)


def block_max_mean(x: np.ndarray, block: int) -> float:
    """Mean over consecutive blocks of ``block`` steps of the block maximum (last partial block kept)."""
    x = np.asarray(x)
    if block < 1:
        raise ValueError("block must be >= 1")
    return float(np.mean([x[i:i + block].max() for i in range(0, x.size, block)]))


def _rnn_loss(p, X, y):
    import jax.numpy as jnp

    from ntkrepro.arda2026.indrnn import indrnn_forward

    return jnp.mean((indrnn_forward(p, X) - y) ** 2)


def _tf_gnorm(g):
    import jax.numpy as jnp

    return jnp.sqrt(jnp.sum(g.W**2))


def _rnn_gnorm(g):
    import jax.numpy as jnp

    return jnp.sqrt(jnp.sum(g.u**2))


def run_point(section: Mapping[str, Any], L: int, seeds: Sequence[int], *, batched: bool | None = None,
              seed_map: str | None = None) -> dict[str, Any]:
    """Both models at lag ``L`` for each seed.

    ``batched`` (default: ``section["batched"]``, else True): all ``seeds`` of the call train in one
    compiled program per model (:func:`_train_recorded_batched`, ``seed_map`` = ``section["seed_map"]``,
    else ``"map"`` on CPU and ``"vmap"`` on an accelerator); False runs them one after another, each
    compiled on its own (:func:`_train_recorded`, the reference path). Same data, initialisations and
    arithmetic; the results agree to floating-point tolerance (``tests/test_arda2026_data.py``)."""
    import jax
    import jax.numpy as jnp

    from ntkrepro.arda2026 import model
    from ntkrepro.arda2026.indrnn import indrnn_forward, init_indrnn

    if batched is None:
        batched = bool(section.get("batched", True))
    if seed_map is None:
        seed_map = str(section.get("seed_map", "map" if jax.default_backend() == "cpu" else "vmap"))
    m, steps, lr = int(section["m"]), int(section["steps"]), float(section["lr"])
    out: dict[str, Any] = {"L": L, "seeds": list(seeds)}
    for k in ("tf_min_val", "tf_grad_blockmax", "rnn_min_val", "rnn_grad_blockmax", "tf_final_train",
              "rnn_final_train", "rnn_nonfinite"):
        out[k] = []
    data, p_tfs, p_rnns = [], [], []
    for seed in seeds:
        d = tuple(map(jnp.asarray, make_task(int(seed), L, int(section["n"]), int(section["burn_in"]))))
        key = jax.random.fold_in(jax.random.PRNGKey(int(seed)), L)
        ktf, krnn = jax.random.split(key)
        data.append(d)
        p_tfs.append(model.init_params(ktf, m, d[0].shape[1]))
        p_rnns.append(init_indrnn(krnn, m, d[0].shape[1]))
    rnn_vg = jax.value_and_grad(_rnn_loss)
    if batched and seeds:
        stack = lambda xs: jax.tree_util.tree_map(lambda *a: jnp.stack(a), *xs)  # noqa: E731
        D = stack(data)
        tf = _train_recorded_batched(model.loss_and_grad, _tf_gnorm, stack(p_tfs), *D, model.forward, steps, lr,
                                     seed_map)
        rnn = _train_recorded_batched(rnn_vg, _rnn_gnorm, stack(p_rnns), *D, indrnn_forward, steps, lr, seed_map)
        tf_runs = [tuple(np.asarray(a[i]) for a in tf) for i in range(len(seeds))]
        rnn_runs = [tuple(np.asarray(a[i]) for a in rnn) for i in range(len(seeds))]
    else:
        tf_runs = [tuple(map(np.asarray, _train_recorded(model.loss_and_grad, _tf_gnorm, p, *d, model.forward,
                                                         steps, lr))) for p, d in zip(p_tfs, data)]
        rnn_runs = [tuple(map(np.asarray, _train_recorded(rnn_vg, _rnn_gnorm, p, *d, indrnn_forward, steps, lr)))
                    for p, d in zip(p_rnns, data)]
    block = int(section["grad_block"])
    for (losses, vals, gn), (rlosses, rvals, rgn) in zip(tf_runs, rnn_runs):
        out["tf_min_val"].append(float(np.nanmin(vals)))
        out["tf_grad_blockmax"].append(block_max_mean(gn, block))
        out["tf_final_train"].append(float(losses[-1]))
        out["rnn_nonfinite"].append(int(np.sum(~np.isfinite(rvals))))
        # a diverged run (NaN/inf) counts with the worst finite value, or +inf if none
        out["rnn_min_val"].append(float(np.nanmin(np.where(np.isfinite(rvals), rvals, np.nan)))
                                  if np.isfinite(rvals).any() else float("inf"))
        out["rnn_grad_blockmax"].append(block_max_mean(np.where(np.isfinite(rgn), rgn, np.finfo(np.float32).max),
                                                       block))
        out["rnn_final_train"].append(float(rlosses[-1]))
    return out


def tasks(section: Mapping[str, Any]) -> list[dict[str, Any]]:
    """(L, seed group) tasks."""
    return [{"L": int(L), "seeds": g} for L in section["L_values"]
            for g in seed_groups(section["seeds"], section["seeds_per_job"])]


def n_shards(section: Mapping[str, Any]) -> int:
    return max(1, min(int(section["jobs"]), len(tasks(section))))


def run_a4_shard(params: dict, ctx) -> dict:
    """A4 shard: its share of :func:`tasks` (cost-balanced, cost ~ L + 1)."""
    shard, K = int(params["shard"]), n_shards(params)
    todo = balance(tasks(params), [t["L"] + 1 for t in tasks(params)], K)[shard]
    rows = [run_point(params, t["L"], t["seeds"]) for t in ctx.progress(todo, desc=f"A4 shard {shard}")]
    return {"claim": "A4", "shard": shard, "n_shards": K, "tasks": rows}


def chunk_seeds(params: Mapping[str, Any], chunk: int) -> list[int]:
    """The seeds of decisive-tier cell ``chunk`` (1-based; config/decisive.yaml A4): the ``chunk``-th run of
    ``seeds_per_cell`` consecutive seeds of ``seeds``; ``chunks`` must be exactly 1..(number of runs)."""
    seeds = [int(s) for s in params["seeds"]]
    k = int(params["seeds_per_cell"])
    if k < 1 or not seeds:
        raise ValueError("seeds_per_cell must be >= 1 and seeds non-empty")
    n = -(-len(seeds) // k)
    if [int(c) for c in params["chunks"]] != list(range(1, n + 1)):
        raise ValueError(f"chunks must be 1..{n} ({len(seeds)} seeds, {k} per cell), got {params['chunks']}")
    if not 1 <= int(chunk) <= n:
        raise ValueError(f"chunk {chunk} is not one of 1..{n}")
    return seeds[(int(chunk) - 1) * k: int(chunk) * k]


def run_a4_cell(params: dict, ctx) -> dict:
    """A4 decisive-tier cell (ntkrepro.decisive, config/decisive.yaml): the seeds of one ``chunk``
    (:func:`chunk_seeds`) at every lag, both models, all seeds of a lag in one compiled program per model
    (:func:`run_point`, batched). The rows are :func:`run_a4_shard`'s (``tasks``: one per lag), so the
    cells aggregate exactly like the default run's shards (:func:`aggregate_a4`, then A4's current
    criterion). Records the process CPU seconds per lag beside the wall time (the machine is shared)."""
    import time

    import jax

    from ntkrepro import decisive

    chunk = int(params["chunk"])
    seeds = chunk_seeds(params, chunk)
    seed_map = str(params.get("seed_map", "map" if jax.default_backend() == "cpu" else "vmap"))
    rows, cpu = [], {}
    for L in params["L_values"]:
        t0 = time.process_time()
        rows.append(run_point(params, int(L), seeds, batched=True, seed_map=seed_map))
        cpu[str(int(L))] = round(time.process_time() - t0, 2)
    return {"claim": "A4", "cell": {"chunk": chunk, "seeds": seeds}, "tasks": rows, "seed_map": seed_map,
            "cpu_seconds_by_L": cpu, "cpu_seconds": round(sum(cpu.values()), 2),
            "compute_code": decisive.compute_code_hash("A4")}


def aggregate_a4(params: dict, ctx) -> dict:
    """A4: per-L summaries, slopes of min validation MSE vs L (linear) and of log grad norms vs L."""
    shards = [read_json(ctx.use_data(p)) for p in params["shard_files"]]
    out: dict[str, Any] = {"metrics": {}, "bayes_mse": BAYES_MSE}
    nb = int(params["n_boot"])
    for metric in ("tf_min_val", "rnn_min_val", "tf_grad_blockmax", "rnn_grad_blockmax", "tf_final_train",
                   "rnn_final_train", "rnn_nonfinite"):
        x, vals, seeds = collect(shards, "L", metric)
        s = summarise(x, vals, n_boot=nb)
        if metric.endswith("min_val"):
            capped = np.where(np.isfinite(vals), vals, 1e6)
            s["slope_linear"] = stats.bootstrap_slope(x, capped, log=False, n_boot=nb).as_dict()
        out["metrics"][metric] = s
    out["L_values"] = x.tolist()
    out["seeds"] = seeds
    return out
