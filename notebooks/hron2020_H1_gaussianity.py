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
# Plotting only: numbers come from `results/hron2020/H1_gaussianity.json` (+ samples `.npz`: the first
# `ks_draws` draws of each head count),
# computed by rule `H1_hron2020_gaussianity` (`ntkrepro.hron2020.gaussianity.run_h1`).

# %% tags=["parameters"]
results = ["results/hron2020/H1_gaussianity.json", "results/hron2020/H1_gaussianity_samples.npz"]
evaluation = "results/claims/evaluations/H1.json"
png = "results/figures/hron2020_H1_gaussianity.png"
pdf = "results/figures/hron2020_H1_gaussianity.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np
from scipy.special import ndtri

from ntkrepro.io import read_npz
from ntkrepro.plotting import load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
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
    ax.plot(t, np.exp(-0.5 * (t / sd) ** 2) / (sd * np.sqrt(2 * np.pi)), color="k", lw=1, label="Gaussian, equal variance")
    ax.set_yscale("log")
    ax.set_ylim(1e-4 / sd, None)
    ax.set_title(f"{h} head{'s' if h > 1 else ''} (d={res['d']})")
    ax.set_xlabel("output")
axes[0].legend(fontsize=7)
ax = axes[2]
for h in (h_lo, h_hi):
    x = np.sort(samples[f"heads_{h}"].astype(float))
    q = ndtri((np.arange(1, x.size + 1) - 0.5) / x.size)  # Gaussian quantiles
    ax.plot(q, x / x.std(), ".", ms=2, label=f"{h} head(s)")
ax.plot([-4.5, 4.5], [-4.5, 4.5], "k--", lw=0.8)
ax.set(xlabel="Gaussian quantile", ylabel="standardised sample quantile", title="QQ plot")
ax.legend(fontsize=7)
ax = axes[3]
heads = np.array([r["heads"] for r in rows], float)
k = np.array([[r["kurtosis"]["value"], r["kurtosis"]["ci_low"], r["kurtosis"]["ci_high"]] for r in rows])
ax.errorbar(heads, k[:, 0], yerr=[k[:, 0] - k[:, 1], k[:, 2] - k[:, 0]], marker="o", capsize=3,
            label="excess kurtosis (95% CI)")
hh = np.geomspace(heads[0], heads[-1], 100)
ax.plot(hh, k[0, 0] / hh, "k--", lw=1, label="heads law: kurtosis(1 head) / H")
ax.axhline(0, color="0.5", lw=0.8)
ax.set_xscale("log")
ax.set_yscale("symlog", linthresh=1e-3)  # linear within +-1e-3: the sample kurtosis at many heads can be < 0
ax.set(xlabel="number of heads H", ylabel="excess kurtosis (symlog)", title="heads law")
ax.xaxis.set_major_formatter(plt.ScalarFormatter())
ax.legend(fontsize=7, loc="upper right")
ax.text(0.02, 0.03, "KS distance (first %d draws): " % res["ks_draws"]
        + ", ".join(f"H={r['heads']}: {r['ks']['value']:.4f}" for r in (rows[0], rows[-1]))
        + f"; 95% Gaussian null {res['ks_null_95']:.4f}", transform=ax.transAxes, fontsize=6)
fig.tight_layout()
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"],
            substitutes=ev["substitutes"], verdict=ev["verdict"])
