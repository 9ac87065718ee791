# Arda, Cayci, Eryilmaz (AISTATS 2026), shallow transformers under projected GD. Claims A1-A5.
# Library: src/ntkrepro/arda2026/. Report: paper/sections/arda2026.tex.
# A1-A4: one shard job per group of (sweep point, seed group) tasks (config `jobs`; at paper scale
# jobs = #tasks, i.e. one job per task), then an aggregation rule that fits; the notebook plots.
# Both rules are wildcarded over the claim (table ntkrepro.arda2026.sweeps.SWEEPS); shard jobs get
# arda2026.shard_runtime_min minutes (paper-size shards train n=5000 for 4000-5000 steps on CPU).
from ntkrepro.arda2026 import sweeps as _arda_sweeps

ARDA = config["arda2026"]
validate_section("arda2026", "../schemas/arda2026.schema.yaml")


# Sweep claims A1-A4: one wildcarded shard rule and one aggregate rule serve them all, with
# parameters from the table ntkrepro.arda2026.sweeps.SWEEPS; the figure captions are here.
_ARDA_CAPTIONS = {
    "A1": (
        "A1 (Arda et al. 2026, Fig. 1), on the paper's axes: minimum training loss over the "
        "projected-GD steps, approximation error (max over the inputs of the width-m transported "
        "linear model vs the teacher) and linearisation error (worst perturbation found on the "
        "projection ball's edge) vs width m, log-log, absolute values. Top row: the authors' "
        "teacher (diagonal logits; the verdict's); bottom row: the paper's teacher (full W_k), same "
        "seeds. Medians (markers), mean +-95% CI over seeds (bands), power law fitted to the medians "
        "(dashed), per-seed slope with its 95% interval in the legend, m^-1/2 reference (dotted)."
    ),
    "A2": (
        "A2 (Arda et al. 2026), authors' teacher: left, approximation error (max over the first n "
        "inputs, median over teacher draws) vs width for each n with the target error; right, the "
        "width m*(n) reaching the target vs n with the fitted a log n + b and C n^p curves (exponent "
        "with 95% bootstrap interval over teacher draws)."
    ),
    "A3": (
        "A3 (Arda et al. 2026), authors' teacher. Left (judged): absolute minimum training loss after "
        "projected GD vs sequence length T at fixed width and sample size (mean with 95% "
        "hierarchical-bootstrap CI over teacher draws and seeds; one marker per teacher draw), its "
        "log-log slope with its interval (part 1), the initial loss (mean y^2) and initial loss / 2 "
        "(part 2: the trained loss must lie below it at every T). Right (reported, not judged): the "
        "loss divided by the initial loss and by the label variance, which the theorem does not bound. "
        "Both panels: the IndRNN trained on the same data, the paper's contrast (not judged)."
    ),
    "A4": (
        "A4 (Arda et al. 2026, Fig. 2): lag-L forecasting. Top, minimum validation MSE (standardised "
        "target; Bayes risk 0.19 dashed) vs lag L for the transformer and IndRNN; bottom, mean of "
        "block maxima of the gradient norm of the transformer's W and the IndRNN's recurrent u. "
        "Medians with mean +-95% CI over seeds."
    ),
}
_ARDA_SHARDS = {c: _arda_sweeps.n_shards(ARDA, c) for c in _arda_sweeps.SWEEPS}


