r"""Claim G3: GeNTK effective dimensions at initialisation and learning of RNNs and GRUs over an
initial-scale sweep.

Hazelden et al. (abstract): "formalize notions of low-rank, biased learning in terms of reduced
spatial or temporal ranks of the full operator ... explains why some RNN initializations yield
better learning, while some plateau, by biasing the GeNTK".

**Task** (flip-flop, Sussillo & Barak 2013): ``n_bits`` input channels receive pulses
:math:`\pm 1` with probability ``p_pulse`` per step; the target of each channel is the sign of
its most recent pulse (0 before the first).

**Models** (state :math:`h_t \in \mathbb R^H`, linear readout :math:`o_t = C h_t + c`):

* RNN, written in pre-activation state :math:`z` so that every weight is a weight site:
  :math:`z_t = W \tanh(z_{t-1}) + U x_t + b`, :math:`h_t = \tanh(z_t)`, :math:`z_{-1} = 0`.
  Global constraint :math:`F(z,\theta)_t = z_t - W\tanh(z_{t-1}) - U x_t - b = 0`, so
  :math:`\mathcal K = (V V^\top)\otimes I_H` with site variable
  :math:`v_{s,t} = [\tanh(z_{s,t-1}), x_{s,t}, 1]` and :math:`\mathcal P = (D_z F)^{-1}`, the
  inverse of the block lower-bidiagonal operator with identity diagonal blocks and
  sub-diagonal blocks :math:`-W\,\mathrm{diag}(\tanh'(z_{t-1}))`.
  The GeNTK on :math:`h` is :math:`\Theta_h = D\,\mathcal P\mathcal K\mathcal P^* D`,
  :math:`D = \mathrm{diag}(\tanh'(z))` (:func:`rnn_gentk_operators`).
* GRU (PyTorch's gate equations) with the initial scale on the three recurrent matrices.

For both, :math:`\Theta_h = J J^\top` with :math:`J = \partial h / \partial \theta_\mathrm{rec}`
(all parameters except the readout) by autodiff (:func:`gentk_autodiff`); for the RNN the
operator form above is checked against it. Recurrent weights are drawn
:math:`\mathcal N(0, g^2/H)` for the initial scale :math:`g` (kpflow's ``init_level`` multiplies
PyTorch's default :math:`U(\pm 1/\sqrt H)` recurrent init, std :math:`1/\sqrt{3H}`, so its
level :math:`\ell` is our :math:`g = \ell/\sqrt 3`); input weights :math:`\mathcal N(0, 1/n_\mathrm{in})`.

Reported per (model, scale, seed), at initialisation: the participation ratio
:math:`(\sum\lambda)^2/\sum\lambda^2` (kpflow's effective dimension) and the entropy effective
rank of :math:`\Theta_h` and of kpflow's partial-averaged spatial and temporal operators
(:func:`spectra`); and the full-batch gradient-descent loss curve of the MSE on a fixed training set.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ntkrepro.stats import effective_rank, participation_ratio

MODELS = ("rnn", "gru")
#: Steps of the first kernel sequence on which the RNN operator form is checked against autodiff.
OP_CHECK_STEPS = 10


def flip_flop(n_samples: int, seq_len: int, n_bits: int, p_pulse: float, rng: np.random.Generator):
    """Flip-flop inputs (S, T, n_bits) in {-1, 0, 1} and targets = sign of the latest pulse."""
    if not 0 < p_pulse < 1:
        raise ValueError("p_pulse must be in (0, 1)")
    pulse = rng.random((n_samples, seq_len, n_bits)) < p_pulse
    sign = np.where(rng.random((n_samples, seq_len, n_bits)) < 0.5, -1.0, 1.0)
    x = pulse * sign
    y = np.zeros_like(x)
    state = np.zeros((n_samples, n_bits))
    for t in range(seq_len):
        state = np.where(pulse[:, t], sign[:, t], state)
        y[:, t] = state
    return x, y


def init_params(model: str, n_in: int, hidden: int, n_out: int, gain: float, seed: int) -> dict[str, torch.Tensor]:
    """Float64 parameters; recurrent matrices N(0, gain^2/H), input N(0, 1/n_in), readout N(0, 1/H)."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    g = torch.Generator().manual_seed(seed)

    def normal(*shape, std):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * std

    p: dict[str, torch.Tensor] = {}
    if model == "rnn":
        p["W"] = normal(hidden, hidden, std=gain / np.sqrt(hidden))
        p["U"] = normal(hidden, n_in, std=1 / np.sqrt(n_in))
        p["b"] = torch.zeros(hidden, dtype=torch.float64)
    else:
        for gate in ("r", "u", "n"):
            p[f"W_h{gate}"] = normal(hidden, hidden, std=gain / np.sqrt(hidden))
            p[f"W_i{gate}"] = normal(hidden, n_in, std=1 / np.sqrt(n_in))
            p[f"b_i{gate}"] = torch.zeros(hidden, dtype=torch.float64)
            p[f"b_h{gate}"] = torch.zeros(hidden, dtype=torch.float64)
    p["C"] = normal(n_out, hidden, std=1 / np.sqrt(hidden))
    p["c"] = torch.zeros(n_out, dtype=torch.float64)
    return p


