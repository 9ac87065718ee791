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
# # F2 (seed 000, Sec. 4.4-4.5.1): kernel regime vs width -- trained network vs its linearised model
# Plotting only: numbers from `results/framework/F2_kernel_regime.json` (`ntkrepro.framework.kernel_regime.run_f2`).

# %% tags=["parameters"]
results = ["results/framework/F2_kernel_regime.json"]
evaluation = "results/claims/evaluations/F2.json"
png = "results/figures/framework_F2_deviation.png"
pdf = "results/figures/framework_F2_deviation.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import interval_text, load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
F2_MARGIN = ev["figure_data"]["margin"]
w = np.array(res["widths"], float)
prim = res["primary_activation"]
d = res["by_activation"][prim]
M = ev["measured"]


def seeds_and_mean(ax, vals, color, label, center=np.mean):
    vals = np.array(vals, float)
    for j in range(vals.shape[1]):
        ax.scatter(w, vals[:, j], s=8, color=color, alpha=0.35)
    c = center(vals, 1)
    ax.plot(w, c, "o-", color=color, label=label)
    return c


# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
ax = axes[0]
g = seeds_and_mean(ax, d["gap"], "C0", f"gap, train+test ({prim}; seed mean)")
s = M["gap_slope_vs_width"]
ax.plot(w, g[0] * (w / w[0]) ** s["value"], "k--", lw=1, label=f"fit: slope {interval_text(s)}")
ax.fill_between(w, g[0] * (w / w[0]) ** F2_MARGIN[0], g[0] * (w / w[0]) ** F2_MARGIN[1], color="C3", alpha=0.12,
                label=f"margin: slope in [{F2_MARGIN[0]}, {F2_MARGIN[1]}]")
ax.plot(w, np.mean(d["gap_test"], 1), "^:", color="C0", ms=4, label="test inputs only")
for act in res["activations"]:
    if act != prim:
        ax.plot(w, np.mean(res["by_activation"][act]["gap"], 1), "s-", color="C4", ms=4, label=f"{act} variant")
ax.set(xscale="log", yscale="log", xlabel="width W", ylabel="||f_T - f_T^lin|| / ||f_T^lin - f_0||",
       title="trained network vs linearised model")
ax.legend(fontsize=7)
ax = axes[1]
seeds_and_mean(ax, d["init_dev_sq"], "C1", f"E ||Th_0 - Th_inf||^2/||Th_inf||^2 (slope {M['init_dev_sq_mean_slope']['value']:.2f})")
seeds_and_mean(ax, d["ntk_rel_change"], "C2", f"||Th_T - Th_0||/||Th_0|| (slope {M['ntk_movement_slope']['value']:.2f})")
ax.plot(w, np.mean(d["init_dev_sq"], 1)[0] * w[0] / w, ":", color="0.4", label="W^-1")
ax.set(xscale="log", yscale="log", xlabel="width W", title="secondary: initial NTK deviation, NTK movement")
ax.legend(fontsize=7)
ax = axes[2]
m = seeds_and_mean(ax, d["init_dev"], "C5", "one draw (median over seeds)", center=np.median)
sd = M["single_draw_init_dev_slope"]
ax.plot(w, m[0] * (w / w[0]) ** -0.5, ":", color="0.4", label="W^-1/2 (fluctuation)")
ax.set(xscale="log", yscale="log", xlabel="width W", ylabel="||Th_0 - Th_inf|| / ||Th_inf||",
       title=f"context: single-draw deviation, slope {interval_text(sd)}")
ax.legend(fontsize=7)
rows = [[str(int(a)), f"{b:.4f}"] for a, b in zip(w, g)]
tab = axes[0].table(cellText=rows, colLabels=["W", "mean gap"], loc="lower left",
                    bbox=[0.02, 0.02, 0.3, 0.055 * (len(rows) + 1)])
tab.set_fontsize(7)
fig.suptitle("F2: O(1/W) kernel regime")
fig.tight_layout(rect=(0, 0.05, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev["substitutes"],
            verdict=ev["verdict"])
