# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: ntkrepro (.venv)
#     language: python
#     name: ntkrepro
# ---

# %% [markdown]
# # G3 (Hazelden et al. 2026): RNN / GRU GeNTK effective dimension at initialisation vs learning, over an initial-scale sweep
# Plotting only: numbers from `results/hazelden2026/G3_rnn_spectra.json`, computed by rule
# `G3_hazelden2026_rnn_spectra` (`ntkrepro.hazelden2026.rnn.run_g3`); verdict, intervals and the low-rank
# threshold from the claim's evaluation (`ntkrepro.hazelden2026.claims.evaluate_g3`, applied once by rule
# `claim_evaluation`).

# %% tags=["parameters"]
results = ["results/hazelden2026/G3_rnn_spectra.json"]
evaluation = "results/claims/evaluations/G3.json"
png = "results/figures/hazelden2026_G3_rnn_spectra.png"
pdf = "results/figures/hazelden2026_G3_rnn_spectra.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import interval_text, load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
LOW_RANK_RATIO, REF_SCALE = ev["figure_data"]["low_rank_ratio"], ev["figure_data"]["ref_scale"]
runs = res["runs"]
models = sorted({u["model"] for u in runs})
scales = sorted({u["scale"] for u in runs})
seed0 = min(u["seed"] for u in runs)
cmap = plt.get_cmap("viridis")


def color(g):
    return cmap(scales.index(g) / max(1, len(scales) - 1))


def by_scale(m, key):
    """(scales, mean, min, max) of ``key`` over the seeds of model ``m``."""
    v = np.array([[u[key] for u in runs if u["model"] == m and u["scale"] == g] for g in scales], float)
    return v.mean(1), v.min(1), v.max(1)


# %%
fig = plt.figure(figsize=(13, 3.2 * len(models) + 3.4))
gs = fig.add_gridspec(len(models) + 1, 3)
for row, m in enumerate(models):
    ax = fig.add_subplot(gs[row, 0])
    for u in runs:
        if u["model"] == m and u["seed"] == seed0:
            lam = np.array(u["eig_full"])
            ax.plot(np.arange(1, lam.size + 1), lam / lam[0], color=color(u["scale"]), label=f"g={u['scale']:.3g}")
    ax.set(xscale="log", yscale="log", ylim=(1e-8, 2), xlabel="eigenvalue index", ylabel="lambda_k / lambda_1",
           title=f"{m.upper()}: GeNTK spectrum at init")
    ax.legend(fontsize=6)
    ax = fig.add_subplot(gs[row, 1])
    for key, dim, mk, lab in (("pr_full", "dim_full", "o-", "full GeNTK PR / N"),
                              ("pr_space", "dim_space", "s--", "spatial (partial avg.) PR / H"),
                              ("pr_time", "dim_time", "^--", "temporal (partial avg.) PR / (S T)")):
        frac = np.array([[u[key] / u[dim] for u in runs if u["model"] == m and u["scale"] == g] for g in scales])
        ax.errorbar(scales, frac.mean(1), yerr=[frac.mean(1) - frac.min(1), frac.max(1) - frac.mean(1)], fmt=mk,
                    capsize=2, label=lab)
    ref = [u["pr_full"] / u["dim_full"] for u in runs if u["model"] == m and u["scale"] == REF_SCALE]
    if ref:
        ax.axhline(LOW_RANK_RATIO * float(np.exp(np.mean(np.log(ref)))), color="k", ls=":", lw=1,
                   label=f"low rank: {LOW_RANK_RATIO:g} x PR at g={REF_SCALE:g} (full)")
    ax.set(xscale="log", yscale="log", xlabel="initial scale g", ylabel="participation ratio / dimension",
           title=f"{m.upper()}: effective dimension at init")
    ax.legend(fontsize=6)
    ax = fig.add_subplot(gs[row, 2])
    for u in runs:
        if u["model"] == m and u["seed"] == seed0:
            loss = np.array(u["loss"])
            ax.plot(loss / loss[0], color=color(u["scale"]), ls="--" if u["diverged"] else "-",
                    label=f"g={u['scale']:.3g}" + (" (diverged)" if u["diverged"] else ""))
    ax.set(yscale="log", xlabel="GD step", ylabel="loss / initial loss", title=f"{m.upper()}: training (seed {seed0})")
    ax.legend(fontsize=6)
ax = fig.add_subplot(gs[len(models), :2])
markers = {"rnn": "o", "gru": "s"}
learned = [not u["diverged"] and np.isfinite(u["loss_ratio"]) for u in runs]
ok_ratios = [u["loss_ratio"] for u, ok in zip(runs, learned) if ok]
top = 1.5 * max(ok_ratios) if ok_ratios else 1.0
for u, ok in zip(runs, learned):
    y = u["loss_ratio"] if ok else top  # runs that diverged or did not learn: the worst learners, top edge, red
    ax.scatter(u["pr_full"] / u["dim_full"], y, color=color(u["scale"]), marker=markers.get(u["model"], "x"),
               edgecolors="none" if ok else "r", linewidths=1.5, s=30)
ax.set_ylim(top=top * 1.3)
for m in models:
    ax.scatter([], [], marker=markers.get(m, "x"), color="0.4", label=m.upper())
rho, pooled = (ev["measured"]["sweep_spearman_pr_vs_loss_ratio_within_model"],
               ev["measured"]["sweep_spearman_pr_vs_loss_ratio_pooled"])
ax.set(xscale="log", yscale="log", xlabel="GeNTK participation ratio / N at init", ylabel="final / initial loss",
       title=(f"all runs (colour = g; red edge at the top = diverged, ranked as the worst learners): within-model "
              f"Spearman over distinct runs {interval_text(rho)} (reported, not judged); pooled {interval_text(pooled)}"))
ax.legend(fontsize=7)
ax = fig.add_subplot(gs[len(models), 2])
ax.axis("off")
ax.text(0, 1, "\n".join([f"G3 verdict (the planted comparison, its own figure): {ev['verdict']}",
                         "this sweep: reported, never judged (criterion v8)"]
                        + [f"{k}: {v}" for k, v in ev["measured"].items() if k.startswith("reported_sweep_v6")]
                        + [p["text"][:90] for p in ev["power"]]), va="top", fontsize=7, wrap=True)
fig.suptitle(f"G3 flip-flop, H={res['hidden']}, T={res['seq_len']}, {res['n_seeds']} seeds, "
             f"{len(scales)} initial scales")
fig.tight_layout(rect=(0, 0.04, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev["substitutes"],
            verdict=ev["verdict"])
