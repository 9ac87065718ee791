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
# # A5 (Arda et al. 2026, Lemma 1): attention part of the empirical NTK vs width
# Plotting only: numbers from `results/arda2026/A5_attention_share.json` (rule `A5_arda2026_attention_share`).

# %% tags=["parameters"]
results = ["results/arda2026/A5_attention_share.json"]
evaluation = "results/claims/evaluations/A5.json"
png = "results/figures/arda2026_A5_attention_share.png"
pdf = "results/figures/arda2026_A5_attention_share.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
w = np.array(res["widths"], float)

# %%
fig, ax = plt.subplots(figsize=(6.5, 4))
for key, label in [("attention_share", "attention (W), trace share"), ("value_share", "value (U), trace share"),
                   ("output_share", "output (c), trace share"), ("attention_frob_share", "attention, Frobenius share")]:
    s = res["metrics"][key]
    lo = [c["ci_low"] for c in s["ci"]]
    hi = [c["ci_high"] for c in s["ci"]]
    ax.fill_between(w, lo, hi, alpha=0.25)
    ax.plot(w, s["mean"], "o-", ms=4, label=label, ls=":" if "frob" in key else "-")
sl = res["attention_slope"]
ax.set(xscale="log", ylim=(0, 1), xlabel="width m", ylabel="share of the empirical NTK",
       title=f"attention share slope vs m: {sl['value']:.3f} [{sl['ci_low']:.3f}, {sl['ci_high']:.3f}]")
ax.legend(fontsize=7)
fig.tight_layout(rect=(0, 0.03, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"],
            substitutes=ev["substitutes"], verdict=ev["verdict"])
