# ntkrepro: replication DAG for the NTK theory of attention and transformers.
#
#   snakemake all --profile profiles/local                               # default scale
#   snakemake all --profile profiles/local --configfile config/smoke.yaml  # CI scale
#   snakemake --profile profiles/slurm --configfile config/paper.yaml      # papers' sizes
#
# Every claim X of ../shared/CLAIMS.md has: a compute rule named <X>_<paper>_<what>, a results
# file under results/<paper>/, a figure notebook notebooks/<paper>_<X>_<what>.py, and a ledger
# entry results/claims/<X>.json; the report collects them (see README, "Finding a claim").
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/default.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/hron2020.smk"
include: "workflow/rules/hron2020_cifar10.smk"
include: "workflow/rules/hron2020_imdb.smk"
include: "workflow/rules/arda2026.smk"
include: "workflow/rules/hazelden2026.smk"
include: "workflow/rules/framework.smk"
include: "workflow/rules/ledger.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/benchmarks.smk"


rule all:
    default_target: True
    input:
        ledger_targets(),
        figure_targets(),
        rules.replication_report.output.pdf,
