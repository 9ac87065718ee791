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
# # F5 (seed 000, Sec. 4.5): causal (GPT) vs bidirectional (BERT) NTK structure
# Plotting only: numbers from `results/framework/F5_masking.json` (`ntkrepro.framework.masking.run_f5`).

# %% tags=["parameters"]
results = ["results/framework/F5_masking.json"]
evaluation = "results/claims/evaluations/F5.json"
png = "results/figures/framework_F5_masking.png"
pdf = "results/figures/framework_F5_masking.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import interval_text, load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
W = res["params"]["width"]

# %%
fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
for ax, (k, label) in zip(axes[:2], [("causal", "causal (GPT)"), ("bidirectional", "bidirectional (BERT)")]):
    im = ax.imshow(np.array(res["mean_kernel"][k]), cmap="viridis")
    ax.set(title=f"{label}, width {W}", xlabel="position t", ylabel="position s")
    fig.colorbar(im, ax=ax, fraction=0.046)
ax = axes[2]
for k, label, st in [("causal", "causal, finite", "o-"), ("bidirectional", "bidirectional, finite", "s-")]:
    e = np.array(res["mean_eigenvalues"][k])
    ax.plot(np.arange(1, e.size + 1), e / e.sum(), st, ms=3, label=label)
e = np.array(res["mean_eigenvalues_bidirectional_infinite"])
ax.plot(np.arange(1, e.size + 1), e / e.sum(), "k:", label="bidirectional, infinite width")
ax.set(yscale="log", xlabel="eigenvalue index", ylabel="lambda / sum lambda", title="spectra of mean position kernels")
ax.legend(fontsize=7)
ax = axes[3]
c = np.ravel(res["eff_rank_causal"])
b = np.ravel(res["eff_rank_bidirectional"])
ax.scatter(b, c, s=12)
lo, hi = min(b.min(), c.min()), max(b.max(), c.max())
ax.plot([lo, hi], [lo, hi], "k--", lw=1)
d = ev["measured"]["eff_rank_causal_minus_bidirectional"]
ax.set(xlabel="effective rank, bidirectional", ylabel="effective rank, causal",
       title=f"paired diff {interval_text(d)}")
fig.suptitle("F5: causal vs bidirectional NTK")
fig.tight_layout(rect=(0, 0.05, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev["substitutes"],
            verdict=ev["verdict"])
