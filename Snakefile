# ntkrepro: replication DAG for the NTK theory of attention and transformers.
#
#   snakemake all --profile profiles/local                               # default scale
#   snakemake all --profile profiles/local --configfile config/smoke.yaml  # CI scale
#   snakemake --profile profiles/slurm --configfile config/paper.yaml      # papers' sizes
#
# Every claim X of ../shared/CLAIMS.md has: a compute rule named <X>_<paper>_<what>, a results
# file under results/<paper>/, a figure notebook notebooks/<paper>_<X>_<what>.py, and a ledger
# entry results/claims/<X>.json; the report collects them (see README, "Finding a claim").
from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

from ntkrepro.papers import PAPERS
from ntkrepro.provenance import configfiles_missing_keys

min_version("9.0")


configfile: "config/default.yaml"


# No silent inheritance: Snakemake merges every --configfile over config/default.yaml, so a scale
# file that forgets a key would run default-scale values under its own scale's name. The files
# given with --configfile (merged in order, plus --config overrides) must set every key of
# config/default.yaml themselves; otherwise stop here and name the missing keys.
_MISSING = configfiles_missing_keys(
    workflow.config_settings.configfiles, workflow.config_settings.config, "config/default.yaml"
)
if _MISSING:
    raise WorkflowError(
        f"--configfile {' '.join(map(str, workflow.config_settings.configfiles))} does not set "
        f"{len(_MISSING)} key(s) of config/default.yaml: {', '.join(_MISSING[:40])}"
        + (" ..." if len(_MISSING) > 40 else "")
        + ". A scale file must be complete (it would otherwise silently take default-scale values): "
        "copy config/default.yaml and edit it, or list your file after a complete one "
        "(--configfile config/smoke.yaml my_overrides.yaml)."
    )
validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"


# one set of rule files per paper, from the paper registry (ntkrepro.papers.PAPERS)
for _paper in PAPERS.values():
    for _rules in _paper.rule_files:

        include: f"workflow/rules/{_rules}"


include: "workflow/rules/ledger.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/benchmarks.smk"


rule all:
    default_target: True
    input:
        ledger_targets(),
        figure_targets(),
        rules.replication_report.output.pdf,
