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
# # G4 (Hazelden et al. 2026): transformer GeNTK (all weight-site variables, partial-averaged) vs input effective dimension
# Claim source: the authors' library example (kpflow `examples/transformer_validation/main.py`) and an
# earlier version of the abstract. Plotting only: numbers from `results/hazelden2026/G4_transformer_rank.json`,
# computed by rule `G4_hazelden2026_transformer_rank` (`ntkrepro.hazelden2026.transformer.run_g4`).

# %% tags=["parameters"]
results = ["results/hazelden2026/G4_transformer_rank.json"]
evaluation = "results/claims/evaluations/G4.json"
png = "results/figures/hazelden2026_G4_transformer_rank.png"
pdf = "results/figures/hazelden2026_G4_transformer_rank.pdf"
scale = "default"

# %%
import matplotlib.pyplot as plt
import numpy as np

from ntkrepro.plotting import interval_text, load_claim_inputs, save_figure

(res,), ev = load_claim_inputs(results, evaluation)
M = ev["measured"]
dims = res["input_dims"]


def table(rows, key, by, values):
    return np.array([[u[key] for u in rows if u[by] == v] for v in values])


# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
ax = axes[0]
ex, et, eo = (table(res["rows"], k, "k", dims) for k in ("pr_input", "pr_time", "pr_out"))
ax.errorbar(ex.mean(1), et.mean(1), xerr=[ex.mean(1) - ex.min(1), ex.max(1) - ex.mean(1)],
            yerr=[et.mean(1) - et.min(1), et.max(1) - et.mean(1)], fmt="o-", capsize=3,
            label="JUDGED: all weight-site variables (3 x h0, per-head outputs, MLP hiddens), rank-k inputs")
ax.plot(ex.mean(1), eo.mean(1), "o:", color="C1", alpha=0.7, label="output-state GeNTK (reported)")
if all("pr_post_gelu" in u for u in res["rows"]):
    ax.plot(ex.mean(1), table(res["rows"], "pr_post_gelu", "k", dims).mean(1), "s:", color="C4", alpha=0.7,
            label="post-GELU MLP features (criterion v3's state; reported, not judged)")
ctl = (res.get("controls") or {}).get("time_code")
if ctl:
    cx, ct = (table(ctl["rows"], k, "k", dims) for k in ("pr_input", "pr_time"))
    ax.plot(cx.mean(1), ct.mean(1), "x-", color="C3",
            label="negative control: two sinusoidal time directions added to the input")
for k, a, b in zip(dims, ex.mean(1), et.mean(1)):
    ax.annotate(f"k={k}", (a, b), fontsize=6, xytext=(3, -8), textcoords="offset points")
allx = [ex]
fr = res.get("fourier_rows") or []
if fr:
    fx, ft = (table(fr, k, "modes", res["fourier_modes"]) for k in ("pr_input", "pr_time"))
    order = np.argsort(fx.mean(1))
    ax.plot(fx.mean(1)[order], ft.mean(1)[order], "^--", color="C2", label="Fourier-feature inputs (reported)")
    allx.append(fx)
xmax = max(float(a.max()) for a in allx) * 1.1
xx = np.linspace(0.8, xmax, 50)
ax.plot(xx, xx, ":", color="0.5", label="PR = PR(x)")
a, b = ev["figure_data"]["bound_mult"], ev["figure_data"]["bound_add"]
ax.plot(xx, a * xx + b, "k--", lw=1, label=f"bound {a:g} PR(x) + {b:g}")
ax.set(xlabel="input effective dimension PR(x) (centred covariance)",
       ylabel="GeNTK participation ratio over (sample, time)")
lo, hi = ax.get_ylim()
ax.set_ylim(lo, lo + 1.8 * (hi - lo))  # room for the legend above the curves
ax.legend(fontsize=6.5, loc="upper left")
ax = axes[1]
first = min(u["seed"] for u in res["rows"])
for i, k in enumerate(dims):
    spec = np.array([u["spectrum_time"] for u in res["rows"] if u["k"] == k and u["seed"] == first][0])
    ax.plot(np.arange(1, spec.size + 1), spec / spec[0], color=plt.get_cmap("viridis")(i / max(1, len(dims) - 1)),
            label=f"k={k}")
ax.set(yscale="log", ylim=(1e-10, 2), xlabel="index", ylabel="eigenvalue / largest",
       title="judged state's temporal GeNTK spectrum (first seed)")
ax.legend(fontsize=6, ncol=2)
e, rho = M["max_excess_over_bound"], M["spearman_prX_prTime"]
fig.suptitle(f"G4: temporal effective dimension of the GeNTK of all weight-site variables (the state the "
             f"example measures; kpflow's example architecture) vs input (T={res['params']['seq_len']}, batch "
             f"{res['params']['batch']}, {M['n_seeds']} seeds)\n"
             f"largest excess over the bound {interval_text(e)}, Spearman {interval_text(rho)}", fontsize=9)
fig.tight_layout(rect=(0, 0.06, 1, 1))
save_figure(fig, png, pdf, scale=scale, provenance=res["provenance"], substitutes=ev["substitutes"],
            verdict=ev["verdict"])
