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
# # F6 (seed 000, Sec. 4.4-4.5): NTK movement during training vs width; effective rank vs test loss
# Plotting only: numbers from `results/framework/F6_training.json` (`ntkrepro.framework.training.run_f6`).

# %% tags=["parameters"]
results = ["results/framework/F6_training.json"]
png = "results/figures/framework_F6_training.png"
pdf = "results/figures/framework_F6_training.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.framework.claims import evaluate_f6
from ntkrepro.io import read_json
from ntkrepro.plotting import save_figure, set_theme

set_theme()
res = read_json(results[0])
ev = evaluate_f6({"F6_training": res}, scale)
w = np.array(res["widths"], float)
ch = np.array(res["ntk_rel_change"], float)
slope = ev.measured["ntk_change_slope_vs_width"]
rho = ev.measured["spearman_effrank_vs_test_loss"]

# %%
fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
ax = axes[0]
for j in range(ch.shape[1]):
    ax.scatter(w, ch[:, j], s=10, color="C0", alpha=0.5)
med = np.median(ch, 1)
ax.plot(w, med, "o-", color="C0", label="median over seeds")
ax.plot(w, med[0] * (w / w[0]) ** slope.value, "k--", lw=1,
        label=f"fit: slope {slope.value:.2f} [{slope.low:.2f}, {slope.high:.2f}]")
ax.set(xscale="log", yscale="log", xlabel="width W", ylabel="||Theta_T - Theta_0|| / ||Theta_0||",
       title="NTK change over training")
ax.legend(fontsize=7)
ax = axes[1]
for i, c in enumerate(res["loss_curves_seed0"]):
    ax.plot(np.linspace(0, res["params"]["steps"], len(c)), c, label=f"W = {int(w[i])}")
ax.set(yscale="log", xlabel="step", ylabel="training MSE", title="training curves (seed 0)")
ax.legend(fontsize=7)
ax = axes[2]
for i in range(len(w)):
    ax.scatter(res["eff_rank_init"][i], res["test_loss"][i], s=14, label=f"W = {int(w[i])}")
ax.set(xlabel="effective rank of Theta_0 (probe set)", ylabel="test MSE",
       title=f"Spearman {rho.value:.2f} [{rho.low:.2f}, {rho.high:.2f}]")
ax.legend(fontsize=7)
fig.suptitle(f"F6: kernel regime vs width -- verdict: {ev.verdict.value}")
fig.tight_layout(rect=(0, 0.05, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev.substitutes)
