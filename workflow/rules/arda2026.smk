# Arda, Cayci, Eryilmaz (AISTATS 2026), shallow transformers under projected GD. Claims A1-A5.
# Library: src/ntkrepro/arda2026/. Report: paper/sections/arda2026.tex.
# A1-A4: one shard job per group of (sweep point, seed group) tasks (config `jobs`; at paper scale
# jobs = #tasks, i.e. one job per task), then an aggregation rule that fits; the notebook plots.
from ntkrepro.arda2026 import forecasting as _arda_forecasting
from ntkrepro.arda2026 import scaling as _arda_scaling

ARDA = config["arda2026"]
validate_section("arda2026", "../schemas/arda2026.schema.yaml")


# claim section with the shared teacher settings (A1-A3: teacher.kind is the verdict's teacher,
# the claim's compare_kinds run beside it)
# minutes per shard job: paper-size shards train n=5000 for 4000-5000 steps on CPU
_ARDA_RUNTIME = 720 if SCALE == "paper" else 60
_arda_section = lambda claim: {**ARDA[claim], "teacher": ARDA["teacher"]}  # noqa: E731
_ARDA_SHARDS = {c: _arda_scaling.n_shards(_arda_section(c), c) for c in ("A1", "A2", "A3")}
_ARDA_SHARDS["A4"] = _arda_forecasting.n_shards(ARDA["A4"])
# the shard outputs an aggregation rule collects
_arda_shard_files = lambda claim, what: [  # noqa: E731
    f"{R}/arda2026/shards/{claim}_{what}_{k}.json" for k in range(_ARDA_SHARDS[claim])
]


# ---- A1: training loss, approximation and linearisation errors ~ m^-1/2 (Fig. 1) ----------
rule A1_arda2026_width_shard:
    """Projected GD on each of the shard's (teacher kind, seed group) units at every width (ntkrepro.arda2026.scaling.run_a1_shard)."""
    output:
        results=f"{R}/arda2026/shards/A1_width_{{shard}}.json",
    log:
        f"{R}/logs/arda2026/A1_width_{{shard}}.log",
    benchmark:
        f"{R}/benchmarks/rules/A1_arda2026_width_shard_{{shard}}.tsv"
    wildcard_constraints:
        shard=r"\d+",
    params:
        cfg=lambda wc: as_json({**_arda_section("A1"), "shard": int(wc.shard)}),
        extra="",
    resources:
        mem_mb=4000,
        runtime=_ARDA_RUNTIME,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.arda2026.scaling:run_a1_shard")


rule A1_arda2026_width_scaling:
    """Aggregate A1 shards per teacher kind: medians, mean +-95% CI, per-seed log-log slopes (ntkrepro.arda2026.scaling.aggregate_a1)."""
    input:
        _arda_shard_files("A1", "width"),
    output:
        results=f"{R}/arda2026/A1_width_scaling.json",
    log:
        f"{R}/logs/arda2026/A1_width_scaling.log",
    benchmark:
        f"{R}/benchmarks/rules/A1_arda2026_width_scaling.tsv"
    params:
        cfg=lambda wc, input: as_json({**_arda_section("A1"), "shard_files": list(input)}),
        extra="",
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.arda2026.scaling:aggregate_a1")


register_figure(
    "arda2026_A1_width_scaling",
    results=[rules.A1_arda2026_width_scaling.output.results],
    caption=(
        "A1 (Arda et al. 2026, Fig. 1), on the paper's axes: minimum training loss over the "
        "projected-GD steps, approximation error (max over the inputs of the width-m transported "
        "linear model vs the teacher) and linearisation error (worst perturbation found on the "
        "projection ball's edge) vs width m, log-log, absolute values. Top row: the authors' "
        "teacher (diagonal logits; the verdict's); bottom row: the paper's teacher (full W_k), same "
        "seeds. Medians (markers), mean +-95% CI over seeds (bands), power law fitted to the medians "
        "(dashed), per-seed slope with its 95% interval in the legend, m^-1/2 reference (dotted)."
    ),
)
register_claim("A1", "arda2026", [rules.A1_arda2026_width_scaling.output.results], ["arda2026_A1_width_scaling"])


