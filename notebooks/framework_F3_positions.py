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
# # F3 (seed 000, Sec. 4.2): NTK eigenstructure over positions, with/without sinusoidal encodings
# Plotting only: numbers from `results/framework/F3_positions.json` (`ntkrepro.framework.positions.run_f3`);
# the verdict (bootstrap over sequences) is in the ledger entry.

# %% tags=["parameters"]
results = ["results/framework/F3_positions.json"]
evaluation = "results/claims/evaluations/F3.json"
png = "results/figures/framework_F3_positions.png"
pdf = "results/figures/framework_F3_positions.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
V = res["variants"]
names = {"pe": "attention + sinusoidal PE", "no_pe": "attention, no PE", "no_attention_pe": "no attention, PE"}

# %%
fig, axes = plt.subplots(2, 3, figsize=(13, 7.5))
for ax, (k, label) in zip(axes[0], names.items()):
    m = np.array(V[k]["mean_kernel"])
    im = ax.imshow(m, cmap="viridis")
    ax.set(title=f"{label}\nmean position kernel", xlabel="position t", ylabel="position s")
    fig.colorbar(im, ax=ax, fraction=0.046)
ax = axes[1, 0]
for k, label in names.items():
    lam = np.array(V[k]["eigenvalues"])
    ax.plot(np.arange(1, lam.size + 1), lam / lam.sum(), "o-", ms=3, label=f"{label} (eff. rank {V[k]['effective_rank']:.1f})")
ax.set(yscale="log", xlabel="eigenvalue index", ylabel="lambda / sum lambda", title="spectra of mean kernels")
ax.legend(fontsize=7)
ax = axes[1, 1]
for k, label in names.items():
    ax.plot(np.arange(1, len(V[k]["eigvec_centroid"]) + 1), V[k]["eigvec_centroid"], "o-", ms=3, label=label)
m = ev["measured"]
lf = m["low_freq_share_eigvecs_2_to_k_minus_white"]
ax.axvspan(1.5, m["top_k"] + 0.5, color="0.9", zorder=0)
ax.set(xlabel="eigenvalue index", ylabel="spectral centroid (cycles / sequence)",
       title=f"judged (a): eigenvectors 2..{m['top_k']} (shaded), low-freq share - white\n"
             f"{lf['value']:.3g} [{lf['ci_low']:.3g}, {lf['ci_high']:.3g}] per {m['sequences_per_group']} sequences "
             f"averaged; all {m['n_sequences']}: {m['reported_low_freq_minus_white_all_sequences']:.3g}")
ax.legend(fontsize=7)
ax = axes[1, 2]
for k, label in names.items():
    prof = np.array(V[k]["distance_profile"])
    ax.plot(np.arange(1, prof.size + 1), prof, "o-", ms=3, label=label)
ax.set(xlabel="distance |s - t|", ylabel="mean K_st / mean K_ss", title="positional profile")
ax.legend(fontsize=7)
fig.suptitle("F3: infinite-width NTK over positions (Gaussian-token sequences) -- judged: (a) low-frequency share of "
             "eigenvectors 2..k vs white, (b) off-diagonal fraction with vs without attention, (c) distance-profile "
             "spread with vs without encodings", fontsize=9)
fig.tight_layout(rect=(0, 0.05, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"],
            substitutes=ev["substitutes"], verdict=ev["verdict"])
