"""Framework paper (seed 000), "Neural Tangent Kernels Applied to Transformers" -- claims F1-F6.

Modules:

* :mod:`.models` -- the one transformer block (:class:`~.models.BlockSpec`) as neural-tangents
  stax (infinite width) and as a flax module (finite width, empirical NTK, training).
* :mod:`.linear_attention` -- F1: closed-form NTK of linear attention :math:`Q(K^\\top V)`.
* :mod:`.spectra` -- kernel-over-positions tools: effective rank, Fourier content, spectra.
* :mod:`.kernel_regime` -- F2 (and F6 part i): trained network vs its linearised model, NTK
  movement and initial NTK deviation vs width.
* :mod:`.positions` -- F3: NTK eigenstructure over positions, with/without sinusoidal encodings.
* :mod:`.masking` -- F5: causal (GPT) vs bidirectional (BERT) NTK spectra.
* :mod:`.training` -- the synthetic task, gradient descent and the linearised model; F4 (trained
  attention vs NTK eigenvectors, per sequence) and F6 (architecture variants at matched widths).
* :mod:`.claims` -- the pre-registered criteria of F1-F6.
"""
