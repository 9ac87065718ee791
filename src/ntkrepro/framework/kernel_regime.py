r"""F2 (and F6 part i): the kernel regime vs width -- trained network against its linearised model.

The paper (Sec. 4.4): "the deviation from infinite-width behavior scales as O(1/W). This suggests
that very wide transformers operate in the kernel regime"; Sec. 4.5.1 compares "NTK predictions with
actual transformer training dynamics". For the block of :func:`block_spec` (softmax attention with
neural-tangents' tied :math:`d^{-1}` logits, LayerNorm, a GELU feed-forward layer -- all smooth; a
ReLU FFN is a labelled variant) at width :math:`W` (``n_heads`` fixed, head size :math:`W/H`) and
seed :math:`r` (initialisation :math:`r` and data draw :math:`r` of the task of
:func:`ntkrepro.framework.training.make_task`), measured per (activation, width, seed):

* **gap** (primary): the network and its linearised model (:math:`f_0 + J_0(\theta-\theta_0)`) are
  trained by the same ``steps`` GD steps from the same initialisation
  (:func:`~ntkrepro.framework.training.kernel_regime_fit`);
  :math:`g = \lVert f_T - f^\mathrm{lin}_T\rVert / \lVert f^\mathrm{lin}_T - f_0\rVert` over the
  training and test inputs together (``gap``), and on each alone (``gap_train``, ``gap_test``).
  Perturbation theory (Dyer & Gur-Ari 2019) gives :math:`g = O(1/W)` for smooth activations.
* **NTK movement**: :math:`\lVert\Theta_T - \Theta_0\rVert_F/\lVert\Theta_0\rVert_F` on the first
  ``n_probe`` training sequences (``ntk_rel_change``), also :math:`O(1/W)`.
* **initial deviation**: :math:`\delta^2 = \lVert\Theta_0 - \Theta_\infty\rVert_F^2/\lVert\Theta_\infty\rVert_F^2`
  on the same probe set, :math:`\Theta_\infty` from neural-tangents (``init_dev_sq``); its *mean over
  draws* is :math:`O(1/W)` (variance :math:`O(1/W)` plus squared bias :math:`O(1/W^2)`), while one draw's
  :math:`\delta` (``init_dev``) fluctuates as :math:`O(W^{-1/2})` -- context, not the claim.
"""

from __future__ import annotations

import numpy as np

from ntkrepro.framework import models, training
from ntkrepro.framework import spectra as sp
from ntkrepro.io import read_json

#: Widths of the paper's Sec. 4.5.1 statement (< 512 deviates, > 2048 agrees): a descriptive table only.
TABLE_WIDTHS = (256, 512, 2048, 4096)


def block_spec(p: dict, width: int, activation: str) -> models.BlockSpec:
    """The F2 block at ``width`` with FFN nonlinearity ``activation`` (config section ``p``)."""
    return models.BlockSpec(width=width, n_heads=p["n_heads"], attention="SOFTMAX", scaling="linear",
                            layernorm=p["layernorm"], ffn_mult=p["ffn_mult"], activation=activation)


