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
# # F4 (seed 000, Sec. 4.3, 4.5.2): attention patterns of trained blocks vs NTK eigenvectors, per sequence
# Plotting only: numbers from `results/framework/F4_attention.json` (`ntkrepro.framework.training.run_f4`).

# %% tags=["parameters"]
results = ["results/framework/F4_attention.json"]
evaluation = "results/claims/evaluations/F4.json"
png = "results/figures/framework_F4_attention.png"
pdf = "results/figures/framework_F4_attention.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import interval_text, load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
w = np.array(res["widths"], float)
corr = np.array(res["corr"], float)            # (widths, seeds, test sequences)
corr0 = np.array(res["corr_init"], float)
slope = ev["measured"]["corr_slope_per_doubling"]           # what the criterion judges (v4)
slope0 = ev["measured"]["corr_at_init_slope_per_doubling"]   # the untrained control, same criterion
gain = ev["measured"]["training_gain_slope_per_doubling"]    # reported, not judged

# %%
fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
ax = axes[0]
per_seed = corr.mean(2)
for j in range(per_seed.shape[1]):
    ax.scatter(w, per_seed[:, j], s=8, color="C0", alpha=0.35)
mean = corr.mean((1, 2))
ax.plot(w, mean, "o-", color="C0", label="trained (mean over seeds, sequences)")
ax.plot(w, mean[0] + slope["value"] * np.log2(w / w[0]), "k--", lw=1,
        label=f"fit: {interval_text(slope, 3)} per doubling")
ax.plot(w, corr0.mean((1, 2)), "s:", color="C1",
        label=f"control: untrained (same networks), {interval_text(slope0, 3)} per doubling")
ax.plot([], [], " ", label=f"reported, not judged: training gain {interval_text(gain, 3)} per doubling")
ax.plot(w, np.mean(res["corr_teacher"], (1, 2)), "^:", color="C2", label="trained vs teacher pattern")
ax.set(xscale="log", xlabel="width W", ylabel="off-diagonal Pearson r", title="judged: slope of trained r vs log2 W (> 0)")
ax.legend(fontsize=6, loc="center right")
for ax, (m, title) in zip(axes[1:], [(res["ntk_reference_seed0_mean"], f"NTK rank-{res['params']['topk']} reconstruction"),
                                    (res["attention_seed0_mean"][0], f"trained attention, W = {int(w[0])}"),
                                    (res["attention_seed0_mean"][-1], f"trained attention, W = {int(w[-1])}")]):
    im = ax.imshow(np.array(m), cmap="viridis")
    ax.set(title=title + "\n(seed 0, mean over test sequences)", xlabel="key position t", ylabel="query position s")
    fig.colorbar(im, ax=ax, fraction=0.046)
fig.suptitle("F4: attention patterns vs NTK eigenvectors -- judged: the trained networks' correlation rises with "
             "width (one-sided slope); the untrained networks are the control")
fig.tight_layout(rect=(0, 0.05, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev["substitutes"],
            verdict=ev["verdict"])
