#!/usr/bin/env bash
# The prepared one-device call (issues 24, 30), from the repository root:
#   bash workflow/scripts/gpu_h4.sh          # results under $OUT/results-gpu (OUT defaults to .)
# Needs python with jax (CUDA), numpy, scipy (flax + optax for H5); the CIFAR-10 subset in
# ../shared/data or shared/data. No neural-tangents, pyyaml, tqdm, snakemake or network.
# Runs the plan of ntkrepro.hron2020.gpu_run: calibration, then H4 t1000, H5 (200 epochs), A1 (the
# paper's settings), H4 t2000, H4 t5000 -- each only if its prediction fits the budget left, each
# written as it finishes: $OUT/results-gpu/gpu_run.json (calibration, predictions, measured times,
# device, precision; rewritten after every tier) and one <tier>.tar.gz per finished tier (<= 8 files,
# <= 16 MiB each, one folder below $OUT). A call cut off by `timeout` keeps every finished tier.
# BUDGET_S: wall seconds for calibration + tiers (default 420 of a 10-minute call, leaving start-up
# and write-back); TIERS=smoke runs the CPU-sized plan. Caches (kernel blocks, compiled code) go to a
# temporary folder. Unpack and judge on the CPU side:
#   mkdir -p r/t5000 && tar -xzf results-gpu/t5000.tar.gz -C r/t5000
#   .venv/bin/python -m ntkrepro.ledger evaluate H4 --results r/t5000/hron2020/H4_cifar10_kernels.json \
#       --scale gpu --out r/t5000/claims/H4_evaluation.json
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
OUT=${OUT:-.}
BUDGET_S=${BUDGET_S:-420}
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
"$PY" -c "import jax, numpy, scipy; print('jax', jax.__version__, jax.devices(), '| numpy', numpy.__version__, '| scipy', scipy.__version__)"
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
# the budget check stops starting tiers in time; timeout is the hard stop (finished tiers stay)
timeout --signal=TERM --kill-after=10 $(( BUDGET_S + 60 )) "$PY" -m ntkrepro.hron2020.gpu_run \
  --out "$OUT/results-gpu" --cache "$cache" --budget-s "$BUDGET_S" --tiers "${TIERS:-gpu}" || rc=$?
ls -la "$OUT/results-gpu" || true
exit ${rc:-0}
