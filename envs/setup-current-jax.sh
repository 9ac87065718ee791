#!/usr/bin/env bash
# Create (or update) .venv-jax-current/: the second test environment, Python 3.12 + current jax (CPU)
# from envs/requirements-current-jax.lock, WITHOUT neural-tangents (archived; it pins jax 0.5.3).
# ntkrepro is put on the path with a .pth file pointing at src/ (the tests here import the whole source,
# the papers' device code included, not an installed copy; the fast backend needs only jax, numpy, scipy,
# and `pip install .` alone is checked by .ci/kernels-alone.sh). CI runs
# tests/test_fast_kernels_golden.py and tests/test_gpu_run.py in it (.ci/run).
#   bash envs/setup-current-jax.sh            # python3.12 from PATH
#   PYTHON=/path/to/python3.12 bash envs/setup-current-jax.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.12}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 12))' 2>/dev/null; then
  for p in /root/.pyenv/versions/3.12*/bin/python3.12; do [ -x "$p" ] && PYTHON=$p; done
fi
stamp=.venv-jax-current/.ntkrepro-lock.sha256
# no stamp = never finished installing (e.g. interrupted before pip ran): start from a fresh venv
if [ ! -x .venv-jax-current/bin/python ] || [ ! -f "$stamp" ]; then
  rm -rf .venv-jax-current
  "$PYTHON" -m venv .venv-jax-current
fi
want=$(cat envs/requirements-current-jax.lock | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv-jax-current/bin/python -m pip install --quiet --upgrade pip
  .venv-jax-current/bin/python -m pip install --quiet -r envs/requirements-current-jax.lock
  echo "$want" > "$stamp"
fi
site=$(.venv-jax-current/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$PWD/src" > "$site/ntkrepro-src.pth"
.venv-jax-current/bin/python -c "import jax, ntkrepro.kernels.fast; from ntkrepro import nt; \
print('current-jax env: jax', jax.__version__, '| neural-tangents installed:', nt.available())"
