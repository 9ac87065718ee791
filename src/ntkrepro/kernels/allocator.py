r"""Keep freed memory in the process: the page faults of a kernel computation on a glibc CPU.

XLA on the CPU allocates every buffer of a compiled computation with ``malloc``; glibc serves a
request above its mmap threshold (128 KiB at start, adapting up to 32 MiB) with a fresh ``mmap``
and returns it to the kernel with ``munmap`` on ``free``. A per-pair kernel pass allocates and frees
the same multi-MiB pair arrays once per layer and row chunk, so each chunk re-faults its pages:
system time, not arithmetic. Measured here (2026-12-06, 2 shared cores, one H4 decisive block of
250 x 250 CIFAR images at 8x8, the Struct family at depth 1, ``memory_budget`` 128 MiB, two
repeats): user 6.7 s + system 4.5 s (2.2 million minor faults) by default, user 6.8 s + system
0.24 s (59 thousand) with :func:`keep_freed_memory`; the running H4 fill went from 21 % to 1.5 %
system time. The arithmetic, and so every kernel entry, is the same: only where the buffers live
changes.

:func:`keep_freed_memory` sets, through ``mallopt``, what ``MALLOC_MMAP_MAX_=0
MALLOC_TRIM_THRESHOLD_=... MALLOC_TOP_PAD_=...`` would at start-up: no ``mmap`` for allocations
(the heap grows instead), no trimming of the heap's top, and a 256 MiB growth step. The cost is
resident memory: the heap keeps its high-water mark (the process's peak, as before) until exit.
Call it once, early, in a process that computes kernels for long (the decisive fill, the
benchmarks); elsewhere (not glibc, e.g. macOS) it does nothing and says so. :func:`freed_memory_kept`
says whether it was applied in this process (the fast kernels then take larger row chunks on the CPU:
``ntkrepro.kernels.fast.default_memory_budget``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

#: ``mallopt`` parameters (glibc ``malloc.h``).
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_MAX = -1, -2, -4
#: What :func:`keep_freed_memory` sets: no mmap, never trim, grow the heap 256 MiB at a time.
SETTINGS = {"M_MMAP_MAX": 0, "M_TRIM_THRESHOLD": 2 ** 31 - 1, "M_TOP_PAD": 256 * 2 ** 20}
_CODES = {"M_MMAP_MAX": M_MMAP_MAX, "M_TRIM_THRESHOLD": M_TRIM_THRESHOLD, "M_TOP_PAD": M_TOP_PAD}
_KEPT = False


def keep_freed_memory() -> dict[str, int] | None:
    """Apply :data:`SETTINGS` with glibc's ``mallopt``; returns the settings applied, or ``None`` where
    the C library is not glibc (nothing changed). Raises ``OSError`` if glibc refuses one of them."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    for name, value in SETTINGS.items():
        if libc.mallopt(ctypes.c_int(_CODES[name]), ctypes.c_int(value)) != 1:
            raise OSError(f"mallopt({name}, {value}) refused by the C library")
    global _KEPT
    _KEPT = True
    return dict(SETTINGS)


def freed_memory_kept() -> bool:
    """Whether :func:`keep_freed_memory` has applied :data:`SETTINGS` in this process (it cannot be undone)."""
    return _KEPT
