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
# # H3 (Hron et al. 2020, App. A): empirical NNGP/NTK -> analytic kernels as width grows
# Plotting only: numbers from `results/hron2020/H3_kernel_convergence.json`, computed by rule
# `H3_hron2020_kernel_convergence` (`ntkrepro.hron2020.convergence.run_h3`).

# %% tags=["parameters"]
results = ["results/hron2020/H3_kernel_convergence.json"]
evaluation = "results/claims/evaluations/H3.json"
png = "results/figures/hron2020_H3_kernel_convergence.png"
pdf = "results/figures/hron2020_H3_kernel_convergence.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter

from ntkrepro.plotting import interval_text, load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
rows = sorted(res["per_width"], key=lambda r: r["width"])
w = np.array([r["width"] for r in rows], float)

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
for ax, g in zip(axes, ["nngp", "ntk"]):
    d = np.array([r[f"{g}_distance"] for r in rows])
    med = np.median(d, axis=1)
    fd = ev["figure_data"][g]  # bootstrap intervals of the per-width medians, fitted line
    ci = np.array([[c["ci_low"], c["ci_high"]] for c in fd["median_ci"]])
    ax.errorbar(w, med, yerr=[med - ci[:, 0], ci[:, 1] - med], marker="o", capsize=3, label="median over replicates")
    for j in range(d.shape[1]):
        ax.scatter(w, d[:, j], s=8, color="0.6", zorder=1)
    s = ev["measured"][f"{g}_distance_slope_vs_log_width"]  # the criterion's OLS fit over all estimates
    ax.plot(w, np.exp(fd["log_log_intercept"]) * w ** s["value"], "k--", lw=1,
            label=f"fit (all replicates): slope {interval_text(s)}")
    ax.axhline(0.05, color="C3", ls=":", lw=1, label="neural-tangents test tolerance (5%)")
    ctrl = (res.get("controls") or {}).get("kernel_3pct_off")
    if ctrl:  # the control (issue 28): the same estimates against a limit 3 % off, judged by the same slope
        c_rows = sorted(ctrl["per_width"], key=lambda r: r["width"])
        ax.plot(w, np.median([r[f"{g}_distance"] for r in c_rows], axis=1), "s-", color="C2", ms=4, lw=1,
                label="control: distance to a limit 3 % off (median)")
        ax.axhline(ctrl["analytic_offset"][g], color="C2", ls="-.", lw=1,
                   label=f"offset of that limit ({ctrl['analytic_offset'][g]:.3f})")
    ax.set(xscale="log", yscale="log", xlabel="width (heads: " + ", ".join(str(r["n_heads"]) for r in rows) + ")",
           title=f"{g.upper()}: judged: slope of log distance vs log width")
    ax.set_xticks(w, [str(int(v)) for v in w])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.legend(fontsize=7)
axes[0].set_ylabel("relative Frobenius distance")
fig.suptitle(f"Conv -> attention (d^-1, tied Q/K, {res['arch'].get('attention_mechanism', 'SOFTMAX').lower()}) -> GAP, "
             f"{res['n_inputs']} CIFAR-10 images, {res['n_samples']} inits x {res['n_replicates']} replicates")
fig.tight_layout()
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev["substitutes"],
            verdict=ev["verdict"])
