"""Rank at scale: the bias-aware Bradley-Terry fit with its posterior at N = 1,000 .. 10,000
items, beside choix and the old dense path, and the active step at N = 100 / 1,000.

Run by hand (a few minutes on an idle machine; on a shared one under nice):
    nice -n 19 python benchmarks/rank_scale.py            # everything -> results/rank_scale.json
    nice -n 19 python benchmarks/rank_scale.py --parts step,agreement   # some parts (merged)
Wall time on a loaded machine under nice 19 mostly measures the scheduler; each child's CPU
time (user + sys of the process) is recorded beside it and moves much less.

Every configuration runs in its own subprocess (so ``ru_maxrss`` is that configuration's own
peak RSS, data generation included), ``--reps`` times; medians are reported.

- Data: planted quality theta ~ N(0, 1), one length-like covariate (standardised log-normal)
  with the judge's bias c = 0.5 logit per unit, a position bias kappa = 0.3; pairs drawn
  uniformly, shown in a random order; no ties.
- ``fit``: ``fit_map`` (bias-aware: covariate + position) and the posterior quantities the
  rank code reads: every theta variance, c and kappa standard errors (timed together:
  ``wall_s``, ``cpu_s``); then N_PAIRS = 200 exact pair variances, timed apart
  (``pair_var_ms_per_pair``: one sparse solve per pair on the sparse path). ``rss_mb`` is
  the child's peak, data generation and pair variances included.
  "auto" is the dense posterior up to 3,000 parameters, the sparse one above.
- ``old_dense``: the same through the fit code of commit OLD_COMMIT (L-BFGS, dense Hessian,
  cho_solve against the identity), loaded from git; run with BLAS at one thread (as the
  new code limits itself), and once at N = 1,000 with the library default ("threads":
  "default"), which is how it ran before.
- ``choix``: ``choix.ilsr_pairwise`` (maximum likelihood, no covariates) on the same pairs
  as (winner, loser), with our plain fit (``fit_naive``, lam = 1e-9) beside it; estimates
  compared after centering.
- ``agreement``: N = 1,000 / 100k: the sparse path (Newton + sparse posterior) against the
  dense path (L-BFGS + dense inverse): theta, posterior sd, c/kappa se, pair variances; also
  the posterior sd at the same point (dense inverse at the sparse MAP), which separates the
  Monte-Carlo error of the sparse theta variances from the two optimisers' stopping points.
- ``step``: one acquisition round of the active loop: the warm refit of the driving model
  after 8 new comparisons (with or without the empirical-Bayes tau update; Newton from the
  previous MAP, posterior left lazy, as run_active does), the acquisition context (one
  inverse of the Hessian, float32 when well conditioned, and top-k membership from 1,500
  draws taken from its factor in antithetic pairs) and the top-k score of every unasked
  pair, with 3N comparisons so far (as benchmarks/bench_rank.py). Wall and CPU time, median of
  ``--step-reps``; BLAS threads limited by judgeaudit.stats.threads (the loop does this
  itself) or left at the library default ("default_threads"); "old" is the refit through
  the OLD_COMMIT fit code. "carried" (N = 1,000): the round of a carried context
  (judgeaudit.rank.loop: the previous context's covariance and draws around the new MAP, no
  inverse); ``step_cycle`` gives the loop's mean round with an exact context every 8 refits.
- ``summary``: the results summary's top-k membership (judgeaudit.rank.summary.membership)
  from a sparse fit at N = 5k / 500k and 10k / 1M: no N x N covariance; items a 6-sd
  screen keeps are drawn jointly from their covariance (solved for by CG). Time and peak
  RSS (the fit's included), how many items the screen kept.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
OUT = ROOT / "benchmarks" / "results" / "rank_scale.json"
OLD_COMMIT = "731a585"  # the fit code before the sparse posterior
C_TRUE, KAPPA_TRUE = 0.5, 0.3
N_PAIRS = 200  # pair variances asked for in the timed fit (exact: one sparse solve each)


# --------------------------------------------------------------------------- data
def simulate(n: int, m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n)
    length = rng.lognormal(6.0, 0.5, size=n)
    X = ((np.log(length) - np.log(length).mean()) / np.log(length).std())[:, None]
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    eta = theta[a] - theta[b] + C_TRUE * (X[a, 0] - X[b, 0]) + KAPPA_TRUE
    y = (rng.random(m) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
    return np.column_stack([a, b, y]), X, theta


def old_bt():
    """The fit module as of OLD_COMMIT (git show), imported under another name."""
    src = subprocess.run(["git", "show", f"{OLD_COMMIT}:src/judgeaudit/stats/bradley_terry.py"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / "old_bradley_terry.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("old_bradley_terry", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["old_bradley_terry"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _blas() -> list[dict]:
    from judgeaudit.stats.threads import blas_info
    return blas_info()


# --------------------------------------------------------------------------- children
def child_fit(spec: dict) -> dict:
    from judgeaudit.stats.bradley_terry import fit_map
    n, m = spec["n"], spec["m"]
    C, X, _ = simulate(n, m, seed=spec.get("seed", 0))
    rng = np.random.default_rng(1)
    pa = rng.integers(0, n, N_PAIRS)
    pb = (pa + rng.integers(1, n, N_PAIRS)) % n
    from judgeaudit.stats.threads import limit_blas_threads
    lim = None if spec.get("threads") == "default" else 1
    t0, c0 = time.perf_counter(), time.process_time()
    if spec["kind"] == "old_dense":
        with limit_blas_threads(limit=lim):
            f = old_bt().fit_map(n, C, X, hierarchical=spec.get("hierarchical", False))
        var = np.diag(f.cov)[:n]
        post = "old_dense"
    else:
        f = fit_map(n, C, X, hierarchical=spec.get("hierarchical", False),
                    posterior=spec.get("posterior", "auto"))
        var = f.theta_var
        post = "dense" if f.is_dense else "sparse"
    se = (f.c_se, f.kappa_se)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    t1 = time.perf_counter()
    old = post == "old_dense"  # the old fit holds the dense cov: pairs are lookups
    vd = var[pa] + var[pb] - 2.0 * f.cov[pa, pb] if old else f.var_diff(pa, pb)
    pair_ms = 1000.0 * (time.perf_counter() - t1) / N_PAIRS
    return {"wall_s": wall, "cpu_s": cpu, "rss_mb": _rss_mb(), "posterior": post,
            "pair_var_ms_per_pair": pair_ms, "n_pairs": N_PAIRS,
            "n_iter": f.n_iter, "converged": bool(f.converged), "tau": float(f.tau),
            "c": float(f.c[0]), "c_se": float(se[0][0]), "kappa": float(f.kappa),
            "kappa_se": float(se[1]), "theta_sd_median": float(np.median(np.sqrt(var))),
            "pair_var_median": float(np.median(vd))}


def child_choix(spec: dict) -> dict:
    import choix

    from judgeaudit.stats.bradley_terry import fit_naive
    n, m = spec["n"], spec["m"]
    C, _, _ = simulate(n, m, seed=spec.get("seed", 0))
    win = C[:, 2] == 1.0
    pairs = np.where(win[:, None], C[:, :2], C[:, 1::-1]).astype(int)
    pairs_l = [tuple(p) for p in pairs.tolist()]
    t0, c0 = time.perf_counter(), time.process_time()
    est = choix.ilsr_pairwise(n, pairs_l, alpha=0.0, tol=1e-8)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss = _rss_mb()
    out = {"wall_s": wall, "cpu_s": cpu, "rss_mb": rss}
    if spec.get("compare", True):
        t1 = time.perf_counter()
        ours = fit_naive(n, np.column_stack([pairs, np.ones(m)]), lam=1e-9)
        out["ours_naive_wall_s"] = time.perf_counter() - t1
        out["ours_naive_posterior"] = "dense" if ours.is_dense else "sparse"
        cen = (ours.theta - ours.theta.mean()) - (est - np.mean(est))
        out["max_abs_diff_vs_ours_naive"] = float(np.max(np.abs(cen)))
    return out


def child_agreement(spec: dict) -> dict:
    from judgeaudit.stats.bradley_terry import _layout, _Problem, fit_map, neg_log_posterior
    from judgeaudit.stats.bt_posterior import _spd_inverse
    n, m = spec["n"], spec["m"]
    C, X, _ = simulate(n, m, seed=spec.get("seed", 0))
    t0 = time.perf_counter()
    fs = fit_map(n, C, X, posterior="sparse")
    var_s = fs.theta_var
    t_sparse = time.perf_counter() - t0
    t0 = time.perf_counter()
    fd = fit_map(n, C, X, posterior="dense")
    t_dense = time.perf_counter() - t0
    var_d = fd.theta_var
    # the dense posterior at the sparse MAP: the sparse theta variances' own error
    Xa, mm, _ = _layout(n, X, True)
    H = _Problem(n, C, Xa, mm, True).dense_hessian(fs.params, fs.lam, fs.tau)
    var_same = np.diag(_spd_inverse(H))[:n]
    rng = np.random.default_rng(2)
    pa = rng.integers(0, n, 1000)
    pb = (pa + rng.integers(1, n, 1000)) % n
    vds, vdd = fs.var_diff(pa, pb), fd.var_diff(pa, pb)
    se = fs.posterior.theta_var_se

    def gmax(f):
        return float(np.max(np.abs(neg_log_posterior(f.params, n, C, X)[1])))

    return {
        "n": n, "m": m, "sparse_wall_s": t_sparse, "dense_wall_s": t_dense,
        "max_abs_diff_theta": float(np.max(np.abs(fs.theta - fd.theta))),
        "max_abs_diff_theta_sd": float(np.max(np.abs(np.sqrt(var_s) - np.sqrt(var_d)))),
        "max_rel_diff_theta_var": float(np.max(np.abs(var_s / var_d - 1.0))),
        "max_abs_diff_theta_sd_same_point": float(np.max(np.abs(np.sqrt(var_s)
                                                                - np.sqrt(var_same)))),
        "max_rel_diff_theta_var_same_point": float(np.max(np.abs(var_s / var_same - 1.0))),
        "theta_var_rel_se_max": float(np.max(se / var_s)),
        "theta_sd_median": float(np.median(np.sqrt(var_d))),
        "abs_diff_c": float(abs(fs.c[0] - fd.c[0])),
        "abs_diff_c_se": float(abs(fs.c_se[0] - fd.c_se[0])),
        "abs_diff_kappa_se": float(abs(fs.kappa_se - fd.kappa_se)),
        "max_rel_diff_pair_var": float(np.max(np.abs(vds / vdd - 1.0))),
        "max_abs_grad_sparse_newton": gmax(fs), "max_abs_grad_dense_lbfgs": gmax(fd),
        "note": "theta differences are the two optimisers' stopping points (the max |gradient| "
                "of each is given); pair variances and c/kappa se are exact on both paths",
    }


def child_step(spec: dict) -> dict:
    import judgeaudit.stats.threads as threads
    from judgeaudit.rank.acquisition import get_rule
    from judgeaudit.rank.loop import CARRY_MIN, LoopConfig, _context, _fit
    from judgeaudit.rank.membership import precision_noise
    from judgeaudit.rank.simulate import SimOracle, random_pool

    n, hier = spec["n"], spec["hierarchical"]
    if spec.get("threads") == "default":
        threads.blas_threads_for = lambda n_params: None  # type: ignore[assignment]
    pool = random_pool(n, 10, seed=n)
    o = SimOracle(pool.theta, pool.X, c=1.0, kappa=0.3, seed=n)
    rng = np.random.default_rng(0)
    m = 3 * n
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    comps = np.column_stack([a, b, o.matrix[a, b]]).astype(float)
    cfg = LoopConfig(k=pool.k, budget=0, hierarchical=hier)
    prev = _fit("bias_aware", n, comps, pool.X, cfg, None)
    extra = np.column_stack([a[:8], b[:8], o.matrix[a[:8], b[:8]]]).astype(float)
    more = np.vstack([comps, extra])
    A, B = np.triu_indices(n, 1)
    asked = np.zeros(A.shape[0], bool)
    asked[rng.choice(A.shape[0], min(m, A.shape[0] // 2), replace=False)] = True
    cand = np.nonzero(~asked)[0]
    score = get_rule("topk")
    old = old_bt() if spec.get("old") else None
    carried = bool(spec.get("carried"))
    base = None
    if carried:  # the exact context of the previous round, with its draws (as run_active)
        if n + 2 < CARRY_MIN:
            raise SystemExit(f"carried contexts start at {CARRY_MIN} parameters")
        base = _context(_fit("bias_aware", n, comps, pool.X, cfg, prev, driving=True), pool.X,
                        cfg, np.zeros(n), np.random.default_rng(1))
        base.noise = precision_noise(base.factor, cfg.n_samples, 1, antithetic=True)

    def refit():
        if old is not None:
            # the old code warm-starts tau from its own BTFit class only: pass it explicitly
            return old.fit_map(n, more, X=pool.X, init=prev.params, tau=prev.tau,
                               hierarchical=hier)
        return _fit("bias_aware", n, more, pool.X, cfg, prev, driving=True)  # as run_active

    def one(clock) -> tuple[float, float, float]:
        t0 = clock()
        f = refit()
        t1 = clock()
        if base is not None:
            ctx = _context(f, pool.X, cfg, np.zeros(n), np.random.default_rng(1), carry=base)
        else:
            ctx = _context(f, pool.X, cfg, np.zeros(n), np.random.default_rng(1))
        _ = ctx.membership
        t2 = clock()
        s = score(ctx, A[cand], B[cand])
        int(np.argmax(s))
        return t1 - t0, t2 - t1, clock() - t2

    reps = spec.get("reps", 9)
    with threads.limit_blas_threads(n):  # what run_active does (a no-op for "default")
        one(time.perf_counter)  # warm-up
        wall = [one(time.perf_counter) for _ in range(reps)]
        cpu = [one(time.process_time) for _ in range(reps)]
        blas = _blas()

    def med(rows, k):
        return 1000.0 * statistics.median(r[k] for r in rows)

    out = {"n": n, "n_comparisons": m + 8, "n_candidates": int(cand.shape[0]),
           "eb_tau": hier, "threads": spec.get("threads", "limited"),
           "context": "carried" if carried else "exact",
           "fit_code": "old" if old is not None else "current", "reps": reps,
           "blas_threads_in_step": [x.get("num_threads") for x in blas]}
    for name, rows in (("wall", wall), ("cpu", cpu)):
        r, mb, sc = med(rows, 0), med(rows, 1), med(rows, 2)
        out[f"{name}_ms"] = {"refit": r, "membership": mb, "score": sc,
                             "round": statistics.median(1000.0 * sum(x) for x in rows),
                             "per_pick_amortised": (r + mb) / 8.0 + sc}
    return out


def child_summary(spec: dict) -> dict:
    """The results summary's top-k membership from a sparse fit (no N x N covariance): the
    6-sd screen, the kept items' covariance by CG, 1,500 joint draws of them."""
    from judgeaudit.rank.membership import screen_topk
    from judgeaudit.rank.summary import membership
    from judgeaudit.stats.bradley_terry import fit_map
    n, m, k = spec["n"], spec["m"], spec.get("k", 10)
    C, X, _ = simulate(n, m, seed=spec.get("seed", 0))
    f = fit_map(n, C, X)
    rss_fit = _rss_mb()
    var = f.theta_var
    kept = int(screen_topk(f.theta, np.sqrt(var + 4.0 * f.posterior.theta_var_se), k,
                           None).sum())
    t0, c0 = time.perf_counter(), time.process_time()
    p = membership(f, k, None, 1500, 0)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"n": n, "m": m, "k": k, "posterior": "dense" if f.is_dense else "sparse",
            "membership_wall_s": wall, "membership_cpu_s": cpu, "rss_mb": _rss_mb(),
            "rss_mb_after_fit": rss_fit, "n_kept_by_screen": kept,
            "n_with_p_positive": int((p > 0).sum()), "sum_p": float(p.sum()),
            "dense_cov_built": bool(f.is_dense)}


