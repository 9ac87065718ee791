#!/usr/bin/env bash
# The prepared one-device call (issues 24, 30), from the repository root:
#   bash workflow/scripts/gpu_h4.sh          # results under $OUT/results-gpu (OUT defaults to .)
# Needs python with jax (CUDA), numpy, scipy (flax + optax for H5, torch for A1's teacher inputs); the
# data in DATA_ROOT (default ../shared/data, else shared/data). No neural-tangents, pyyaml, tqdm,
# pandas, snakemake or network.
# Runs the plan of ntkrepro.device (python -m ntkrepro.device): calibration, then H4 t1000, H5's decisive cells
# (h5_decisive: config/decisive.yaml's H5, 250 epochs), A1's decisive cells (a1_decisive: the paper's
# settings), H4 t2000, H4 t5000, H6 (800 / 200 / 800 reviews, length 128) -- each only if its
# prediction fits the budget left (a decisive tier: cell by cell, the cells already in the repository's
# archive/decisive skipped), each written as it finishes: $OUT/results-gpu/gpu_run.json
# (calibration, predictions, measured times, device, precision; rewritten after every tier) and one
# <tier>.tar.gz per finished tier (<= 8 files, <= 16 MiB each, one folder below $OUT). A call cut off
# by `timeout` keeps every finished tier.
# BUDGET_S: wall seconds for calibration + tiers (default 420 of a 10-minute call, leaving start-up
# and write-back); TIERS=smoke runs the CPU-sized plan. Caches (kernel blocks, compiled code) go to a
# temporary folder.
#
# What travels (64 MiB in all: the tracked files, ~2.4 MB, + the carried paths). The data do not sit
# in the repository, and H6's GloVe table (80 MB + its vocabulary) would not fit, so prepare on the CPU
# (from ../shared/data, nothing fetched; the pinned .venv has the GloVe wheel):
#   PYTHONPATH=src .venv/bin/python -m ntkrepro.device.inputs --out device-inputs
# -> device-inputs/ (git-ignored): the CIFAR-10 and IMDb subsets (22.1 + 3.9 MB) and the GloVe vectors
# of the IMDb subset's 37,831 words that have one (6.3 MB zip; bit for bit the wheel's), with
# device_inputs.json (sizes, sha256, whether it all fits: 34.7 MB with the tracked files, 2026-12-05).
# Then the device call (the device tool's run; the sealed decisive cells record the commit sent, and the
# device's copy may have no .git: put the sha into the command, written out here first, e.g. with
# `git rev-parse HEAD`, and NTKREPRO_GIT_DIRTY=1 if the tree has uncommitted changes):
#   command: NTKREPRO_GIT_COMMIT=<sha> DATA_ROOT=device-inputs BUDGET_S=420 bash workflow/scripts/gpu_h4.sh
#   carry:   ["device-inputs"]          timeout_s: 540
# Unpack and judge on the CPU side:
#   mkdir -p r/t5000 && tar -xzf results-gpu/t5000.tar.gz -C r/t5000
#   .venv/bin/python -m ntkrepro.ledger evaluate H4 --results r/t5000/hron2020/H4_cifar10_kernels.json \
#       --scale gpu --out r/t5000/claims/H4_evaluation.json
# Install the decisive cells (A1, H5) into the repository's archive, never overwriting a cell already
# there (docs/gpu.md "The decisive tiers"), then verify and commit them:
#   tar -xzf results-gpu/a1_decisive.tar.gz --skip-old-files archive
#   tar -xzf results-gpu/h5_decisive.tar.gz --skip-old-files archive
#   PYTHONPATH=src .venv/bin/python -m ntkrepro.decisive verify
#   git add archive/decisive && git commit -m "archive/decisive: cells from the GPU call"
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
OUT=${OUT:-.}
BUDGET_S=${BUDGET_S:-420}
# a whole number of seconds, checked before anything runs (bash arithmetic below takes nothing else:
# 420.5, 1e9 or nan would never start the call)
if ! [[ "$BUDGET_S" =~ ^[0-9]{1,7}$ ]] || (( 10#$BUDGET_S == 0 )); then
  echo "gpu_h4.sh: BUDGET_S=$BUDGET_S is not a positive whole number of seconds (at most 9999999), e.g." \
       "BUDGET_S=420 (the default); nothing was run" >&2
  exit 2
fi
BUDGET_S=$(( 10#$BUDGET_S ))
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
"$PY" -c "import jax, numpy, scipy; print('jax', jax.__version__, jax.devices(), '| numpy', numpy.__version__, '| scipy', scipy.__version__)"
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
# the budget check stops starting tiers in time; timeout is the hard stop (finished tiers stay)
timeout --signal=TERM --kill-after=10 $(( BUDGET_S + 60 )) "$PY" -m ntkrepro.device \
  --out "$OUT/results-gpu" --cache "$cache" --budget-s "$BUDGET_S" --tiers "${TIERS:-gpu}" \
  ${DATA_ROOT:+--data-root "$DATA_ROOT"} || rc=$?
ls -la "$OUT/results-gpu" || true
exit ${rc:-0}
