# The decisive tier (issue 29; ntkrepro.decisive): per claim the default hour leaves undecided, the size
# that decides it (config/decisive.yaml), computed once and archived, sealed and committed, under
# archive/decisive/<CLAIM>/cells/ (results only; provenance with commit, device, date, wall time).
#
#   snakemake decide --profile profiles/local --configfile config/decisive.yaml   # compute missing cells
#   snakemake all ...                                                            # re-judges the archive
#
# `decide`: one job per cell (e.g. A1: one seed at one width), resumable (an archived cell is not
# recomputed), SLURM-ready (mem_mb / runtime per claim). `all`: the rule decisive_evaluation applies the
# claim's CURRENT criterion to the archived cells (ntkrepro.decisive.judge); the ledger entry copies
# it into its `decisive` field, the table and report show it beside the default run. The archived cells
# are never inputs of `all` (an edit of the code must not start hours of training inside `all`): their
# sha256 are params of decisive_evaluation, so a changed or added cell re-judges. Orchestration only.
# the plan and cell records only (ntkrepro.decisive_cells): not ntkrepro.decisive, which imports the ledger
# (scipy) and would add seconds to every parse (measured 2026-12-06 on 2 cores: 4.0 s against 0.6 s; issue 40)
import re

from ntkrepro import decisive_cells as _decisive
from ntkrepro.io import sha256_file
from ntkrepro.papers import CLAIM_MODULES

# The plan: --configfile config/decisive.yaml (the overlay) or, for `all`, the committed file itself.
DECISIVE_PLAN = (
    config["decisive"]
    if "decisive" in config
    else _decisive.load_plan("config/decisive.yaml")
)
try:  # first, naming the claim and key; then each claim's scale label against its sizes (issue 39)
    _decisive.check_plan(
        DECISIVE_PLAN,
        (
            ", ".join(map(str, workflow.overwrite_configfiles or ()))
            or "config/decisive.yaml"
            if "decisive" in config
            else "config/decisive.yaml"
        ),
    )
except _decisive.ArchiveError as _err:
    raise WorkflowError(str(_err))
validate(DECISIVE_PLAN, "../schemas/decisive.schema.yaml")
DECISIVE_ARCHIVE = DECISIVE_PLAN["archive"]
_DECISIVE_RUN = {
    c: s for c, s in DECISIVE_PLAN["claims"].items() if s["status"] == "run"
}
_DECISIVE_CELLS = {
    c: {x["name"]: x for x in _decisive.cells(s)} for c, s in _DECISIVE_RUN.items()
}
# a plan key is a claim id or <CLAIM>.<name>, a later plan of the same claim (H3.dk; decisive_cells.claim_of)
_unknown = sorted(
    c for c in DECISIVE_PLAN["claims"] if _decisive.claim_of(c) not in CLAIMS
)
if _unknown:
    raise WorkflowError(
        f"config/decisive.yaml names claims {_unknown} that the workflow does not register"
    )


rule decisive_cell:
    """One cell of claim {claim}'s decisive tier (config/decisive.yaml `cell_function` on the cell's params)
    -> archive/decisive/{claim}/cells/{cell}.json, sealed by ntkrepro.run."""
    output:
        f"{DECISIVE_ARCHIVE}/{{claim}}/cells/{{cell}}.json",
    log:
        f"{R}/logs/decisive/{{claim}}_{{cell}}.log",
    benchmark:
        f"{R}/benchmarks/rules/decisive_{{claim}}_{{cell}}.tsv"
    wildcard_constraints:
        claim="|".join(map(re.escape, _DECISIVE_RUN)) or "NONE",
        cell=r"[a-z]+[0-9]+(_[a-z]+[0-9]+)*",
    message:
        "{wildcards.claim}: decisive tier, cell {wildcards.cell} at scale {params.scale} -> {output} (archived)"
    params:
        function=lambda wc: _DECISIVE_RUN[wc.claim]["cell_function"],
        cfg=lambda wc: as_json(
            _decisive.cell_params(
                _DECISIVE_RUN[wc.claim], _DECISIVE_CELLS[wc.claim][wc.cell]
            )
        ),
        config_hash=lambda wc: canonical_hash(_DECISIVE_RUN[wc.claim]["section"]),
        # scheme 1 (sources only): unchanged by issue 39's scheme 2, so no archived cell reruns for it
        code=lambda wc: _decisive.code_hash_of(_decisive.COMPUTE_CODE[wc.claim]),
        scale=lambda wc: _DECISIVE_RUN[wc.claim]["scale"],
    resources:
        mem_mb=lambda wc: _DECISIVE_RUN[wc.claim]["mem_mb"],
        runtime=lambda wc: _DECISIVE_RUN[wc.claim]["cell_runtime_min"],
    conda:
        CONDA_ENV
    shell:
        f"{PY} -m ntkrepro.run {{params.function}} --params {{params.cfg:q}} --scale decisive "
        "--config-hash {params.config_hash} --out {output:q} > {log:q} 2>&1"


rule decide:
    """Every cell of every `run` claim of config/decisive.yaml (missing ones are computed); `snakemake all`
    then re-judges the archive."""
    message:
        f"decisive tier: {sum(map(len, _DECISIVE_CELLS.values()))} cells of {', '.join(_DECISIVE_RUN) or 'no claim'}"
        + "; not run here: "
        + "; ".join(
            f"{c} ({s['status']}: {s['reason']})"
            for c, s in DECISIVE_PLAN["claims"].items()
            if s["status"] != "run"
        )
    input:
        [
            f"{DECISIVE_ARCHIVE}/{c}/cells/{n}.json"
            for c, cs in _DECISIVE_CELLS.items()
            for n in cs
        ],


rule decisive_evaluation:
    """Claim {claim}'s archived decisive cells judged by its CURRENT criterion (ntkrepro.decisive.judge):
    complete / INCOMPLETE (no verdict drawn) / STALE (not used); a hand-edited cell is refused.
    """
    message:
        "{wildcards.claim}: decisive tier, archived cells judged by the current criterion -> {output}"
        f" | scale {SCALE}, replicate {REPLICATE}"
    input:
        plan="config/decisive.yaml",
    output:
        f"{R}/claims/decisive/{{claim}}.json",
    log:
        f"{R}/logs/claims/{{claim}}.decisive.log",
    wildcard_constraints:
        claim="|".join(map(re.escape, _DECISIVE_RUN)) or "NONE",
    params:
        cells=lambda wc: {
            str(p): sha256_file(p)
            for p in _decisive.archived_cells(DECISIVE_ARCHIVE, wc.claim)
        },
        code=lambda wc: code_hash(
            "ntkrepro.decisive",
            "ntkrepro.ledger",
            CLAIM_MODULES[wc.claim[:1]],
            files=[
                SRC / CLAIMS[_decisive.claim_of(wc.claim)]["paper"] / "claims.toml"
            ],
        ),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        CONDA_ENV
    shell:
        f"{PY} -m ntkrepro.decisive judge {{wildcards.claim}} --plan {{input.plan:q}} --out {{output:q}} > {{log:q}} 2>&1"


# the ledger entry of a claim with archived cells reads the decisive evaluation of one of its plans
# (common.smk, ledger.smk): the last complete one in config order, else its own (decisive_cells.entry_plan;
# H3.dk once complete); every plan keeps its row in the tier table
for _c in CLAIMS:
    _p = _decisive.entry_plan(_c, DECISIVE_PLAN, DECISIVE_ARCHIVE)
    if _p is not None:
        DECISIVE_EVALUATIONS[_c] = f"{R}/claims/decisive/{_p}.json"
