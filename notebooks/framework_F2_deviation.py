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
# # F2 (seed 000, Sec. 4.4): finite-width deviation of the transformer NTK vs width
# Plotting only: numbers from `results/framework/F2_deviation.json` (`ntkrepro.framework.deviation.run_f2`).

# %% tags=["parameters"]
results = ["results/framework/F2_deviation.json"]
png = "results/figures/framework_F2_deviation.png"
pdf = "results/figures/framework_F2_deviation.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.framework.claims import F2_AGREE_TOL, evaluate_f2
from ntkrepro.io import read_json
from ntkrepro.plotting import save_figure, set_theme

set_theme()
res = read_json(results[0])
w = np.array(res["widths"], float)
dev = np.array(res["rel_deviation"], float)
ev = evaluate_f2({"F2_deviation": res}, scale)
slope = ev.measured["slope_vs_width"]

# %%
fig, ax = plt.subplots(figsize=(6.5, 4.2))
for j in range(dev.shape[1]):
    ax.scatter(w, dev[:, j], s=10, color="C0", alpha=0.4, label="one initialisation" if j == 0 else None)
med = np.median(dev, 1)
ax.plot(w, med, "o-", color="C0", label="median over seeds")
ax.plot(w, med[0] * (w / w[0]) ** slope.value, "k--", lw=1,
        label=f"fit: slope {slope.value:.2f} [{slope.low:.2f}, {slope.high:.2f}]")
ax.plot(w, med[0] * (w / w[0]) ** -1.0, ":", color="C3", label="claimed O(1/W)")
ax.plot(w, med[0] * (w / w[0]) ** -0.5, ":", color="0.4", label="W^-1/2 (CLT)")
ax.axhline(F2_AGREE_TOL, color="C2", lw=1, ls="--", label="5% agreement level")
ax.set(xscale="log", yscale="log", xlabel="width W", ylabel="||Theta_W - Theta_inf||_F / ||Theta_inf||_F",
       title=f"F2: NTK deviation vs width -- verdict: {ev.verdict.value}")
ax.legend(fontsize=7)
rows = [[str(int(a)), f"{m:.3f}"] for a, m in zip(w, med)]
tab = ax.table(cellText=rows, colLabels=["W", "median dev."], loc="lower left", bbox=[0.02, 0.02, 0.28, 0.06 * (len(rows) + 1)])
tab.set_fontsize(7)
fig.tight_layout(rect=(0, 0.05, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev.substitutes)
