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
# # A3 (Arda et al. 2026): optimisation error vs sequence length T
# Plotting only: numbers from `results/arda2026/A3_sequence_length.json` (rule `arda2026_sweep_aggregate`, claim A3).

# %% tags=["parameters"]
results = ["results/arda2026/A3_sequence_length.json"]
evaluation = "results/claims/evaluations/A3.json"
png = "results/figures/arda2026_A3_sequence_length.png"
pdf = "results/figures/arda2026_A3_sequence_length.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter

from ntkrepro.plotting import load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)

# %%
head = res["headline_kind"]
fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
for kind, r in res["kinds"].items():
    mk = "o" if kind == head else "s"
    lab = "authors' teacher" if kind == "authors" else "paper's teacher"
    for ax, key in zip(axes, ("min_train_loss", "loss_over_initial")):
        s = r["metrics"][key]
        x = np.array(s["x"], float)
        if kind == head:
            ax.fill_between(x, np.maximum(s["ci_low"], 1e-12), s["ci_high"], alpha=0.25)
            tm = np.array(s["teacher_means"])
            for j in range(tm.shape[1]):
                ax.plot(x, tm[:, j], ".", color="0.5", ms=4, label="teacher draws (mean over seeds)" if j == 0 else None)
        sl = s["slope"]
        ax.plot(x, s["mean"], mk + "-", mfc="none" if kind != head else None,
                label=("" if key == "min_train_loss" else "loss / initial loss, ") + f"{lab}: mean, slope {sl['value']:.2f} [{sl['ci_low']:.2f}, {sl['ci_high']:.2f}]"
                      + ("" if kind == head else " (not judged)"))
    if kind == head:
        s = r["metrics"]["initial_loss"]
        x0 = np.array(s["x"], float)
        axes[0].plot(x0, s["mean"], "--", color="0.3", label="initial loss (mean $y^2$)")
        axes[0].plot(x0, 0.5 * np.array(s["mean"]), ":", color="0.3",
                     label="initial loss / 2 (part 2: training must reach below it at every T)")
        nl = r["metrics"]["normalised_loss"]
        sl = nl["slope"]
        axes[1].plot(np.array(nl["x"], float), nl["mean"], "d--", color="C2", mfc="none",
                     label=f"loss / label variance, slope {sl['value']:.2f} [{sl['ci_low']:.2f}, {sl['ci_high']:.2f}]")
        axes[1].axhline(0.5, color="0.3", ls=":", lw=0.8, label="1/2 (part 2's bound, judged per T on the left)")
# the IndRNN: the paper's contrast, reported beside the verdict (stored with the results as 'indrnn')
rnn = ((res.get("controls") or {}).get("indrnn") or {}).get("kinds", {}).get(head)
if rnn is not None:
    for ax, key in zip(axes, ("min_train_loss", "loss_over_initial")):
        q = rnn["metrics"][key]
        sl = q["slope"]
        ax.plot(np.array(q["x"], float), q["mean"], "^:", color="C3",
                label=f"IndRNN contrast: mean, slope {sl['value']:.2f} [{sl['ci_low']:.2f}, {sl['ci_high']:.2f}] "
                      "(not judged)")
axes[0].set(xscale="log", yscale="log", xlabel="sequence length T", ylabel="min training loss (absolute)",
            title="judged: (1) absolute loss vs T (slope upper bound <= +0.1);\n(2) loss <= initial loss / 2 at every T")
axes[1].set(xscale="log", yscale="log", xlabel="sequence length T", ylabel="loss / initial loss, loss / label variance",
            title="reported, not judged: loss relative to the\ninitial loss and to the label variance (not bounded by the theorem)")
for ax, keys in zip(axes, (("min_train_loss", "initial_loss"), ("loss_over_initial", "normalised_loss"))):
    ys = [np.ravel(r["metrics"][k]["values"]) for r in res["kinds"].values() for k in keys]
    if rnn is not None:
        ys += [np.ravel(rnn["metrics"][keys[0]]["mean"])]
    v = np.concatenate(ys).astype(float)
    v = v[np.isfinite(v) & (v > 0)]
    ax.set_ylim(0.5 * v.min(), 2.0 * v.max())  # a t-band over few draws can reach below 0
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.legend(fontsize=7)
r = res["kinds"][head]
fig.suptitle(f"m={res['m']}, n={res['n']}, {res['steps']} steps; {len(r['teachers'])} teacher draws x "
             f"{len(r['seeds'])} seeds per T (hierarchical bootstrap)")
fig.tight_layout(rect=(0, 0.03, 1, 0.95))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"],
            substitutes=ev["substitutes"], verdict=ev["verdict"])