CHILDREN = {"fit": child_fit, "old_dense": child_fit, "choix": child_choix,
            "agreement": child_agreement, "step": child_step, "summary": child_summary}


# --------------------------------------------------------------------------- parent
def machine() -> dict:
    info: dict = {"date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                  "python": platform.python_version(), "cores": os.cpu_count(),
                  "platform": platform.platform()}
    try:
        cpu = Path("/proc/cpuinfo").read_text()
        info["cpu_model"] = next((ln.split(":", 1)[1].strip() for ln in cpu.splitlines()
                                  if ln.startswith("model name")), None)
        flags = next((ln.split(":", 1)[1].split() for ln in cpu.splitlines()
                      if ln.startswith("flags")), [])
        info["cpu_flags"] = {f: f in flags for f in ("avx2", "avx512f", "avx512_bf16",
                                                      "amx_bf16", "amx_tile", "amx_int8")}
    except OSError:
        pass
    info["loadavg_start"] = list(os.getloadavg())
    info["blas_default"] = _blas()
    info["env_blas_threads"] = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS",
                                                               "OMP_NUM_THREADS")}
    info["nice"] = os.nice(0)
    vers = {}
    for mod in ("numpy", "scipy", "choix", "threadpoolctl"):
        try:
            vers[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - a missing optional module is recorded as None
            vers[mod] = None
    info["versions"] = vers
    try:
        info["git_commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT,
                                            capture_output=True, text=True,
                                            check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        info["git_commit"] = None
    return info


def run_child(spec: dict, timeout: float = 3600) -> dict:
    load0 = os.getloadavg()[0]
    p = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)],
                       capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed",
                "loadavg_1m": load0}
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["loadavg_1m"] = load0
    return out


