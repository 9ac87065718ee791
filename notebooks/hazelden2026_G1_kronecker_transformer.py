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
# # G1 (Hazelden et al. 2026): Kronecker core, forward pass vs autodiff, self-attention transformer
# Plotting only: numbers from `results/hazelden2026/G1_kronecker_transformer.json`, computed by rule
# `G1_hazelden2026_kronecker_transformer` (`ntkrepro.hazelden2026.transformer.run_g1`).

# %% tags=["parameters"]
results = ["results/hazelden2026/G1_kronecker_transformer.json"]
evaluation = "results/claims/evaluations/G1.json"
png = "results/figures/hazelden2026_G1_kronecker_transformer.png"
pdf = "results/figures/hazelden2026_G1_kronecker_transformer.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
TOL = ev["figure_data"]["tolerance"]
FLOOR = 1e-18

# %%
sites = [s["site"] for s in res["dtypes"]["float64"]["sites"]]
x = np.arange(len(sites))
fig, ax = plt.subplots(figsize=(10, 3.8))
for k, (dname, marker) in enumerate([("float64", "o"), ("float32", "s")]):
    err = np.array([s["rel_error"] for s in res["dtypes"][dname]["sites"]])
    ax.scatter(x + (k - 0.5) * 0.2, np.maximum(err, FLOOR), marker=marker, color=f"C{k}", zorder=3,
               label=f"{dname} (max {err.max():.1e})")
    ax.axhline(TOL[dname], color=f"C{k}", ls="--", lw=1, label=f"{dname} tolerance {TOL[dname]:.0e}")
ctl = np.array([s.get("control_rel_error", np.nan) for s in res["dtypes"]["float64"]["sites"]])
ax.scatter(x, ctl, marker="x", color="0.4", zorder=3, label="precision condition: rows of V permuted (float64)")
nob = np.array([np.nan if s.get("nobias_rel_error") is None else s["nobias_rel_error"]
                for s in res["dtypes"]["float64"]["sites"]])
ax.scatter(x, nob, marker="v", color="C3", zorder=3,
           label="negative control: bias column dropped (float64; judged at the smallest)")
ax.set(yscale="log", ylim=(FLOOR / 3, 10), ylabel="rel. Frobenius error of core")
ax.set_xticks(x, sites, rotation=60, ha="right", fontsize=7)
ax.legend(fontsize=7, ncol=3, loc="center left")
p = res["params"]
ax.set_title(f"G1: {res['n_sites']} weight sites, {res['rows_per_site']} (sample, time) rows x {p['n_units']} "
             f"output units per site\n"
             f"(errors of exactly 0 drawn at {FLOOR:.0e})", fontsize=9)
fig.tight_layout(rect=(0, 0.05, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev["substitutes"],
            verdict=ev["verdict"])
