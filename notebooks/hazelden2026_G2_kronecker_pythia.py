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
# # G2 (Hazelden et al. 2026): Kronecker core on Pythia-410M (GPTNeoX), every layer
# Plotting only: numbers from `results/hazelden2026/G2_kronecker_pythia.json`, computed by rule
# `G2_hazelden2026_kronecker_pythia` (`ntkrepro.hazelden2026.pythia.run_g2`).

# %% tags=["parameters"]
results = ["results/hazelden2026/G2_kronecker_pythia.json"]
png = "results/figures/hazelden2026_G2_kronecker_pythia.png"
pdf = "results/figures/hazelden2026_G2_kronecker_pythia.pdf"
scale = "default"

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.hazelden2026.claims import G2_KINDS, TOL, evaluate_g2
from ntkrepro.io import read_json
from ntkrepro.plotting import save_figure, set_theme

set_theme()
res = read_json(results[0])
ev = evaluate_g2({Path(results[0]).stem: res}, scale)
FLOOR = 1e-12

# %%
fig, ax = plt.subplots(figsize=(9, 3.8))
layers = np.arange(res["n_layers"])
for k, kind in enumerate(sorted(G2_KINDS)):
    err = np.full(len(layers), np.nan)
    for s in res["sites"]:
        if s["kind"] == kind:
            err[s["layer"]] = s["rel_error"]
    ax.plot(layers + (k - 1.5) * 0.12, np.maximum(err, FLOOR), "o", ms=4, label=kind)
ax.axhline(TOL["float32"], color="k", ls="--", lw=1, label="tolerance 1e-5 (float32)")
ax.set(yscale="log", ylim=(FLOOR / 3, 1e-3), xlabel="layer", ylabel="rel. error of the Kronecker core")
ax.legend(fontsize=7, ncol=3, loc="upper left")
label = "PRETRAINED weights" if res["weights"] == "pretrained" else "RANDOM-INIT weights (substitute)"
ax.set_title(f"G2: {res['arch']} ({res['n_parameters']:,} parameters), {label} -- verdict: {ev.verdict.value}",
             fontsize=9)
fig.tight_layout(rect=(0, 0.05, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev.substitutes)
