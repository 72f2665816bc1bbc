"""Acceptance 4(ii): the embedded local judge on a controlled-benchmark pool, through the real
`rank-eval` command (the full ordered-pair matrix is judged once, cached, then replayed for
every rule and seed).

Run by hand (long: N (N - 1) local calls, ~0.5-2 s each on a 2-core CPU):
    JUDGEAUDIT_CACHE=/work/cache/rank.sqlite nice -n 10 \\
        PYTHONPATH=src python benchmarks/rank_local_judge.py [--judge local] [--n 30]
Writes benchmarks/results/rank_local_judge.json: one rank-eval result per covariate set
(`length`: the text feature log(1 + words); `verbosity`: the pool's 0/1 elaboration switch),
the judge's verdict statistics, and how well it orders the true quality.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import typer  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from judgeaudit.cli.rank_cmd import register  # noqa: E402
from judgeaudit.rank.pool import load_pool  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def verdict_stats(judge: str, items: str) -> dict:
    """Diagnostics of the judge from its (cached) full matrix: first-shown win rate, accuracy
    on pairs of different true quality, the verbose answer's win rate at equal quality, and
    the rank correlation of plain Bradley-Terry scores with true quality, and those scores
    regressed on #true, #false statements and the elaboration switch."""
    from scipy import stats

    from judgeaudit.judges import make_judge
    from judgeaudit.llm import Cache
    from judgeaudit.rank.live import full_matrix
    from judgeaudit.stats.bradley_terry import fit_naive

    pool = load_pool(items)
    bundle = make_judge(judge, cache=Cache())

    async def go():
        try:
            return await full_matrix(bundle, pool)
        finally:
            await bundle.aclose()

    m = asyncio.run(go())
    q = pool.quality
    verb = np.array([it.fields["verbosity"] for it in pool.items])
    valid = [v for v in m.verdicts if not v.invalid]
    acc = [v.y == (1.0 if q[v.first] > q[v.second] else 0.0) for v in valid
           if q[v.first] != q[v.second]]
    eq = [(v.y if verb[v.first] > verb[v.second] else 1.0 - v.y) for v in valid
          if q[v.first] == q[v.second] and verb[v.first] != verb[v.second]]
    theta = fit_naive(pool.n_items, m.comparisons(), lam=1.0).theta
    # what the judge rewards: its plain BT scores regressed on the answers' make-up
    f = {k: np.array([it.fields[k] for it in pool.items]) for k in ("n_true", "n_false")}
    D = np.column_stack([np.ones(pool.n_items), f["n_true"], f["n_false"], verb])
    beta = np.linalg.lstsq(D, theta - theta.mean(), rcond=None)[0]
    return {"naive_theta_per": {"true_statement": float(beta[1]),
                                "false_statement": float(beta[2]),
                                "elaboration": float(beta[3])},
            "n_comparisons": len(m.verdicts), "n_invalid": m.n_invalid, "n_ties": m.n_ties,
            "made_now": bundle.client.stats.made,
            "first_shown_win_rate": float(np.mean([v.y for v in valid])),
            "accuracy_different_quality": float(np.mean(acc)), "n_different_quality": len(acc),
            "verbose_win_rate_equal_quality": float(np.mean(eq)) if eq else None,
            "n_equal_quality_mixed_verbosity": len(eq),
            "spearman_naive_theta_quality": float(stats.spearmanr(theta, q).statistic)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--judge", default="local")
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--pool-seed", type=int, default=0)
    ap.add_argument("--seeds", default="30")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" /
                                         "rank_local_judge.json"))
    args = ap.parse_args()
    items = f"builtin:controlled?seed={args.pool_seed}&n={args.n}&k=5"
    app = typer.Typer()
    register(app)
    runner = CliRunner()
    res: dict = {"schema": "judgeaudit.rank_local_judge/1",
                 "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                 "judge": args.judge, "items": items, "cache": os.environ.get("JUDGEAUDIT_CACHE"),
                 "runs": {}}
    t0 = time.time()
    for covs in ("length", "verbosity", "length,verbosity"):
        with tempfile.TemporaryDirectory() as tmp:
            r = runner.invoke(app, ["rank-eval", "--oracle", args.judge, "--items", items,
                                    "--k", "5", "--budgets", "60,120,200", "--rules",
                                    "topk,global,roundrobin,random", "--seeds", args.seeds,
                                    "--covariates", covs, "--out", tmp])
            print(r.output, flush=True)
            if r.exit_code != 0:
                if r.exception is not None and not isinstance(r.exception, SystemExit):
                    raise r.exception
                raise SystemExit(f"rank-eval failed ({r.exit_code}): {r.output[-2000:]}")
            doc = json.loads((Path(tmp) / "results.json").read_text())
        doc.pop("cases", None)
        res["runs"][covs] = doc
    res["verdicts"] = verdict_stats(args.judge, items)
    print(json.dumps(res["verdicts"], indent=1))
    res["seconds"] = time.time() - t0
    Path(args.out).write_text(json.dumps(res, indent=2))
    print(f"wrote {args.out} in {res['seconds']:.0f} s")


if __name__ == "__main__":
    main()