# ---- A2: width needed for a fixed error grows like log n -----------------------------------
rule A2_arda2026_sample_size_shard:
    """Approximation error vs width and nested n for the shard's (teacher kind, seed group) units (ntkrepro.arda2026.scaling.run_a2_shard)."""
    output:
        results=f"{R}/arda2026/shards/A2_sample_size_{{shard}}.json",
    log:
        f"{R}/logs/arda2026/A2_sample_size_{{shard}}.log",
    benchmark:
        f"{R}/benchmarks/rules/A2_arda2026_sample_size_shard_{{shard}}.tsv"
    wildcard_constraints:
        shard=r"\d+",
    params:
        cfg=lambda wc: as_json({**_arda_section("A2"), "shard": int(wc.shard)}),
        extra="",
    resources:
        mem_mb=4000,
        runtime=_ARDA_RUNTIME,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.arda2026.scaling:run_a2_shard")


rule A2_arda2026_sample_size:
    """Aggregate A2 shards: m*(n) for the target error, log vs power-law fits (ntkrepro.arda2026.scaling.aggregate_a2)."""
    input:
        _arda_shard_files("A2", "sample_size"),
    output:
        results=f"{R}/arda2026/A2_sample_size.json",
    log:
        f"{R}/logs/arda2026/A2_sample_size.log",
    benchmark:
        f"{R}/benchmarks/rules/A2_arda2026_sample_size.tsv"
    params:
        cfg=lambda wc, input: as_json({**_arda_section("A2"), "shard_files": list(input)}),
        extra="",
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.arda2026.scaling:aggregate_a2")


register_figure(
    "arda2026_A2_sample_size",
    results=[rules.A2_arda2026_sample_size.output.results],
    caption=(
        "A2 (Arda et al. 2026), authors' teacher: left, approximation error (max over the first n "
        "inputs, median over teacher draws) vs width for each n with the target error; right, the "
        "width m*(n) reaching the target vs n with the fitted a log n + b and C n^p curves (exponent "
        "with 95% bootstrap interval over teacher draws)."
    ),
)
register_claim("A2", "arda2026", [rules.A2_arda2026_sample_size.output.results], ["arda2026_A2_sample_size"])


# ---- A3: optimisation error independent of T -----------------------------------------------
rule A3_arda2026_sequence_length_shard:
    """Projected GD for every student seed on the shard's (T, teacher kind, teacher group) tasks (ntkrepro.arda2026.scaling.run_a3_shard)."""
    output:
        results=f"{R}/arda2026/shards/A3_sequence_length_{{shard}}.json",
    log:
        f"{R}/logs/arda2026/A3_sequence_length_{{shard}}.log",
    benchmark:
        f"{R}/benchmarks/rules/A3_arda2026_sequence_length_shard_{{shard}}.tsv"
    wildcard_constraints:
        shard=r"\d+",
    params:
        cfg=lambda wc: as_json({**_arda_section("A3"), "shard": int(wc.shard)}),
        extra="",
    resources:
        mem_mb=4000,
        runtime=_ARDA_RUNTIME,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.arda2026.scaling:run_a3_shard")


rule A3_arda2026_sequence_length:
    """Aggregate A3 shards: loss vs T, hierarchical-bootstrap slopes over teachers and seeds (ntkrepro.arda2026.scaling.aggregate_a3)."""
    input:
        _arda_shard_files("A3", "sequence_length"),
    output:
        results=f"{R}/arda2026/A3_sequence_length.json",
    log:
        f"{R}/logs/arda2026/A3_sequence_length.log",
    benchmark:
        f"{R}/benchmarks/rules/A3_arda2026_sequence_length.tsv"
    params:
        cfg=lambda wc, input: as_json({**_arda_section("A3"), "shard_files": list(input)}),
        extra="",
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.arda2026.scaling:aggregate_a3")


register_figure(
    "arda2026_A3_sequence_length",
    results=[rules.A3_arda2026_sequence_length.output.results],
    caption=(
        "A3 (Arda et al. 2026), authors' teacher: left, absolute minimum training loss after "
        "projected GD vs sequence length T at fixed width and sample size (mean with 95% "
        "hierarchical-bootstrap CI over teacher draws and seeds; one marker per teacher draw), the "
        "initial loss (mean y^2) for reference, log-log slope with its interval (the judged "
        "quantity); right, the loss divided by the teacher's label variance (description)."
    ),
)
register_claim("A3", "arda2026", [rules.A3_arda2026_sequence_length.output.results], ["arda2026_A3_sequence_length"])