def hidden_states(model: str, p: dict[str, torch.Tensor], x: torch.Tensor, return_z: bool = False):
    """Hidden states h (S, T, H) (and RNN pre-activations z) for inputs x (S, T, n_in)."""
    s, t_len, _ = x.shape
    hdim = p["C"].shape[1]
    h = torch.zeros(s, hdim, dtype=x.dtype)
    hs, zs = [], []
    for t in range(t_len):
        xt = x[:, t]
        if model == "rnn":
            z = h @ p["W"].T + xt @ p["U"].T + p["b"]
            h = torch.tanh(z)
            zs.append(z)
        else:
            r = torch.sigmoid(xt @ p["W_ir"].T + p["b_ir"] + h @ p["W_hr"].T + p["b_hr"])
            u = torch.sigmoid(xt @ p["W_iu"].T + p["b_iu"] + h @ p["W_hu"].T + p["b_hu"])
            n = torch.tanh(xt @ p["W_in"].T + p["b_in"] + r * (h @ p["W_hn"].T + p["b_hn"]))
            h = (1 - u) * n + u * h
        hs.append(h)
    hs = torch.stack(hs, 1)
    return (hs, torch.stack(zs, 1)) if return_z else hs


def recurrent_names(p: dict[str, torch.Tensor]) -> list[str]:
    """Parameters that shape the hidden state (everything but the readout)."""
    return [k for k in p if k not in ("C", "c")]


