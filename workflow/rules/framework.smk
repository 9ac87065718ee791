# Framework paper (seed 000), "Neural Tangent Kernels Applied to Transformers". Claims F1-F6
# (../shared/CLAIMS.md). Library: src/ntkrepro/framework/. Report: paper/sections/framework.tex.
FW = config["framework"]
validate_section("framework", "../schemas/framework.schema.yaml")


# ---- F1: closed-form NTK of linear attention Q(K^T V) vs the empirical NTK -----------------
rule F1_framework_linear_attention:
    """Closed form vs neural-tangents (fp64) and vs empirical NTKs across widths (ntkrepro.framework.linear_attention.run_f1)."""
    message:
        job_message(
            "F1",
            "closed-form linear-attention NTK vs neural-tangents and Monte Carlo (+ wrong-constant control)",
        )
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
register_claim(
    "F1",
    "framework",
    [rules.F1_framework_linear_attention.output.results],
    ["framework_F1_linear_attention"],
)


# ---- F2 (+ F6 part i): kernel regime vs width -- trained network vs its linearised model ----
rule F2_framework_kernel_regime:
    """Trained-vs-linearised gap, NTK movement and initial NTK deviation per width and seed (ntkrepro.framework.kernel_regime.run_f2)."""
    message:
        job_message("F2", "finite-width deviation from the kernel regime vs width")
    output:
        results=f"{R}/framework/F2_kernel_regime.json",
    log:
        f"{R}/logs/framework/F2_kernel_regime.log",
    benchmark:
        f"{R}/benchmarks/rules/F2_framework_kernel_regime.tsv"
    params:
        cfg=as_json(FW["F2"]),
        extra="",
    resources:
        mem_mb=6000,
        runtime=60,
        gpu=1 if SCALE == "paper" else 0,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.framework.kernel_regime:run_f2")


register_figure(
    "framework_F2_deviation",
    results=[rules.F2_framework_kernel_regime.output.results],
    caption=(
        "F2 (seed 000, Sec. 4.4-4.5.1): kernel regime vs width W for a transformer block with smooth "
        "nonlinearities (softmax attention, LayerNorm, GELU feed-forward), trained by full-batch gradient "
        "descent in NTK parameterisation. Left: relative gap between the trained network and its linearised "
        "model from the same initialisation (per seed and seed mean, fitted log-log slope with 95% bootstrap "
        "interval, the claimed W^-1 and the equivalence margin). Middle: mean squared initial NTK deviation "
        "from the infinite-width NTK and relative NTK movement during training (both O(1/W) in theory). "
        "Right: one draw's initial NTK deviation, which fluctuates as W^-1/2 (context, not the claim)."
    ),
)
register_claim(
    "F2",
    "framework",
    [rules.F2_framework_kernel_regime.output.results],
    ["framework_F2_deviation"],
)


# ---- F3: NTK eigenstructure over positions, with/without sinusoidal encodings -------------
rule F3_framework_positions:
    """Infinite-width NTK position kernels for three block variants (ntkrepro.framework.positions.run_f3)."""
    message:
        job_message(
            "F3",
            "NTK eigenspectrum over positions (+ no-attention/no-PE baselines, position-wise and shuffled-PE controls)",
        )
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
        "attention sub-layer: mean position kernels, eigenvalue spectra, the eigenvectors' spectral "
        "centroids and the kernel's profile vs distance |s-t|. Judged: (a) the low-frequency share of "
        "eigenvectors 2..k against a white vector (the leading one is near-constant for any positive "
        "kernel), (b) the off-diagonal fraction with vs without attention, (c) the distance-profile spread "
        "with vs without encodings."
    ),
)
register_claim(
    "F3", "framework", rules.F3_framework_positions.output, ["framework_F3_positions"]
)


# ---- F5: causal (GPT) vs bidirectional (BERT) NTK structure -------------------------------
rule F5_framework_masking:
    """Empirical NTK spectra and effective ranks, causal vs bidirectional (ntkrepro.framework.masking.run_f5)."""
    message:
        job_message(
            "F5", "causal vs bidirectional NTK structure (+ second bidirectional seed)"
        )
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
register_claim(
    "F5",
    "framework",
    [rules.F5_framework_masking.output.results],
    ["framework_F5_masking"],
)


# ---- F4: attention of trained blocks vs NTK eigenvectors, per sequence ---------------------
rule F4_framework_attention:
    """Train blocks per width and seed; per-sequence off-diagonal attention vs NTK-eigenvector correlation (ntkrepro.framework.training.run_f4)."""
    message:
        job_message(
            "F4",
            "attention patterns vs NTK eigenvectors, trained and untrained, vs width",
        )
    output:
        results=f"{R}/framework/F4_attention.json",
    log:
        f"{R}/logs/framework/F4_attention.log",
    benchmark:
        f"{R}/benchmarks/rules/F4_framework_attention.tsv"
    params:
        cfg=as_json(FW["F4"]),
        extra="",
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=1 if SCALE == "paper" else 0,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.framework.training:run_f4")


register_figure(
    "framework_F4_attention",
    results=[rules.F4_framework_attention.output.results],
    caption=(
        "F4 (seed 000, Sec. 4.3, 4.5.2): per test sequence, Pearson correlation over off-diagonal entries "
        "between the trained block's symmetrised head-averaged attention and the rank-k reconstruction of that "
        "sequence's infinite-width NTK position kernel, vs width (per seed mean over sequences, overall mean, "
        "fitted slope per width doubling with 95% hierarchical bootstrap interval), with the same correlation "
        "for the untrained attention; example patterns."
    ),
)
register_claim(
    "F4",
    "framework",
    [rules.F4_framework_attention.output.results],
    ["framework_F4_attention"],
)


# ---- F6: architecture variants at matched widths (+ NTK movement from the F2 runs) ----------
rule F6_framework_variants:
    """Train architecture variants at matched widths; test loss, NTK effective rank (ntkrepro.framework.training.run_f6)."""
    message:
        job_message("F6", "NTK effective rank vs scaling across variants")
    output:
        results=f"{R}/framework/F6_variants.json",
    log:
        f"{R}/logs/framework/F6_variants.log",
    benchmark:
        f"{R}/benchmarks/rules/F6_framework_variants.tsv"
    params:
        cfg=as_json(FW["F6"]),
        extra="",
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=1 if SCALE == "paper" else 0,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.framework.training:run_f6")


register_figure(
    "framework_F6_training",
    results=[
        rules.F2_framework_kernel_regime.output.results,
        rules.F6_framework_variants.output.results,
    ],
    caption=(
        "F6 (seed 000, Sec. 4.4, 4.5.3): (i) relative change of the empirical NTK during training vs width (F2 "
        "runs; fitted log-log slope, 95% bootstrap interval over seeds); (ii) architecture variants trained at "
        "matched widths: test loss vs width per variant, and each variant's NTK effective rank at the largest "
        "width against its loss-vs-width exponent (Spearman correlation across variants, exact permutation "
        "test, seed-bootstrap interval)."
    ),
)
register_claim(
    "F6",
    "framework",
    [
        rules.F2_framework_kernel_regime.output.results,
        rules.F6_framework_variants.output.results,
    ],
    ["framework_F6_training"],
)
