"""Pure numerics for judge audits: intervals, tests, q-values, power, agreement, logistic fits.

No I/O and no imports of other judgeaudit packages (only numpy and scipy), so every number in
a report can be checked against scipy/statsmodels or a textbook formula in isolation.
"""

from judgeaudit.stats.agreement import (
    cohen_kappa,
    fleiss_kappa,
    fleiss_kappa_ci,
    kappa_ci,
    kendall,
    kendall_tau_b,
    pearson,
    percent_agreement,
    spearman,
)
from judgeaudit.stats.correlation import (
    correlations,
    group_correlations,
    system_correlations,
)
from judgeaudit.stats.intervals import (
    SPARSE_MOVERS,
    bootstrap_ci,
    mean_ci,
    movers_ci,
    paired_bootstrap_diff,
    paired_estimate,
    rate,
    wilson,
)
from judgeaudit.stats.logistic import LogisticFit, add_constant, fit_logistic
from judgeaudit.stats.multiple import benjamini_hochberg
from judgeaudit.stats.power import (
    mde_paired_flip,
    mde_proportion,
    required_n_paired_flip,
    required_n_proportion,
)
from judgeaudit.stats.sequential import (
    betting_cs,
    betting_evalue,
    ebh,
    empirical_bernstein_cs,
)
from judgeaudit.stats.tests import (
    binomial_test,
    mcnemar_exact,
    one_sample_t,
    wilcoxon_signed_rank,
)
from judgeaudit.stats.types import Estimate, Interval, Items, Statistic

__all__ = [
    "SPARSE_MOVERS",
    "correlations",
    "group_correlations",
    "kendall",
    "kendall_tau_b",
    "system_correlations",
    "Estimate",
    "Interval",
    "Items",
    "LogisticFit",
    "Statistic",
    "add_constant",
    "benjamini_hochberg",
    "betting_cs",
    "betting_evalue",
    "binomial_test",
    "bootstrap_ci",
    "cohen_kappa",
    "ebh",
    "empirical_bernstein_cs",
    "fit_logistic",
    "kappa_ci",
    "mcnemar_exact",
    "mde_paired_flip",
    "mde_proportion",
    "mean_ci",
    "movers_ci",
    "one_sample_t",
    "paired_bootstrap_diff",
    "paired_estimate",
    "pearson",
    "fleiss_kappa",
    "fleiss_kappa_ci",
    "percent_agreement",
    "rate",
    "required_n_paired_flip",
    "required_n_proportion",
    "spearman",
    "wilcoxon_signed_rank",
    "wilson",
]
