"""The float32 matrix-product precision of the fast kernels: one constant in a neutral module.

:data:`MATMUL_PRECISION` is what :mod:`ntkrepro.kernels.numerics` enforces on every matrix product
of :class:`ntkrepro.kernels.fast.FastKernelFn` (``jax.default_matmul_precision``) and what
:func:`ntkrepro.provenance.device_info` records (``device.matmul_precision.fast_kernels``). It lives
here, below both, so that provenance (a bottom layer: it imports only ``io``, ``stats`` and this
module) asks nothing of ``kernels`` (``tests/test_layering.py``). The kernel code fingerprint
(:data:`ntkrepro.provenance.DEFAULT_KERNEL_MODULES`) covers this file, so changing the precision
starts fresh kernel caches. Nothing here imports JAX.
"""

from __future__ import annotations

#: The precision of every matrix product in the fast kernels (``jax.default_matmul_precision``):
#: ``"highest"`` = float32 products in full float32 on every device (no TF32 on tensor-core GPUs).
MATMUL_PRECISION = "highest"
