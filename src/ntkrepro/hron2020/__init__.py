"""Hron, Bahri, Sohl-Dickstein, Novak (ICML 2020), "Infinite attention: NNGP and NTK for deep
attention networks", arXiv:2006.10540 -- claims H1-H6.

Modules (computation only; every criterion is in :mod:`.claims`):

* :mod:`.attention` -- the attention layer of the paper (neural-tangents ``GlobalSelfAttention``)
  and an exact reparameterised sampler of its outputs/attention weights at initialisation.
* :mod:`.gaussianity` -- H1: single- vs multi-head Gaussianity under d^-1/2 scaling (Fig. 1).
* :mod:`.average_pooling` -- H2: d^-1 scaling collapses attention to global average pooling.
* :mod:`.convergence` -- H3: empirical NNGP/NTK of finite attention nets vs the analytic kernels.
* :mod:`.cifar10` -- H4: CIFAR-10 NNGP/NTK regression with attention and pooling readouts.
* :mod:`.finite_nets` -- H5: finite attention networks (softmax / ReLU / identity x LayerNorm).
* :mod:`.imdb` -- H6: IMDb with GloVe, variable-length NNGP/NTK kernels.
* :mod:`.benchmark` -- benchmarks of the kernel models (both backends) and the paper-scale plan.
* :mod:`.claims` -- the pre-registered criteria of H1-H6 (with their amendment log).
* :mod:`.device_calibration`, :mod:`.device_cost`, :mod:`.device_tiers` -- H4, H5 and H6 on the one-GPU
  call: calibration, cost models, tier runners (composed by :mod:`ntkrepro.device`); :mod:`.gpu_run` and
  :mod:`.device_inputs` are the old names of ``python -m ntkrepro.device`` and ``... ntkrepro.device.inputs``.
"""
