# Generic rules shared by every claim: the figure notebook and the ledger entry.
# Each paper's .smk file registers its claims/figures with register_claim / register_figure.
# params.code (code_hash, common.smk) is the hash of the source each rule runs, so an edited
# criterion, plotting helper or ledger module reruns the rules that use it. Paths are quoted.


rule figure:
    """Execute notebooks/<paper>_<claim>_<what>.py with papermill; writes the PNG + PDF figure."""
    input:
        results=lambda wc: FIGURES[f"{wc.paper}_{wc.claim}_{wc.what}"]["results"],
        notebook="notebooks/{paper}_{claim}_{what}.py",
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
                "png": output.png,
                "pdf": output.pdf,
                "scale": SCALE,
                **FIGURES[f"{wc.paper}_{wc.claim}_{wc.what}"]["params"],
            }
        ),
        code=lambda wc, input: code_hash("ntkrepro.notebooks", files=[input.notebook]),
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        CONDA_ENV
    shell:
        f"{PY} -m ntkrepro.notebooks {{input.notebook:q}} {{log.notebook:q}} "
        "--params-json {params.nb:q} --meta {output.meta:q} --caption {params.caption:q} > {log.stderr:q} 2>&1"


rule claim_ledger_entry:
    """Apply claim {claim}'s pre-registered criterion (ntkrepro.<paper>) -> results/claims/{claim}.json,
    with the verdicts of its replicates (results/replicates/r<k>/claims/{claim}.json) and `stable`."""
    input:
        results=lambda wc: CLAIMS[wc.claim]["results"],
        # a replicate (REPLICATE >= 1) draws no figures (budget); its entry says so
        figures=lambda wc: [] if REPLICATE else [figure_paths(f)["png"] for f in CLAIMS[wc.claim]["figures"]],
        replicates=lambda wc: replicate_entries(wc.claim),
    output:
        f"{R}/claims/{{claim}}.json",
    log:
        f"{R}/logs/claims/{{claim}}.log",
    params:
        scale=SCALE,
        config_hash=CONFIG_HASH,
        # the criterion lives in the paper's claims module (and the modules it imports)
        code=lambda wc: code_hash("ntkrepro.ledger", f"ntkrepro.{CLAIMS[wc.claim]['paper']}.claims"),
    conda:
        CONDA_ENV
    shell:
        f"{PY} -m ntkrepro.ledger entry {{wildcards.claim}} --results {{input.results:q}} "
        "--figures {input.figures:q} --scale {params.scale} --config-hash {params.config_hash} "
        f"--replicate {REPLICATE} --replicate-entries {{input.replicates:q}} --out {{output:q}} > {{log:q}} 2>&1"


rule claims_table:
    """Aggregate every ledger entry into the claims table (CSV, Markdown, LaTeX) + index."""
    input:
        ledger_targets(),
    output:
        csv=report(f"{R}/claims/claims_table.csv", caption="../report/claims_table.rst", category="claims"),
        md=f"{R}/claims/claims_table.md",
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
