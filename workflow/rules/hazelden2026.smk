# Hazelden, Driscoll, Shlizerman, Shea-Brown (TMLR 2026), "The Global Empirical NTK", arXiv:2605.08746.
# Claims G1-G4 (../shared/CLAIMS.md). Library: src/ntkrepro/hazelden2026/. Report: paper/sections/hazelden2026.tex.
HAZ = config["hazelden2026"]
validate_section("hazelden2026", "../schemas/hazelden2026.schema.yaml")


# ---- G1: Kronecker core, forward pass vs autodiff, self-attention transformer ---------------
rule G1_hazelden2026_kronecker_transformer:
    """Per-site forward-pass vs autodiff Kronecker core, fp64 + fp32 (ntkrepro.hazelden2026.transformer.run_g1)."""
    message:
        job_message(
            "G1",
            "Kronecker core vs autodiff, self-attention transformer (+ bias-dropped control)",
        )
    output:
        results=f"{R}/hazelden2026/G1_kronecker_transformer.json",
    log:
        f"{R}/logs/hazelden2026/G1_kronecker_transformer.log",
    benchmark:
        f"{R}/benchmarks/rules/G1_hazelden2026_kronecker_transformer.tsv"
    params:
        cfg=as_json(HAZ["G1"]),
        extra="",
    resources:
        mem_mb=3000,
        runtime=20,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hazelden2026.transformer:run_g1")


register_figure(
    "hazelden2026_G1_kronecker_transformer",
    results=[rules.G1_hazelden2026_kronecker_transformer.output.results],
    caption=(
        "G1 (Hazelden et al. 2026): relative Frobenius error between the Kronecker core computed "
        "from forward-pass weight-site variables, ([V,1][V,1]^T) (x) I, and the core computed by "
        "autodiff, J J^T, at every weight site of the self-attention transformer (d_model 64, 1 head, "
        "MLP 128, 3 layers, T=50), in float64 and float32, against the tolerances 1e-10 and 1e-5 "
        "(errors of exactly 0 are drawn at the axis floor)."
    ),
)
register_claim(
    "G1",
    "hazelden2026",
    [rules.G1_hazelden2026_kronecker_transformer.output.results],
    ["hazelden2026_G1_kronecker_transformer"],
)


# ---- G2: same on Pythia-410M (GPTNeoX), every site of every layer -----------------------------
rule G2_hazelden2026_kronecker_pythia:
    """Per-layer forward-pass vs autodiff Kronecker core on GPTNeoX (ntkrepro.hazelden2026.pythia.run_g2)."""
    message:
        job_message(
            "G2",
            "Kronecker core vs autodiff, Pythia-410M layers (+ bias-dropped control)",
        )
    output:
        results=f"{R}/hazelden2026/G2_kronecker_pythia.json",
    log:
        f"{R}/logs/hazelden2026/G2_kronecker_pythia.log",
    benchmark:
        f"{R}/benchmarks/rules/G2_hazelden2026_kronecker_pythia.tsv"
    params:
        cfg=as_json(HAZ["G2"]),
        extra="",
    resources:
        mem_mb=6000,
        runtime=30,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hazelden2026.pythia:run_g2")


register_figure(
    "hazelden2026_G2_kronecker_pythia",
    results=[rules.G2_hazelden2026_kronecker_pythia.output.results],
    caption=(
        "G2 (Hazelden et al. 2026): per-layer relative error (float32) between the forward-pass "
        "Kronecker core and the autodiff core for the four weight sites of every GPTNeoX layer "
        "(QKV, attention dense, MLP in, MLP out), on a block of token positions x output units of a "
        "short random token sequence; tolerance 1e-5. The panel title says whether the weights "
        "were pretrained or randomly initialised."
    ),
)
register_claim(
    "G2",
    "hazelden2026",
    [rules.G2_hazelden2026_kronecker_pythia.output.results],
    ["hazelden2026_G2_kronecker_pythia"],
)


# ---- G3: RNN/GRU GeNTK effective dimension at init over an initial-scale sweep, and learning ---
rule G3_hazelden2026_rnn_spectra:
    """GeNTK participation ratio / entropy rank at init per initial scale + GD loss ratios (ntkrepro.hazelden2026.rnn.run_g3)."""
    message:
        job_message("G3", "RNN/GRU GeNTK spectra vs initial scale")
    output:
        results=f"{R}/hazelden2026/G3_rnn_spectra.json",
    log:
        f"{R}/logs/hazelden2026/G3_rnn_spectra.log",
    benchmark:
        f"{R}/benchmarks/rules/G3_hazelden2026_rnn_spectra.tsv"
    params:
        cfg=as_json(HAZ["G3"]),
        extra="",
    resources:
        mem_mb=3000,
        runtime=30,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hazelden2026.rnn:run_g3")


register_figure(
    "hazelden2026_G3_rnn_spectra",
    results=[rules.G3_hazelden2026_rnn_spectra.output.results],
    caption=(
        "G3 (Hazelden et al. 2026): RNN and GRU on the flip-flop task over a log-spaced sweep of the "
        "initial scale g of the recurrent weights (several seeds). Left: GeNTK eigenvalue spectra at "
        "initialisation (first seed). Middle: participation ratio of the GeNTK over its dimension "
        "(seed mean and range) against g, with kpflow's partial-averaged spatial and temporal "
        "operators and the pre-registered low-rank level (half the participation ratio at g = 1). Right: "
        "training loss over the initial loss (first seed). Bottom: initial participation ratio against the "
        "loss ratio after training, every run, with the within-model Spearman correlation over distinct "
        "runs and its 95% interval (bootstrap over seeds)."
    ),
)


