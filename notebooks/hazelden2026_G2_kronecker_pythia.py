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
evaluation = "results/claims/evaluations/G2.json"
png = "results/figures/hazelden2026_G2_kronecker_pythia.png"
pdf = "results/figures/hazelden2026_G2_kronecker_pythia.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
FLOOR = 1e-12

# %%
fig, ax = plt.subplots(figsize=(9, 3.8))
layers = np.arange(res["n_layers"])
for k, kind in enumerate(ev["figure_data"]["kinds"]):
    err = np.full(len(layers), np.nan)
    for s in res["sites"]:
        if s["kind"] == kind:
            err[s["layer"]] = s["rel_error"]
    ax.plot(layers + (k - 1.5) * 0.12, np.maximum(err, FLOOR), "o", ms=4, label=kind)
tol = ev["figure_data"]["tolerance"]
ax.axhline(tol, color="k", ls="--", lw=1, label=f"tolerance {tol:.0e} (float32)")
nob = [(s["layer"], s["nobias_rel_error"]) for s in res["sites"] if s.get("nobias_rel_error") is not None]
if nob:
    ax.plot(*zip(*nob), "v", color="0.5", ms=3, label="negative control: bias column dropped (judged at the smallest)")
ax.set(yscale="log", ylim=(FLOOR / 3, 1), xlabel="layer", ylabel="rel. error of the Kronecker core")
ax.legend(fontsize=7, ncol=3, loc="upper left")
label = "PRETRAINED weights" if res["weights"] == "pretrained" else "RANDOM-INIT weights (substitute)"
ax.set_title(f"G2: {res['arch']} ({res['n_parameters']:,} parameters), {label}",
             fontsize=9)
fig.tight_layout(rect=(0, 0.05, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev["substitutes"],
            verdict=ev["verdict"])
