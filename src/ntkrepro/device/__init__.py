r"""The prepared one-GPU call: H4 in size tiers, H5's and A1's decisive cells (config/decisive.yaml), H6 from
inputs prepared on the CPU -- each tier written as it finishes (issues 24, 30, 40).

Usage (from the repository root; the data in ``../shared/data`` or, on the device, the folder prepared by
``python -m ntkrepro.device.inputs``; needs only jax, numpy and scipy besides this repository -- flax and
optax for H5, torch for A1's teacher inputs; no neural-tangents, pyyaml, tqdm, pandas or snakemake)::

    PYTHONPATH=src python -m ntkrepro.device --out results-gpu --budget-s 480 --data-root device-inputs

(``workflow/scripts/gpu_h4.sh`` wraps it as one device call: caches in a temporary folder. The old name,
``python -m ntkrepro.hron2020.gpu_run``, still runs it.)

The modules, each importing only those above it here and the papers' device parts below:

* :mod:`ntkrepro.device.config` -- the repository, config/*.yaml's sections or their JSON snapshots (the
  device has no pyyaml), the data folder;
* :mod:`ntkrepro.device.inputs` -- the inputs a call carries, prepared on the CPU (data archives, H6's GloVe
  vectors cut to the IMDb subset's words);
* :mod:`ntkrepro.device.plan` -- the declared tiers and plans, each tier's parameters, the decisive cells
  still to run, the budget margin;
* :mod:`ntkrepro.device.limits` -- bundling (one archive per tier) and what comes back (file count, size);
* :mod:`ntkrepro.device.cells` -- the decisive tiers' runner (H5, A1: one sealed cell at a time);
* :mod:`ntkrepro.device.call` -- calibrate, predict, run the tiers in order (composes the papers);
* :mod:`ntkrepro.device.cli` -- the command line (``python -m ntkrepro.device``).

Each paper owns its part, and no paper imports another: Hron et al.'s calibration, cost models and tier
runners of H4, H5 and H6 (:mod:`ntkrepro.hron2020.device_calibration`, :mod:`ntkrepro.hron2020.device_cost`,
:mod:`ntkrepro.hron2020.device_tiers`), Arda et al.'s A1 cost model (:mod:`ntkrepro.arda2026.device_cost`);
both time their probes on the one clock of the call, :mod:`ntkrepro.clock` (wall, or process CPU time).

1. **Plan** (:data:`~ntkrepro.device.plan.PLANS`, declared before any run), in this order: H4 at 1,000
   images (``t1000``), H5's decisive cells (``h5_decisive``: config/decisive.yaml's H5, 250 epochs, one cell =
   one seed at one LayerNorm placement, every mechanism, the permuted-label control on the first seed), A1's
   decisive cells (``a1_decisive``: config/decisive.yaml's A1 at the paper's settings, d=8, T=16, n=5000,
   4000 steps, one cell = one seed at one width with its ``width_fixed`` column) -- the cells not yet in the
   repository's ``archive/decisive`` (``plan.pending_cells``; the plan read from ``config.DECISIVE_SNAPSHOT``),
   each sealed as ``ntkrepro.decisive.fill`` seals it -- then H4 at 2,000 and 5,000 images. The H4 tiers are
   config/default.yaml's H4 (``config.PARAMS_SNAPSHOT``) at the tier's sizes: the official training set's
   class-balanced train + validation split, 4:1, and 2,000 test images, 8x8, every family and depth, kernel
   blocks of 200 x 200, regressions on the default JAX device (``regression_backend: jax``,
   :mod:`ntkrepro.kernels.device_regression`). Last, H6 (config/default.yaml's H6 at 800 / 200 / 800 reviews
   of length 128, ``plan.H6_TIERS``) from inputs prepared on the CPU (:mod:`ntkrepro.device.inputs`: the
   GloVe 6B-50d table, 80 MB + 3.7 MB of vocabulary, does not fit the 64 MiB a device call carries; the
   vectors of the IMDb subset's words do, 6.3 MB); skipped, recorded, where ``--data-root`` holds no prepared
   GloVe subset.
2. **Calibration** (:mod:`ntkrepro.hron2020.device_calibration`, :func:`ntkrepro.arda2026.device_cost.calibrate_a1`):
   per H4 model its blocks and a fresh kernel function's first calls, the block cache, the data loading, and
   per H4 tier the regression backend's own calls at the tier's exact shapes; for H5 one epoch of a fresh
   trainer per batch of runs a cell trains; for A1 one teacher and, at the smallest and largest width, a few
   projected-GD steps and worst-case-search steps (each compiled, then timed).
3. **Prediction** (:mod:`ntkrepro.hron2020.device_cost`: ``count_h4``, ``predict_h4``, ``predict_h5_cells``,
   ``predict_h6``; :func:`ntkrepro.arda2026.device_cost.predict_a1_cells`): every computation the tier
   performs is counted and multiplied by its calibrated time; a shape compiles once per process. The
   regression counts are checked after the run against the backends' tally
   (:data:`ntkrepro.kernels.device_regression.TALLY`).
4. **Run** (:func:`ntkrepro.device.call.run`): each tier in plan order if its prediction fits the budget left
   (else recorded as ``skipped`` with its prediction); the first H4 tier always runs; a decisive tier starts
   when its first cell fits and runs each cell only if that cell's prediction fits. Each finished tier is
   written at once as one archive ``<out>/<tier>.tar.gz`` (its results in the Snakemake layout -- a decisive
   tier's: ``archive/decisive/<ID>/cells/<cell>.json``, rewritten after every cell -- and its own throughput
   record), and ``<out>/gpu_run.json`` (plan, calibration, predictions, every finished tier's measured time,
   rates, device and precision) is rewritten after the calibration and after every tier: a call cut off by
   its time limit returns the calibration and every finished tier. Everything under ``<out>`` is at most
   ``limits.MAX_FILES`` files of at most ``limits.MAX_FILE_BYTES`` bytes, no folder below it
   (``limits.check_outputs``).

Judge on the CPU side (unpack, then the claims' own criteria in the pinned environment)::

    tar -xzf results-gpu/t5000.tar.gz -C results-gpu/t5000
    PYTHONPATH=src .venv/bin/python -m ntkrepro.ledger evaluate H4 \
        --results results-gpu/t5000/hron2020/H4_cifar10_kernels.json --scale gpu \
        --out results-gpu/t5000/claims/H4_evaluation.json

Install a decisive tier's cells (never overwriting an archived one), then verify (docs/gpu.md)::

    tar -xzf results-gpu/a1_decisive.tar.gz --skip-old-files archive
    PYTHONPATH=src .venv/bin/python -m ntkrepro.decisive verify

No criterion is applied here. The package imports nothing itself (``import ntkrepro.device.config`` does
not load JAX or a paper)."""
