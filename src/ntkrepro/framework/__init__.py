"""Framework paper (seed 000), "Neural Tangent Kernels Applied to Transformers" -- claims F1-F6.

Modules:

* :mod:`.models` -- the one transformer block (:class:`~.models.BlockSpec`) as neural-tangents
  stax (infinite width) and as a flax module (finite width, empirical NTK, training).
* :mod:`.linear_attention` -- F1: closed-form NTK of linear attention :math:`Q(K^\\top V)`.
* :mod:`.spectra` -- kernel-over-positions tools: effective rank, Fourier content, spectra.
* :mod:`.deviation` -- F2: finite-width deviation of the empirical NTK vs width.
* :mod:`.positions` -- F3: NTK eigenstructure over positions, with/without sinusoidal encodings.
* :mod:`.masking` -- F5: causal (GPT) vs bidirectional (BERT) NTK spectra.
* :mod:`.training` -- F4/F6: trained finite transformers: NTK movement, effective rank vs test
  loss, attention patterns vs NTK eigenvectors.
* :mod:`.claims` -- the pre-registered criteria of F1-F6.
"""