rule arda2026_sweep_shard:
    """One shard of sweep claim {claim} (A1-A4): its cost-balanced share of the (sweep point, teacher
    kind, seed group) tasks (ntkrepro.arda2026.scaling.run_a1/2/3_shard, forecasting.run_a4_shard).
    """
    output:
        results=f"{R}/arda2026/shards/{{claim}}_{{what}}_{{shard}}.json",
    log:
        f"{R}/logs/arda2026/{{claim}}_{{what}}_{{shard}}.log",
    benchmark:
        f"{R}/benchmarks/rules/{{claim}}_arda2026_{{what}}_shard_{{shard}}.tsv"
    wildcard_constraints:
        claim="A[1-4]",
        what="[a-z_]+",
        shard=r"\d+",
    message:
        job_message(
            "{wildcards.claim} (Arda et al. 2026)",
            "shard {wildcards.shard} of {params.n_shards}: {params.size}",
        )
    params:
        function=lambda wc: _arda_sweeps.function(wc.claim, "shard"),
        code_hash=lambda wc: function_code_hash(
            _arda_sweeps.function(wc.claim, "shard")
        ),
        cfg=lambda wc: as_json(
            {**_arda_sweeps.section(ARDA, wc.claim), "shard": int(wc.shard)}
        ),
        n_shards=lambda wc: _ARDA_SHARDS[wc.claim],
        size=lambda wc: _arda_sweeps.size_text(ARDA, wc.claim),
        extra="",
    resources:
        mem_mb=4000,
        runtime=ARDA["shard_runtime_min"],
    conda:
        CONDA_ENV
    shell:
        compute_cmd()


rule arda2026_sweep_aggregate:
    """Aggregate the shards of sweep claim {claim} (A1-A4) into its results file: medians, intervals,
    fits (ntkrepro.arda2026.scaling.aggregate_a1/2/3, forecasting.aggregate_a4)."""
    input:
        lambda wc: _arda_sweeps.shard_files(R, ARDA, wc.claim),
    output:
        results=f"{R}/arda2026/{{claim}}_{{name}}.json",
    log:
        f"{R}/logs/arda2026/{{claim}}_{{name}}.log",
    benchmark:
        f"{R}/benchmarks/rules/{{claim}}_arda2026_{{name}}.tsv"
    wildcard_constraints:
        claim="A[1-4]",
        name="[a-z_]+",
    message:
        job_message(
            "{wildcards.claim} (Arda et al. 2026)",
            "aggregate {params.n_shards} shard(s): {params.size}",
        )
    params:
        function=lambda wc: _arda_sweeps.function(wc.claim, "aggregate"),
        code_hash=lambda wc: function_code_hash(
            _arda_sweeps.function(wc.claim, "aggregate")
        ),
        cfg=lambda wc, input: as_json(
            {**_arda_sweeps.section(ARDA, wc.claim), "shard_files": list(input)}
        ),
        n_shards=lambda wc: _ARDA_SHARDS[wc.claim],
        size=lambda wc: _arda_sweeps.size_text(ARDA, wc.claim),
        extra="",
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        CONDA_ENV
    shell:
        compute_cmd()


for _claim, _sweep in _arda_sweeps.SWEEPS.items():
    _results = f"{R}/arda2026/{_claim}_{_sweep['name']}.json"
    _figure = f"arda2026_{_claim}_{_sweep['name']}"
    register_figure(_figure, results=[_results], caption=_ARDA_CAPTIONS[_claim])
    register_claim(_claim, "arda2026", [_results], [_figure])


# ---- A5: attention share of the NTK ---------------------------------------------------------
rule A5_arda2026_attention_share:
    """Output/value/attention parts of the empirical NTK vs width (ntkrepro.arda2026.ntk_share.run_a5)."""
    message:
        job_message("A5", "empirical NTK parts (output/value/attention) vs width")
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
register_claim(
    "A5",
    "arda2026",
    [rules.A5_arda2026_attention_share.output.results],
    ["arda2026_A5_attention_share"],
)


# ---- benchmark: projected-GD steps/s, project step vs plain PyTorch autograd (issue 13.5) ---
rule arda2026_training_throughput:
    """Projected-GD steps/s of the project step and a PyTorch-autograd step, bytes/step, bandwidth (ntkrepro.arda2026.benchmark.run_throughput)."""
    message:
        job_message("benchmark", "Arda et al. projected-GD steps/s vs PyTorch autograd")
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
