#!/usr/bin/env bash
# Create (or update) the project environment in .venv/ from the exact pins in envs/.
# Idempotent: a second run with an unchanged lock only re-checks the install.
#   bash envs/setup.sh            # uses python3 from PATH (3.11 is what CI tests)
#   PYTHON=python3.11 bash envs/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.ntkrepro-lock.sha256
want=$(cat envs/requirements.lock envs/nodeps.lock pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  # torch==2.13.0 resolves to the CPU wheel on this project's machines; on a GPU machine install
  # the matching CUDA build of the same version first (see README, "GPUs and clusters").
  .venv/bin/python -m pip install --quiet -r envs/requirements.lock
  # neural-tangents declares tensorflow, which only neural_tangents.experimental needs.
  .venv/bin/python -m pip install --quiet --no-deps -r envs/nodeps.lock
  .venv/bin/python -m pip install --quiet --no-deps --no-build-isolation -e .
  echo "$want" > "$stamp"
fi
# Register this environment's own Jupyter kernel (papermill runs every figure notebook in it).
.venv/bin/python -m ipykernel install --sys-prefix --name ntkrepro --display-name "ntkrepro (.venv)" >/dev/null
.venv/bin/python -c "import ntkrepro; from ntkrepro.nt import nt; print('ntkrepro', ntkrepro.__version__, '| neural-tangents', nt.__version__)"
