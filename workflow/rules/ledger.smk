# Generic rules shared by every claim: the evaluation (criterion applied once), the figure notebook
# (reads results + evaluation, plots only) and the ledger entry (evaluation + figure list); so the
# chain is results -> evaluation -> figure -> entry, without a cycle.
# Each paper's .smk file registers its claims/figures with register_claim / register_figure.
# params.code (code_hash, common.smk) is the hash of the source each rule runs, so an edited
# criterion, plotting helper or ledger module reruns the rules that use it. Paths are quoted.


rule figure:
    """Execute notebooks/<paper>_<claim>_<what>.py with papermill; writes the PNG + PDF figure."""
    message:
        job_message(
            "{wildcards.claim}",
            "figure {wildcards.paper}_{wildcards.claim}_{wildcards.what} (notebook)",
        )
    input:
        results=lambda wc: FIGURES[f"{wc.paper}_{wc.claim}_{wc.what}"]["results"],
        notebook="notebooks/{paper}_{claim}_{what}.py",
        evaluation=f"{R}/claims/evaluations/{{claim}}.json",
    output:
        png=report(
            f"{R}/figures/{{paper}}_{{claim}}_{{what}}.png",
            caption="../report/figure.rst",
            category="{paper}",
            subcategory="{claim}",
        ),
        pdf=f"{R}/figures/{{paper}}_{{claim}}_{{what}}.pdf",
        meta=f"{R}/figures/{{paper}}_{{claim}}_{{what}}.json",
    log:
        notebook=f"{R}/logs/notebooks/{{paper}}_{{claim}}_{{what}}.ipynb",
        stderr=f"{R}/logs/notebooks/{{paper}}_{{claim}}_{{what}}.log",
    params:
        caption=lambda wc: FIGURES[f"{wc.paper}_{wc.claim}_{wc.what}"]["caption"],
        nb=lambda wc, input, output: as_json(
            {
                "results": list(input.results),
                "evaluation": input.evaluation,
                "png": output.png,
                "pdf": output.pdf,
                "scale": SCALE,
                **FIGURES[f"{wc.paper}_{wc.claim}_{wc.what}"]["params"],
            }
        ),
        # a function of the wildcards only: Snakemake does not record (so never compares) a param
        # computed from `input`; the notebook's own imports (ntkrepro.plotting, ...) are followed
        code=lambda wc: code_hash(
            "ntkrepro.notebooks",
            files=[f"notebooks/{wc.paper}_{wc.claim}_{wc.what}.py"],
        ),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        CONDA_ENV
    shell:
        f"{PY} -m ntkrepro.notebooks {{input.notebook:q}} {{log.notebook:q}} "
        "--params-json {params.nb:q} --meta {output.meta:q} --caption {params.caption:q} > {log.stderr:q} 2>&1"


rule claim_evaluation:
    """Apply claim {claim}'s pre-registered criterion (ntkrepro.<paper>.claims) once -> its evaluation."""
    message:
        job_message(
            "{wildcards.claim}", "criterion and negative controls -> evaluation"
        )
    input:
        results=lambda wc: CLAIMS[wc.claim]["results"],
    output:
        f"{R}/claims/evaluations/{{claim}}.json",
    log:
        f"{R}/logs/claims/{{claim}}.evaluation.log",
    params:
        scale=SCALE,
        config_hash=EVALUATION_CONFIG_HASH,  # the config an evaluation reads (the scale), not the whole config
        # the criterion lives in the paper's claims module (and the modules it imports); its text,
        # version and amendments in the paper's pre-registration claims.toml beside it
        code=lambda wc: code_hash(
            "ntkrepro.ledger",
            f"ntkrepro.{CLAIMS[wc.claim]['paper']}.claims",
            files=[SRC / CLAIMS[wc.claim]["paper"] / "claims.toml"],
        ),
    conda:
        CONDA_ENV
    shell:
        f"{PY} -m ntkrepro.ledger evaluate {{wildcards.claim}} --results {{input.results:q}} "
        "--scale {params.scale} --config-hash {params.config_hash} "
        f"--replicate {REPLICATE} --out {{output:q}} > {{log:q}} 2>&1"


rule claim_ledger_entry:
    """Claim {claim}'s ledger entry results/claims/{claim}.json: its evaluation plus its figures, with
    the verdicts of its replicates (results/replicates/r<k>/claims/{claim}.json) and `stable`.
    """
    message:
        job_message("{wildcards.claim}", "ledger entry")
    input:
        evaluation=f"{R}/claims/evaluations/{{claim}}.json",
        # a replicate (REPLICATE >= 1) draws no figures (budget); its entry says so
        figures=lambda wc: (
            []
            if REPLICATE
            else [figure_paths(f)["png"] for f in CLAIMS[wc.claim]["figures"]]
        ),
        replicates=lambda wc: replicate_entries(wc.claim),
        # the archived decisive tier judged now (decisive.smk; headline entry only)
        decisive=lambda wc: (
            []
            if REPLICATE or wc.claim not in DECISIVE_EVALUATIONS
            else [DECISIVE_EVALUATIONS[wc.claim]]
        ),
    output:
        f"{R}/claims/{{claim}}.json",
    log:
        f"{R}/logs/claims/{{claim}}.log",
    params:
        code=code_hash("ntkrepro.ledger"),
    conda:
        CONDA_ENV
    shell:
        f"{PY} -m ntkrepro.ledger entry {{wildcards.claim}} --evaluation {{input.evaluation:q}} "
        "--figures {input.figures:q} --replicate-entries {input.replicates:q} --decisive {input.decisive:q} "
        "--out {output:q} > {log:q} 2>&1"


rule claims_table:
    """Aggregate every ledger entry into the claims table (CSV, Markdown, LaTeX) + index."""
    message:
        job_message("all claims", "claims table (CSV, Markdown, LaTeX)")
    input:
        ledger_targets(),
    output:
        csv=report(
            f"{R}/claims/claims_table.csv",
            caption="../report/claims_table.rst",
            category="claims",
        ),
        md=f"{R}/claims/claims_table.md",
        details=f"{R}/claims/claims_table_details.md",
        tex=f"{R}/claims/claims_table.tex",
        index=f"{R}/claims/index.json",
    log:
        f"{R}/logs/claims/claims_table.log",
    params:
        expected=" ".join(sorted(CLAIMS)),
        replicated=lambda wc: " ".join(replicated_claims(config, CLAIMS)),
        code=code_hash("ntkrepro.ledger"),
    conda:
        CONDA_ENV
    shell:
        f"{PY} -m ntkrepro.ledger table {{input:q}} --csv {{output.csv:q}} --md {{output.md:q}} "
        "--tex {output.tex:q} --index {output.index:q} --expected {params.expected} "
        f"--replicates {N_REPLICATES} --replicated {{params.replicated}} > {{log:q}} 2>&1"


rule claim_map:
    """The README's claim map (claim -> compute rule -> library function -> criterion -> notebook ->
    report section), generated from this workflow's registry (ntkrepro.claim_map); every cell checked.
    """
    output:
        f"{R}/claims/claim_map.md",
    log:
        f"{R}/logs/claims/claim_map.log",
    message:
        "claim map of {params.n} claims -> {output}"
    params:
        rows=lambda wc: as_json(claim_map_rows()),
        n=len(CLAIMS),
        code=code_hash("ntkrepro.claim_map"),
    conda:
        CONDA_ENV
    shell:
        f"{PY} -m ntkrepro.claim_map --rows {{params.rows:q}} --out {{output:q}} > {{log:q}} 2>&1"
