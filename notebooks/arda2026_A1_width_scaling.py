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
# Plotting only: numbers from `results/arda2026/A1_width_scaling.json` (rule `A1_arda2026_width_scaling`).

# %% tags=["parameters"]
results = ["results/arda2026/A1_width_scaling.json"]
png = "results/figures/arda2026_A1_width_scaling.png"
pdf = "results/figures/arda2026_A1_width_scaling.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.arda2026.claims import substitutes_for
from ntkrepro.io import read_json
from ntkrepro.plotting import save_figure, set_theme

set_theme()
res = read_json(results[0])

# %%
titles = {"train_loss": "training loss", "approx_error": "approximation error", "lin_error": "linearisation error"}
fig, axes = plt.subplots(1, 3, figsize=(13, 3.9))
for ax, (key, title) in zip(axes, titles.items()):
    s = res["metrics"][key]
    x = np.array(s["x"])
    med = np.array(s["median"])
    ax.fill_between(x, np.maximum(s["ci_low"], 1e-12), s["ci_high"], alpha=0.25, label="mean ±95% CI")
    ax.plot(x, s["mean"], "-", lw=1)
    ax.plot(x, med, "o", label="median")
    sl = s["slope"]
    c = np.exp(np.mean(np.log(med)) - sl["value"] * np.mean(np.log(x)))
    ax.plot(x, c * x ** sl["value"], "k--", lw=1,
            label=f"fit: slope {sl['value']:.2f} [{sl['ci_low']:.2f}, {sl['ci_high']:.2f}]")
    ax.plot(x, med[0] * (x / x[0]) ** -0.5, ":", color="0.5", label="m^-1/2 reference")
    ax.set(xscale="log", yscale="log", xlabel="width m", title=title)
    ax.legend(fontsize=7)
fig.suptitle(f"Width scaling, {len(res['seeds'])} seeds (n={res['params']['n']}, T={res['params']['T']}, "
             f"{res['params']['steps']} projected-GD steps)")
fig.tight_layout(rect=(0, 0.03, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"],
            substitutes=substitutes_for("A1", res["params"], scale))
