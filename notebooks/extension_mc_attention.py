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
# # Extension (issue 41, beyond the four papers): d^-1/2 softmax attention kernel by Monte Carlo
# Plotting only: numbers from `results/benchmarks/mc_attention.json`, computed by rule
# `mc_attention_benchmark` (`ntkrepro.hron2020.mc_benchmark`). No claim, no verdict.

# %% tags=["parameters"]
results = ["results/benchmarks/mc_attention.json"]
png = "results/benchmarks/mc_attention.png"
pdf = "results/benchmarks/mc_attention.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullFormatter

from ntkrepro.io import read_json
from ntkrepro.plotting import save_figure

res = read_json(results[0])

# %%
fig, axes = plt.subplots(1, 4, figsize=(18, 3.8))
ax = axes[0]
for i, case in enumerate(res["error_speed"]):
    n = np.array([r["samples"] for r in case["rows"]], float)
    for g, ls in (("nngp", "-"), ("ntk", "--")):
        e = np.array([r[f"{g}_relative_se_median"] for r in case["rows"]])
        ax.plot(n, e, ls, marker="o", color=f"C{i}", label=f"S={case['case']['positions']} {g.upper()}")
    ax.plot(n, e[0] * (n / n[0]) ** -0.5, ":", color="0.5", lw=1)
ax.set(xscale="log", yscale="log", xlabel="draws N", ylabel="median per-entry SE / RMS entry",
       title="error vs draws (dotted: N^-1/2)")
ax.legend(fontsize=7)
ax = axes[1]
for i, case in enumerate(res["error_speed"]):
    n = [r["samples"] for r in case["rows"]]
    ax.plot(n, [r["fraction_of_matmul_cpu"] for r in case["rows"]], marker="o", color=f"C{i}",
            label=f"S={case['case']['positions']} (CPU time)")
    ax.plot(n, [r["fraction_of_matmul"] for r in case["rows"]], marker="x", ls=":", color=f"C{i}",
            label=f"S={case['case']['positions']} (wall)")
ax.set(xscale="log", xlabel="draws N", ylabel="achieved FLOP/s / float32 matmul", title="speed")
ax.legend(fontsize=7)
ax = axes[2]
for j, (name, acc) in enumerate(res["accuracy"].items()):
    for g, mk in (("nngp", "o"), ("ntk", "s")):
        rows = acc[g]["monte_carlo"]
        n = np.array([r["samples"] for r in rows], float) * (1.04 if g == "ntk" else 1.0)
        a = np.array([r["test_accuracy"] for r in rows])
        ci = np.array([r["test_accuracy_ci"] for r in rows])
        ax.errorbar(n, a, yerr=[a - ci[:, 0], ci[:, 1] - a], marker=mk, color=f"C{j}", capsize=2, lw=1,
                    label=f"{name} {g.upper()} d^-1/2 (MC)")
        ax.axhline(acc[g]["d_inverse"]["test_accuracy"], color=f"C{j}", ls="--" if g == "nngp" else ":", lw=1,
                   label=f"{name} {g.upper()} d^-1")
ax.set(xscale="log", xlabel="draws N", ylabel="test accuracy", title="test accuracy (95% bootstrap)")
ax.legend(fontsize=6)
ax = axes[3]
for j, (name, acc) in enumerate(res["accuracy"].items()):
    for g, mk in (("nngp", "o"), ("ntk", "s")):
        rows = acc[g]["monte_carlo"]
        n = np.array([r["samples"] for r in rows], float) * (1.04 if g == "ntk" else 1.0) * (1.02 if j else 1.0)
        d = np.array([r["difference_to_d_inverse"]["value"] for r in rows])
        ci = np.array([r["difference_to_d_inverse"]["ci"] for r in rows])
        ax.errorbar(n, d, yerr=[d - ci[:, 0], ci[:, 1] - d], marker=mk, color=f"C{j}", capsize=2, lw=1,
                    ls="-" if g == "nngp" else "--",
                    label=f"{name} {g.upper()} (n_test {acc['n_test']})")
        # diagnostic: both kernels at the ridge the Monte Carlo kernel chose (hollow markers)
        same = [next((x for x in r.get("difference_to_d_inverse_at_same_diag_reg", [])
                      if x["diag_reg"] == r["diag_reg"]), None) for r in rows]
        if all(x is not None for x in same):
            d2 = np.array([x["value"] for x in same])
            ci2 = np.array([x["ci"] for x in same])
            ax.errorbar(n * 1.08, d2, yerr=[d2 - ci2[:, 0], ci2[:, 1] - d2], marker=mk, mfc="none", color=f"C{j}",
                        capsize=2, lw=0.8, ls=":", label=f"{name} {g.upper()}, same ridge")
ax.axhline(0.0, color="0.3", lw=0.8)
ax.set(xscale="log", xlabel="draws N", ylabel="accuracy difference (95% bootstrap)",
       title="MC minus d^-1, paired (hollow: same ridge)")
ax.legend(fontsize=6)
for ax in axes:
    ax.xaxis.set_minor_formatter(NullFormatter())
acc_n = sorted({r["samples"] for a in res["accuracy"].values() for r in a["nngp"]["monte_carlo"]})
for ax in axes[2:]:  # the draw counts of the accuracy sweep, labelled
    ax.set_xticks(acc_n, [str(n) for n in acc_n])
fig.suptitle("Extension beyond the papers (issue 41): softmax attention at d^-1/2, infinitely many heads, "
             "by Monte Carlo")
fig.tight_layout()
save_figure(fig, png, pdf, scale=scale, provenance=res.get("provenance"))
