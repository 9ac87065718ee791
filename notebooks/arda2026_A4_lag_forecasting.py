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
# # A4 (Arda et al. 2026, Fig. 2): lag-L forecasting, transformer vs IndRNN
# Plotting only: numbers from `results/arda2026/A4_lag_forecasting.json` (rule `arda2026_sweep_aggregate`, claim A4).

# %% tags=["parameters"]
results = ["results/arda2026/A4_lag_forecasting.json"]
evaluation = "results/claims/evaluations/A4.json"
png = "results/figures/arda2026_A4_lag_forecasting.png"
pdf = "results/figures/arda2026_A4_lag_forecasting.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)

# %%
fig, axes = plt.subplots(2, 1, figsize=(6.5, 7), sharex=True)
for ax, keys, ylabel in [
    (axes[0], [("tf_min_val", "Transformer"), ("rnn_min_val", "IndRNN")], "min validation MSE"),
    (axes[1], [("tf_grad_blockmax", "Transformer |grad W|"), ("rnn_grad_blockmax", "IndRNN |grad u|")],
     "mean block-max gradient norm"),
]:
    for key, label in keys:
        s = res["metrics"][key]
        x = np.array(s["x"])
        ax.fill_between(x, s["ci_low"], s["ci_high"], alpha=0.25)
        ax.plot(x, s["median"], "o-", label=label)
    ax.set(ylabel=ylabel)
    ax.legend(fontsize=7)
axes[0].axhline(res["bayes_mse"], color="k", ls="--", lw=1, label="Bayes risk")
axes[0].legend(fontsize=7)
axes[1].set(yscale="log", xlabel="lag L")
fig.suptitle(f"m={res['params']['m']}, {res['params']['steps']} GD steps, lr {res['params']['lr']}, "
             f"{len(res['seeds'])} seeds")
fig.tight_layout(rect=(0, 0.03, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"],
            substitutes=ev["substitutes"], verdict=ev["verdict"])