def gentk_autodiff(model: str, p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    r""":math:`J` with :math:`\Theta_h = J J^\top`, :math:`J = \partial h/\partial\theta_\mathrm{rec}`,
    shape (S*T*H, P)."""
    names = recurrent_names(p)

    def fn(*theta):
        q = dict(p)
        q.update(zip(names, theta))
        return hidden_states(model, q, x).reshape(-1)

    jac = torch.func.jacrev(fn, argnums=tuple(range(len(names))))(*[p[n] for n in names])
    return torch.cat([j.reshape(j.shape[0], -1) for j in jac], 1)


def rnn_gentk_operators(p: dict[str, torch.Tensor], x: torch.Tensor) -> dict[str, torch.Tensor]:
    r"""RNN GeNTK from its operators: :math:`\mathcal K` (Kronecker core), :math:`\mathcal P`, and
    :math:`\Theta_h = D\mathcal P\mathcal K\mathcal P^* D` on states indexed (sample, time, unit)."""
    s, t_len, _ = x.shape
    hdim = p["W"].shape[0]
    _, z = hidden_states("rnn", p, x, return_z=True)
    r_prev = torch.cat([torch.zeros(s, 1, hdim, dtype=x.dtype), torch.tanh(z[:, :-1])], 1)
    v = torch.cat([r_prev, x, torch.ones(s, t_len, 1, dtype=x.dtype)], 2).reshape(s * t_len, -1)
    core = torch.kron(v @ v.T, torch.eye(hdim, dtype=x.dtype))
    dphi = 1 - torch.tanh(z) ** 2  # (S, T, H)
    n = t_len * hdim
    p_blocks = []
    for si in range(s):
        m = torch.eye(n, dtype=x.dtype)
        for t in range(1, t_len):
            m[t * hdim:(t + 1) * hdim, (t - 1) * hdim:t * hdim] = -p["W"] * dphi[si, t - 1][None, :]
        p_blocks.append(torch.linalg.solve_triangular(m, torch.eye(n, dtype=x.dtype), upper=False))
    prop = torch.block_diag(*p_blocks)
    d = dphi.reshape(-1)
    theta_z = prop @ core @ prop.T
    theta_h = d[:, None] * theta_z * d[None, :]
    return {"K": core, "P": prop, "theta_z": theta_z, "theta_h": theta_h}


def partial_averages(jac: torch.Tensor, n_samples: int, seq_len: int, hidden: int) -> tuple[np.ndarray, np.ndarray]:
    r"""kpflow's partial-averaged spatial and temporal operators of :math:`\Theta = J J^\top`.

    kpflow (``Operator.partial_avg``) applies :math:`\Theta` to vectors that are constant along
    the averaged axes and averages the result over them, i.e.

    .. math::

        \Theta_\mathrm{space}[i,j] = \frac{1}{ST}\sum_{a,b}\Theta[(a,i),(b,j)], \qquad
        \Theta_\mathrm{time}[a,b] = \frac1H\sum_{i,j}\Theta[(a,i),(b,j)],

    with :math:`a, b` running over (sample, time) points. Both are contracted from :math:`J`
    (never forming :math:`\Theta`): :math:`\Theta_\mathrm{space} = J_\Sigma J_\Sigma^\top/(ST)` with
    :math:`J_\Sigma[i] = \sum_a J_{(a,i)}`, and likewise over units for :math:`\Theta_\mathrm{time}`
    (shape :math:`ST\times ST`).
    """
    j3 = jac.reshape(n_samples * seq_len, hidden, -1)
    js = j3.sum(0)   # (H, P)
    jt = j3.sum(1)   # (S*T, P)
    return (js @ js.T / (n_samples * seq_len)).numpy(), (jt @ jt.T / hidden).numpy()


def spectra(jac: torch.Tensor, n_samples: int, seq_len: int, hidden: int) -> dict[str, Any]:
    r"""Spectrum of :math:`\Theta_h = J J^\top` at initialisation and its effective dimensions.

    The eigenvalues come from the smaller Gram (:math:`J J^\top` or :math:`J^\top J`, same nonzero
    eigenvalues). For the full operator (dimension :math:`N = S\,T\,H`) and for kpflow's
    partial-averaged spatial (:math:`H`) and temporal (:math:`ST`) operators
    (:func:`partial_averages`) it returns the participation ratio
    :math:`\mathrm{PR} = (\sum_k\lambda_k)^2/\sum_k\lambda_k^2` (kpflow's effective dimension,
    :func:`ntkrepro.stats.participation_ratio`) and the entropy effective rank
    (:func:`ntkrepro.stats.effective_rank`).
    """
    gram = jac @ jac.T if jac.shape[0] <= jac.shape[1] else jac.T @ jac  # torch: respects set_num_threads
    lam = np.clip(torch.linalg.eigvalsh(gram).numpy(), 0, None)[::-1]
    del gram
    space_k, time_k = partial_averages(jac, n_samples, seq_len, hidden)
    lam_s = np.clip(torch.linalg.eigvalsh(torch.from_numpy(space_k)).numpy(), 0, None)[::-1]
    lam_t = np.clip(torch.linalg.eigvalsh(torch.from_numpy(time_k)).numpy(), 0, None)[::-1]
    return {"pr_full": participation_ratio(lam), "er_full": effective_rank(lam),
            "pr_space": participation_ratio(lam_s), "er_space": effective_rank(lam_s),
            "pr_time": participation_ratio(lam_t), "er_time": effective_rank(lam_t),
            "dim_full": int(jac.shape[0]), "dim_space": hidden, "dim_time": n_samples * seq_len,
            "eig_full": lam[: min(200, lam.size)].tolist(), "eig_space": lam_s.tolist(), "eig_time": lam_t.tolist()}


def train_gd(model: str, p: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor, steps: int,
             lr: float) -> list[float]:
    """Full-batch gradient descent on the MSE of the readout; returns the loss before each step and at the end."""
    q = {k: v.clone().requires_grad_(True) for k, v in p.items()}
    losses = []
    for _ in range(steps + 1):
        h = hidden_states(model, q, x)
        out = h @ q["C"].T + q["c"]
        loss = ((out - y) ** 2).mean()
        losses.append(float(loss.detach()))
        if len(losses) > steps:
            break
        grads = torch.autograd.grad(loss, list(q.values()))
        with torch.no_grad():
            for v, g in zip(q.values(), grads):
                v -= lr * g
        if not np.isfinite(losses[-1]):
            break
    return losses


def run_g3(params: dict[str, Any], ctx) -> dict[str, Any]:
    r"""G3: GeNTK effective dimensions at initialisation and GD loss ratios over an initial-scale sweep.

    For every replicate ``r < n_seeds`` (its own flip-flop kernel and training sequences and its own
    initial weight draw, shared by all scales so that the scales are paired), every model and every
    initial scale :math:`g` in ``init_scales`` (recurrent weights :math:`\mathcal N(0, g^2/H)`):
    the spectrum of :math:`\Theta_h` at initialisation (:func:`spectra`) and a full-batch GD run of
    ``steps`` steps; ``loss_ratio`` = final / initial loss, final = mean of the last 10% of the
    recorded losses. A run *diverged* if a loss is non-finite or exceeds 10x the initial loss.
    The spectra are computed in float32. The RNN operator form :math:`D\mathcal P\mathcal K\mathcal P^* D`
    is checked against autodiff in float64 on the first ``OP_CHECK_STEPS`` steps of the first kernel
    sequence of replicate 0 at every scale.
    """
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # tiny sequential ops: threads only add overhead
    scales = [float(g) for g in params["init_scales"]]
    runs = []
    op_check = []
    configs = [(r, m, g) for r in range(params["n_seeds"]) for m in params["models"] for g in scales]
    data: dict[int, tuple[torch.Tensor, ...]] = {}
    for rep, model, scale in ctx.progress(configs, desc="G3 (seed, model, scale)"):
        if rep not in data:
            rng = np.random.default_rng([params["seed"], rep])
            xk, _ = flip_flop(params["kernel_samples"], params["seq_len"], params["n_bits"], params["p_pulse"], rng)
            xtr, ytr = flip_flop(params["train_samples"], params["seq_len"], params["n_bits"], params["p_pulse"], rng)
            data[rep] = tuple(map(torch.from_numpy, (xk, xtr, ytr)))
        xk, xtr, ytr = data[rep]
        p = init_params(model, params["n_bits"], params["hidden"], params["n_bits"], scale,
                        params["seed"] * 100_003 + rep)
        # spectra in float32 (an effective dimension, not an exactness claim; ~10x faster Jacobian)
        jac = gentk_autodiff(model, {k: v.float() for k, v in p.items()}, xk.float())
        spec = spectra(jac, params["kernel_samples"], params["seq_len"], params["hidden"])
        del jac
        if model == "rnn" and rep == 0:  # operator form D P K P* D vs autodiff, float64, first sequence
            x1 = xk[:1, :OP_CHECK_STEPS]
            ops = rnn_gentk_operators(p, x1)
            j1 = gentk_autodiff(model, p, x1)
            ref = j1 @ j1.T
            op_check.append(float(torch.linalg.norm(ops["theta_h"] - ref) / torch.linalg.norm(ref)))
        losses = train_gd(model, p, xtr, ytr, params["steps"], params["lr"])
        final = float(np.mean(losses[-max(1, len(losses) // 10):]))
        diverged = bool(not np.all(np.isfinite(losses)) or max(losses) > 10 * losses[0])
        runs.append({"model": model, "scale": scale, "seed": rep, **spec, "loss": losses,
                     "loss_initial": losses[0], "loss_final": final,
                     "loss_ratio": final / losses[0] if np.isfinite(final) else float("inf"),
                     "diverged": diverged})
    return {"runs": runs, "hidden": params["hidden"], "seq_len": params["seq_len"],
            "kernel_samples": params["kernel_samples"], "init_scales": scales, "models": list(params["models"]),
            "n_seeds": params["n_seeds"], "steps": params["steps"], "lr": params["lr"],
            "rnn_operator_vs_autodiff_max_rel_error": max(op_check) if op_check else None}
