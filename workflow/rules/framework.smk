# Framework paper (seed 000), "Neural Tangent Kernels Applied to Transformers". Claims F1-F6
# (../shared/CLAIMS.md). Library: src/ntkrepro/framework/. Report: paper/sections/framework.tex.
FW = config["framework"]
validate_section("framework", "../schemas/framework.schema.yaml")


# ---- F1: closed-form NTK of linear attention Q(K^T V) vs the empirical NTK -----------------
rule F1_framework_linear_attention:
    """Closed form vs neural-tangents (fp64) and vs empirical NTKs across widths (ntkrepro.framework.linear_attention.run_f1)."""
    output:
        results=f"{R}/framework/F1_linear_attention.json",
    log:
        f"{R}/logs/framework/F1_linear_attention.log",
    benchmark:
        f"{R}/benchmarks/rules/F1_framework_linear_attention.tsv"
    params:
        cfg=as_json(FW["F1"]),
        extra="",
    resources:
        mem_mb=3000,
        runtime=20,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.framework.linear_attention:run_f1")


register_figure(
    "framework_F1_linear_attention",
    results=[rules.F1_framework_linear_attention.output.results],
    caption=(
        "F1 (seed 000, Sec. 4.1): relative Frobenius error between the empirical NTK of multi-head "
        "linear attention Q(K^T V) (d^-1/2 logits, fixed head size) and its closed form "
        "Theta = 4 K_ss' ||K||_F^2 vs width, per initialisation (dots), median, fitted log-log slope with "
        "95% bootstrap CI, and the error of the mean over initialisations (unbiased at every width)."
    ),
)
register_claim("F1", "framework", [rules.F1_framework_linear_attention.output.results],
               ["framework_F1_linear_attention"])


# ---- F2: finite-width deviation from the infinite-width NTK vs width ----------------------
rule F2_framework_deviation:
    """||Theta_W - Theta_inf||/||Theta_inf|| per width and seed (ntkrepro.framework.deviation.run_f2)."""
    output:
        results=f"{R}/framework/F2_deviation.json",
    log:
        f"{R}/logs/framework/F2_deviation.log",
    benchmark:
        f"{R}/benchmarks/rules/F2_framework_deviation.tsv"
    params:
        cfg=as_json(FW["F2"]),
        extra="",
    resources:
        mem_mb=8000,
        runtime=60,
        gpu=1 if SCALE == "paper" else 0,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.framework.deviation:run_f2")


register_figure(
    "framework_F2_deviation",
    results=[rules.F2_framework_deviation.output.results],
    caption=(
        "F2 (seed 000, Sec. 4.4-4.5): relative deviation of a softmax transformer block's empirical NTK "
        "from its infinite-width NTK (neural-tangents) at initialisation vs width W, per seed and median, "
        "with the fitted log-log slope (95% bootstrap CI over seeds) against the claimed W^-1 and the CLT "
        "W^-1/2 references; dashed line: the 5% 'agreement' level."
    ),
)
register_claim("F2", "framework", [rules.F2_framework_deviation.output.results], ["framework_F2_deviation"])


# ---- F3: NTK eigenstructure over positions, with/without sinusoidal encodings -------------
rule F3_framework_positions:
    """Infinite-width NTK position kernels for three block variants (ntkrepro.framework.positions.run_f3)."""
    output:
        results=f"{R}/framework/F3_positions.json",
        kernels=f"{R}/framework/F3_position_kernels.npz",
    log:
        f"{R}/logs/framework/F3_positions.log",
    benchmark:
        f"{R}/benchmarks/rules/F3_framework_positions.tsv"
    params:
        cfg=as_json(FW["F3"]),
        extra=lambda wc, output: extra_outputs(kernels=output.kernels),
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.framework.positions:run_f3")


register_figure(
    "framework_F3_positions",
    results=[rules.F3_framework_positions.output.results],
    caption=(
        "F3 (seed 000, Sec. 4.2): infinite-width NTK over positions of a softmax transformer block, "
        "averaged over Gaussian-token sequences, with and without sinusoidal encodings and without the "
        "attention sub-layer: mean position kernels, eigenvalue spectra, the leading eigenvectors and "
        "their Fourier energy, and the kernel's profile vs distance |s-t|."
    ),
)
register_claim("F3", "framework", rules.F3_framework_positions.output, ["framework_F3_positions"])


# ---- F5: causal (GPT) vs bidirectional (BERT) NTK structure -------------------------------
rule F5_framework_masking:
    """Empirical NTK spectra and effective ranks, causal vs bidirectional (ntkrepro.framework.masking.run_f5)."""
    output:
        results=f"{R}/framework/F5_masking.json",
    log:
        f"{R}/logs/framework/F5_masking.log",
    benchmark:
        f"{R}/benchmarks/rules/F5_framework_masking.tsv"
    params:
        cfg=as_json(FW["F5"]),
        extra="",
    resources:
        mem_mb=4000,
        runtime=30,
        gpu=1 if SCALE == "paper" else 0,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.framework.masking:run_f5")


register_figure(
    "framework_F5_masking",
    results=[rules.F5_framework_masking.output.results],
    caption=(
        "F5 (seed 000, Sec. 4.5): finite-width empirical NTK over positions of the same softmax block "
        "with a causal (GPT) vs bidirectional (BERT) mask and the same weights (neural-tangents has no "
        "causal infinite-width kernel), with the infinite-width bidirectional kernel for reference: mean "
        "position kernels, eigenvalue spectra, and per-(seed, sequence) effective ranks."
    ),
)
register_claim("F5", "framework", [rules.F5_framework_masking.output.results], ["framework_F5_masking"])


# ---- F4 + F6: trained finite blocks across widths ------------------------------------------
rule F6_framework_training:
    """Train blocks per width and seed; NTK change, effective rank, test loss, attention vs NTK (ntkrepro.framework.training.run_f6)."""
    output:
        results=f"{R}/framework/F6_training.json",
    log:
        f"{R}/logs/framework/F6_training.log",
    benchmark:
        f"{R}/benchmarks/rules/F6_framework_training.tsv"
    params:
        cfg=as_json(FW["F6"]),
        extra="",
    resources:
        mem_mb=6000,
        runtime=60,
        gpu=1 if SCALE == "paper" else 0,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.framework.training:run_f6")


register_figure(
    "framework_F6_training",
    results=[rules.F6_framework_training.output.results],
    caption=(
        "F6 (seed 000, Sec. 4.4-4.5): transformer blocks trained by full-batch gradient descent on a "
        "synthetic sequence task: relative change of the empirical NTK over training vs width (fitted "
        "log-log slope, 95% bootstrap CI over seeds), training curves, and test loss vs the effective rank "
        "of the NTK at initialisation (Spearman correlation with 95% CI)."
    ),
)
register_figure(
    "framework_F4_attention",
    results=[rules.F6_framework_training.output.results],
    caption=(
        "F4 (seed 000, Sec. 4.3, 4.5.2): attention pattern of the trained blocks (head- and "
        "sequence-averaged, symmetrised) vs the rank-k reconstruction of the infinite-width NTK position "
        "kernel from its leading eigenvectors: Pearson correlation vs width (per seed, median, fitted "
        "slope per width doubling with 95% bootstrap CI)."
    ),
)
register_claim("F4", "framework", [rules.F6_framework_training.output.results], ["framework_F4_attention"])
register_claim("F6", "framework", [rules.F6_framework_training.output.results], ["framework_F6_training"])