# ---- A4: lag-L forecasting, transformer vs IndRNN (Fig. 2) ---------------------------------
rule A4_arda2026_lag_forecasting_shard:
    """Both models on the shard's (L, seed group) tasks (ntkrepro.arda2026.forecasting.run_a4_shard)."""
    output:
        results=f"{R}/arda2026/shards/A4_lag_forecasting_{{shard}}.json",
    log:
        f"{R}/logs/arda2026/A4_lag_forecasting_{{shard}}.log",
    benchmark:
        f"{R}/benchmarks/rules/A4_arda2026_lag_forecasting_shard_{{shard}}.tsv"
    wildcard_constraints:
        shard=r"\d+",
    params:
        cfg=lambda wc: as_json({**ARDA["A4"], "shard": int(wc.shard)}),
        extra="",
    resources:
        mem_mb=4000,
        runtime=_ARDA_RUNTIME,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.arda2026.forecasting:run_a4_shard")


rule A4_arda2026_lag_forecasting:
    """Aggregate A4 shards: per-L summaries and slopes vs L (ntkrepro.arda2026.forecasting.aggregate_a4)."""
    input:
        _arda_shard_files("A4", "lag_forecasting"),
    output:
        results=f"{R}/arda2026/A4_lag_forecasting.json",
    log:
        f"{R}/logs/arda2026/A4_lag_forecasting.log",
    benchmark:
        f"{R}/benchmarks/rules/A4_arda2026_lag_forecasting.tsv"
    params:
        cfg=lambda wc, input: as_json({**ARDA["A4"], "shard_files": list(input)}),
        extra="",
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.arda2026.forecasting:aggregate_a4")


register_figure(
    "arda2026_A4_lag_forecasting",
    results=[rules.A4_arda2026_lag_forecasting.output.results],
    caption=(
        "A4 (Arda et al. 2026, Fig. 2): lag-L forecasting. Top, minimum validation MSE (standardised "
        "target; Bayes risk 0.19 dashed) vs lag L for the transformer and IndRNN; bottom, mean of "
        "block maxima of the gradient norm of the transformer's W and the IndRNN's recurrent u. "
        "Medians with mean +-95% CI over seeds."
    ),
)
register_claim("A4", "arda2026", [rules.A4_arda2026_lag_forecasting.output.results], ["arda2026_A4_lag_forecasting"])


# ---- A5: attention share of the NTK ---------------------------------------------------------
rule A5_arda2026_attention_share:
    """Output/value/attention parts of the empirical NTK vs width (ntkrepro.arda2026.ntk_share.run_a5)."""
    output:
        results=f"{R}/arda2026/A5_attention_share.json",
    log:
        f"{R}/logs/arda2026/A5_attention_share.log",
    benchmark:
        f"{R}/benchmarks/rules/A5_arda2026_attention_share.tsv"
    params:
        cfg=as_json(ARDA["A5"]),
        extra="",
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.arda2026.ntk_share:run_a5")


register_figure(
    "arda2026_A5_attention_share",
    results=[rules.A5_arda2026_attention_share.output.results],
    caption=(
        "A5 (Arda et al. 2026, Lemma 1): share of the output (c), value (U) and attention (W) parts "
        "in the trace of the empirical NTK at initialisation vs width (mean +-95% bootstrap CI over "
        "seeds), with the attention part's Frobenius share."
    ),
)
register_claim("A5", "arda2026", [rules.A5_arda2026_attention_share.output.results], ["arda2026_A5_attention_share"])


# ---- benchmark: projected-GD steps/s, project step vs plain PyTorch autograd (issue 13.5) ---
rule arda2026_training_throughput:
    """Projected-GD steps/s of the project step and a PyTorch-autograd step, bytes/step, bandwidth (ntkrepro.arda2026.benchmark.run_throughput)."""
    output:
        results=f"{R}/benchmarks/arda2026_training_throughput.json",
    log:
        f"{R}/logs/arda2026/training_throughput.log",
    params:
        cfg=as_json(ARDA["benchmark"]),
        extra="",
    resources:
        mem_mb=4000,
        runtime=20,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.arda2026.benchmark:run_throughput")


BENCHMARKS.append(rules.arda2026_training_throughput.output.results)