def repeated(spec: dict, reps: int) -> dict:
    runs = []
    for _ in range(reps):
        r = run_child(spec)
        runs.append(r)
        print(f"  {json.dumps(spec)} -> " + ", ".join(
            f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in r.items() if k in ("wall_s", "cpu_s", "rss_mb", "error", "posterior")),
            flush=True)
    ok = [r for r in runs if "error" not in r]
    summary: dict = {"config": spec, "runs": runs, "n_ok": len(ok)}
    for key in ("wall_s", "cpu_s", "rss_mb", "ours_naive_wall_s"):
        vals = [r[key] for r in ok if key in r]
        if vals:
            summary[f"{key}_median"] = statistics.median(vals)
    return summary


PARTS = ("agreement", "step", "fit", "choix", "old10k", "summary")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--step-reps", type=int, default=9)
    ap.add_argument("--parts", default=",".join(PARTS),
                    help="comma-separated subset of " + ", ".join(PARTS) + "; each part is "
                    "merged into the existing results file (other parts kept)")
    ap.add_argument("--skip-choix-5k", action="store_true")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    if args.child:
        spec = json.loads(args.child)
        print(json.dumps(CHILDREN[spec["kind"]](spec)))
        return

    out = Path(args.out)
    res: dict = json.loads(out.read_text()) if out.exists() else {}
    res.update({"schema": "judgeaudit.rank_scale/1",
                "targets": {"fit_10k_1M_s": 10.0, "fit_10k_1M_rss_mb": 1024.0,
                            "step_1000_eb_tau_ms": 50.0},
                "data": {"c": C_TRUE, "kappa": KAPPA_TRUE, "pairs": "uniform, random order",
                         "ties": 0}})
    res.setdefault("machine_by_part", {})

    def save() -> None:
        out.write_text(json.dumps(res, indent=1) + "\n")

    for part in [p.strip() for p in args.parts.split(",") if p.strip()]:
        if part not in PARTS:
            raise SystemExit(f"unknown part {part!r}; expected some of {PARTS}")
        info = machine()
        res["machine_by_part"][part] = info
        print(f"== {part} (load {info['loadavg_start'][0]:.2f})", flush=True)
        if part == "agreement":
            res["agreement_1000"] = run_child({"kind": "agreement", "n": 1000, "m": 100_000})
            print(json.dumps(res["agreement_1000"], indent=1), flush=True)
        elif part == "fit":
            res["fit"] = []
            for spec in FITS:
                reps = 1 if "threads" in spec else args.reps
                res["fit"].append(repeated(spec, reps))
                save()
        elif part == "summary":
            res["summary"] = [run_child({"kind": "summary", "n": n, "m": 100 * n})
                              for n in (5000, 10_000)]
            print(json.dumps(res["summary"], indent=1), flush=True)
        elif part == "old10k":
            res["fit_old_10k"] = repeated({"kind": "old_dense", "n": 10_000, "m": 1_000_000}, 1)
        elif part == "choix":
            res["choix"] = [repeated({"kind": "choix", "n": 1000, "m": 100_000}, args.reps)]
            save()
            if not args.skip_choix_5k:
                res["choix"].append(repeated({"kind": "choix", "n": 5000, "m": 500_000},
                                             args.reps))
        elif part == "step":
            res["step"] = []
            for n in (100, 1000):
                variants = [{"hierarchical": False}, {"hierarchical": True},
                            {"hierarchical": True, "threads": "default"},
                            {"hierarchical": False, "old": True},
                            {"hierarchical": True, "old": True}]
                if n >= 1000:
                    variants[2:2] = [{"hierarchical": False, "carried": True},
                                     {"hierarchical": True, "carried": True}]
                for v in variants:
                    r = run_child({"kind": "step", "n": n, "reps": args.step_reps, **v})
                    res["step"].append(r)
                    print(f"  N={n} {v}: cpu {r.get('cpu_ms', r)}", flush=True)
                    save()
            res["step_cycle"] = cycle(res["step"])
            print(json.dumps(res["step_cycle"], indent=1), flush=True)
        info["loadavg_end"] = list(os.getloadavg())
        save()
    print(f"wrote {out}")


