# Hron, Bahri, Sohl-Dickstein, Novak (ICML 2020), "Infinite attention", arXiv:2006.10540.
# Claims H1-H6 (../shared/CLAIMS.md). Library: src/ntkrepro/hron2020/. Report: paper/sections/hron2020.tex.
HRON = config["hron2020"]
validate_section("hron2020", "../schemas/hron2020.schema.yaml")


# ---- H1: single-head attention is non-Gaussian at init, many heads Gaussian (Fig. 1) --------
rule H1_hron2020_gaussianity:
    """Draw d^-1/2 attention outputs at init over weights for each head count (ntkrepro.hron2020.gaussianity.run_h1)."""
    message:
        job_message(
            "H1",
            "attention outputs at init vs heads (+ Gaussian and shared-heads controls)",
        )
    output:
        results=f"{R}/hron2020/H1_gaussianity.json",
        samples=f"{R}/hron2020/H1_gaussianity_samples.npz",
    log:
        f"{R}/logs/hron2020/H1_gaussianity.log",
    benchmark:
        f"{R}/benchmarks/rules/H1_hron2020_gaussianity.tsv"
    params:
        cfg=as_json(HRON["H1"]),
        extra=lambda wc, output: extra_outputs(samples=output.samples),
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hron2020.gaussianity:run_h1")


register_figure(
    "hron2020_H1_gaussianity",
    results=rules.H1_hron2020_gaussianity.output,
    caption=(
        "H1 (Hron et al. 2020, Fig. 1): output of a d^-1/2 softmax attention layer at "
        "initialisation over independent weight draws, for 1 head and for the largest head count, "
        "against the Gaussian of equal variance (histograms, QQ plots); excess kurtosis and KS "
        "distance vs number of heads with 95% bootstrap intervals and the KS 95% null level."
    ),
)
register_claim(
    "H1",
    "hron2020",
    rules.H1_hron2020_gaussianity.output.results,
    ["hron2020_H1_gaussianity"],
)


# ---- H2: d^-1 scaling collapses attention to global average pooling (Sec. 3) --------------
rule H2_hron2020_average_pooling:
    """Attention-weight spread and attention-vs-GAP NNGP distance vs d (ntkrepro.hron2020.average_pooling.run_h2)."""
    message:
        job_message(
            "H2", "attention spread and NNGP distance to GAP vs d (+ d^-1/2 control)"
        )
    output:
        results=f"{R}/hron2020/H2_average_pooling.json",
    log:
        f"{R}/logs/hron2020/H2_average_pooling.log",
    benchmark:
        f"{R}/benchmarks/rules/H2_hron2020_average_pooling.tsv"
    params:
        cfg=as_json(HRON["H2"]),
        extra="",
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hron2020.average_pooling:run_h2")


register_figure(
    "hron2020_H2_average_pooling",
    results=[rules.H2_hron2020_average_pooling.output.results],
    caption=(
        "H2 (Hron et al. 2020, Sec. 3): under d^-1 logit scaling with independent query/key "
        "weights, the spread of attention weights around uniform (left) and the relative "
        "distance between the attention network's NNGP and the global-average-pooling network's "
        "NNGP (neural-tangents) (right) both shrink as d grows; fitted log-log slopes with 95% CIs."
    ),
)
register_claim(
    "H2",
    "hron2020",
    [rules.H2_hron2020_average_pooling.output.results],
    ["hron2020_H2_average_pooling"],
)
