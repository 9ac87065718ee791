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
# # H1 (Hron et al. 2020, Fig. 1): Gaussianity of attention outputs vs number of heads
# Plotting only: numbers come from `results/hron2020/H1_gaussianity.json` (+ samples `.npz`),
# computed by rule `H1_hron2020_gaussianity` (`ntkrepro.hron2020.gaussianity.run_h1`).

# %% tags=["parameters"]
results = ["results/hron2020/H1_gaussianity.json", "results/hron2020/H1_gaussianity_samples.npz"]
png = "results/figures/hron2020_H1_gaussianity.png"
pdf = "results/figures/hron2020_H1_gaussianity.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

from ntkrepro.io import read_json, read_npz
from ntkrepro.plotting import save_figure, set_theme

set_theme()
res = read_json(next(p for p in results if p.endswith(".json")))
samples, _ = read_npz(next(p for p in results if p.endswith(".npz")))
rows = sorted(res["per_heads"], key=lambda r: r["heads"])
h_lo, h_hi = rows[0]["heads"], rows[-1]["heads"]

# %%
fig, axes = plt.subplots(1, 4, figsize=(15, 3.6))
for ax, h in zip(axes[:2], (h_lo, h_hi)):
    x = samples[f"heads_{h}"].astype(float)
    sd = x.std()
    ax.hist(x, bins=120, density=True, histtype="stepfilled", alpha=0.6, label="attention output")
    t = np.linspace(x.min(), x.max(), 400)
    ax.plot(t, stats.norm.pdf(t, 0, sd), color="k", lw=1, label="Gaussian, equal variance")
    ax.set_yscale("log")
    ax.set_ylim(1e-4 / sd, None)
    ax.set_title(f"{h} head{'s' if h > 1 else ''} (d={res['d']})")
    ax.set_xlabel("output")
axes[0].legend(fontsize=7)
ax = axes[2]
for h in (h_lo, h_hi):
    x = np.sort(samples[f"heads_{h}"].astype(float))
    q = stats.norm.ppf((np.arange(1, x.size + 1) - 0.5) / x.size)
    ax.plot(q, x / x.std(), ".", ms=2, label=f"{h} head(s)")
ax.plot([-4.5, 4.5], [-4.5, 4.5], "k--", lw=0.8)
ax.set(xlabel="Gaussian quantile", ylabel="standardised sample quantile", title="QQ plot")
ax.legend(fontsize=7)
ax = axes[3]
heads = [r["heads"] for r in rows]
k = np.array([[r["kurtosis"]["value"], r["kurtosis"]["ci_low"], r["kurtosis"]["ci_high"]] for r in rows])
ks = np.array([[r["ks"]["value"], r["ks"]["ci_low"], r["ks"]["ci_high"]] for r in rows])
ax.errorbar(heads, k[:, 0], yerr=[k[:, 0] - k[:, 1], k[:, 2] - k[:, 0]], marker="o", capsize=3,
            label="excess kurtosis")
ax.axhline(0, color="k", lw=0.8)
ax.set(xscale="log", xlabel="number of heads", ylabel="excess kurtosis", title="Gaussianity vs heads")
ax2 = ax.twinx()
ax2.errorbar(heads, ks[:, 0], yerr=[ks[:, 0] - ks[:, 1], ks[:, 2] - ks[:, 0]], marker="s", color="C1",
             capsize=3, label="KS distance")
ax2.axhline(res["ks_null_95"], color="C1", ls=":", lw=1, label="KS 95% null")
ax2.set_ylabel("KS distance", color="C1")
ax2.grid(False)
ax.xaxis.set_major_formatter(plt.ScalarFormatter())
h1, l1 = ax.get_legend_handles_labels()
h2, l2 = ax2.get_legend_handles_labels()
ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper right")
fig.tight_layout()
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"],
            substitutes=None if scale == "paper" else [f"{res['n_draws']} draws"])
