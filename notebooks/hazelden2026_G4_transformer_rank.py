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
# # G4 (Hazelden et al. 2026): transformer GeNTK temporal effective rank vs input effective dimension
# Plotting only: numbers from `results/hazelden2026/G4_transformer_rank.json`, computed by rule
# `G4_hazelden2026_transformer_rank` (`ntkrepro.hazelden2026.transformer.run_g4`).

# %% tags=["parameters"]
results = ["results/hazelden2026/G4_transformer_rank.json"]
png = "results/figures/hazelden2026_G4_transformer_rank.png"
pdf = "results/figures/hazelden2026_G4_transformer_rank.pdf"
scale = "default"

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.hazelden2026.claims import G4_SLACK_ADD, G4_SLACK_MULT, evaluate_g4
from ntkrepro.io import read_json
from ntkrepro.plotting import save_figure, set_theme

set_theme()
res = read_json(results[0])
ev = evaluate_g4({Path(results[0]).stem: res}, scale)
dims = res["input_dims"]

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
ex = np.array([[u["er_input"] for u in res["rows"] if u["k"] == k] for k in dims])
et = np.array([[u["er_gentk_time"] for u in res["rows"] if u["k"] == k] for k in dims])
ax = axes[0]
ax.errorbar(ex.mean(1), et.mean(1), xerr=[ex.mean(1) - ex.min(1), ex.max(1) - ex.mean(1)],
            yerr=[et.mean(1) - et.min(1), et.max(1) - et.mean(1)], fmt="o-", capsize=3, label="rank-k Gaussian inputs (judged)")
for k, a, b in zip(dims, ex.mean(1), et.mean(1)):
    ax.annotate(f"k={k}", (a, b), fontsize=6, xytext=(3, -8), textcoords="offset points")
fr = res.get("fourier_rows") or []
if fr:
    fx = np.array([[u["er_input"] for u in fr if u["modes"] == m] for m in res["fourier_modes"]])
    ft = np.array([[u["er_gentk_time"] for u in fr if u["modes"] == m] for m in res["fourier_modes"]])
    order = np.argsort(fx.mean(1))
    ax.plot(fx.mean(1)[order], ft.mean(1)[order], "^--", color="C2", label="Fourier-feature inputs (reported, not judged)")
    ex = np.concatenate([ex, fx])
xx = np.linspace(0.8, ex.max() * 1.1, 50)
ax.plot(xx, xx, ":", color="0.5", label="er = er(X)")
ax.plot(xx, G4_SLACK_MULT * xx + G4_SLACK_ADD, "k--", lw=1, label="bound 1.25 er(X) + 1")
ax.set(xlabel="effective rank of input Gram X X^T", ylabel="temporal effective rank of GeNTK")
ax.legend(fontsize=7)
ax = axes[1]
for i, k in enumerate(dims):
    spec = np.array([u["spectrum_time"] for u in res["rows"] if u["k"] == k][0])
    ax.plot(np.arange(1, spec.size + 1), spec / spec[0], color=plt.get_cmap("viridis")(i / max(1, len(dims) - 1)),
            label=f"k={k}")
ax.set(yscale="log", ylim=(1e-10, 2), xlabel="index", ylabel="eigenvalue / largest",
       title="temporal GeNTK spectrum (first seed)")
ax.legend(fontsize=6, ncol=2)
fig.suptitle(f"G4: GeNTK temporal rank vs input dimension (T={res['params']['seq_len']}) -- verdict: {ev.verdict.value}")
fig.tight_layout(rect=(0, 0.05, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev.substitutes)
