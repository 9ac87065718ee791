"""Hazelden, Driscoll, Shlizerman, Shea-Brown (TMLR 2026), "The Global Empirical NTK" -- claims G1-G4.

Modules: :mod:`.kronecker` (Kronecker core two ways), :mod:`.transformer`
(self-attention transformer, G1 and G4), :mod:`.pythia` (Pythia-410M / GPTNeoX, G2),
:mod:`.rnn` (RNN and GRU GeNTK spectra over an initial-scale sweep, G3), :mod:`.claims` (pre-registered criteria).
"""
