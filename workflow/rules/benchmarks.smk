# Benchmarks are not part of `all`: `snakemake benchmarks` builds every file the papers' rules
# appended to BENCHMARKS (results/benchmarks/*.json). Per-rule timings of every compute rule are
# in results/benchmarks/rules/*.tsv (Snakemake `benchmark:`).


# ---- issue 11: the fast NNGP/NTK backend (ntkrepro.kernels.fast) vs neural-tangents ------------
rule fast_kernels_benchmark:
    """Pairs/s of neural-tangents and kernels.fast side by side on the same blocks (H4 models at
    S = 64 and 256, H6 Struct at length 128 and 500, and at L = 500 on the IMDb subset's review-length
    distribution in length-sorted blocks), FLOP/s vs dense matmul, memory per block.
    """
    message:
        job_message("benchmark", "fast kernels vs neural-tangents on the same blocks")
    input:
        H6_DATA,
    output:
        results=f"{R}/benchmarks/fast_kernels.json",
    log:
        f"{R}/logs/benchmarks/fast_kernels.log",
    params:
        cfg=as_json(
            {
                "h4_arch": HRON["H4"]["arch"],
                "h6": {
                    **{
                        k: HRON["H6"][k]
                        for k in ("filter_size", "W_pos_emb_std", "mask_constant")
                    },
                    # the review-length distribution of the real-length cases
                    "imdb": H6_IMDB,
                },
            }
        ),
        extra="",
    resources:
        mem_mb=6000,
        runtime=60,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hron2020.benchmark:run_benchmark")


BENCHMARKS.append(rules.fast_kernels_benchmark.output.results)


# ---- issue 41 (an extension beyond the four papers: no claim, no verdict) -----------------------
if "mc_attention" in HRON:

    rule mc_attention_benchmark:
        """The d^-1/2 softmax attention kernel by Monte Carlo (GlobalSelfAttention(linear_scaling=False)):
        per-entry error vs draws, entries/s and fraction of matmul, and kernel-regression test accuracy vs
        draws on CIFAR-10 and IMDb subsets beside the d^-1 kernel of the same architecture
        (ntkrepro.hron2020.mc_benchmark).
        """
        message:
            job_message(
                "benchmark",
                "Monte Carlo d^-1/2 attention kernel (extension, issue 41)",
            )
        input:
            CIFAR10_ARCHIVE_INPUT,
            H6_DATA,
        output:
            results=f"{R}/benchmarks/mc_attention.json",
        log:
            f"{R}/logs/benchmarks/mc_attention.log",
        params:
            cfg=as_json(
                {
                    **HRON["mc_attention"],
                    "h4": {**HRON["H4"], "data": CIFAR10_DATA},
                    "h6": {
                        k: H6_PARAMS[k]
                        for k in ("imdb", "glove", "filter_size", "mask_constant")
                    },
                }
            ),
            extra="",
        resources:
            mem_mb=4000,
            runtime=60,
        conda:
            CONDA_ENV
        shell:
            compute_cmd("ntkrepro.hron2020.mc_benchmark:run_mc_attention_benchmark")

    BENCHMARKS.append(rules.mc_attention_benchmark.output.results)

    rule mc_attention_figure:
        """Figure of the Monte Carlo attention benchmark (notebooks/extension_mc_attention.py; an
        extension, no claim, so no evaluation and not in the report)."""
        message:
            job_message("benchmark", "figure of the Monte Carlo attention benchmark")
        input:
            results=rules.mc_attention_benchmark.output.results,
            notebook="notebooks/extension_mc_attention.py",
        output:
            png=f"{R}/benchmarks/mc_attention.png",
            pdf=f"{R}/benchmarks/mc_attention.pdf",
            meta=f"{R}/benchmarks/mc_attention.figure.json",
        log:
            notebook=f"{R}/logs/notebooks/extension_mc_attention.ipynb",
            stderr=f"{R}/logs/notebooks/extension_mc_attention.log",
        params:
            nb=lambda wc, input, output: as_json(
                {
                    "results": [input.results],
                    "png": output.png,
                    "pdf": output.pdf,
                    "scale": SCALE,
                }
            ),
            caption="Extension beyond the four papers (issue 41): d^-1/2 softmax attention kernel by Monte Carlo.",
            code=code_hash(
                "ntkrepro.notebooks", files=["notebooks/extension_mc_attention.py"]
            ),
        resources:
            mem_mb=2000,
            runtime=10,
        conda:
            CONDA_ENV
        shell:
            f"{PY} -m ntkrepro.notebooks {{input.notebook:q}} {{log.notebook:q}} "
            "--params-json {params.nb:q} --meta {output.meta:q} --caption {params.caption:q} > {log.stderr:q} 2>&1"

    BENCHMARKS.append(rules.mc_attention_figure.output.png)


# ---- issue 11: what the paper scale costs, before submitting it -----------------------------------
import yaml

# Reads config/paper.yaml whatever --configfile this run uses: the plan is always for the papers' sizes.
with open("config/paper.yaml") as _f:
    PAPER_HRON = yaml.safe_load(_f)["hron2020"]


rule paper_scale_plan:
    """Pairs, FLOPs, peak memory, CPU and GPU hours and SLURM jobs of the H4 / H6 kernel rules at
    config/paper.yaml, from the fast backend timed at the paper's input sizes (ntkrepro.hron2020.benchmark).
    """
    message:
        job_message("benchmark", "paper-scale plan of the H4/H6 kernel rules")
    input:
        "config/paper.yaml",
    output:
        results=f"{R}/benchmarks/paper_scale_plan.json",
        markdown=f"{R}/benchmarks/paper_scale_plan.md",
    log:
        f"{R}/logs/benchmarks/paper_scale_plan.log",
    params:
        cfg=as_json(
            {
                "h4": {k: v for k, v in PAPER_HRON["H4"].items() if k != "benchmark"},
                "h6": {k: v for k, v in PAPER_HRON["H6"].items() if k != "benchmark"},
                "n": 2,
                "repeats": 2,
            }
        ),
        extra=lambda wc, output: extra_outputs(markdown=output.markdown),
    resources:
        mem_mb=8000,
        runtime=60,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hron2020.benchmark:run_paper_scale_plan")


BENCHMARKS.append(rules.paper_scale_plan.output.results)


rule benchmarks:
    message:
        job_message("benchmark", "all benchmarks")
    input:
        BENCHMARKS,
