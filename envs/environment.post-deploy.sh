#!/usr/bin/env bash
# Run by Snakemake after creating envs/environment.yaml (--sdm conda): neural-tangents without its
# TensorFlow dependency, then this package.
set -euo pipefail
pip install --no-deps -r "$(dirname "$0")/nodeps.lock"
pip install --no-deps "$(dirname "$0")/.."
python -m ipykernel install --sys-prefix --name ntkrepro --display-name "ntkrepro (conda)"
