"""Private implementation of :mod:`ntkrepro.kernels.fast` (neural-tangents style: a small public
module over ``_src``). Nothing here is a stable interface; import from :mod:`ntkrepro.kernels.fast`.

* :mod:`.layers`      -- the layer descriptions (each one builds its neural-tangents ``stax`` layer
  *and* implements the same kernel recursion over blocks of pairs), re-exported from, by what a
  layer does (as ``stax``): :mod:`.base` (states, layouts, the ``Layer`` class, inputs),
  :mod:`.linear` (``Dense``, ``Conv``), :mod:`.elementwise` (``Relu``: the arc-cosine kernel with a
  vectorisable ``atan2``), :mod:`.normalization` (``LayerNorm``), :mod:`.pooling` (``Flatten``,
  ``GlobalAvgPool``, ``AvgPool``), :mod:`.attention` (``GlobalSelfAttention``),
  :mod:`.combinators` (``Identity``, ``FanOut``, ``FanInSum``, ``serial``, ``parallel``);
* :mod:`.engine`      -- planning (which spatial covariances each layer needs), the per-input and
  per-pair passes, chunking, jit caching: :class:`~.engine.FastKernelFn`;
* :mod:`.bench`       -- generic timing / FLOP helpers (the benchmarks of a paper's models live
  with the paper: :mod:`ntkrepro.hron2020.benchmark`).
"""