def run_f2(params: dict, ctx) -> dict:
    """Trained-vs-linearised gap, NTK movement and initial NTK deviation per activation, width and seed."""
    import jax.numpy as jnp

    p = dict(params)
    widths = [int(w) for w in p["widths"]]
    n_seeds, n_probe = int(p["n_seeds"]), int(p["n_probe"])
    xtr, ytr, xte, yte = training.stacked_tasks(p, n_seeds)
    keys = ("gap", "gap_train", "gap_test", "ntk_rel_change", "init_dev_sq", "init_dev", "train_loss",
            "train_loss_lin", "test_loss", "test_loss_lin")
    by_act: dict = {}
    for act in p["activations"]:
        ref = block_spec(p, widths[0], act)
        theta_inf = [sp.flatten_kernel(np.asarray(models.infinite_ntk(ref, xtr[r, :n_probe]), np.float64))
                     for r in range(n_seeds)]
        rows: dict = {k: [] for k in keys}
        curves = []
        for w in ctx.progress(widths, desc=f"F2 widths ({act})"):
            spec = block_spec(p, w, act)
            model = spec.flax()
            ntk = models.ntk_fn(spec)

            def apply_fn(pr, x):
                return model.apply({"params": pr}, x)

            def one(pr0, x_tr, y_tr, x_te):
                fit = training.kernel_regime_fit(apply_fn, pr0, x_tr, y_tr, x_te, lr=p["lr"], steps=p["steps"])
                pr_t = fit.pop("params_T")
                fit["ntk0"] = ntk(pr0, x_tr[:n_probe])
                fit["ntkT"] = ntk(pr_t, x_tr[:n_probe])
                return fit

            p0 = models.draw_params(spec, xtr.shape[1:], training.init_seeds(p, w, n_seeds))
            res = training.map_over_seeds(
                one, p0, jnp.asarray(xtr), jnp.asarray(ytr), jnp.asarray(xte),
                batch_size=training.seed_batch(spec, xtr.shape[1:], n_seeds,
                                               per_seed_copies=8 + n_probe * p["seq_len"]))
            row: dict = {k: [] for k in keys}
            for r in range(n_seeds):
                f = {k: np.asarray(res[k][r], np.float64) for k in ("f0_train", "f_train", "lin_train", "f0_test",
                                                                      "f_test", "lin_test")}
                cat = {k: np.concatenate([f[f"{k}_train"].ravel(), f[f"{k}_test"].ravel()]) for k in ("f0", "f", "lin")}
                row["gap"].append(training.relative_gap(cat["f"], cat["lin"], cat["f0"]))
                row["gap_train"].append(training.relative_gap(f["f_train"], f["lin_train"], f["f0_train"]))
                row["gap_test"].append(training.relative_gap(f["f_test"], f["lin_test"], f["f0_test"]))
                k0 = sp.flatten_kernel(res["ntk0"][r].astype(np.float64))
                kt = sp.flatten_kernel(res["ntkT"][r].astype(np.float64))
                row["ntk_rel_change"].append(sp.relative_frobenius(kt, k0))
                dev = sp.relative_frobenius(k0, theta_inf[r])
                row["init_dev"].append(dev)
                row["init_dev_sq"].append(dev ** 2)
                row["train_loss"].append(float(np.mean((f["f_train"] - ytr[r]) ** 2)))
                row["train_loss_lin"].append(float(np.mean((f["lin_train"] - ytr[r]) ** 2)))
                row["test_loss"].append(float(np.mean((f["f_test"] - yte[r]) ** 2)))
                row["test_loss_lin"].append(float(np.mean((f["lin_test"] - yte[r]) ** 2)))
            for k in keys:
                rows[k].append(row[k])
            curves.append(np.asarray(res["curve"][0]).tolist())
        table = {str(w): float(np.mean(g)) for w, g in zip(widths, rows["gap"]) if w in TABLE_WIDTHS}
        by_act[act] = {**rows, "loss_curves_seed0": curves, "table_mean_gap": table,
                       "block": block_spec(p, widths[-1], act).as_dict()}
    return {"widths": widths, "activations": list(p["activations"]), "primary_activation": p["activations"][0],
            "by_activation": by_act}


def run_f2_cell(params: dict, ctx) -> dict:
    """F2 decisive-tier cell (config/decisive.yaml F2: ``cell: [widths]``): :func:`run_f2` at one ``width``,
    every seed and activation. A width's seeds and tasks do not depend on the other widths
    (:func:`~ntkrepro.framework.training.init_seeds`), so the cells assembled by :func:`aggregate_f2` equal
    one run over every width (``tests/test_f2_decisive.py``)."""
    import time

    from ntkrepro import decisive

    width = int(params["width"])
    if width not in [int(w) for w in params["widths"]]:
        raise ValueError(f"F2 cell: width {width} is not one of widths {params['widths']}")
    t0 = time.process_time()
    out = run_f2({**params, "widths": [width]}, ctx)
    return {"claim": "F2", "cell": {"width": width}, "results": out,
            "cpu_seconds": round(time.process_time() - t0, 2), "compute_code": decisive.compute_code_hash("F2")}


def aggregate_f2(params: dict, ctx) -> dict:
    """The cells (``shard_files``) assembled into :func:`run_f2`'s layout (widths ascending), for F2's
    criterion (:func:`ntkrepro.framework.claims.evaluate_f2`). Every planned width must be present once,
    with the same activations."""
    cells = sorted((read_json(ctx.use_data(p)) for p in params["shard_files"]), key=lambda c: int(c["cell"]["width"]))
    got = [int(c["cell"]["width"]) for c in cells]
    if got != sorted(int(w) for w in params["widths"]):
        raise ValueError(f"F2 cells of widths {got} do not match the plan's widths {sorted(params['widths'])}")
    acts = cells[0]["results"]["activations"]
    if any(c["results"]["activations"] != acts for c in cells):
        raise ValueError("F2 cells computed different activations")
    by_act: dict = {}
    for act in acts:
        parts = [c["results"]["by_activation"][act] for c in cells]
        merged = {k: [row for p in parts for row in p[k]] for k in parts[0]
                  if isinstance(parts[0][k], list) and k != "loss_curves_seed0"}
        merged["loss_curves_seed0"] = [cur for p in parts for cur in p["loss_curves_seed0"]]
        merged["table_mean_gap"] = {k: v for p in parts for k, v in p["table_mean_gap"].items()}
        merged["block"] = parts[-1]["block"]
        by_act[act] = merged
    return {"widths": got, "activations": acts, "primary_activation": cells[0]["results"]["primary_activation"],
            "by_activation": by_act}
