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
# # H5 (Hron et al. 2020, Fig. 3): finite attention networks, attention function x LayerNorm
# Plotting only: numbers from `results/hron2020/H5_finite_attention.json`, computed by rule
# `H5_hron2020_finite_attention` (`ntkrepro.hron2020.finite_nets.run_h5`).

# %% tags=["parameters"]
results = ["results/hron2020/H5_finite_attention.json"]
evaluation = "results/claims/evaluations/H5.json"
png = "results/figures/hron2020_H5_finite_attention.png"
pdf = "results/figures/hron2020_H5_finite_attention.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
mechs, lns = res["mechanisms"], res["layer_norms"]

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1.4, 1]})
ax = axes[0]
width = 0.8 / len(lns)
for j, ln in enumerate(lns):
    for i, m in enumerate(mechs):
        acc = [r["val_accuracy"] for r in res["runs"] if r["mechanism"] == m and r["layer_norm"] == ln]
        x = i + (j - (len(lns) - 1) / 2) * width
        ax.bar(x, np.mean(acc), width * 0.9, color=f"C{j}", alpha=0.75, label=f"LN: {ln}" if i == 0 else None)
        ax.scatter(np.full(len(acc), x), acc, color="k", s=10, zorder=3)
ax.set_xticks(range(len(mechs)), mechs)
lo = min(r["val_accuracy"] for r in res["runs"])
ax.set_ylim(max(0.0, lo - 0.05), None)
ax.set(ylabel="validation accuracy", title=f"{len(res['seeds'])} seeds, {res['epochs']} Adam epochs")
ax.legend(fontsize=7)

ax = axes[1]
for j, ln in enumerate(lns):
    for i, m in enumerate(mechs):
        curves = np.array([r["train_loss"] for r in res["runs"] if r["mechanism"] == m and r["layer_norm"] == ln])
        ax.plot(np.arange(1, curves.shape[1] + 1), curves.mean(0), color=f"C{j}", ls=["-", "--", ":"][i % 3],
                label=f"{m}, LN {ln}")
ax.set(xlabel="epoch", ylabel="training loss (seed mean)", title="training curves")
ax.legend(fontsize=6, ncol=2)
fig.tight_layout()
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"],
            substitutes=ev["substitutes"], verdict=ev["verdict"])
