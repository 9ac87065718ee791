# Benchmarks are not part of `all`: `snakemake benchmarks` builds every file the papers' rules
# appended to BENCHMARKS (results/benchmarks/*.json). Per-rule timings of every compute rule are
# in results/benchmarks/rules/*.tsv (Snakemake `benchmark:`).


rule benchmarks:
    input:
        BENCHMARKS,
