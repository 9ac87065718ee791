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
# # F6 (seed 000, Sec. 4.4, 4.5.3): NTK movement vs width; NTK effective rank vs loss-vs-width scaling across variants
# Plotting only: numbers from `results/framework/F2_kernel_regime.json` (`ntkrepro.framework.kernel_regime.run_f2`)
# and `results/framework/F6_variants.json` (`ntkrepro.framework.training.run_f6`).

# %% tags=["parameters"]
results = ["results/framework/F2_kernel_regime.json", "results/framework/F6_variants.json"]
evaluation = "results/claims/evaluations/F6.json"
png = "results/figures/framework_F6_training.png"
pdf = "results/figures/framework_F6_training.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import interval_text, load_claim_inputs, save_figure

(kr, var), ev = load_claim_inputs(results, evaluation)
M = ev["measured"]

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
ax = axes[0]
kw = np.array(kr["widths"], float)
mv = np.array(kr["by_activation"][kr["primary_activation"]]["ntk_rel_change"], float)
for j in range(mv.shape[1]):
    ax.scatter(kw, mv[:, j], s=8, color="C0", alpha=0.35)
m = mv.mean(1)
s = M["ntk_movement_slope_vs_width"]
ax.plot(kw, m, "o-", color="C0", label="seed mean")
ax.plot(kw, m[0] * (kw / kw[0]) ** s["value"], "k--", lw=1, label=f"fit: slope {interval_text(s)}")
ax.set(xscale="log", yscale="log", xlabel="width W", ylabel="||Theta_T - Theta_0|| / ||Theta_0||",
       title=f"(i) NTK movement during training ({kr['primary_activation']} block)")
ax.legend(fontsize=7)
ax = axes[1]
w = np.array(var["widths"], float)
for i, name in enumerate(var["variants"]):
    loss = np.array(var["test_loss"][name], float)
    e = M[f"exponent_{name}"]
    ax.errorbar(w * (1 + 0.03 * i), loss.mean(1), yerr=loss.std(1, ddof=1) / np.sqrt(loss.shape[1]), fmt="o-", ms=3,
                capsize=2, label=f"{name}: e = {interval_text(e)}")
ax.set(xscale="log", yscale="log", xlabel="width W", ylabel="test MSE (seed mean +- s.e.)",
       title="(ii) loss vs width per variant")
ax.legend(fontsize=6)
ax = axes[2]
for name in var["variants"]:
    e, r = ev["figure_data"]["variant_exponent"][name], M[f"eff_rank_{name}"]
    ax.scatter(r, -e, s=25)
    ax.annotate(name, (r, -e), fontsize=7, xytext=(3, 3), textcoords="offset points")
rho, t = M["spearman_rank_vs_scaling_gain"], M["permutation_test"]
ax.set(xlabel=f"NTK effective rank over positions at W = {M['reference_width']}", ylabel="scaling gain -e",
       title=f"Spearman {rho['value']:.2f}, seed interval [{rho['ci_low']:.2f}, {rho['ci_high']:.2f}], exact p(>0) = {t['p_greater']:.3f}")
fig.suptitle("F6: kernel regime and scaling across architecture variants")
fig.tight_layout(rect=(0, 0.05, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=kr["provenance"], substitutes=ev["substitutes"],
            verdict=ev["verdict"])
