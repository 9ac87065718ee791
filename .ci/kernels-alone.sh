#!/usr/bin/env bash
# The kernels installed alone (docs/kernels.md, "Install the kernels alone"; issue 40 item 4): a fresh
# Python 3.12 venv, `pip install .` -- the package's base dependencies only (jax, numpy, scipy; the
# replication's stack is the `repro` extra), each at its version in envs/requirements-current-jax.lock --
# then every module of ntkrepro.kernels imported and examples/attention_kernel.py run from outside the
# repository, against the installed copy (no src/ on the path, no neural-tangents).
#   bash .ci/kernels-alone.sh            # a temporary venv, removed afterwards
#   bash .ci/kernels-alone.sh /tmp/kv    # keep the venv there (created afresh)
#   PYTHON=/path/to/python3.12 bash .ci/kernels-alone.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
PYTHON=${PYTHON:-python3.12}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
  for p in /root/.pyenv/versions/3.12*/bin/python3.12; do [ -x "$p" ] && PYTHON=$p; done
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
venv=${1:-$scratch/venv}
rm -rf "$venv"
"$PYTHON" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# a copy of the source tree (git's files, untracked ones not ignored included), so that the build writes
# nothing into the repository and no build/ or *.egg-info left there by an editable install travels
mkdir "$scratch/src-copy"
git -C "$repo" ls-files -z --cached --others --exclude-standard | (cd "$repo" && xargs -0 tar -cf - --) \
  | tar -xf - -C "$scratch/src-copy"
# what the metadata asks for, resolved by pip; the lock only fixes the versions (-c: constraints)
"$venv/bin/python" -m pip install --quiet -c "$repo/envs/requirements-current-jax.lock" "$scratch/src-copy"
cd "$scratch"
"$venv/bin/python" - <<'PY'
import importlib
import importlib.metadata as md
import pkgutil
import sys

names = sorted({d.metadata["Name"].lower().replace("_", "-") for d in md.distributions()})
# jax's own requirements come with it: jaxlib, ml_dtypes, opt_einsum (and scipy, which the kernels use too)
extra = set(names) - {"ntkrepro", "jax", "jaxlib", "numpy", "scipy", "ml-dtypes", "opt-einsum", "pip"}
assert not extra, f"installed besides jax, numpy and scipy: {sorted(extra)}"
import ntkrepro.kernels as k

assert "site-packages" in k.__file__, k.__file__  # the installed copy, not the repository's src/
mods = sorted(m.name for m in pkgutil.walk_packages(k.__path__, "ntkrepro.kernels."))
for m in mods:
    importlib.import_module(m)
print(f"python {sys.version.split()[0]}; installed: {', '.join(names)}")
print(f"imported {len(mods)} modules of ntkrepro.kernels from {k.__path__[0]}")
PY
"$venv/bin/python" "$repo/examples/attention_kernel.py"
