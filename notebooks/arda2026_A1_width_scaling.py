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
# # A1 (Arda et al. 2026, Fig. 1): three metrics decay like m^-1/2
# Plotting only: numbers from `results/arda2026/A1_width_scaling.json` (rule `arda2026_sweep_aggregate`, claim A1).
# Same axes as Fig. 1: absolute values, log-log, median (markers), mean +-95% CI over seeds (band),
# power law fitted to the medians (dashed). One row per teacher: the authors' (diagonal logits, the
# verdict's) and, where it ran, the paper's (full W_k) on the same seeds.

# %% tags=["parameters"]
results = ["results/arda2026/A1_width_scaling.json"]
evaluation = "results/claims/evaluations/A1.json"
png = "results/figures/arda2026_A1_width_scaling.png"
pdf = "results/figures/arda2026_A1_width_scaling.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
head = res["headline_kind"]
kinds = [head] + [k for k in res["kinds"] if k != head]
names = {"authors": "authors' teacher (diagonal logits)", "paper": "paper's teacher (full $W_k$)"}

# %%
titles = {"min_train_loss": "min training loss", "approx_error": "approximation error",
          "lin_error": "linearisation error"}
fig, axes = plt.subplots(len(kinds), 3, figsize=(13, 3.7 * len(kinds)), squeeze=False)
for row, kind in zip(axes, kinds):
    r = res["kinds"][kind]
    for ax, (key, title) in zip(row, titles.items()):
        s = r["metrics"][key]
        x = np.array(s["x"])
        med = np.array(s["median"])
        ax.fill_between(x, np.maximum(s["ci_low"], 1e-12), s["ci_high"], alpha=0.25, label="mean ±95% CI")
        ax.plot(x, s["mean"], "-", lw=1)
        ax.plot(x, med, "o", label="median")
        fm, ic = s["slope_medians"], s["intercept_medians"]
        ax.plot(x, np.exp(ic["value"]) * x ** fm["value"], "k--", lw=1, label=f"fit to medians: slope {fm['value']:.2f}")
        sl = s["slope"]
        ax.plot([], [], " ", label=f"per-seed slope {sl['value']:.2f} [{sl['ci_low']:.2f}, {sl['ci_high']:.2f}]")
        ax.plot(x, med[0] * (x / x[0]) ** -0.5, ":", color="0.5", label="m^-1/2 reference")
        extra = " (same as above: no labels)" if key == "lin_error" and kind != head else ""
        v = np.array(s["values"], float)
        ax.set(xscale="log", yscale="log", xlabel="width m", title=f"{title}{extra}",
               ylim=(0.5 * v[v > 0].min(), 2.0 * v.max()))  # a t-band over few seeds can reach below 0
        ax.legend(fontsize=7)
    row[0].set_ylabel(f"{names[kind]}\nmean $y^2$ = {r['mean_y2']:.2g}")
prm = res["params"]
fig.suptitle(f"Width scaling, {len(res['seeds'])} seeds = teacher draws (n={prm['n']}, d={prm['d']}, T={prm['T']}, "
             f"{prm['steps']} projected-GD steps, step 1.75/sqrt(steps), rho={prm['rho']})")
fig.tight_layout(rect=(0, 0.03, 1, 0.97))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"],
            substitutes=ev["substitutes"], verdict=ev["verdict"])
