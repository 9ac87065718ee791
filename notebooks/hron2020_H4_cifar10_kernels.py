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
# # H4 (Hron et al. 2020, Sec. 5): CIFAR-10 NNGP/NTK regression, attention vs pooling kernels
# Plotting only: numbers and substitutes from `results/hron2020/H4_cifar10_kernels.json`, computed by rule
# `H4_hron2020_cifar10_kernels` (`ntkrepro.hron2020.cifar10.run_h4`).

# %% tags=["parameters"]
results = ["results/hron2020/H4_cifar10_kernels.json"]
png = "results/figures/hron2020_H4_cifar10_kernels.png"
pdf = "results/figures/hron2020_H4_cifar10_kernels.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.io import read_json
from ntkrepro.plotting import save_figure, set_theme

set_theme()
res = read_json(results[0])
fams = res["families"]
kernels = ["nngp", "ntk"]

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4.2), gridspec_kw={"width_ratios": [1.2, 1, 1.2]})
ax = axes[0]
w = 0.38
for k, g in enumerate(kernels):
    rows = {f["family"]: f for f in res["final"] if f["kernel"] == g}
    v = np.array([[rows[f]["test_accuracy"][c] for c in ("value", "ci_low", "ci_high")] for f in fams])
    x = np.arange(len(fams)) + (k - 0.5) * w
    ax.bar(x, v[:, 0], w, label=g.upper(), color=f"C{k}", alpha=0.8)
    ax.errorbar(x, v[:, 0], yerr=[v[:, 0] - v[:, 1], v[:, 2] - v[:, 0]], fmt="none", ecolor="k", capsize=2)
    for xi, f in zip(x, fams):
        ax.text(xi, 0.005, f"d{rows[f]['depth']}", ha="center", va="bottom", fontsize=6, rotation=90)
ax.axhline(0.1, color="0.5", ls=":", lw=1, label="chance")
ax.set_xticks(np.arange(len(fams)), fams, rotation=20)
ax.set(ylabel="test accuracy", title=f"test ({res['n_test']} images, {res['image_size']}x{res['image_size']})")
ax.legend(fontsize=7)

ax = axes[1]
for i, f in enumerate(fams):
    for k, g in enumerate(kernels):
        rows = sorted((r for r in res["sweep"] if r["family"] == f and r["kernel"] == g), key=lambda r: r["depth"])
        ax.plot([r["depth"] for r in rows], [r["val_accuracy"] for r in rows], marker="os"[k],
                ls="-" if g == "nngp" else "--", color=f"C{i}", label=f if k == 0 else None)
ax.set(xlabel="preceding depth", ylabel="validation accuracy", title=f"selection ({res['n_train']}/{res['n_val']} train/val)")
ax.set_xticks(res["depths"])
ax.legend(fontsize=7, title="solid NNGP, dashed NTK", title_fontsize=7)

ax = axes[2]
comps = res["comparisons"]
labels, v = [], []
for c in comps:
    a = f"att({c['a']})" if c["a_is_best_attention_on_val"] and c["b"] != "vanilla" else c["a"]
    labels.append(f"{c['kernel'].upper()}: {a} - {c['b']}")
    d = c["difference"]
    v.append([d["value"], d["ci_low"], d["ci_high"]])
v = np.array(v)
y = np.arange(len(labels))
col = ["C2" if lo > 0 else ("C3" if hi < 0 else "0.4") for _, lo, hi in v]
for (m, lo, hi), yi, c in zip(v, y, col):
    ax.errorbar([m], [yi], xerr=[[m - lo], [hi - m]], fmt="o", color=c, capsize=3)
ax.axvline(0, color="k", lw=0.8)
ax.set_yticks(y, labels, fontsize=7)
ax.set(xlabel="test accuracy difference (paired bootstrap 95% CI)", title="orderings stated by the paper")
fig.tight_layout()
# substitutes as the compute rule recorded them (hron2020.cifar10.h4_substitutes, also the ledger's)
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=res["substitutes"])
