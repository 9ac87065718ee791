# Hron et al. 2020: kernel convergence and CIFAR-10 NNGP/NTK benchmark, finite attention nets (H3-H5).
# Library: src/ntkrepro/hron2020/{convergence,cifar10,finite_nets}.py (+ ntkrepro.data.cifar10,
# ntkrepro.kernels.{blocks,inference}). Report: paper/sections/hron2020.tex.
# CIFAR-10 comes from data.cifar10 (offline: the subset archive in data.root, checksum-verified).
# H4's kernel blocks are cached (resumable after kill -9) under {R}/cache/kernels/hron2020_H4,
# keyed by a hash of the inputs and the architecture.
CIFAR10_DATA = {"root": config["data"]["root"], **config["data"]["cifar10"]}


# The local archive, when it exists, is an input (replacing it reruns H3-H5); a download is not.
CIFAR10_ARCHIVE_INPUT = [
    str(p) for p in [Path(CIFAR10_DATA["root"]) / CIFAR10_DATA["archive"]] if p.exists()
]


# ---- H3: empirical kernels of finite attention nets -> analytic NNGP/NTK ------------------------
rule H3_hron2020_kernel_convergence:
    """Monte Carlo empirical NNGP/NTK vs neural-tangents' analytic kernels over widths (ntkrepro.hron2020.convergence.run_h3)."""
    message:
        job_message(
            "H3",
            "empirical vs analytic NNGP/NTK vs width (+ control: analytic kernels 3 % off)",
        )
    input:
        CIFAR10_ARCHIVE_INPUT,
    output:
        results=f"{R}/hron2020/H3_kernel_convergence.json",
    log:
        f"{R}/logs/hron2020/H3_kernel_convergence.log",
    benchmark:
        f"{R}/benchmarks/rules/H3_hron2020_kernel_convergence.tsv"
    params:
        cfg=as_json({**HRON["H3"], "data": CIFAR10_DATA}),
        extra="",
    resources:
        mem_mb=4000,
        runtime=60,
        gpu=1 if SCALE == "paper" else 0,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hron2020.convergence:run_h3")


register_figure(
    "hron2020_H3_kernel_convergence",
    results=[rules.H3_hron2020_kernel_convergence.output.results],
    caption=(
        "H3 (Hron et al. 2020, App. A): relative Frobenius distance between the Monte Carlo "
        "empirical NNGP / NTK of finite conv -> attention (d^-1, tied Q/K) -> GAP networks and "
        "neural-tangents' analytic kernels on CIFAR-10 training images, vs width (heads grow with "
        "width), log-log; points are replicate medians with 95% bootstrap intervals, dashed lines "
        "the fitted slopes (the criterion judges each slope against -1/4); green: the same estimates "
        "against a limit 3 % off (the negative control) and that limit's offset."
    ),
)
register_claim(
    "H3",
    "hron2020",
    [rules.H3_hron2020_kernel_convergence.output.results],
    ["hron2020_H3_kernel_convergence"],
)


# ---- H4: CIFAR-10 NNGP/NTK regression benchmark -----------------------------------------------
# H4's config minus keys that do not change its results (the benchmark, the fan-out).
H4_CFG = {k: v for k, v in HRON["H4"].items() if k not in ("benchmark", "n_shards")}
H4_CFG.update(data=CIFAR10_DATA, cache_dir=f"{R}/cache/kernels/hron2020_H4")
# Paper scale: n_shards > 0 fans every kernel block H4 can need out over n_shards jobs (a cluster
# runs them in parallel into the shared block cache); the H4 rule then only assembles the kernels.
H4_SHARDS = int(HRON["H4"].get("n_shards", 0))


rule H4_hron2020_kernel_shard:
    """One shard of H4's kernel blocks, cached for the H4 rule (ntkrepro.hron2020.cifar10.run_h4_shard)."""
    message:
        job_message("H4", f"CIFAR-10 kernel shard {{wildcards.shard}} of {H4_SHARDS}")
    input:
        CIFAR10_ARCHIVE_INPUT,
    output:
        results=f"{R}/hron2020/H4_kernel_shards/shard_{{shard}}.json",
    log:
        f"{R}/logs/hron2020/H4_kernel_shards/shard_{{shard}}.log",
    benchmark:
        f"{R}/benchmarks/rules/H4_hron2020_kernel_shard_{{shard}}.tsv"
    wildcard_constraints:
        shard=r"\d+",
    params:
        cfg=lambda wc: as_json(
            {**H4_CFG, "shard": int(wc.shard), "n_shards": H4_SHARDS}
        ),
        extra="",
    resources:
        mem_mb=8000 if SCALE != "paper" else 32000,
        runtime=60 if SCALE != "paper" else 720,
        gpu=1 if SCALE == "paper" else 0,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hron2020.cifar10:run_h4_shard")