# ---- G3's judged test (criterion v8): kpflow's planted-fixed-point comparison -------------------
rule G3_hazelden2026_planted:
    """GeNTK participation ratio at init and SGD loss curves of a rate RNN with 0 vs 5 planted fixed points on memory-pro (ntkrepro.hazelden2026.planted.run_planted)."""
    message:
        job_message(
            "G3", "planted fixed points vs none: GeNTK rank at init and SGD learning"
        )
    output:
        results=f"{R}/hazelden2026/G3_planted_fixed_points.json",
    log:
        f"{R}/logs/hazelden2026/G3_planted_fixed_points.log",
    benchmark:
        f"{R}/benchmarks/rules/G3_hazelden2026_planted.tsv"
    params:
        cfg=as_json(HAZ["G3_planted"]),
        extra="",
    resources:
        mem_mb=3000,
        runtime=30,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hazelden2026.planted:run_planted")


register_figure(
    "hazelden2026_G3_planted_fixed_points",
    results=[rules.G3_hazelden2026_planted.output.results],
    caption=(
        "G3 (Hazelden et al. 2026), the judged test: the authors' planted-fixed-point comparison (kpflow "
        "examples/mem_pro_init_example) at the sizes of this run. A rate RNN on memory-pro, per seed one "
        "initialisation without and with planted fixed points, a norm-matched random perturbation (reported) "
        "and a second unplanted draw (the negative control). Left: GeNTK participation ratio at "
        "initialisation per arm and seed. Middle: minibatch-SGD batch loss, mean over seeds per arm. Right: "
        "seed-paired log ratios to the unplanted draw with their 95% t-intervals: (a) participation ratio "
        "(the claim: below 0), (b) tail loss (the claim: above log 1.1, a tail loss 10% above the base draw's)."
    ),
)
register_claim(
    "G3",
    "hazelden2026",
    [
        rules.G3_hazelden2026_planted.output.results,
        rules.G3_hazelden2026_rnn_spectra.output.results,
    ],
    ["hazelden2026_G3_planted_fixed_points", "hazelden2026_G3_rnn_spectra"],
)


# ---- G4: transformer GeNTK (all weight-site variables, partial-averaged) rank vs input effective dimension
rule G4_hazelden2026_transformer_rank:
    """Participation ratio of the GeNTK of all weight-site variables vs input effective dimension (ntkrepro.hazelden2026.transformer.run_g4)."""
    message:
        job_message("G4", "transformer GeNTK temporal rank vs input dimension")
    output:
        results=f"{R}/hazelden2026/G4_transformer_rank.json",
    log:
        f"{R}/logs/hazelden2026/G4_transformer_rank.log",
    benchmark:
        f"{R}/benchmarks/rules/G4_hazelden2026_transformer_rank.tsv"
    params:
        cfg=as_json(HAZ["G4"]),
        extra="",
    resources:
        mem_mb=3000,
        runtime=20,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hazelden2026.transformer:run_g4")


register_figure(
    "hazelden2026_G4_transformer_rank",
    results=[rules.G4_hazelden2026_transformer_rank.output.results],
    caption=(
        "G4 (Hazelden et al. 2026; claim taken from the authors' library example kpflow "
        "examples/transformer_validation): participation ratio of the GeNTK of all weight-site variables "
        "(3 x h0, per-head outputs, every MLP hidden: the state the example measures and the verdict judges) "
        "of the example's architecture (one attention layer without mask or residual, a 3-layer GELU MLP), "
        "partial-averaged over features as in kpflow and assembled from forward-pass Kronecker cores, against "
        "the input's effective dimension (participation ratio of the centred input covariance), for rank-k "
        "inputs (judged; seed mean and range) and Fourier-feature inputs (reported); dotted: the output-state "
        "GeNTK and the MLP's post-GELU features (reported, not judged); crosses: the negative control (two "
        "sinusoidal time directions added to the input, each as strong as the data's strongest); the dashed "
        "black line is the pre-registered bound 1.25 PR(x) + 1. Right: temporal spectra (first seed)."
    ),
)
register_claim(
    "G4",
    "hazelden2026",
    [rules.G4_hazelden2026_transformer_rank.output.results],
    ["hazelden2026_G4_transformer_rank"],
)


# ---- Benchmark (not part of `all`): forward-pass core vs autodiff on one Pythia-410M layer ----
rule hazelden2026_benchmark_kronecker_core:
    """Time and peak-memory ratio, autodiff vs forward-pass Kronecker core (ntkrepro.hazelden2026.benchmark.run_benchmark)."""
    message:
        job_message("benchmark", "Kronecker core forward pass vs autodiff")
    output:
        results=f"{R}/benchmarks/hazelden2026_kronecker_core.json",
    log:
        f"{R}/logs/hazelden2026/benchmark_kronecker_core.log",
    benchmark:
        f"{R}/benchmarks/rules/hazelden2026_benchmark_kronecker_core.tsv"
    params:
        cfg=as_json(
            {
                **HAZ["benchmark"],
                "tiny_arch": HAZ["G2"]["tiny_arch"],
                "weights_path": HAZ["G2"]["weights_path"],
            }
        ),
        extra="",
    resources:
        mem_mb=6000,
        runtime=20,
    conda:
        CONDA_ENV
    shell:
        compute_cmd("ntkrepro.hazelden2026.benchmark:run_benchmark")


BENCHMARKS.append(rules.hazelden2026_benchmark_kronecker_core.output.results)
