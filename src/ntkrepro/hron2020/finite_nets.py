r"""H5 -- finite attention networks: softmax vs ReLU vs identity attention, and LayerNorm placement.

Hron et al. (2020), Sec. 4.1 / Fig. 3: finite networks with :math:`d^{-1/2}` query/key scaling and
positional encodings appended, trained with Adam on CIFAR-10, 3 seeds; replacing softmax by ReLU
or identity and adding LayerNorm improve accuracy, identity attention with LayerNorm after the
output projection being best in many settings.

Network (flax), for an image of :math:`S` pixels with 3 channels:

.. math::

    h = \mathrm{Dense}_d([x, P]), \quad
    a_k = \phi\!\Big(\frac{(h W^Q_k)(h W^K_k)^\top}{\sqrt{d_h}}\Big)\, h W^V_k, \quad
    o = \mathrm{Dense}_d([\mathrm{LN_{head}}(a_1), \dots, \mathrm{LN_{head}}(a_H)]),\quad
    y = \mathrm{Dense}_{10}\big(\tfrac1S \textstyle\sum_p \mathrm{ReLU}(\mathrm{LN_{out}}(o))_p\big)

with learned positional encodings :math:`P \in \mathbb R^{S\times n_\mathrm{pos}}` concatenated to
the pixels, :math:`d_h = d/H`, :math:`\phi \in \{\mathrm{softmax}_\text{rows}, \mathrm{ReLU},
\mathrm{id}\}` (neural-tangents' ``AttentionMechanism`` definitions), and LayerNorm either absent,
per head (``per_head``, over each head's :math:`d_h` channels) or after the output projection
(``output``). Loss: softmax cross-entropy; optimiser: Adam (optax) with a constant step size;
the reported number is the validation accuracy after the last epoch, as in the paper. Every
(seed, mechanism, LayerNorm) run has its own initialisation and data order (:func:`run_seed`);
the criterion is :func:`ntkrepro.hron2020.claims.evaluate_h5`.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ntkrepro.hron2020.cifar10 import load_splits
from ntkrepro.hron2020.regime import permuted_labels
from ntkrepro.io import read_json
from ntkrepro.run import RunContext

# Imports inside functions (issue 40): those left in a function listed in
# ntkrepro.decisive_cells.COMPUTE_CODE stay there, as its source is hashed into the archived decisive cells
# (H5: load_splits, permuted_labels and decisive in h5_cell_runs and run_h5_cell).

log = logging.getLogger("ntkrepro.hron2020")

MECHANISMS = ("softmax", "relu", "identity")
LAYER_NORMS = ("none", "per_head", "output")


def attention_weights(logits, mechanism):
    """:math:`\\phi(G)`: row softmax, ReLU or identity of the scaled logits.

    ``mechanism`` is a name from :data:`MECHANISMS` or its index (a traced integer is allowed, so
    one compiled training step serves every mechanism).
    """
    import jax
    import jax.numpy as jnp

    if isinstance(mechanism, str):
        if mechanism not in MECHANISMS:
            raise ValueError(f"unknown attention mechanism {mechanism!r}; one of {MECHANISMS}")
        mechanism = MECHANISMS.index(mechanism)
    return jnp.where(mechanism == 0, jax.nn.softmax(logits, axis=-1),
                     jnp.where(mechanism == 1, jnp.maximum(logits, 0.0), logits))


def make_model(*, seq_len: int, d_model: int, n_heads: int, n_pos_emb: int, n_classes: int = 10):
    """The flax module of the module docstring; ``apply(params, x, mechanism, layer_norm)`` takes the
    mechanism and LayerNorm placement as (possibly traced) indices into :data:`MECHANISMS` and
    :data:`LAYER_NORMS`. Both LayerNorms always own parameters; an unused one gets zero gradients,
    so Adam leaves it untouched."""
    import flax.linen as nn
    import jax.numpy as jnp

    if d_model % n_heads:
        raise ValueError(f"d_model {d_model} must be a multiple of n_heads {n_heads}")
    d_head = d_model // n_heads

    class AttentionNet(nn.Module):
        @nn.compact
        def __call__(self, x, mechanism, layer_norm):  # x: (B, S, C)
            pos = self.param("pos_emb", nn.initializers.normal(1.0), (seq_len, n_pos_emb))
            x = jnp.concatenate([x, jnp.broadcast_to(pos, x.shape[:1] + pos.shape)], axis=-1)
            h = nn.Dense(d_model, name="embed")(x)
            q = nn.DenseGeneral((n_heads, d_head), name="query")(h)
            k = nn.DenseGeneral((n_heads, d_head), name="key")(h)
            v = nn.DenseGeneral((n_heads, d_head), name="value")(h)
            logits = jnp.einsum("bshd,bthd->bhst", q, k) / jnp.sqrt(d_head)
            a = jnp.einsum("bhst,bthd->bshd", attention_weights(logits, mechanism), v)
            a = jnp.where(layer_norm == 1, nn.LayerNorm(name="ln_head")(a), a)  # over each head's channels
            o = nn.DenseGeneral(d_model, axis=(-2, -1), name="out")(a)
            o = jnp.where(layer_norm == 2, nn.LayerNorm(name="ln_out")(o), o)
            return nn.Dense(n_classes, name="readout")(nn.relu(o).mean(axis=1))

    return AttentionNet()


def make_trainer(model, x_train: np.ndarray, y_train: np.ndarray, x_val: np.ndarray, *, epochs: int,
                 batch_size: int, learning_rate: float, n_curve_val: int | None = None):
    r"""A compiled ``train(seeds, labels, mechanism, layer_norm) -> (val logits, loss curves, val
    predictions by epoch)``.

    Adam on softmax cross-entropy, ``epochs`` passes over shuffled mini-batches (the last partial
    batch dropped); the runs are trained in parallel (``vmap`` over ``seeds`` and the training
    ``labels`` of each run, shape ``(runs, n_train)``: the real labels, or permuted ones for the
    negative control) and the configuration indices are traced, so one compilation serves every
    configuration. The predicted classes of the first ``n_curve_val`` validation images (all by
    default) after every epoch (the learning curve in epochs) are returned too. Deterministic given the seeds on CPU (``y_train`` is not used; kept for the signature).
    """
    import jax
    import jax.numpy as jnp
    import optax

    n = x_train.shape[0]
    nb = n // batch_size
    if nb < 1:
        raise ValueError("batch_size larger than the training set")
    xt, xv = jnp.asarray(x_train), jnp.asarray(x_val)
    xc = xv if n_curve_val is None else xv[: int(n_curve_val)]
    opt = optax.adam(learning_rate)

    def train_seed(seed, yt, mech, ln):
        k_init, k_shuf = jax.random.split(jax.random.PRNGKey(seed))
        params = model.init(k_init, xt[:1], mech, ln)
        state = opt.init(params)

        def loss_fn(p, xb, yb):
            return optax.softmax_cross_entropy_with_integer_labels(model.apply(p, xb, mech, ln), yb).mean()

        def epoch(carry, k):
            perm = jax.random.permutation(k, n)[: nb * batch_size].reshape(nb, batch_size)

            def step(c, idx):
                p, s = c
                loss, g = jax.value_and_grad(loss_fn)(p, xt[idx], yt[idx])
                upd, s = opt.update(g, s, p)
                return (optax.apply_updates(p, upd), s), loss

            carry, losses = jax.lax.scan(step, carry, perm)
            pred = model.apply(carry[0], xc, mech, ln).argmax(-1).astype(jnp.int8)
            return carry, (losses.mean(), pred)

        (params, _), (losses, preds) = jax.lax.scan(epoch, (params, state), jax.random.split(k_shuf, epochs))
        return model.apply(params, xv, mech, ln), losses, preds

    return jax.jit(jax.vmap(train_seed, in_axes=(0, 0, None, None)))


def run_seed(seed: int, mechanism: str, layer_norm: str) -> int:
    """PRNG seed of the run (``seed``, ``mechanism``, ``layer_norm``): every run gets its own
    initialisation and data order, so the paired units of the H5 tests are independent."""
    return 100 * int(seed) + 10 * MECHANISMS.index(mechanism) + LAYER_NORMS.index(layer_norm)


#: Offset of the permuted-label control's run seeds (disjoint from :func:`run_seed` of every real run).
CONTROL_SEED_OFFSET = 100_000


def _run_record(m: str, ln: str, s: int, init_seed: int, logits: np.ndarray, losses: np.ndarray, preds: np.ndarray,
                y_val: np.ndarray) -> dict[str, Any]:
    correct = (logits.argmax(-1) == y_val).astype(np.int8)
    finite = bool(np.all(np.isfinite(losses)) and np.all(np.isfinite(logits)))
    return {"mechanism": m, "layer_norm": ln, "seed": s, "init_seed": init_seed,
            "val_accuracy": float(correct.mean()), "train_loss": losses.tolist(), "finite": finite,
            "val_accuracy_by_epoch": [float(np.mean(p == y_val[: p.shape[0]])) for p in preds],
            "correct": correct.tolist()}


def run_h5(params: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """Compute rule ``H5_hron2020_finite_attention``: every mechanism x LayerNorm x seed, and the
    negative control (issue 21): ``n_control_runs`` (default 1) further runs per configuration trained
    on permuted training labels, in the same compiled batch as the real runs."""
    seeds = [int(s) for s in params["seeds"]]
    n_ctrl = int(params.get("n_control_runs", 1))
    d = load_splits({**params, "seed": seeds[0]}, ctx, need_test=False)
    size = int(params["image_size"])
    x_train = d["x_train"].reshape(d["x_train"].shape[0], size * size, 3)
    x_val = d["x_val"].reshape(d["x_val"].shape[0], size * size, 3)
    y_perm = permuted_labels(d["y_train"], CONTROL_SEED_OFFSET + seeds[0])
    model = make_model(seq_len=size * size, d_model=int(params["d_model"]), n_heads=int(params["n_heads"]),
                       n_pos_emb=int(params["n_pos_emb"]))
    train = make_trainer(model, x_train, d["y_train"], x_val, epochs=int(params["epochs"]),
                         batch_size=int(params["batch_size"]), learning_rate=float(params["learning_rate"]),
                         n_curve_val=params.get("curve_val"))
    labels = np.stack([d["y_train"]] * len(seeds) + [y_perm] * n_ctrl).astype(np.int32)
    runs, ctrl_runs = [], []
    ctrl_seeds = seeds[:n_ctrl]
    combos = [(m, ln) for m in params["mechanisms"] for ln in params["layer_norms"]]
    for m, ln in ctx.progress(combos, desc="H5 configs"):
        init_seeds = ([run_seed(s, m, ln) for s in seeds]
                      + [CONTROL_SEED_OFFSET + run_seed(s, m, ln) for s in ctrl_seeds])
        logits, losses, preds = train(np.asarray(init_seeds, np.uint32), labels, MECHANISMS.index(m),
                                      LAYER_NORMS.index(ln))
        logits, losses, preds = np.asarray(logits), np.asarray(losses, np.float64), np.asarray(preds)
        for i, s in enumerate(seeds + ctrl_seeds):
            rec = _run_record(m, ln, s, init_seeds[i], logits[i], losses[i], preds[i], d["y_val"])
            (runs if i < len(seeds) else ctrl_runs).append(rec)
            log.info("H5 %s%s / LN %s / seed %d: val acc %.3f, final train loss %.3f",
                     "[permuted labels] " if i >= len(seeds) else "", m, ln, s, rec["val_accuracy"], losses[i][-1])
    base = {"claim": "H5", "image_size": size, "n_train": int(x_train.shape[0]), "n_val": int(x_val.shape[0]),
            "epochs": int(params["epochs"]), "mechanisms": list(params["mechanisms"]),
            "layer_norms": list(params["layer_norms"]), "archive": d["archive"].rsplit("/", 1)[-1],
            "archive_sha256": d["archive_sha256"], "n_classes": 10,
            "curve_val": int(min(int(params.get("curve_val") or x_val.shape[0]), x_val.shape[0]))}
    control = {**base, "seeds": ctrl_seeds, "runs": ctrl_runs,
               "control_note": f"training labels permuted; {len(ctrl_seeds)} seed(s) per configuration (the real "
                               f"run has {len(seeds)}), same epochs, data and validation images"}
    return {**base, "seeds": seeds, "runs": runs, "controls": {"permuted_labels": control}}


# --------------------------------------------------------------------------------------------
# The decisive tier (issue 29 item 2; ntkrepro.decisive, config/decisive.yaml H5)

def h5_cell_runs(params: dict[str, Any], seed: int, layer_norm: str, ctx: RunContext | None = None
                 ) -> dict[str, Any]:
    """Every mechanism at one ``seed`` and one ``layer_norm``, trained ``epochs`` as :func:`run_h5` trains
    it: the same data split (drawn with the plan's first seed), the same run seeds (:func:`run_seed`), and,
    when ``seed`` is one of the control seeds (the first ``n_control_runs`` of ``seeds``), its permuted-label
    control run in the same compiled batch, with run_h5's permutation. Returns ``{"base", "runs",
    "control_runs"}`` (the base = run_h5's description of the data and sizes). No checkpoints: one call
    is 3 mechanisms x 1-2 runs (measured ~0.4 CPU-s per run-epoch at the default sizes, so ~6-10 CPU-min
    at 250 epochs); a cut-off call is rerun whole."""
    from ntkrepro.hron2020.cifar10 import load_splits
    from ntkrepro.hron2020.regime import permuted_labels

    seeds = [int(s) for s in params["seeds"]]
    seed = int(seed)
    if seed not in seeds:
        raise ValueError(f"seed {seed} is not one of the plan's seeds {seeds}")
    if layer_norm not in params["layer_norms"]:
        raise ValueError(f"LayerNorm {layer_norm!r} is not one of {params['layer_norms']}")
    n_ctrl = int(params.get("n_control_runs", 1))
    ctrl = seed in seeds[:n_ctrl]
    d = load_splits({**params, "seed": seeds[0]}, ctx, need_test=False)  # run_h5's split: the first seed's
    size = int(params["image_size"])
    x_train = d["x_train"].reshape(d["x_train"].shape[0], size * size, 3)
    x_val = d["x_val"].reshape(d["x_val"].shape[0], size * size, 3)
    model = make_model(seq_len=size * size, d_model=int(params["d_model"]), n_heads=int(params["n_heads"]),
                       n_pos_emb=int(params["n_pos_emb"]))
    train = make_trainer(model, x_train, d["y_train"], x_val, epochs=int(params["epochs"]),
                         batch_size=int(params["batch_size"]), learning_rate=float(params["learning_rate"]),
                         n_curve_val=params.get("curve_val"))
    labels = [d["y_train"]] + ([permuted_labels(d["y_train"], CONTROL_SEED_OFFSET + seeds[0])] if ctrl else [])
    labels = np.stack(labels).astype(np.int32)
    runs, ctrl_runs = [], []
    for m in params["mechanisms"]:
        init = [run_seed(seed, m, layer_norm)] + ([CONTROL_SEED_OFFSET + run_seed(seed, m, layer_norm)] if ctrl else [])
        logits, losses, preds = train(np.asarray(init, np.uint32), labels, MECHANISMS.index(m),
                                      LAYER_NORMS.index(layer_norm))
        logits, losses, preds = np.asarray(logits), np.asarray(losses, np.float64), np.asarray(preds)
        for i in range(len(init)):
            rec = _run_record(m, layer_norm, seed, init[i], logits[i], losses[i], preds[i], d["y_val"])
            (runs if i == 0 else ctrl_runs).append(rec)
            log.info("H5 cell %s%s / LN %s / seed %d: val acc %.3f, final train loss %.3f",
                     "[permuted labels] " if i else "", m, layer_norm, seed, rec["val_accuracy"], losses[i][-1])
    base = {"claim": "H5", "image_size": size, "n_train": int(x_train.shape[0]), "n_val": int(x_val.shape[0]),
            "epochs": int(params["epochs"]), "mechanisms": list(params["mechanisms"]),
            "layer_norms": list(params["layer_norms"]), "archive": d["archive"].rsplit("/", 1)[-1],
            "archive_sha256": d["archive_sha256"], "n_classes": 10,
            "curve_val": int(min(int(params.get("curve_val") or x_val.shape[0]), x_val.shape[0]))}
    return {"base": base, "runs": runs, "control_runs": ctrl_runs}


def run_h5_cell(params: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """H5 decisive-tier cell (config/decisive.yaml H5: ``cell: [seeds, lns]``): one ``seed`` at one LayerNorm
    placement (``ln``, an index into ``layer_norms``), every mechanism (:func:`h5_cell_runs`), with the
    process CPU seconds beside the wall time. Also the unit a GPU call reuses: ``ntkrepro.run.execute(
    "ntkrepro.hron2020.finite_nets:run_h5_cell", decisive.cell_params(spec, cell), <archive cell path>,
    scale="decisive")`` for each ``cell`` of ``decisive.cells(spec)`` writes the same sealed cells."""
    import time

    from ntkrepro import decisive

    seed, ln = int(params["seed"]), int(params["ln"])
    if not 0 <= ln < len(params["layer_norms"]):
        raise ValueError(f"ln {ln} is not an index into layer_norms {params['layer_norms']}")
    t0 = time.process_time()
    out = h5_cell_runs(params, seed, params["layer_norms"][ln], ctx)
    return {"claim": "H5", "cell": {"seed": seed, "ln": ln, "layer_norm": params["layer_norms"][ln]}, **out,
            "cpu_seconds": round(time.process_time() - t0, 2), "compute_code": decisive.compute_code_hash("H5")}


def run_h5n_cell(params: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """Decisive cell of H5's second plan (config/decisive.yaml ``H5.n``: more training images): :func:`run_h5_cell`
    on the plan's section, recorded as plan ``H5.n`` with that plan's compute-code hash (its own archive folder;
    the first plan's cells and hash are untouched). :func:`aggregate_h5` assembles either plan's cells."""
    from ntkrepro import decisive

    return {**run_h5_cell(params, ctx), "plan": "H5.n", "compute_code": decisive.compute_code_hash("H5.n")}


def aggregate_h5(params: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """The cells (``shard_files``) assembled into :func:`run_h5`'s results layout (runs in run_h5's order:
    mechanism, LayerNorm, seed; the permuted-label control from the control seeds' cells), for H5's
    criterion (:func:`ntkrepro.hron2020.claims.evaluate_h5`). Every cell must describe the same data and
    sizes, and every (mechanism, LayerNorm, seed) run must be present exactly once."""
    cells = [read_json(ctx.use_data(p)) for p in params["shard_files"]]
    if not cells:
        raise ValueError("no H5 cells")
    base = cells[0]["base"]
    for c in cells[1:]:
        if c["base"] != base:
            raise ValueError("H5 cells describe different data or sizes: "
                             f"{sorted(k for k in base if c['base'].get(k) != base[k])}")
    order = {(m, ln): (i, j) for i, m in enumerate(base["mechanisms"]) for j, ln in enumerate(base["layer_norms"])}
    key = lambda r: (*order[(r["mechanism"], r["layer_norm"])], int(r["seed"]))  # noqa: E731
    runs = sorted((r for c in cells for r in c["runs"]), key=key)
    ctrl_runs = sorted((r for c in cells for r in c["control_runs"]), key=key)
    seeds = sorted({int(r["seed"]) for r in runs})
    want = sorted((i, j, s) for (i, j) in order.values() for s in seeds)
    if [key(r) for r in runs] != want:
        raise ValueError(f"H5 cells do not hold every (mechanism, LayerNorm) run of seeds {seeds} exactly once")
    out = {**base, "seeds": seeds, "runs": runs}
    ctrl_seeds = sorted({int(r["seed"]) for r in ctrl_runs})
    if ctrl_runs:
        out["controls"] = {"permuted_labels": {
            **base, "seeds": ctrl_seeds, "runs": ctrl_runs,
            "control_note": f"training labels permuted; {len(ctrl_seeds)} seed(s) per configuration (the real "
                            f"run has {len(seeds)}), same epochs, data and validation images"}}
    return out