def cycle(steps: list[dict], exact_every: int = 8) -> list[dict]:
    """The active loop's rounds at N = 1,000 as run_active runs them (judgeaudit.rank.loop:
    an exact context every ``exact_every`` refits, carried ones between): each kind's round
    and the mean over a cycle, from the exact and carried rows of the same run."""
    out = []
    for hier in (False, True):
        rows = {r["context"]: r for r in steps if r["n"] == 1000 and r["eb_tau"] == hier
                and r["fit_code"] == "current" and r["threads"] == "limited"}
        if set(rows) != {"exact", "carried"}:
            continue
        d = {"n": 1000, "eb_tau": hier, "exact_every": exact_every}
        for clock in ("wall", "cpu"):
            ex, ca = rows["exact"][f"{clock}_ms"]["round"], rows["carried"][f"{clock}_ms"]["round"]
            d[f"{clock}_ms"] = {"exact_round": ex, "carried_round": ca,
                                "mean_round": (ex + (exact_every - 1) * ca) / exact_every,
                                "median_round": ca}
        out.append(d)
    return out


FITS = [
    {"kind": "fit", "n": 1000, "m": 100_000},
    {"kind": "fit", "n": 1000, "m": 100_000, "posterior": "sparse"},
    {"kind": "old_dense", "n": 1000, "m": 100_000},
    {"kind": "old_dense", "n": 1000, "m": 100_000, "threads": "default"},
    {"kind": "fit", "n": 5000, "m": 500_000},
    {"kind": "old_dense", "n": 5000, "m": 500_000},
    {"kind": "fit", "n": 10_000, "m": 1_000_000},
    {"kind": "fit", "n": 10_000, "m": 1_000_000, "hierarchical": True},
]


if __name__ == "__main__":
    main()
