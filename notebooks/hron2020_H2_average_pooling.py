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
# # H2 (Hron et al. 2020, Sec. 3): d^-1 scaling collapses attention to average pooling
# Plotting only: numbers from `results/hron2020/H2_average_pooling.json`, computed by rule
# `H2_hron2020_average_pooling` (`ntkrepro.hron2020.average_pooling.run_h2`).

# %% tags=["parameters"]
results = ["results/hron2020/H2_average_pooling.json"]
evaluation = "results/claims/evaluations/H2.json"
png = "results/figures/hron2020_H2_average_pooling.png"
pdf = "results/figures/hron2020_H2_average_pooling.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import interval_text, load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
rows = sorted(res["per_d"], key=lambda r: r["d"])
d = np.array([r["d"] for r in rows], float)

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
slopes = {"spread": ev["measured"]["spread_slope_vs_log_d"], "nngp_distance": ev["measured"]["nngp_distance_slope_vs_log_d"]}
for ax, key, label in [(axes[0], "spread", "attention spread around uniform"),
                       (axes[1], "nngp_distance", "rel. NNGP distance to GAP")]:
    v = np.array([[r[key]["value"], r[key]["ci_low"], r[key]["ci_high"]] for r in rows])
    ax.errorbar(d, v[:, 0], yerr=[v[:, 0] - v[:, 1], v[:, 2] - v[:, 0]], marker="o", capsize=3, label="measured")
    slope, icpt = slopes[key], ev["figure_data"]["log_log_intercept"][key]
    ax.plot(d, np.exp(icpt) * d ** slope["value"], "k--", lw=1, label=f"fit: slope {interval_text(slope)}")
    ax.plot(d, v[0, 0] * (d / d[0]) ** -0.5, ":", color="0.5", lw=1, label="d^-1/2 reference")
    ax.set(xscale="log", yscale="log", xlabel="key/query dimension d", ylabel=label)
    ax.legend(fontsize=7)
axes[1].axhline(res["tied_linear_scaling_distance"], color="C3", lw=1,
                label="tied Q=K (neural-tangents linear_scaling)")
axes[1].legend(fontsize=7)
fig.suptitle("d^-1 scaling with independent query/key weights: attention -> global average pooling")
fig.tight_layout()
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"],
            substitutes=ev["substitutes"], verdict=ev["verdict"])