rule H4_hron2020_cifar10_kernels:
    """Depth/diag_reg selection on validation, test accuracies and orderings (ntkrepro.hron2020.cifar10.run_h4)."""
    message:
        job_message(
            "H4",
            "CIFAR-10 kernel regression, all families (+ permuted-label and two-draws ordering controls)",
        )
    input:
        CIFAR10_ARCHIVE_INPUT,
        expand(
            f"{R}/hron2020/H4_kernel_shards/shard_{{shard}}.json",
            shard=range(H4_SHARDS),
        ),
    output:
        results=f"{R}/hron2020/H4_cifar10_kernels.json",
        predictions=f"{R}/hron2020/H4_cifar10_kernels_predictions.npz",
    log:
        f"{R}/logs/hron2020/H4_cifar10_kernels.log",
    benchmark:
        f"{R}/benchmarks/rules/H4_hron2020_cifar10_kernels.tsv"
    params:
        cfg=as_json(H4_CFG),
        extra=lambda wc, output: extra_outputs(predictions=output.predictions),
    resources:
        mem_mb=8000 if SCALE != "paper" else 128000,  # paper: 50K x 50K kernels (10 GB each in fp32)
        runtime=60 if SCALE != "paper" else 2880,
        gpu=1 if SCALE == "paper" else 0,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hron2020.cifar10:run_h4")


register_figure(
    "hron2020_H4_cifar10_kernels",
    results=[rules.H4_hron2020_cifar10_kernels.output.results],
    caption=(
        "H4 (Hron et al. 2020, Sec. 5): CIFAR-10 test accuracy of closed-form NNGP and NTK "
        "regression for Flatten, GAP, LAP and the Vanilla, Struct and Residual attention kernels, "
        "each at its validation-selected preceding depth and diagonal regulariser, with 95% "
        "bootstrap intervals (left); validation accuracy vs preceding depth (middle); paired "
        "bootstrap intervals of the accuracy differences the paper's orderings state (right)."
    ),
)
register_claim(
    "H4",
    "hron2020",
    [rules.H4_hron2020_cifar10_kernels.output.results],
    ["hron2020_H4_cifar10_kernels"],
)


# ---- H5: finite attention networks (flax + optax) ---------------------------------------------
rule H5_hron2020_finite_attention:
    """Train softmax/ReLU/identity attention x LayerNorm placements, several seeds (ntkrepro.hron2020.finite_nets.run_h5)."""
    message:
        job_message(
            "H5", "finite attention nets on CIFAR-10 (+ permuted-label control)"
        )
    input:
        CIFAR10_ARCHIVE_INPUT,
    output:
        results=f"{R}/hron2020/H5_finite_attention.json",
    log:
        f"{R}/logs/hron2020/H5_finite_attention.log",
    benchmark:
        f"{R}/benchmarks/rules/H5_hron2020_finite_attention.tsv"
    params:
        cfg=as_json({**HRON["H5"], "data": CIFAR10_DATA}),
        extra="",
    resources:
        mem_mb=4000,
        runtime=60 if SCALE != "paper" else 2880,
        gpu=1 if SCALE == "paper" else 0,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hron2020.finite_nets:run_h5")


register_figure(
    "hron2020_H5_finite_attention",
    results=[rules.H5_hron2020_finite_attention.output.results],
    caption=(
        "H5 (Hron et al. 2020, Fig. 3): validation accuracy of finite d^-1/2 attention networks "
        "with positional encodings appended, trained with Adam, for softmax / ReLU / identity "
        "attention and no LayerNorm / LayerNorm per head / LayerNorm after the output projection; "
        "one dot per seed, bars = seed means."
    ),
)
register_claim(
    "H5",
    "hron2020",
    [rules.H5_hron2020_finite_attention.output.results],
    ["hron2020_H5_finite_attention"],
)


# ---- benchmark (not part of `all`): CIFAR-10 kernel throughput vs dense matmul ------------------
rule H4_hron2020_kernel_throughput:
    """Pairs/s and FLOP/s of the GAP / Struct kernels, neural-tangents and the fast backend, vs this
    machine's matmul FLOP/s (ntkrepro.hron2020.benchmark)."""
    message:
        job_message("benchmark", "H4 kernel throughput, both backends")
    input:
        CIFAR10_ARCHIVE_INPUT,
    output:
        results=f"{R}/benchmarks/hron2020_kernel_throughput.json",
    log:
        f"{R}/logs/benchmarks/hron2020_kernel_throughput.log",
    params:
        cfg=as_json({**HRON["H4"], "data": CIFAR10_DATA}),
        extra="",
    resources:
        mem_mb=4000,
        runtime=30,
        gpu=1 if SCALE == "paper" else 0,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hron2020.benchmark:run_cifar10_kernel_throughput")


BENCHMARKS.append(rules.H4_hron2020_kernel_throughput.output.results)
