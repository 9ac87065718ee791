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
# # F4 (seed 000, Sec. 4.3, 4.5.2): attention patterns of trained blocks vs NTK eigenvectors
# Plotting only: numbers from `results/framework/F6_training.json` (`ntkrepro.framework.training.run_f6`).

# %% tags=["parameters"]
results = ["results/framework/F6_training.json"]
png = "results/figures/framework_F4_attention.png"
pdf = "results/figures/framework_F4_attention.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.framework.claims import evaluate_f4
from ntkrepro.io import read_json
from ntkrepro.plotting import save_figure, set_theme

set_theme()
res = read_json(results[0])
ev = evaluate_f4({"F6_training": res}, scale)
w = np.array(res["widths"], float)
corr = np.array(res["attention_ntk_corr"], float)
slope = ev.measured["corr_slope_per_doubling"]

# %%
fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
ax = axes[0]
for j in range(corr.shape[1]):
    ax.scatter(w, corr[:, j], s=10, color="C0", alpha=0.5)
med = np.median(corr, 1)
ax.plot(w, med, "o-", color="C0", label="median over seeds")
ax.plot(w, med[0] + slope.value * np.log2(w / w[0]), "k--", lw=1,
        label=f"fit: {slope.value:.3f} [{slope.low:.3f}, {slope.high:.3f}] per doubling")
ax.plot(w, np.median(np.array(res["attention_teacher_corr"]), 1), "s:", color="C2", label="corr. with teacher attention")
ax.set(xscale="log", xlabel="width W", ylabel="Pearson r", title="attention vs NTK top-k reconstruction")
ax.legend(fontsize=7)
for ax, (m, title) in zip(axes[1:], [(res["ntk_reference_topk"], f"NTK rank-{res['params']['topk']} reconstruction"),
                                    (res["attention_seed0"][0], f"trained attention, W = {int(w[0])}"),
                                    (res["attention_seed0"][-1], f"trained attention, W = {int(w[-1])}")]):
    im = ax.imshow(np.array(m), cmap="viridis")
    ax.set(title=title, xlabel="key position t", ylabel="query position s")
    fig.colorbar(im, ax=ax, fraction=0.046)
fig.suptitle(f"F4: attention patterns vs NTK eigenvectors -- verdict: {ev.verdict.value}")
fig.tight_layout(rect=(0, 0.05, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev.substitutes)
