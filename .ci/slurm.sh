#!/usr/bin/env bash
# CI fragment: install SLURM + MUNGE (Debian: slurm-wlm, munge) for tests/test_slurm.py, which
# starts its own throwaway single-node cluster with workflow/scripts/slurm_local.sh.
# Safe to call when already installed (does nothing then). Never fails the CI run: if the packages
# cannot be installed (no root, no apt), it says so and tests/test_slurm.py skips with a message.
set -uo pipefail

have_slurm() {
    local b
    for b in munged slurmctld slurmd sbatch squeue sinfo scontrol scancel srun; do
        command -v "$b" >/dev/null 2>&1 || [[ -x /usr/sbin/$b ]] || return 1
    done
}

if have_slurm; then
    echo "ci/slurm: SLURM already installed ($(slurmd -V 2>/dev/null))"
    exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        echo "ci/slurm: WARNING not root and no sudo: cannot install slurm-wlm munge;" \
            "tests/test_slurm.py will skip" >&2
        exit 0
    fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "ci/slurm: WARNING no apt-get: install SLURM >= 22.05 + MUNGE by hand;" \
        "tests/test_slurm.py will skip" >&2
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
install() {
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        -o Dpkg::Use-Pty=0 slurm-wlm munge >/tmp/ci-slurm-apt.log 2>&1
}
# Try without refreshing the package lists first (fast when they are current).
if ! install; then
    $SUDO apt-get update -qq >>/tmp/ci-slurm-apt.log 2>&1
    install
fi
if have_slurm; then
    echo "ci/slurm: installed $(slurmd -V 2>/dev/null)"
else
    echo "ci/slurm: WARNING could not install slurm-wlm munge (see /tmp/ci-slurm-apt.log);" \
        "tests/test_slurm.py will skip" >&2
    tail -n 5 /tmp/ci-slurm-apt.log >&2
fi
exit 0
