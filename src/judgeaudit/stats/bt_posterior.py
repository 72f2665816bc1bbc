"""The Laplace posterior of the bias-aware Bradley-Terry model without a dense N x N matrix.

The Hessian over ``[theta (N), b (nb = M covariates + position)]`` is bordered:

    H = [[A, B], [B^T, C]],   A = L_w + lam I  (sparse: a weighted graph Laplacian),

B is N x nb and C nb x nb, both dense but thin. Every posterior quantity the rank code needs
follows from solves with A (Schur complement S = C - B^T A^-1 B, X = A^-1 B):

- Cov(b) = S^-1 (exact),
- Var(theta_a - theta_b) = u^T A^-1 u + (X^T u)^T S^-1 (X^T u), u = e_a - e_b (exact),
- diag Cov(theta) = diag(A^-1) + rowsum((X S^-1) * X): the second term is exact; the first
  needs the diagonal of a dense inverse, which for a comparison graph (an expander: a sparse
  Cholesky fills in completely) no method gets exactly in O(nnz). It is estimated without
  bias by a Hutchinson probe estimator around a control variate whose diagonal is exact (the
  first three terms of the Neumann series of A), with its standard error kept alongside.

Solves with A use block conjugate gradients with a Jacobi preconditioner, deflated by the
constant vector of each connected component of the comparison graph: A 1_c = lam 1_c exactly
(the prior is the only information about a component's common shift), so that part of A^-1
is known in closed form and CG only sees the well-conditioned rest. This is also what keeps a
tiny ridge (``fit_naive``: lam = 1e-6) from wrecking convergence.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import sparse
from scipy.linalg import lapack
from scipy.sparse import csgraph

_CG_RTOL = 1e-11
# Quadratic forms u^T A^-1 u from CG converge at twice the rate of the residual (CG minimises
# the A-norm error), so pair variances are exact to ~1e-14 relative at this residual; the
# probes for diag(A^-1) carry a Monte-Carlo error of ~1e-3 that a tighter solve cannot reduce.
_PAIR_RTOL = 1e-7
_PROBE_RTOL = 1e-6
_CG_MAXITER = 2000
N_PROBES = 48  # Hutchinson probes for diag(A^-1); standard error stored with the estimate


class PairGraph:
    """Distinct compared pairs of a comparison set, fixed for a fit (the pattern of A).

    ``inv`` maps each comparison to its pair; ``perm`` maps CSR slots to the entries
    ``[-w_pair (u, v), -w_pair (v, u), diag]`` so that A is rebuilt at new weights in O(nnz).
    """

    def __init__(self, n: int, i: np.ndarray, j: np.ndarray) -> None:
        self.n = n
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        keys, self.inv = np.unique(lo * n + hi, return_inverse=True)
        self.inv = self.inv.ravel()
        self.u, self.v = keys // n, keys % n
        self.n_pairs = int(keys.shape[0])
        P = self.n_pairs
        rows = np.concatenate([self.u, self.v, np.arange(n)])
        cols = np.concatenate([self.v, self.u, np.arange(n)])
        tmpl = sparse.csr_matrix((np.arange(2 * P + n, dtype=float) + 1.0, (rows, cols)),
                                 shape=(n, n))
        self.indptr, self.indices = tmpl.indptr, tmpl.indices
        self.perm = tmpl.data.astype(np.intp) - 1
        ncomp, labels = csgraph.connected_components(tmpl, directed=False)
        self.n_comp, self.labels = int(ncomp), labels
        self.comp_size = np.bincount(labels, minlength=ncomp).astype(float)
        self._G = None

    def laplacian_plus(self, wp: np.ndarray, diag: np.ndarray) -> sparse.csr_matrix:
        """The sparse matrix with off-diagonal -wp per pair and the given diagonal."""
        vals = np.concatenate([-wp, -wp, diag])
        return sparse.csr_matrix((vals[self.perm], self.indices, self.indptr),
                                 shape=(self.n, self.n))

    def comp_sum(self, V: np.ndarray) -> np.ndarray:
        """(n_comp, K) sums of the rows of V per component."""
        if self.n_comp == 1:
            return V.sum(axis=0, keepdims=True)
        if self._G is None:
            self._G = sparse.csr_matrix((np.ones(self.n), (self.labels, np.arange(self.n))),
                                        shape=(self.n_comp, self.n))
        return np.asarray(self._G @ V)

    def project(self, V: np.ndarray) -> np.ndarray:
        """V minus its mean within each component (orthogonal to every 1_c)."""
        if self.n_comp == 1:
            return V - V.mean(axis=0)
        means = self.comp_sum(V) / self.comp_size[:, None]
        return V - (means if self.n_comp == 1 else means[self.labels])


class SparsePosterior:
    """Laplace posterior from the bordered sparse Hessian; see the module docstring.

    ``n_probes`` sets the Hutchinson estimate of diag(A^-1) (``theta_var_se`` is its
    standard error); ``seed`` makes it reproducible.
    """

    def __init__(self, graph: PairGraph, wp: np.ndarray, deg: np.ndarray, lam: float,
                 B: np.ndarray, C: np.ndarray, n_probes: int = N_PROBES, seed: int = 0,
                 rtol: float = _CG_RTOL, rhs: np.ndarray | None = None,
                 X0: np.ndarray | None = None) -> None:
        self.graph, self.lam, self.rtol = graph, float(lam), float(rtol)
        self.n, self.nb = graph.n, int(C.shape[0])
        self.wp = wp
        self.dp = deg + lam  # diagonal of A
        self.A = graph.laplacian_plus(wp, self.dp)
        self.B, self.C = B, C
        self.n_probes, self.seed = int(n_probes), int(seed)
        # Every CG solve of this posterior (the border, the probes for the theta variances,
        # pair variances, covariance blocks for P(top-k)) reports here: ``cg_converged``
        # turns False when one stops at _CG_MAXITER short of its tolerance; ``cg_failures``
        # counts such solves and ``cg_residual`` is the largest relative residual one was
        # left at (the tolerance it missed in ``cg_target``). See ``cg_status``.
        self.cg_iters = 0
        self.cg_converged = True
        self.cg_failures = 0
        self.cg_residual = 0.0
        self.cg_target = 0.0
        # ``rhs`` (N + nb,): H^-1 rhs is solved together with A^-1 B (one block CG run) and
        # kept as ``rhs_solution`` (a Newton step). ``X0``: a starting guess for A^-1 B (that
        # of a nearby posterior: CG then starts from its residual)
        At = None
        if X0 is not None and X0.shape != B.shape:
            X0 = None
        if rhs is not None:
            Y0 = None if X0 is None else np.column_stack([X0, np.zeros(self.n)])
            Y = self.solve_A(np.column_stack([B, rhs[: self.n]]), X0=Y0)
            self.X, At = Y[:, : self.nb], Y[:, self.nb]
        elif self.nb:
            self.X = self.solve_A(B, X0=X0)
        else:
            self.X = np.zeros((self.n, 0))
        if self.nb:
            S = C - B.T @ self.X
            self.b_cov = _spd_inverse(0.5 * (S + S.T))
        else:
            self.b_cov = np.zeros((0, 0))
        self.rhs_solution = None if At is None else self._schur(At, rhs[self.n :][:, None])[:, 0]
        self._theta_var: np.ndarray | None = None
        self.theta_var_se: np.ndarray | None = None

    # ------------------------------------------------------------------ solves with A
    def _deflated_part(self, R: np.ndarray) -> np.ndarray:
        g = self.graph
        coef = g.comp_sum(R) / (self.lam * g.comp_size[:, None])
        return coef if g.n_comp == 1 else coef[g.labels]

    def solve_A(self, R: np.ndarray, rtol: float | None = None,
                X0: np.ndarray | None = None) -> np.ndarray:
        """A^-1 R (R of shape (N,) or (N, K)), exact to CG tolerance (relative to R);
        ``X0`` (N, K): a starting guess."""
        one = R.ndim == 1
        R2 = R[:, None] if one else R
        out = self._deflated_part(R2) + self._pcg(self.graph.project(R2), rtol, X0)
        return out[:, 0] if one else out

    def _pcg(self, R: np.ndarray, rtol: float | None = None,
             X0: np.ndarray | None = None) -> np.ndarray:
        """Deflated block Jacobi-PCG on the component-mean-free part (columns independent),
        from ``X0`` (projected) when given; the tolerance is relative to R either way.

        The preconditioner is P D^-1 P (P: ``graph.project``), so every search direction stays
        mean-free, where A is positive definite; and a column stops (is frozen) once it
        reaches its tolerance. With D^-1 alone the directions picked up each component's
        constant, which P A annihilates: p^T P A p was then a difference of nearly equal
        numbers, and once a column had converged (its residual at rounding level, while other
        columns went on) it was rounding noise, alpha = r^T z / p^T P A p exploded and the
        column diverged (a rank refit on 8 comparisons among 50 items, seed 0: relative
        residual 3e+03, then a Schur complement that was not positive definite and exit 2)."""
        g, A = self.graph, self.A
        dinv = 1.0 / self.dp[:, None]
        X = np.zeros_like(R)
        if R.shape[1] == 0:
            return X
        bnorm = np.linalg.norm(R, axis=0)
        active = bnorm > 0
        if not active.any():
            return X
        tol = (rtol or self.rtol) * np.where(active, bnorm, 1.0)
        if X0 is not None:
            X = g.project(np.array(X0, dtype=float).reshape(R.shape))
            Rk = R - g.project(np.asarray(A @ X))
        else:
            Rk = R.copy()
        rn = np.linalg.norm(Rk, axis=0)
        live = rn > tol  # columns still iterating; a converged one is frozen
        if not live.any():
            return g.project(X)
        Z = g.project(dinv * Rk)
        Z[:, ~live] = 0.0
        Pd = Z.copy()
        rz = np.einsum("ij,ij->j", Rk, Z)
        it = 0
        for it in range(1, _CG_MAXITER + 1):  # noqa: B007
            Q = g.project(np.asarray(A @ Pd))
            pq = np.einsum("ij,ij->j", Pd, Q)
            alpha = np.divide(rz, pq, out=np.zeros_like(rz), where=live & (pq > 0))
            X += alpha * Pd
            Rk -= alpha * Q
            rn = np.linalg.norm(Rk, axis=0)
            done = live & (rn <= tol)
            if done.any():
                live &= ~done
                if not live.any():
                    break
                Pd[:, done] = 0.0
            Z = g.project(dinv * Rk)
            if not live.all():
                Z[:, ~live] = 0.0
            rz_new = np.einsum("ij,ij->j", Rk, Z)
            beta = np.divide(rz_new, rz, out=np.zeros_like(rz), where=rz > 0)
            Pd = Z + beta * Pd
            rz = rz_new
        else:
            rel = float(np.max(rn[active] / bnorm[active]))
            target = float(rtol or self.rtol)
            self.cg_converged = False
            self.cg_failures += 1
            if rel > self.cg_residual:
                self.cg_residual, self.cg_target = rel, target
            warnings.warn("sparse posterior: conjugate gradients did not reach tolerance "
                          f"in {_CG_MAXITER} iterations (relative residual {rel:.2g}, "
                          f"target {target:.2g})", RuntimeWarning, stacklevel=3)
        self.cg_iters += it
        return g.project(X)

    def cg_status(self) -> dict:
        """The CG solves so far, for a results document: ``converged`` (every solve reached
        its tolerance), ``failed_solves``, ``relative_residual`` and ``target`` (the worst
        stopped solve's, None when none stopped short), ``max_iterations`` and
        ``iterations`` (all solves). Read it after the quantities that are reported: the
        theta variances and covariance blocks are solved on first use."""
        bad = self.cg_failures > 0
        return {"converged": self.cg_converged, "failed_solves": self.cg_failures,
                "relative_residual": self.cg_residual if bad else None,
                "target": self.cg_target if bad else None,
                "max_iterations": _CG_MAXITER, "iterations": self.cg_iters}

    # ------------------------------------------------------------------ posterior quantities
    def solve(self, R: np.ndarray) -> np.ndarray:
        """H^-1 R for R of shape (N + nb, K) by the block (Schur) inverse."""
        return self._schur(self.solve_A(R[: self.n]), R[self.n :])

    def _schur(self, At: np.ndarray, Rb: np.ndarray) -> np.ndarray:
        """H^-1 [Rt; Rb] from At = A^-1 Rt."""
        if At.ndim == 1:
            At = At[:, None]
        if not self.nb:
            return At
        xb = self.b_cov @ (Rb - self.B.T @ At)
        return np.vstack([At - self.X @ xb, xb])

    def pair_var(self, a: np.ndarray, b: np.ndarray, chunk: int = 256) -> np.ndarray:
        """Exact posterior Var(theta_a - theta_b) for the pairs (a[t], b[t])."""
        a = np.asarray(a, dtype=np.intp).ravel()
        b = np.asarray(b, dtype=np.intp).ravel()
        out = np.empty(a.shape[0])
        for s in range(0, a.shape[0], chunk):
            aa, bb = a[s : s + chunk], b[s : s + chunk]
            k = np.arange(aa.shape[0])
            U = np.zeros((self.n, aa.shape[0]))
            U[aa, k] += 1.0
            U[bb, k] -= 1.0
            Y = self.solve_A(U, rtol=min(self.rtol * 1e4, _PAIR_RTOL))
            v = Y[aa, k] - Y[bb, k]
            if self.nb:
                T = self.X[aa] - self.X[bb]  # X^T u, one row per pair
                v = v + np.einsum("ki,ij,kj->k", T, self.b_cov, T)
            out[s : s + chunk] = v
        return np.maximum(out, 0.0)

    def theta_cov_block(self, idx: np.ndarray, chunk: int = 256, rtol: float = _PAIR_RTOL
                        ) -> np.ndarray:
        """Cov(theta_idx) (|idx| x |idx|, exact to CG tolerance ``rtol``): one solve per
        item."""
        idx = np.asarray(idx, dtype=np.intp).ravel()
        out = np.empty((idx.shape[0], idx.shape[0]))
        P = self.n + self.nb
        for s in range(0, idx.shape[0], chunk):
            cols = idx[s : s + chunk]
            E = np.zeros((P, cols.shape[0]))
            E[cols, np.arange(cols.shape[0])] = 1.0
            save, self.rtol = self.rtol, rtol
            try:
                out[:, s : s + chunk] = self.solve(E)[idx]
            finally:
                self.rtol = save
        return 0.5 * (out + out.T)

    @property
    def theta_var(self) -> np.ndarray:
        """diag Cov(theta): border term exact, diag(A^-1) estimated (see ``theta_var_se``)."""
        if self._theta_var is None:
            dA, se = self._diag_A_inverse()
            border = np.einsum("ij,jk,ik->i", self.X, self.b_cov, self.X) if self.nb else 0.0
            self._theta_var = dA + border
            self.theta_var_se = se
        return self._theta_var

    def _neumann(self, V: np.ndarray) -> np.ndarray:
        """M V with M = D^-1 + D^-1 W D^-1 + D^-1 W D^-1 W D^-1 (A = D - W)."""
        dinv = 1.0 / self.dp[:, None]
        A = self.A
        u = dinv * V
        w1 = dinv * (self.dp[:, None] * u - A @ u)  # D^-1 W D^-1 V
        w2 = dinv * (self.dp[:, None] * w1 - A @ w1)  # D^-1 W D^-1 W D^-1 V
        return u + w1 + w2

    def _diag_A_inverse(self) -> tuple[np.ndarray, np.ndarray]:
        """diag(A^-1) = 1/(lam n_c) + diag(P A^-1 P); the second by probes around P M P."""
        g, n = self.graph, self.n
        exact = 1.0 / (self.lam * g.comp_size[g.labels])
        dp = self.dp
        # diag(M) exactly: 1/d_i + sum_j w_ij^2 / (d_i^2 d_j)
        s = (np.bincount(g.u, self.wp**2 / dp[g.v], n)
             + np.bincount(g.v, self.wp**2 / dp[g.u], n))
        m_diag = 1.0 / dp + s / dp**2
        # diag(P M P) = M_ii - 2 (M 1_c)_i / n_c + 1_c^T M 1_c / n_c^2 (M is block-diagonal)
        m1 = self._neumann(np.ones((n, 1)))[:, 0]
        sizes = g.comp_size[g.labels]
        tot = g.comp_sum(m1[:, None])[:, 0][g.labels]
        t_diag = m_diag - 2.0 * m1 / sizes + tot / sizes**2
        single = sizes == 1  # a singleton's complement is empty
        t_diag[single] = 0.0
        K = self.n_probes
        if K <= 0:
            return exact + t_diag, np.full(n, np.nan)
        rng = np.random.default_rng(self.seed)
        V = rng.choice([-1.0, 1.0], size=(n, K))  # E[v v^T] = I: v * (Q v) is unbiased
        PV = g.project(V)
        samples = V * (self._pcg(PV, _PROBE_RTOL) - g.project(self._neumann(PV)))
        est = samples.mean(axis=1)
        se = samples.std(axis=1, ddof=1) / np.sqrt(K) if K > 1 else np.full(n, np.nan)
        est[single] = 0.0
        se[single] = 0.0
        return exact + t_diag + est, se

    def dense_cov(self) -> np.ndarray:
        """The full (N + nb)^2 covariance (dense: only on request)."""
        n = self.n
        H = np.zeros((n + self.nb, n + self.nb))
        H[:n, :n] = self.A.toarray()
        H[:n, n:] = self.B
        H[n:, :n] = self.B.T
        H[n:, n:] = self.C
        return _spd_inverse(H)


def _spd_inverse(H: np.ndarray) -> np.ndarray:
    """Inverse of a symmetric positive definite matrix by Cholesky (potrf + potri)."""
    if H.shape[0] == 0:
        return H.copy()
    if H.shape[0] <= 8:  # the covariate/position block: LAPACK's call overhead dominates
        np.linalg.cholesky(H)  # raises LinAlgError when not positive definite
        inv = np.linalg.inv(H)
        return 0.5 * (inv + inv.T)
    L, info = lapack.dpotrf(H, lower=1, clean=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"Hessian not positive definite (potrf info={info})")
    inv, info = lapack.dpotri(L, lower=1, overwrite_c=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"Hessian inverse failed (potri info={info})")
    # potri fills the lower triangle (the upper one is still the zeros of clean=1)
    d = np.diag(inv).copy()
    inv += inv.T
    inv[np.diag_indices_from(inv)] = d
    return inv


# float32 is used for the dense inverse when the Gershgorin bound on the condition number is
# at most this: measured relative error of the pair variances ~4e-7 at N = 1,000 (bound
# ~1e3), far below the Monte-Carlo error of anything the acquisition does with them
_SINGLE_MAX_COND = 1e4


def single_precision_ok(max_eig: float, min_eig: float | None) -> bool:
    """Whether the dense inverse may run in float32: the condition number bounded by
    ``max_eig / min_eig`` is at most ``_SINGLE_MAX_COND``. For a Bradley-Terry Hessian
    ``min_eig`` is the smallest prior precision (the likelihood part is positive
    semi-definite) and ``max_eig`` Gershgorin's bound."""
    return min_eig is not None and min_eig > 0 and max_eig <= _SINGLE_MAX_COND * min_eig


def dense_inverse_factor(H: np.ndarray, min_eig: float | None = None
                         ) -> tuple[np.ndarray, np.ndarray]:
    """``(M, cov)`` for a symmetric positive definite H: M = L^-1 (lower triangular, L the
    Cholesky factor, so cov = M^T M = H^-1 and x = M^T z is a draw of N(0, H^-1)) and the
    full symmetric inverse in float64.

    A float32 H is factorised in float32 (the caller checked ``single_precision_ok``; half
    the time; M stays float32, cov is cast to float64). A float64 H is too when ``min_eig``
    (a lower bound on its smallest eigenvalue) and Gershgorin's bound on the largest pass
    ``single_precision_ok``. Otherwise, and when the float32 Cholesky fails, float64.
    """
    single = H.dtype == np.float32
    Hd = H
    if not single and min_eig is not None and H.size:
        Hd = H.astype(np.float32)
        lmax = float(np.max(np.add.reduce(np.abs(Hd), axis=1, dtype=np.float64)))
        single = single_precision_ok(lmax, min_eig)
    dt = np.float32 if single else np.float64
    potrf, trtri, lauum = lapack.get_lapack_funcs(("potrf", "trtri", "lauum"),
                                                  (np.empty(0, dtype=dt),))
    L, info = potrf(Hd if single else H.astype(dt), lower=1, clean=1, overwrite_a=1)
    if info != 0:
        if single:
            if H.dtype == np.float32:
                raise np.linalg.LinAlgError("float32 Cholesky failed: pass H in float64")
            return dense_inverse_factor(H, None)
        raise np.linalg.LinAlgError(f"Hessian not positive definite (potrf info={info})")
    M, info = trtri(L, lower=1, overwrite_c=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"triangular inverse failed (trtri info={info})")
    # M^T M in the lower triangle; the upper one stays the zeros of M (potrf clean=1, and
    # trtri and lauum touch only the lower triangle)
    S, info = lauum(M, lower=1, overwrite_c=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"lauum failed (info={info})")
    # S is Fortran-ordered (LAPACK): S.T is the C-ordered upper triangle
    cov = S.T.astype(np.float64)
    cov += S
    cov[np.diag_indices_from(cov)] -= np.diag(S)
    return M, cov
