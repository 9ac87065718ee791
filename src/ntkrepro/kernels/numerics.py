r"""Numerics of the kernel computations: the matrix-product precision and float64, across JAX versions.

Matrix-product precision
------------------------
On a GPU, JAX's default precision for float32 ``dot_general`` / ``einsum`` / ``matmul`` is
``DEFAULT``, which on NVIDIA tensor-core GPUs (A100, H100, H200) means TF32 inputs: a 10-bit
mantissa, a relative error of about :math:`10^{-3}` per product instead of float32's
:math:`6\cdot10^{-8}`. Kernel regression solves a linear system in the kernel matrix, which is
ill-conditioned at small diagonal regularisers: the error of the kernel entries is amplified by
the condition number in the predictions. So every kernel of
:class:`ntkrepro.kernels.fast.FastKernelFn` is computed under
``jax.default_matmul_precision(MATMUL_PRECISION)`` with :data:`MATMUL_PRECISION` = ``"highest"``
(defined in the neutral :mod:`ntkrepro.precision`, which provenance records; re-exported here)
(float32 products in full float32 on every device; on a CPU it changes nothing, CPUs have no TF32
path). The setting is applied when the kernel's XLA computations are traced, so it is visible in
the jaxpr and in the lowered StableHLO (``precision = [HIGHEST, HIGHEST]`` on every
``dot_general``); :func:`dot_precisions` lists it (tested in ``tests/test_fast_kernels_golden.py``).
:func:`precision_record` is what results and throughput records store.

float64
-------
``jax.experimental.enable_x64`` (jax <= 0.5) became ``jax.enable_x64`` (jax >= 0.9; the
``experimental`` name is gone in 0.11): :func:`enable_x64` is whichever exists.

Nothing here imports neural-tangents.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ntkrepro.precision import MATMUL_PRECISION  # defined there (provenance records it), re-exported here


def matmul_precision(precision: str = MATMUL_PRECISION) -> contextlib.AbstractContextManager:
    """``jax.default_matmul_precision(precision)`` (a context manager)."""
    import jax

    return jax.default_matmul_precision(precision)


@contextlib.contextmanager
def enable_x64() -> Iterator[None]:
    """float64 arrays inside the block, on old (``jax.experimental.enable_x64``) and new
    (``jax.enable_x64``) JAX."""
    import jax

    ctx = getattr(jax, "enable_x64", None)
    if ctx is None:
        from jax.experimental import enable_x64 as ctx
    with ctx():
        yield


def _sub_jaxprs(value: Any) -> Iterator[Any]:
    """Jaxprs nested in an equation parameter (``pjit``'s ``jaxpr``, ``cond``'s ``branches``...)."""
    if hasattr(value, "eqns"):
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        yield value.jaxpr
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _sub_jaxprs(v)


def dot_precisions(jaxpr: Any) -> list[str]:
    """The precision of every ``dot_general`` / ``conv_general_dilated`` in ``jaxpr`` (a
    ``ClosedJaxpr`` from ``jax.make_jaxpr`` or a ``Jaxpr``), nested computations included, as
    strings: ``"HIGHEST"`` (both operands), ``"DEFAULT"`` for ``None`` (the backend's default), or
    the pair's names joined by ``,`` when they differ."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    out: list[str] = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in ("dot_general", "conv_general_dilated"):
            p = eqn.params.get("precision")
            if p is None:
                out.append("DEFAULT")
            else:
                names = {getattr(q, "name", str(q)) for q in (p if isinstance(p, tuple) else (p,))}
                out.append(",".join(sorted(names)))
        for value in eqn.params.values():
            for sub in _sub_jaxprs(value):
                out += dot_precisions(sub)
    return out


def precision_record(precision: str = MATMUL_PRECISION) -> dict[str, Any]:
    """What a result or throughput record stores about the numerics: the matmul precision the
    fast kernels enforce, JAX's global default outside them, JAX's version, backend and devices."""
    import jax

    devices = jax.devices()
    return {"matmul_precision": precision,
            "jax_default_matmul_precision_global": jax.config.jax_default_matmul_precision,
            "jax": jax.__version__, "backend": jax.default_backend(),
            "devices": [f"{d.platform}:{getattr(d, 'device_kind', '')}" for d in devices],
            "x64_enabled": bool(jax.config.jax_enable_x64)}
