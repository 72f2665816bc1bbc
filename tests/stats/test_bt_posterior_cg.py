"""The sparse posterior says when its conjugate-gradient solves stop short of tolerance.

An ill-conditioned real fit, no patched solver: items compared only along a chain
(i, i + 1) with a tiny ridge (lam 1e-6). The deflation takes out each component's constant
exactly, but the chain's Laplacian has eigenvalues down to ~w pi^2 / N^2, so at N = 500 the
probes for the theta variances stop at 2,000 iterations (relative residual ~5e-5 against
1e-6) while the MAP converges. At lam 1e-2 the same chain needs ~50 iterations.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from judgeaudit.stats import bt_posterior
from judgeaudit.stats.bradley_terry import fit_map


def chain(n: int, seed: int = 0, passes: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Comparisons of neighbours i, i + 1 only (both orders), quality rising along the
    chain, and one normal covariate."""
    rng = np.random.default_rng(seed)
    q = np.linspace(0.0, 3.0, n)
    rows = []
    for r in range(passes):
        for i in range(n - 1):
            a, b = (i, i + 1) if r % 2 == 0 else (i + 1, i)
            rows.append((a, b, float(rng.random() < 1 / (1 + np.exp(-(q[a] - q[b]))))))
    return np.array(rows), rng.normal(size=(n, 1))


def test_an_ill_conditioned_fit_reports_its_stopped_solves():
    C, X = chain(500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the Newton steps' own solves
        fit = fit_map(500, C, X=X, lam=1e-6, posterior="sparse")
    assert fit.converged  # the MAP is fine: its flag alone says nothing of the CG
    post = fit.posterior
    with pytest.warns(RuntimeWarning, match=r"did not reach tolerance in 2000 iterations "
                                            r"\(relative residual .*, target 1e-06\)"):
        assert np.all(np.isfinite(fit.theta_var))  # the probes: solved on first use
    st = post.cg_status()
    assert post.cg_converged is False and st["converged"] is False
    assert st["failed_solves"] >= 1 and st["max_iterations"] == bt_posterior._CG_MAXITER
    assert st["target"] == bt_posterior._PROBE_RTOL < st["relative_residual"] < 1.0


def test_a_well_conditioned_fit_reports_every_solve_converged():
    C, X = chain(500)
    fit = fit_map(500, C, X=X, lam=1e-2, posterior="sparse")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert np.all(np.isfinite(fit.theta_var))
        fit.theta_cov_block(np.arange(20), rtol=1e-5)
    st = fit.posterior.cg_status()
    assert st["converged"] is True and st["failed_solves"] == 0
    assert st["relative_residual"] is None and st["target"] is None
    assert st["iterations"] > 0
