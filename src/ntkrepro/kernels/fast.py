r"""Fast infinite-width NNGP / NTK kernels for the layers of the H4 (CIFAR-10) and H6 (IMDb) models,
equal to neural-tangents, from one model description that also builds the neural-tangents model.

One description, two backends
-----------------------------
The constructors mirror ``neural_tangents.stax`` (same names, same arguments)::

    from ntkrepro.kernels import fast

    model = fast.serial(fast.Conv(64, (3, 3), padding="SAME", W_std=2 ** .5, b_std=.05), fast.Relu(),
                        fast.GlobalSelfAttention(64, 64, 64, 1, attention_mechanism="IDENTITY"),
                        fast.Flatten(), fast.Dense(10))
    init_fn, apply_fn, kernel_fn = model              # neural-tangents' stax triple (reference)
    k_nt = fast.kernel_fn(model, "nt")                # jitted stax kernel_fn
    k_fast = fast.kernel_fn(model, "fast")            # this module's implementation
    k_fast(x1, x2, ("nngp", "ntk"), mask_constant=None)   # same call, same result as k_nt

``model.stax()`` (or unpacking / indexing the model) gives neural-tangents' triple, so a builder
that returns a ``fast`` model serves code written for ``stax.serial(...)`` unchanged. Layers:
:class:`Conv` (stride 1, ``SAME``/``VALID``), :class:`Dense`, :class:`Relu`,
:class:`GlobalSelfAttention` (``linear_scaling=True``; ``SOFTMAX``/``IDENTITY``/``ABS``/``RELU``;
positional embedding ``NONE``/``SUM`` with any ``pos_emb_decay_fn``; ``b_std``; and, an extension
beyond neural-tangents, ``linear_scaling=False`` -- the infinite-head d^-1/2 kernel -- by Monte Carlo
with ``mc_samples=N``, :mod:`ntkrepro.kernels._src.attention_mc`, standard errors by
:func:`mc_kernel`), :class:`LayerNorm`
(channels), :class:`Flatten`, :class:`GlobalAvgPool`, :class:`AvgPool` (window = stride, ``VALID``),
:class:`Identity`, :class:`FanOut`, :func:`parallel`, :class:`FanInSum`, :func:`serial`; inputs
``(n, *spatial, channels)`` with ``mask_constant`` padding (H6). The model must end without spatial
axes (``Flatten`` / ``GlobalAvgPool`` readout). Anything else raises ``NotImplementedError`` in the
fast backend, naming the keyword (neural-tangents' other keywords are accepted and passed on to the
``stax`` layer; its enums, e.g. ``stax.Padding.SAME``, work); the ``nt`` backend takes every model.
As neural-tangents, the fast backend refuses a layer whose input is not the kind its formula
assumes: ``Relu`` (``ValueError``) and ``LayerNorm`` / ``FanInSum`` (``NotImplementedError``) need
mean-zero Gaussian inputs (the output of ``Dense``, ``Conv`` or attention, or a pool, ``LayerNorm``
or ``Identity`` of one: not raw inputs, ``Relu`` or ``Flatten`` outputs), ``FanInSum`` branches of
one shape and channel count (:class:`~ntkrepro.kernels._src.base.Info`).

Where neural-tangents spends its time (profile, this 2-core CPU)
---------------------------------------------------------------
Per layer, jitted ``kernel_fn`` of each layer on the previous layer's ``Kernel``, CPU seconds
(``time.process_time``, the machine shared with other jobs):

* **H4 Struct, depth 2, 8x8 images (S = 64), 8x8 pairs**: Conv 55 + 73 ms, ReLU 12 + 6 ms,
  attention 5 ms, LayerNorm/Flatten/Dense 1.5 ms: **84 % in the two convolutions**, 12 % in ReLU, 3 %
  in attention. neural-tangents computes a conv on the full covariance as ``lax.conv_general_dilated``
  with a 1-channel diagonal 3x3 filter per spatial axis, after moving that axis pair last
  (``_conv_kernel_full_spatial_loop``): a transpose of the whole ``(n1, n2, H, H, W, W)`` array plus a
  1-channel 8x8 convolution per (pair, axis) -- about 0.9 ms per pair. Its ReLU calls XLA's scalar
  ``atan2`` (30 ns per element). Its attention einsum itself runs at ~30 GFLOP/s.
* **H6 Struct, depth 1, length 128, 4x4 pairs**: Conv(9, VALID) 48 ms (68 %), ReLUs 7 + 7 ms
  (20 %), attention 7 ms (10 %), pooling 2 ms. **Length 500, 2x2 pairs**: Conv 259 ms (60 %),
  ReLUs 42 + 28 ms (16 %), attention 96 ms (22 %, ~42 GFLOP/s), pooling 6 ms. At length 500 a
  9-tap 1-channel convolution of the 508x508 covariance costs 65 ms per pair.

So the covariance convolution (a 9-tap stencil, memory-bound work) and ReLU dominate, not the
:math:`O(S^3)` attention algebra.

What this implementation does
-----------------------------
See :mod:`ntkrepro.kernels._src.layers` (recursions, with neural-tangents' function named for each)
and :mod:`ntkrepro.kernels._src.engine` (passes and chunking). In short: a per-input pass
(:math:`C(x)`, attention weights :math:`G(x)`, variances, masks) and a per-pair pass over row chunks
of the block, each layer its own XLA computation, on one array per block that stacks NNGP and NTK
as a block matrix with rows :math:`(x, s)` and columns :math:`(\text{kernel}, y, t)`: the conv is a
sum of 9 shifted, boundary-masked copies of that matrix (a first conv on few input channels, H4's
3x3 on RGB, one GEMM of input patches instead, :mod:`ntkrepro.kernels._src.linear`); ReLU is one
vectorised elementwise pass, in float32 from the correlation by a polynomial ``acos`` without
divisions (float64: a branch-free ``atan2``; :mod:`ntkrepro.kernels._src.elementwise`); per-layer
times at S = 64: ``docs/kernels.md``, "Where the time goes at S = 64"; an attention layer is one GEMM
:math:`G(x)[K\ \Theta](x, \cdot)` per :math:`x` (both kernels at once) and, when the next layers
need only :math:`s = t` (``LayerNorm``/``Flatten``, all H4 attention families), a row-wise product
with :math:`G(y)` instead of the second GEMM. Diagonal entries of :math:`K(X, X)` (correlation
exactly 1) get the exact :math:`\theta = 0` in ReLU, where neural-tangents carries an error of
order :math:`\sqrt{\epsilon}` (about :math:`10^{-5}` relative in float32, :math:`10^{-9}` in
float64; see :func:`ntkrepro.kernels._src.elementwise.relu_kernel`); every other entry agrees with
neural-tangents to rounding (tests: ``tests/test_fast_kernels.py``).

FLOP count (per input pair, NNGP + NTK; used for the benchmark's achieved FLOP/s)
-----------------------------------------------------------------------------------
attention with full output :math:`2 \cdot 2 \cdot 2S^3` (two :math:`S\times S` products per kernel);
with diagonal output :math:`2 (2S^3 + 2S^2)`; conv :math:`2 \cdot (\text{taps}) \cdot S_{out}^2`
additions (full) or :math:`2\cdot\text{taps}\cdot S` (diagonal); ReLU, masks, LayerNorm, pooling are
counted as 0 (elementwise). :func:`flop_count` evaluates this for a model and input shape.

Benchmark: :func:`ntkrepro.hron2020.benchmark.run_benchmark` (rule ``fast_kernels_benchmark``; the
generic timing / FLOP helpers are in :mod:`ntkrepro.kernels._src.bench`).

Targets met and missed (fresh-clone benchmarks of 2026-12-07, commits 225aed4 and 3f27dbc)
------------------------------------------------------------------------------------------
Speed-ups are ratios of two programs on one CPU and depend on it (every provenance record names the CPU:
``device.cpu_model``, ``cpu_features``). On a 2-core Xeon with AVX-512 and AMX (1024 matmul 264-311 GFLOP/s),
medians of 3 interleaved runs, fast over neural-tangents on the same blocks, ranges over the two runs:

* CIFAR S = 64 (target 15x): Struct / Vanilla / Residual 9.0-9.7 / 9.4-9.7 / 8.4-8.6x on 16 x 16 blocks,
  11.1-12.3 / 12.1-13.4 / 11.6-12.4x on 64 x 64 blocks, GAP 13.3-14.2x, Struct depth 2 12.3-13.1x: **missed**
  (on the CPU of the earlier runs, matmul 193-198 GFLOP/s, 13.6-21.4x: met except by Residual); the whole model
  at 0.10-0.23 of the matmul (target 0.4, **missed**; why: docs/kernels.md, "On another CPU").
* CIFAR S = 256 (target 5x): 6.7-7.5x, GAP 17.9-19.0x: met.
* IMDb at L = 500 on the subset's real review lengths (target 10x): 13.5x, met (length-aware blocks,
  :func:`ntkrepro.kernels.blocks.compute_kernel_blocks_sorted`); every review at full length 3.9-4.1x (at
  L = 500 the attention's full-output GEMMs are 98 % of the FLOPs and neural-tangents' attention is itself
  close to the matmul bound, so no rewrite gives 10x there; issue 36).
* The H4 sweep model (six families at once) against the six neural-tangents models: 21x (depth 1), 41-43x
  (depth 2).
"""

from __future__ import annotations

from ntkrepro.kernels._src.mc_replicates import mc_kernel
from ntkrepro.kernels._src.bench import flop_count
from ntkrepro.kernels._src.bridge import from_stax_builder
from ntkrepro.kernels._src.engine import BACKENDS, FastKernelFn, default_memory_budget, kernel_fn, nt_kernel_fn
from ntkrepro.kernels._src.layers import (AvgPool, Conv, Dense, FanInSum, FanOut, Flatten, GlobalAvgPool,
                                          GlobalSelfAttention, Identity, Layer, LayerNorm, Relu, parallel, serial)

__all__ = ["BACKENDS", "AvgPool", "Conv", "Dense", "FanInSum", "FanOut", "FastKernelFn", "Flatten", "GlobalAvgPool",
           "GlobalSelfAttention", "Identity", "Layer", "LayerNorm", "Relu", "default_memory_budget", "flop_count",
           "from_stax_builder", "kernel_fn", "mc_kernel", "nt_kernel_fn", "parallel", "serial"]
