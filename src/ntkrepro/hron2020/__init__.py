"""Hron, Bahri, Sohl-Dickstein, Novak (ICML 2020), "Infinite attention: NNGP and NTK for deep
attention networks", arXiv:2006.10540 -- claims H1-H6.

Modules:

* :mod:`.attention` -- the attention layer of the paper (neural-tangents ``GlobalSelfAttention``)
  and an exact reparameterised sampler of its outputs/attention weights at initialisation.
* :mod:`.gaussianity` -- H1: single- vs multi-head Gaussianity under d^-1/2 scaling (Fig. 1).
* :mod:`.average_pooling` -- H2: d^-1 scaling collapses attention to global average pooling.
* :mod:`.claims` -- the pre-registered criteria of H1-H6.
"""
