"""ntkrepro.kernels.allocator: freed buffers stay in the process (no page faults when reused)."""

import json
import os
import platform
import subprocess
import sys

import pytest

from ntkrepro.kernels import allocator

PROBE = r"""
import json, resource, sys
import numpy as np
if sys.argv[1] == "keep":
    from ntkrepro.kernels.allocator import keep_freed_memory
    keep_freed_memory()
faults = []
for _ in range(4):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a = np.ones(64 * 2 ** 20 // 8)  # a 64 MiB buffer, written (touched) and freed
    del a
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
print(json.dumps(faults))
"""

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def _faults(mode: str) -> list[int]:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.skipif(not GLIBC, reason="glibc mallopt only")
def test_a_freed_buffer_is_reused_without_page_faults():
    """By default glibc maps a 64 MiB buffer (above its 32 MiB mmap-threshold ceiling) afresh each time and
    faults its pages in again (~540 faults per allocation here, with fault-around and transparent huge
    pages); after keep_freed_memory the second and later allocations reuse the heap's pages (0 here)."""
    default, kept = _faults("default"), _faults("keep")
    assert min(default[1:]) > 100, default  # the control: every allocation faults its pages again
    assert max(kept[1:]) * 10 < min(default[1:]), (kept, default)


@pytest.mark.skipif(not GLIBC, reason="glibc mallopt only")
def test_settings_are_reported():
    assert allocator.keep_freed_memory() == allocator.SETTINGS


BUDGET = r"""
import json, sys
from ntkrepro.kernels import allocator, fast
before = fast.default_memory_budget()
applied = allocator.keep_freed_memory() is not None
print(json.dumps([before, fast.default_memory_budget(), applied, allocator.freed_memory_kept()]))
"""


def test_the_cpu_chunk_budget_grows_once_freed_memory_is_kept():
    """The fast kernels' default row-chunk budget on the CPU: 32 MiB (page faults of fresh mappings make
    larger chunks slower), 128 MiB in a process where keep_freed_memory has run (no faults; measured in
    engine.CPU_MEMORY_BUDGET_KEPT's comment). Where the C library is not glibc nothing changes."""
    from ntkrepro.kernels._src import engine

    out = subprocess.run([sys.executable, "-c", BUDGET], capture_output=True, text=True, check=True,
                         env={**os.environ, "JAX_PLATFORMS": "cpu"})
    before, after, applied, kept = json.loads(out.stdout.strip().splitlines()[-1])
    assert before == engine.CPU_MEMORY_BUDGET == 32 * 2 ** 20
    assert applied == GLIBC and kept == GLIBC
    assert after == (engine.CPU_MEMORY_BUDGET_KEPT if GLIBC else engine.CPU_MEMORY_BUDGET)
    assert engine.CPU_MEMORY_BUDGET_KEPT == 128 * 2 ** 20
