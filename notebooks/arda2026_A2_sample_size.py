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
# # A2 (Arda et al. 2026): width needed for a fixed error vs sample size n
# Plotting only: numbers from `results/arda2026/A2_sample_size.json` (rule `arda2026_sweep_aggregate`, claim A2).

# %% tags=["parameters"]
results = ["results/arda2026/A2_sample_size.json"]
evaluation = "results/claims/evaluations/A2.json"
png = "results/figures/arda2026_A2_sample_size.png"
pdf = "results/figures/arda2026_A2_sample_size.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter

from ntkrepro.plotting import load_claim_inputs, save_figure

(out,), ev = load_claim_inputs(results, evaluation)
res = out["kinds"][out["headline_kind"]]
names = {"authors": "authors' teacher", "paper": "paper's teacher"}
w = np.array(res["widths"], float)
ns = np.array(res["n_values"], float)

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for i, n in enumerate(res["n_values"]):
    axes[0].plot(w, res["median_error"][i], "o-", ms=4, label=f"n={n}")
axes[0].axhline(res["target_error"], color="k", ls="--", lw=1, label="target error")
axes[0].set(xscale="log", yscale="log", xlabel="width m", ylabel="approximation error (max over inputs)")
axes[0].legend(fontsize=7)
f = res["fits"]
grid = np.geomspace(ns.min(), ns.max(), 100)
axes[1].plot(ns, res["m_star"], "o", label="m*(n)")
axes[1].plot(grid, f["log_a"] * np.log(grid) + f["log_b"], "-", label=f"a log n + b (RSS {f['rss_log']:.3g})")
p = res["exponent_p"]
axes[1].plot(grid, f["pow_C"] * grid ** f["pow_p"], "--",
             label=f"C n^p, p={f['pow_p']:.2f} (RSS {f['rss_pow']:.3g}); log-log p {p['value']:.2f} "
                   f"[{p['ci_low']:.2f}, {p['ci_high']:.2f}]")
axes[1].set(xscale="log", xlabel="sample size n", ylabel="width for target error")
for kind, other in out["kinds"].items():
    if kind != out["headline_kind"]:
        q = other["exponent_p"]
        axes[1].plot(ns, other["m_star"], "s", mfc="none",
                     label=f"{names[kind]} m*(n): p {q['value']:.2f} [{q['ci_low']:.2f}, {q['ci_high']:.2f}]")
axes[0].set_title(f"{names[out['headline_kind']]}, {len(res['seeds'])} teacher draws")
axes[1].xaxis.set_minor_formatter(NullFormatter())
axes[1].legend(fontsize=7)
fig.tight_layout(rect=(0, 0.03, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=out["provenance"],
            substitutes=ev["substitutes"], verdict=ev["verdict"])
