# Shared helpers: paths, the claim/figure registry, and the command lines rules use.
# Orchestration only -- all computation is in src/ntkrepro.
import json
import os
import shlex
import sys
from pathlib import Path

from ntkrepro.io import canonical_hash
from ntkrepro.provenance import source_hash
from ntkrepro.replicates import replicate_config, replicate_dir, replicated_claims

# results_dir normalised ("results/", "./results" and "results" are one folder), so that the single-claim
# targets (results/claims/H1.json) match the rules' outputs whichever way it was written.
config["results_dir"] = os.path.normpath(config["results_dir"])
R = config["results_dir"]
SCALE = config["scale"]
# Replicates (Snakefile, ntkrepro.replicates): how many (replicate 0 = this run), and which one this
# workflow instance is (0 = the configured run; r >= 1 = module rep<r> with the derived config).
N_REPLICATES = int(config["replicates"])
REPLICATE = int(config.get("replicate_index", 0))
MAX_REPLICATES = 5  # modules rep1..rep4 are declared in the Snakefile
# Hash of the whole config (where outputs go does not count). It keys NO job: each compute job is keyed
# on the config it reads -- its section in `params.cfg` (recorded as provenance.section_hash) and the
# scale, both in its command -- so editing hron2020.H2.n_boot reruns H2's chain only (issue 32); each
# evaluation on the scale and its results files.
CONFIG_HASH = canonical_hash({k: v for k, v in config.items() if k != "results_dir"})
# What an evaluation reads from the config: the scale (its results files are its inputs).
EVALUATION_CONFIG_HASH = canonical_hash({"scale": SCALE})
# Jobs run with the interpreter running Snakemake (the project .venv); with `--sdm conda` they
# run `python` from the rule's activated conda env (envs/environment.yaml) instead.
_SDM = {str(m).lower() for m in workflow.deployment_settings.deployment_method}
PY = "python" if any("conda" in m for m in _SDM) else shlex.quote(sys.executable)
# The package source this workflow runs (hashed into every compute rule's command, see code_hash).
SRC = Path(workflow.basedir) / "src" / "ntkrepro"

# Every rule's software: the project environment (used with `--sdm conda`; otherwise .venv).
CONDA_ENV = "../../envs/environment.yaml"

# claim id -> {"paper", "results": [...], "figures": [...]}; filled by each paper's .smk file.
CLAIMS = {}
# figure name -> {"paper", "claim", "results", "caption", "params"}; see register_figure.
FIGURES = {}
# benchmark outputs (results/benchmarks/*.json) built by `snakemake benchmarks`, not by `all`.
BENCHMARKS = []


wildcard_constraints:
    claim=r"[A-Z][0-9]+",
    figure=r"[A-Za-z0-9_]+",


def validate_section(section, schema):
    """Validate config[section] against workflow/schemas/<schema>, naming the section and the key on
    error. Only a schema violation is reported as a config error; anything else (a schema file that
    cannot be read, a full disk, ...) propagates as itself."""
    import jsonschema

    try:
        validate(config[section], schema)
    except WorkflowError as err:
        bad = [
            e
            for e in (err.__cause__, err.__context__)
            if isinstance(e, jsonschema.exceptions.ValidationError)
        ]
        if not bad:
            raise
        key = ".".join(map(str, [section, *bad[0].absolute_path]))
        raise ValueError(
            f"config error at {key}: {bad[0].message} (fix it in your --configfile; the schema "
            f"is workflow/schemas/{Path(schema).name})"
        ) from None


def _as_list(paths):
    return [paths] if isinstance(paths, str) else list(paths)


def register_claim(claim, paper, results, figures):
    """Declare claim `claim`: its results files and figure names (drives ledger, report, all)."""
    CLAIMS[claim] = {
        "paper": paper,
        "results": _as_list(results),
        "figures": _as_list(figures),
    }


def register_figure(name, results, caption, params=None):
    """Declare figure results/figures/<name>.png|pdf, drawn by notebooks/<name>.py.

    `name` is <paper>_<claim>_<what>; `results` are the files the notebook reads; `caption` is the
    caption used by the LaTeX report and `snakemake --report`; `params` are extra notebook
    parameters (JSON-able).
    """
    paper, claim, _ = name.split("_", 2)
    FIGURES[name] = {
        "paper": paper,
        "claim": claim,
        "results": _as_list(results),
        "caption": caption,
        "params": dict(params or {}),
    }


def figure_paths(name):
    return {"png": f"{R}/figures/{name}.png", "pdf": f"{R}/figures/{name}.pdf"}


