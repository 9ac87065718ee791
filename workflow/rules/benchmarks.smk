# Benchmarks are not part of `all`: `snakemake benchmarks` builds every file the papers' rules
# appended to BENCHMARKS (results/benchmarks/*.json). Per-rule timings of every compute rule are
# in results/benchmarks/rules/*.tsv (Snakemake `benchmark:`).


# ---- issue 11: the fast NNGP/NTK backend (ntkrepro.kernels.fast) vs neural-tangents ------------
rule fast_kernels_benchmark:
    """Pairs/s of neural-tangents and kernels.fast side by side on the same blocks (H4 models at
    S = 64 and 256, H6 Struct at length 128 and 500), FLOP/s vs dense matmul, memory per block."""
    output:
        results=f"{R}/benchmarks/fast_kernels.json",
    log:
        f"{R}/logs/benchmarks/fast_kernels.log",
    params:
        cfg=as_json(
            {
                "h4_arch": HRON["H4"]["arch"],
                "h6": {k: HRON["H6"][k] for k in ("filter_size", "W_pos_emb_std", "mask_constant")},
            }
        ),
        extra="",
    resources:
        mem_mb=6000,
        runtime=60,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.kernels.fast:run_benchmark")


BENCHMARKS.append(rules.fast_kernels_benchmark.output.results)


rule benchmarks:
    input:
        BENCHMARKS,
