# Hron et al. 2020: IMDb with GloVe, variable-length attention kernels (H6).
# Library: src/ntkrepro/hron2020/imdb.py (+ ntkrepro.data.{imdb,text,glove}). Report: paper/sections/hron2020.tex.
# Kernel blocks are cached (resumable) under {R}/cache/kernels/hron2020_H6, keyed by the inputs' hash.
H6_IMDB = dict(config["data"]["imdb"])
if H6_IMDB.get("archive") and not Path(H6_IMDB["archive"]).is_absolute():
    # a relative archive path is relative to data.root (as for the other archives)
    H6_IMDB["archive"] = str(Path(config["data"].get("root", ".")) / H6_IMDB["archive"])
H6_PARAMS = {
    **HRON["H6"],
    "imdb": H6_IMDB,
    "glove": config["data"].get("glove", {"source": "wheel", "dim": 50}),
    "cache_dir": f"{R}/cache/kernels/hron2020_H6",
}


# the local IMDb archive (and GloVe file), when configured, so that replacing them reruns H6
H6_DATA = ([H6_IMDB["archive"]] if H6_IMDB.get("archive") else []) + (
    [H6_PARAMS["glove"]["path"]]
    if H6_PARAMS["glove"].get("source") == "zip" and H6_PARAMS["glove"].get("path")
    else []
)


rule H6_hron2020_imdb:
    """IMDb + GloVe NNGP/NTK regression for GAP-only, GAP-FCN, CNN-GAP, Struct (ntkrepro.hron2020.imdb.run_h6)."""
    message:
        job_message(
            "H6",
            "IMDb kernel regression, all families (+ permuted-label and two-draws ordering controls)",
        )
    input:
        H6_DATA,
    output:
        results=f"{R}/hron2020/H6_imdb.json",
        table=f"{R}/hron2020/H6_imdb_table.csv",
    log:
        f"{R}/logs/hron2020/H6_imdb.log",
    benchmark:
        f"{R}/benchmarks/rules/H6_hron2020_imdb.tsv"
    params:
        cfg=as_json(H6_PARAMS),
        extra=lambda wc, output: extra_outputs(table=output.table),
    resources:
        mem_mb=64000 if SCALE == "paper" else 8000,
        runtime=2880 if SCALE == "paper" else 60,
        gpu=1 if SCALE == "paper" else 0,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hron2020.imdb:run_h6")


register_figure(
    "hron2020_H6_imdb",
    results=[rules.H6_hron2020_imdb.output.results],
    caption=(
        "H6 (Hron et al. 2020, IMDb): test accuracy of NNGP/NTK regression on GloVe 6B 50-d "
        "inputs with padding masked (neural-tangents mask_constant), per model family (each at its "
        "validation-selected depth, kernel and diag_reg), with 95% bootstrap intervals and the "
        "97.4% state of the art (left); validation accuracy of every depth and kernel (right)."
    ),
)
register_claim(
    "H6", "hron2020", [rules.H6_hron2020_imdb.output.results], ["hron2020_H6_imdb"]
)


rule H6_hron2020_imdb_kernel_throughput:
    """Struct (1 attention layer) kernel pairs/s at the paper's length 500 on real reviews."""
    message:
        job_message("benchmark", "H6 IMDb kernel throughput")
    input:
        H6_DATA,
    output:
        results=f"{R}/benchmarks/hron2020_imdb_kernel_throughput.json",
    log:
        f"{R}/logs/benchmarks/hron2020_imdb_kernel_throughput.log",
    params:
        cfg=as_json(H6_PARAMS),
        extra="",
    resources:
        mem_mb=8000,
        runtime=30,
        gpu=1 if SCALE == "paper" else 0,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hron2020.imdb:run_imdb_kernel_throughput")


BENCHMARKS.append(rules.H6_hron2020_imdb_kernel_throughput.output.results)
