"""ntkrepro: a reproducible replication suite for the NTK theory of attention and transformers.

Public modules (small, over shared helpers):

* :mod:`ntkrepro.nt` -- the one place neural-tangents is imported (TF-free).
* :mod:`ntkrepro.ledger` -- claims ledger: pre-registered criteria, verdicts, the aggregate table.
* :mod:`ntkrepro.stats` -- bootstrap intervals and power-law fits used by the criteria.
* :mod:`ntkrepro.provenance` -- git/config/package/device/data fingerprints on every artifact.
* :mod:`ntkrepro.run` -- runs a compute function from a Snakemake rule and writes its results.
* :mod:`ntkrepro.notebooks` -- executes a jupytext figure notebook with papermill.
* :mod:`ntkrepro.report` -- the LaTeX replication report.
* :mod:`ntkrepro.device` -- the prepared one-GPU call (plan, calibration, tiers), composing the papers'
  device parts; :mod:`ntkrepro.clock` -- its clock (wall or process CPU time).

One sub-package per paper: :mod:`ntkrepro.hron2020`, :mod:`ntkrepro.arda2026`,
:mod:`ntkrepro.hazelden2026`, :mod:`ntkrepro.framework`.
"""

__version__ = "0.1.0"
