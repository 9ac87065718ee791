# Hron et al. 2020: kernel convergence and CIFAR-10 NNGP/NTK benchmark, finite attention nets (H3-H5).
# Library: src/ntkrepro/hron2020/{convergence,cifar10,finite_nets}.py (+ ntkrepro.data.cifar10,
# ntkrepro.kernels.{blocks,inference}). Report: paper/sections/hron2020.tex.
# CIFAR-10 comes from data.cifar10 (offline: the subset archive in data.root, checksum-verified).
# H4's kernel blocks are cached (resumable after kill -9) under {R}/cache/kernels/hron2020_H4,
# keyed by a hash of the inputs and the architecture.
CIFAR10_DATA = {"root": config["data"]["root"], **config["data"]["cifar10"]}


def cifar10_archive_input(wildcards=None):
    """The local CIFAR-10 archive when it exists (so replacing it reruns H3-H5); a download is not an input."""
    p = Path(CIFAR10_DATA["root"]) / CIFAR10_DATA["archive"]
    return [str(p)] if p.exists() else []


# ---- H4: CIFAR-10 NNGP/NTK regression benchmark -----------------------------------------------
rule H4_hron2020_cifar10_kernels:
    """Depth/diag_reg selection on validation, test accuracies and orderings (ntkrepro.hron2020.cifar10.run_h4)."""
    input:
        cifar10_archive_input,
    output:
        results=f"{R}/hron2020/H4_cifar10_kernels.json",
        predictions=f"{R}/hron2020/H4_cifar10_kernels_predictions.npz",
    log:
        f"{R}/logs/hron2020/H4_cifar10_kernels.log",
    benchmark:
        f"{R}/benchmarks/rules/H4_hron2020_cifar10_kernels.tsv"
    params:
        cfg=as_json({**HRON["H4"], "data": CIFAR10_DATA, "cache_dir": f"{R}/cache/kernels/hron2020_H4"}),
        extra=lambda wc, output: extra_outputs(predictions=output.predictions),
    resources:
        mem_mb=8000,
        runtime=60 if SCALE != "paper" else 2880,
        gpu=1 if SCALE == "paper" else 0,
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
register_claim("H4", "hron2020", [rules.H4_hron2020_cifar10_kernels.output.results], ["hron2020_H4_cifar10_kernels"])
