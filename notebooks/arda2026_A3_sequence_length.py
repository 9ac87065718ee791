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
# Plotting only: numbers from `results/arda2026/A3_sequence_length.json` (rule `A3_arda2026_sequence_length`).

# %% tags=["parameters"]
results = ["results/arda2026/A3_sequence_length.json"]
png = "results/figures/arda2026_A3_sequence_length.png"
pdf = "results/figures/arda2026_A3_sequence_length.pdf"
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
fig, ax = plt.subplots(figsize=(6, 4))
for key, label in [("train_loss", "training loss after GD"), ("initial_loss", "initial loss")]:
    s = res["metrics"][key]
    x = np.array(s["x"])
    ax.fill_between(x, np.maximum(s["ci_low"], 1e-12), s["ci_high"], alpha=0.25)
    extra = ""
    if key == "train_loss":
        sl = s["slope"]
        extra = f", slope {sl['value']:.2f} [{sl['ci_low']:.2f}, {sl['ci_high']:.2f}]"
    ax.plot(x, s["median"], "o-", label=label + extra)
ax.set(xscale="log", yscale="log", xlabel="sequence length T", ylabel="MSE",
       title=f"m={res['m']}, n={res['n']}, {len(res['seeds'])} seeds")
ax.legend(fontsize=7)
fig.tight_layout(rect=(0, 0.03, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"],
            substitutes=substitutes_for("A3", res["params"], scale))