# claim -> its decisive evaluation (archived decisive-tier results judged now); filled by decisive.smk
DECISIVE_EVALUATIONS = {}


def ledger_targets():
    return [f"{R}/claims/{c}.json" for c in sorted(CLAIMS)]


def figure_targets():
    return [p for name in sorted(FIGURES) for p in figure_paths(name).values()]


def code_hash(*modules, files=()):
    """SHA-256 of the source of `modules` (ntkrepro module names), of every ntkrepro module they
    import (transitively; ntkrepro.provenance.module_closure) and of `files` (e.g. a notebook).

    Put into a rule's command line or params, it makes Snakemake's `code` / `params` rerun
    triggers rerun the rule -- and everything downstream -- when any of that source changes,
    and only then (Snakemake itself tracks code only for script/run/notebook rules).
    """
    return source_hash(modules, root=SRC, files=files)


def compute_cmd(function=None):
    """Shell command running library function `module:function` with `params.cfg` as parameters.

    The rule needs `output.results` (the results JSON), `params.cfg` (JSON of its config section),
    `params.extra` (from `extra_outputs(...)`, may be "") and `log`. The command carries
    `--code-hash`, the hash of the source the function's module runs (code_hash), so editing any module in
    its import closure reruns the rule; ntkrepro.run checks that the code it imports is that
    code and records the hash in the results' provenance. Every path is shell-quoted.
    A wildcarded rule serving several functions passes `function=None` and sets `params.function`
    and `params.code_hash` (from `function_code_hash`) per job instead.
    """
    fn = function or "{params.function}"
    code = function_code_hash(function) if function else "{params.code_hash}"
    return (
        f"{PY} -m ntkrepro.run {fn} --params {{params.cfg:q}} --scale {SCALE} "
        f"--code-hash {code} "
        f"--out {{output.results:q}} {{params.extra}} > {{log:q}} 2>&1"
    )


def function_code_hash(function):
    """code_hash of what `python -m ntkrepro.run module:function` runs (ntkrepro.run + the module)."""
    return code_hash("ntkrepro.run", function.partition(":")[0])


def extra_outputs(**paths):
    """`--out-extra name=path ...` for a compute rule's further outputs (read via ctx.outputs)."""
    if not paths:
        return ""
    return "--out-extra " + " ".join(shlex.quote(f"{k}={v}") for k, v in paths.items())


def replicate_entries(claim):
    """Ledger entries of replicates 1.. of `claim` when it is replicated (config replicates /
    replicate_claims; ntkrepro.replicates); none in a replicate itself."""
    if REPLICATE or claim not in replicated_claims(config, CLAIMS):
        return []
    return [
        f"{replicate_dir(R, r)}/claims/{claim}.json" for r in range(1, N_REPLICATES)
    ]


def as_json(obj):
    return json.dumps(obj, sort_keys=True)


def job_message(claim, what):
    """A rule's `message:` (the one line the terminal shows per job): the claim and its paper, what
    the job does, the scale and the replicate. `claim` and `what` may hold Snakemake placeholders
    ({wildcards.claim}, {params.x})."""
    papers = {p.claim_prefix: p for p in PAPERS.values()}
    paper = papers.get(claim[:1]) if not claim.startswith("{") else None
    first = paper.authors.split(",")[0].strip() if paper else ""
    who = (
        ""
        if not paper
        else (
            f" ({first} et al. {paper.year})"
            if first[:1].isalpha()
            else " (framework paper)"
        )
    )
    return f"{claim}{who}: {what} | scale {SCALE}, replicate {REPLICATE}"


def claim_map_rows():
    """One row per claim for the README's claim map (read by ntkrepro.claim_map in the claim_map
    job): the workflow rule that writes the claim's results (found among the workflow's rules, with its wildcards), the
    library function that rule runs, the figure names and the paper."""
    import re
    from types import SimpleNamespace

    rows = []
    for cid in sorted(CLAIMS):
        claim = CLAIMS[cid]
        producers = []
        for path in claim["results"]:
            for r in workflow.rules:
                if r.name.startswith("rep") and re.match(r"rep\d+_", r.name):
                    continue
                if r.is_producer(path):
                    wc = dict(r.get_wildcards(path))
                    fn = re.search(r"-m ntkrepro\.run (\S+)", r.shellcmd or "")
                    function = fn.group(1) if fn else ""
                    if function == "{params.function}":
                        function = r.params.function(SimpleNamespace(**wc))
                    producers.append(
                        {"rule": r.name, "wildcards": wc, "function": function}
                    )
        rows.append(
            {
                "claim": cid,
                "paper": claim["paper"],
                "producers": producers,
                "figures": claim["figures"],
            }
        )
    return rows
