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
# # G3 (Hazelden et al. 2026): planted fixed points vs none -- GeNTK rank at initialisation and learning
# Plotting only: numbers from `results/hazelden2026/G3_planted_fixed_points.json`, computed by rule
# `G3_hazelden2026_planted` (`ntkrepro.hazelden2026.planted.run_planted`, the authors' comparison of kpflow
# `examples/mem_pro_init_example` at this run's sizes); verdict and the seed-paired intervals from the claim's
# evaluation (`ntkrepro.hazelden2026.claims.evaluate_g3`, criterion v8, applied once by rule `claim_evaluation`).

# %% tags=["parameters"]
results = ["results/hazelden2026/G3_planted_fixed_points.json"]
evaluation = "results/claims/evaluations/G3.json"
png = "results/figures/hazelden2026_G3_planted_fixed_points.png"
pdf = "results/figures/hazelden2026_G3_planted_fixed_points.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import interval_text, load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
runs = res["runs"]
arms = list(res["arms"])
seeds = sorted({u["seed"] for u in runs})
colors = {"none": "0.3", "planted": "tab:red", "matched": "tab:blue", "redraw": "tab:green"}
labels = {"none": "none (base draw)", "planted": f"planted ({res['n_fixed_points']} fixed points)",
          "matched": "norm-matched perturbation (reported)", "redraw": "second unplanted draw (control)"}
m = ev["measured"]
control = next((c for c in ev["controls"] if c["name"] == "two_unplanted_draws"), None)

# %%
fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
ax = axes[0]
for i, a in enumerate(arms):
    pr = [u["pr"] for u in runs if u["arm"] == a]
    ax.scatter(np.full(len(pr), i) + np.linspace(-0.15, 0.15, len(pr)), pr, color=colors.get(a, "k"), s=18)
    for s in seeds:  # seed pairing to the base draw
        ref = [u["pr"] for u in runs if u["arm"] == "none" and u["seed"] == s]
        own = [u["pr"] for u in runs if u["arm"] == a and u["seed"] == s]
        if ref and own and a != "none":
            ax.plot([0, i], [ref[0], own[0]], color=colors.get(a, "k"), lw=0.4, alpha=0.5)
ax.set_xticks(range(len(arms)), [a for a in arms])
ax.set(ylabel="GeNTK participation ratio at init", title=f"effective dimension ({len(seeds)} seeds)")
ax = axes[1]
for a in arms:
    curves = np.array([u["loss"] for u in runs if u["arm"] == a], float)
    ax.plot(np.exp(np.mean(np.log(curves), 0)), color=colors.get(a, "k"), label=labels.get(a, a), lw=1.2)
ax.set(yscale="log", xlabel="SGD step", ylabel="batch loss (geometric mean over seeds)",
       title=f"learning: batch {res['batch']}, lr {res['lr']:g}")
ax.legend(fontsize=7)
ax = axes[2]
rows = [("planted: (a) log PR ratio", m["planted_log_pr_ratio"], "tab:red"),
        ("planted: (b) log tail-loss ratio", m["planted_log_tail_loss_ratio"], "tab:red")]
if "reported_matched_log_pr_ratio" in m:
    rows += [("matched: log PR ratio (reported)", m["reported_matched_log_pr_ratio"], "tab:blue"),
             ("matched: log tail-loss ratio (reported)", m["reported_matched_log_tail_loss_ratio"], "tab:blue")]
if control is not None:
    rows += [("control redraw: log PR ratio", control["measured"]["planted_log_pr_ratio"], "tab:green"),
             ("control redraw: log tail-loss ratio", control["measured"]["planted_log_tail_loss_ratio"], "tab:green")]
for y, (name, iv, c) in enumerate(rows):
    lo, hi = iv["ci_low"], iv["ci_high"]
    if np.all(np.isfinite([lo, hi, iv["value"]])):
        ax.errorbar(iv["value"], y, xerr=[[iv["value"] - lo], [hi - iv["value"]]], fmt="o", color=c, capsize=3)
ax.axvline(0, color="k", lw=0.8, ls=":")
plateau = ev["figure_data"].get("plateau_log_ratio")
if plateau is not None:  # part (b)'s margin: a tail loss 10 % above the base draw's
    ax.axvline(plateau, color="tab:red", lw=0.8, ls="--", label=f"(b) margin: log {np.exp(plateau):.2g}")
    ax.legend(fontsize=7, loc="lower left")
ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=7)
ax.invert_yaxis()
ax.set(xlabel="seed-paired log ratio to the base draw (95% t-interval)",
       title=f"verdict {ev['verdict']}: " + ", ".join(f"({k[0]}) {v}" for k, v in ev["parts"].items()))
fig.suptitle(f"G3 planted fixed points: rate RNN H={res['hidden']}, dt {res['dt']}, memory-pro "
             f"{'/'.join(str(p) for p in res['periods'])}, {res['n_train']} sequences, {res['steps']} steps; "
             f"(a) {interval_text(m['planted_log_pr_ratio'])}, (b) {interval_text(m['planted_log_tail_loss_ratio'])}")
fig.tight_layout(rect=(0, 0.04, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev["substitutes"],
            verdict=ev["verdict"])
