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
# # G3 (Hazelden et al. 2026): RNN / GRU GeNTK spectra, effective ranks per initialisation, loss curves
# Plotting only: numbers from `results/hazelden2026/G3_rnn_spectra.json`, computed by rule
# `G3_hazelden2026_rnn_spectra` (`ntkrepro.hazelden2026.rnn.run_g3`).

# %% tags=["parameters"]
results = ["results/hazelden2026/G3_rnn_spectra.json"]
png = "results/figures/hazelden2026_G3_rnn_spectra.png"
pdf = "results/figures/hazelden2026_G3_rnn_spectra.pdf"
scale = "default"

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.hazelden2026.claims import G3_LOW_RANK_FRAC, evaluate_g3
from ntkrepro.io import read_json
from ntkrepro.plotting import save_figure, set_theme

set_theme()
res = read_json(results[0])
ev = evaluate_g3({Path(results[0]).stem: res}, scale)
models = sorted({u["model"] for u in res["runs"]})
gains = sorted({u["gain"] for u in res["runs"]})
cmap = plt.get_cmap("viridis")

# %%
fig, axes = plt.subplots(len(models), 3, figsize=(12, 3.3 * len(models)), squeeze=False)
for row, m in enumerate(models):
    runs = [u for u in res["runs"] if u["model"] == m]
    for u in runs:
        c = cmap(gains.index(u["gain"]) / max(1, len(gains) - 1))
        lam = np.array(u["eig_full"])
        axes[row, 0].plot(np.arange(1, lam.size + 1), lam / lam[0], color=c, label=f"g={u['gain']}")
        loss = np.array(u["loss"])
        axes[row, 2].plot(loss / loss[0], color=c, label=f"g={u['gain']}")
    axes[row, 0].set(xscale="log", yscale="log", ylim=(1e-8, 2), xlabel="eigenvalue index",
                     ylabel="lambda_k / lambda_1", title=f"{m.upper()}: GeNTK spectrum at init")
    g = [u["gain"] for u in runs]
    axes[row, 1].plot(g, [u["er_space"] / res["hidden"] for u in runs], "o-", label="spatial er / H")
    axes[row, 1].plot(g, [u["er_time"] / res["seq_len"] for u in runs], "s-", label="temporal er / T")
    axes[row, 1].axhline(G3_LOW_RANK_FRAC, color="k", ls="--", lw=1, label="low-rank threshold")
    axes[row, 1].set(xlabel="recurrent gain g", ylabel="effective rank (fraction)", ylim=(0, 1.05),
                     title=f"{m.upper()}: effective ranks")
    axes[row, 2].set(yscale="log", xlabel="GD step", ylabel="loss / initial loss", title=f"{m.upper()}: training")
    for ax in axes[row]:
        ax.legend(fontsize=6)
fig.suptitle(f"G3 flip-flop, H={res['hidden']}, T={res['seq_len']} -- verdict: {ev.verdict.value}")
fig.tight_layout(rect=(0, 0.05, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev.substitutes)
