# Generic rules shared by every claim: the figure notebook and the ledger entry.
# Each paper's .smk file registers its claims/figures with register_claim / register_figure.


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
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        CONDA_ENV
    shell:
        f"{PY} -m ntkrepro.notebooks {{input.notebook}} {{log.notebook}} "
        "--params-json {params.nb:q} --meta {output.meta} --caption {params.caption:q} > {log.stderr} 2>&1"


rule claim_ledger_entry:
    """Apply claim {claim}'s pre-registered criterion (ntkrepro.<paper>) -> results/claims/{claim}.json."""
    input:
        results=lambda wc: CLAIMS[wc.claim]["results"],
        figures=lambda wc: [figure_paths(f)["png"] for f in CLAIMS[wc.claim]["figures"]],
    output:
        f"{R}/claims/{{claim}}.json",
    log:
        f"{R}/logs/claims/{{claim}}.log",
    params:
        scale=SCALE,
        config_hash=CONFIG_HASH,
    conda:
        CONDA_ENV
    shell:
        f"{PY} -m ntkrepro.ledger entry {{wildcards.claim}} --results {{input.results}} "
        "--figures {input.figures} --scale {params.scale} --config-hash {params.config_hash} "
        "--out {output} > {log} 2>&1"


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
    conda:
        CONDA_ENV
    shell:
        f"{PY} -m ntkrepro.ledger table {{input}} --csv {{output.csv}} --md {{output.md}} "
        "--tex {output.tex} --index {output.index} --expected {params.expected} > {log} 2>&1"
