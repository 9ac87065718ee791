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
# # H6 (Hron et al. 2020): IMDb with GloVe, NNGP/NTK of pooling and attention networks
# Plotting only: numbers and substitutes from `results/hron2020/H6_imdb.json`, computed by rule
# `H6_hron2020_imdb` (`ntkrepro.hron2020.imdb.run_h6`).

# %% tags=["parameters"]
results = ["results/hron2020/H6_imdb.json"]
png = "results/figures/hron2020_H6_imdb.png"
pdf = "results/figures/hron2020_H6_imdb.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.hron2020.imdb import FAMILIES, FAMILY_LABELS
from ntkrepro.io import read_json
from ntkrepro.plotting import save_figure, set_theme

set_theme()
res = read_json(results[0])
proto = res["protocol"]
final = res.get("final")
fam_res = final["families"] if final else res["families"]  # the criterion's test set
n_test = final["n_test"] if final else proto["n_test"]
fams = [f for f in FAMILIES if f in fam_res]

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [1, 1.5]})
ax = axes[0]
for i, f in enumerate(fams):
    v = fam_res[f]
    a = v["test_accuracy"]
    ax.errorbar(i, a["value"], yerr=[[a["value"] - a["ci_low"]], [a["ci_high"] - a["value"]]], fmt="o",
                color=f"C{i}", capsize=4, ms=7)
    ax.annotate(f"{v['kernel'].upper()}, depth {v['depth']}", (i, a["ci_high"]), textcoords="offset points",
                xytext=(0, 6), ha="center", fontsize=7)
ax.axhline(res["sota_accuracy"], color="k", ls="--", lw=1, label=f"SOTA {res['sota_accuracy']:.1%}")
ax.axhline(0.5, color="0.6", ls=":", lw=1, label="chance")
ax.set_xticks(range(len(fams)), [FAMILY_LABELS[f] for f in fams])
ax.set(ylabel="test accuracy (95% bootstrap CI)", ylim=(0.4, 1.0),
       title=f"{'final table' if final else 'test'}: {n_test} reviews, length {proto['seq_len']}")
ax.legend(fontsize=7, loc="upper left")

ax = axes[1]
names = [m["name"].replace(" (", "\n(") for m in res["models"]]
xpos = np.arange(len(names))
for k, (g, mk) in enumerate((("nngp", "o"), ("ntk", "s"))):
    va = [m["kernels"][g]["valid_accuracy"] for m in res["models"]]
    ta = [m["kernels"][g]["test_accuracy"]["value"] for m in res["models"]]
    ax.plot(xpos + (k - 0.5) * 0.2, va, mk, color=f"C{k}", label=f"{g.upper()} validation")
    ax.plot(xpos + (k - 0.5) * 0.2, ta, mk, mfc="none", color=f"C{k}", label=f"{g.upper()} test")
ax.set_xticks(xpos, names, fontsize=8)
ax.set(ylabel="accuracy", title=f"every model (diag_reg chosen on {proto['n_valid']} validation reviews)")
ax.legend(fontsize=7, ncol=2)
fig.suptitle(f"IMDb + GloVe 6B 50d, NNGP/NTK regression ({proto['n_train']} training reviews); "
             f"padding-invariance max rel. change {res['padding_invariance_max']:.1e}", fontsize=10)
fig.tight_layout(rect=(0, 0.05, 1, 1))
# substitutes as the compute rule recorded them (hron2020.imdb.h6_substitutes, also the ledger's)
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=res["substitutes"])
