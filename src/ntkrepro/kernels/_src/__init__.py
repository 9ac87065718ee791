"""Private implementation of :mod:`ntkrepro.kernels.fast` (neural-tangents style: a small public
module over ``_src``). Nothing here is a stable interface; import from :mod:`ntkrepro.kernels.fast`.

* :mod:`.elementwise` -- the ReLU arc-cosine kernel with a vectorisable ``atan2``;
* :mod:`.layers`      -- the layer descriptions (each one builds its neural-tangents ``stax`` layer
  *and* implements the same kernel recursion over blocks of pairs);
* :mod:`.engine`      -- planning (which spatial covariances each layer needs), the per-input and
  per-pair passes, chunking, jit caching: :class:`~.engine.FastKernelFn`;
* :mod:`.bench`       -- generic timing / FLOP helpers (the benchmarks of a paper's models live
  with the paper: :mod:`ntkrepro.hron2020.benchmark`).
"""
