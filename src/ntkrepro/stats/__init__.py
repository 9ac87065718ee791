"""Statistics shared by the claim criteria of all four papers (one home for each helper).

A package of small modules (issue 40: no module over 600 lines; before, the single module ``stats.py``);
every name is importable from ``ntkrepro.stats`` as before:

* :mod:`ntkrepro.stats.intervals` -- :class:`Interval`, :func:`bootstrap_ci`, fits (:func:`linear_fit`,
  :func:`powerlaw_fit`, :func:`bootstrap_slope`), :func:`effective_rank`, :func:`participation_ratio`; the
  decisions (CLAIMS.md rules 1-2): :class:`Status`, :func:`at_least`, :func:`at_most` (one-sided),
  :func:`equivalence` (a stated margin; a wide interval never passes), :func:`combine`;
* :mod:`ntkrepro.stats.power` -- the power line of an undecided entry (rule 5): :class:`PowerLine`,
  :func:`power_line`, :func:`mean_t_interval`, :data:`MAX_EXTRAPOLATION`;
* :mod:`ntkrepro.stats.paired` -- resampling and exact paired tests for few units (rule 4):
  :func:`paired_bootstrap`, :func:`hierarchical_bootstrap` (outer: teacher / data draw, inner: init seed),
  :func:`sign_test`, :func:`permutation_test`, :func:`paired_test_power`;
* :mod:`ntkrepro.stats.associations` -- distances and associations: :func:`rel_frobenius`, :func:`spearman`,
  :func:`spearman_ci`, :func:`stratified_spearman_ci`, :func:`ks_distance`, and the exact test of a rank
  correlation across few units (:func:`spearman_permutation_test`);
* :mod:`ntkrepro.stats.crossed` -- :func:`powerlaw_wls_fit` (a power law fitted on raw values) and
  :func:`crossed_bootstrap` (rows x columns, e.g. model families x shared test points) with its power lines.

All functions are deterministic given their ``seed`` so that ledger numbers repeat exactly.
"""

from __future__ import annotations

from ntkrepro.stats.intervals import (  # noqa: F401
    Interval, Status, at_least, at_most, bootstrap_ci, bootstrap_slope, combine, effective_rank, equivalence,
    linear_fit, participation_ratio, powerlaw_fit)
from ntkrepro.stats.power import (  # noqa: F401
    MAX_EXTRAPOLATION, NotePowerLine, PowerLine, mean_t_interval, power_line)
from ntkrepro.stats.paired import (  # noqa: F401
    OneSidedTest, PairedTest, hierarchical_bootstrap, hierarchical_resample, paired_bootstrap,
    paired_test_power, permutation_test, sign_test, slope_statistic)
from ntkrepro.stats.associations import (  # noqa: F401
    CorrelationTest, ks_distance, rel_frobenius, spearman, spearman_ci, spearman_permutation_test,
    stratified_spearman_ci)
from ntkrepro.stats.crossed import (  # noqa: F401
    CrossedPowerLine, crossed_bootstrap, crossed_power_lines, powerlaw_wls_fit)
