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

from ntkrepro.configcheck import (
    ConfigError,
    check_scale_label,
    check_user_config,
    check_values,
)
from ntkrepro.papers import PAPERS
from ntkrepro.provenance import configfiles_missing_keys
from ntkrepro.decisive_cells import is_overlay

min_version("9.0")


# No config that silently means something else (ntkrepro.configcheck): a duplicated YAML key, an
# empty or non-mapping file, a non-finite number, replicate_index (or data.<set>.replicate) set by
# hand, braces in results_dir, an alias bomb, a seed or size out of range, sizes beyond this
# machine's memory, a scale label the sizes contradict -- refused here, naming the file and the key.
# The files are checked before `configfile:` merges them (a merge walks an alias bomb for hours).
try:
    check_user_config(
        workflow.config_settings.configfiles, workflow.config_settings.config
    )
except ConfigError as _err:
    raise WorkflowError(f"config error: {_err}") from None


configfile: "config/default.yaml"


try:
    check_values(config, "the merged config", user=False)
    check_scale_label(config, "the merged config")
except ConfigError as _err:
    raise WorkflowError(f"config error: {_err}") from None


# No silent inheritance: Snakemake merges every --configfile over config/default.yaml, so a scale
# file that forgets a key would run default-scale values under its own scale's name. The files
# given with --configfile (merged in order, plus --config overrides) must set every key of
# config/default.yaml themselves; otherwise stop here and name the missing keys.
_MISSING = configfiles_missing_keys(
    workflow.config_settings.configfiles,
    workflow.config_settings.config,
    "config/default.yaml",
)
# config/decisive.yaml is an overlay: it sets only `decisive` (the decisive tier, workflow/rules/decisive.smk),
# so it inherits no default value under another scale's name; its own schema requires every key.
if (
    _MISSING
    and is_overlay(workflow.config_settings.configfiles)
    and not workflow.config_settings.config
):
    _MISSING = []
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


if (
    not REPLICATE
):  # the decisive tier is archived once, not per replicate (ntkrepro.decisive)

    include: "workflow/rules/decisive.smk"


include: "workflow/rules/report.smk"
include: "workflow/rules/benchmarks.smk"


rule all:
    message:
        job_message(
            "all", f"{len(CLAIMS)} ledger entries, {len(FIGURES)} figures, the report"
        )
    default_target: True
    input:
        ledger_targets(),
        figure_targets(),
        rules.replication_report.output.pdf,


# ---- Replicates (issue 12; ntkrepro.replicates) -----------------------------------------------------
# Replicate r = 1 .. replicates-1 is this same workflow as a module with the derived config
# replicate_config(config, r): every seed shifted by 1_000_003 r, CIFAR-10 / IMDb draws disjoint from
# replicates 0..r-1, outputs under {results_dir}/replicates/r<r>/ (figures not drawn). Its rules are
# rep<r>_<rule>; the headline ledger entry results/claims/<ID>.json of a replicated claim
# (replicate_claims) takes results/replicates/r<r>/claims/<ID>.json as inputs (ledger.smk).
# A replicate's config has replicates: 1, so it declares no modules of its own.
replicated_claims(
    config, CLAIMS
)  # an unknown id in replicate_claims stops here, before any job
if N_REPLICATES > 1:

    module rep1:
        snakefile:
            "Snakefile"
        config:
            replicate_config(config, 1)

    use rule * from rep1 exclude all as rep1_*


if N_REPLICATES > 2:

    module rep2:
        snakefile:
            "Snakefile"
        config:
            replicate_config(config, 2)

    use rule * from rep2 exclude all as rep2_*


if N_REPLICATES > 3:

    module rep3:
        snakefile:
            "Snakefile"
        config:
            replicate_config(config, 3)

    use rule * from rep3 exclude all as rep3_*


if N_REPLICATES > 4:

    module rep4:
        snakefile:
            "Snakefile"
        config:
            replicate_config(config, 4)

    use rule * from rep4 exclude all as rep4_*
