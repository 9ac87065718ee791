#!/usr/bin/env bash
# The prepared one-GPU H4 run (issue 24), as one device call from the repository root:
#   bash workflow/scripts/gpu_h4.sh          # results under $OUT/results-gpu (OUT defaults to .)
# Needs python with jax (CUDA), numpy, scipy; the CIFAR-10 subset in ../shared/data or shared/data.
# BUDGET_S: wall seconds for calibration + run (default 450 of the 8 minutes, leaving start-up and
# write-back); TIERS=smoke runs the CPU-sized tiers instead. Kernel caches go to a temporary folder
# (gigabytes at the 5,000-image tier), only the results come back. Judge them on the CPU side with
#   .venv/bin/python -m ntkrepro.ledger evaluate H4 --results <out>/results-gpu/hron2020/H4_cifar10_kernels.json \
#       --scale gpu --out <out>/results-gpu/claims/H4_evaluation.json
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
OUT=${OUT:-.}
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
"$PY" -c "import jax, numpy, scipy; print('jax', jax.__version__, jax.devices(), '| numpy', numpy.__version__, '| scipy', scipy.__version__)"
cache=$(mktemp -d)
timeout $(( ${BUDGET_S:-450} + 120 )) "$PY" -m ntkrepro.hron2020.gpu_run --out "$OUT/results-gpu" --cache "$cache" \
  --budget-s "${BUDGET_S:-450}" --tiers "${TIERS:-gpu}"
rm -rf "$cache"
