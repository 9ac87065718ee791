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
# # F1 (seed 000, Sec. 4.1): closed-form NTK of linear attention vs the empirical NTK
# Plotting only: numbers from `results/framework/F1_linear_attention.json`
# (`ntkrepro.framework.linear_attention.run_f1`).

# %% tags=["parameters"]
results = ["results/framework/F1_linear_attention.json"]
evaluation = "results/claims/evaluations/F1.json"
png = "results/figures/framework_F1_linear_attention.png"
pdf = "results/figures/framework_F1_linear_attention.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import interval_text, load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
w = np.array(res["widths"], float)
err = np.array(res["rel_error"], float)
slope = ev["measured"]["error_slope_vs_width"]

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
ax = axes[0]
for j in range(err.shape[1]):
    ax.scatter(w, err[:, j], s=10, color="C0", alpha=0.4, label="one initialisation" if j == 0 else None)
med = np.median(err, 1)
ax.plot(w, med, "o-", color="C0", label="median")
ax.plot(w, med[0] * (w / w[0]) ** slope["value"], "k--", lw=1, label=f"fit: slope {interval_text(slope)}")
ax.plot(w, np.array(res["rel_error_of_seed_mean"]), "s-", color="C2", label="mean over initialisations")
tol = ev["figure_data"]["max_median_rel_error"]
ax.axhline(tol, color="C3", lw=1, ls=":", label=f"criterion: median error <= {tol:g}")
ax.set(xscale="log", yscale="log", xlabel="width (heads x head size)", ylabel="||Theta_W - Theta||_F / ||Theta||_F")
ax.legend(fontsize=7)
ax = axes[1]
d = np.array(res["closed_form_diag_example"])
ax.plot(np.arange(d.size), d, "o-")
ax.set(xlabel="position s", ylabel="Theta(x, x)_ss (closed form)",
       title=f"closed form vs neural-tangents: max rel {res['closed_vs_neural_tangents_max_rel']:.1e}")
fig.suptitle(f"F1 linear attention Q(K^T V): Theta = 4 K_ss' ||K||_F^2 ")
fig.tight_layout(rect=(0, 0.05, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev["substitutes"],
            verdict=ev["verdict"])
