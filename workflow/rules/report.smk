# The LaTeX replication report: one section per paper (prose in paper/sections/<paper>.tex), the
# claims table from the ledger, every figure with its caption. Built into results/paper/<name>.pdf.
REPORT = config["report"]["name"]


rule replication_report:
    """Render paper/replication_report.tex.j2 with the ledger and figures; latexmk -> PDF."""
    message:
        job_message("report", "LaTeX replication report -> {output.pdf}")
    input:
        template="paper/replication_report.tex.j2",
        sections=[f"paper/sections/{p}.tex" for p in PAPERS],
        table=rules.claims_table.output.tex,
        entries=ledger_targets(),
        figures=figure_targets(),
        captions=[f"{R}/figures/{name}.json" for name in sorted(FIGURES)],
    output:
        tex=f"{R}/paper/{REPORT}.tex",
        pdf=report(
            f"{R}/paper/{REPORT}.pdf",
            caption="../report/replication_report.rst",
            category="report",
        ),
    log:
        f"{R}/logs/paper/{REPORT}.log",
    params:
        scale=SCALE,
        code=code_hash("ntkrepro.report"),
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        CONDA_ENV
    shell:
        f"{PY} -m ntkrepro.report --template {{input.template:q}} --table {{input.table:q}} "
        "--entries {input.entries:q} --captions {input.captions:q} --scale {params.scale} "
        "--tex {output.tex:q} --pdf {output.pdf:q} > {log:q} 2>&1"


onstart:
    # Tell a user without LaTeX in the first second, not when the report rule runs an hour later.
    from ntkrepro.report import INSTALL_HINT, latex_available

    if not latex_available():
        print(
            f"WARNING: {INSTALL_HINT}\nThe report rule will fail; every other output still builds "
            "(use --keep-going).",
            file=sys.stderr,
        )
