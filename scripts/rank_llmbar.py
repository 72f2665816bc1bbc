"""Bias-aware Bradley-Terry on the recorded LLMBar verdicts: each judge's length and markdown
coefficients (c) and position term (kappa) with 95% Laplace intervals.

Run:  PYTHONPATH=src python scripts/rank_llmbar.py [--data ../shared/data/llmbar]
Writes benchmarks/results/rank_llmbar.json and prints a table.

Data: LLMBar proper (Natural + the four Adversarial sets, 419 pairs), strategy Vanilla, the
six judges of judge_verdicts.csv. Verdicts are read through the `replay` judge and the normal
pairwise judging path (both presentation orders per item; an unparseable verdict is invalid,
counted, and enters as a tie). Every response is one item of the model (838 thetas); each
LLMBar pair gives two comparisons, one per order: (response shown first, shown second, y).

Covariates per response (judgeaudit.rank.pool / llm.features): `length` = log(1 + words)
(c per e-fold of length; per SD also given), `markdown` (distinct markdown constructs / 3).
Fits:
- `as_specified`: length + markdown, lam = 1, tau = 1 (the package defaults).
- `eb`: the same with the prior precision of theta learned by empirical Bayes.
- `gold_adjusted`: eb plus the gold label as a covariate (1 for the response the authors
  mark better). Theta and the covariates are tied only by the prior "theta independent of
  X"; in LLMBar the better response is often the shorter one (adversarial sets), so without
  the gold term c[length] also absorbs the judge's accuracy. With it, c[length] is the
  judge's preference for length among responses of the same gold status.
Subsets: the eb fit on Natural and on Adversarial separately as well.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from judgeaudit.data import load  # noqa: E402
from judgeaudit.judges import make_judge  # noqa: E402
from judgeaudit.llm import features  # noqa: E402
from judgeaudit.rank.fitting import fit_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
JUDGES = ["GPT-4", "ChatGPT", "ChatGPT-0301", "LLaMA2", "PaLM2", "Falcon"]
Y = {"A": 1.0, "B": 0.0, "tie": 0.5}


def design(items, gold: bool) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Covariates per response (2 per item, response_1 at 2t, response_2 at 2t+1), centred."""
    texts = [t for it in items for t in (it.response_1, it.response_2)]
    cols = {"length": [features.length(t) for t in texts],
            "markdown": [features.markdown(t) for t in texts]}
    if gold:
        cols["gold"] = [float(it.label == side) for it in items for side in (1, 2)]
    X = np.column_stack([np.asarray(v, float) for v in cols.values()])
    sd = X.std(axis=0)
    return X - X.mean(axis=0), list(cols), sd


async def verdicts(judge: str, items, csv_path: Path) -> tuple[np.ndarray, dict]:
    bundle = make_judge(f"replay:{csv_path}?judge={judge}&strategy=Vanilla", cache=None)
    try:
        vs = await bundle.pairwise.judge(items)
    finally:
        await bundle.aclose()
    rows, n_invalid, n_ties, correct, consistent = [], 0, 0, [], []
    for t, (it, v) in enumerate(zip(items, vs, strict=True)):
        for ov in v.orders:
            first, second = (2 * t, 2 * t + 1) if ov.order == "12" else (2 * t + 1, 2 * t)
            if ov.choice is None:
                n_invalid += 1
            elif ov.choice == "tie":
                n_ties += 1
            rows.append((first, second, Y.get(ov.choice, 0.5) if ov.choice else 0.5))
            if ov.winner is not None:
                correct.append(ov.winner == it.label)
        if v.consistent is not None:
            consistent.append(v.consistent)
    stats = {"n_items": len(items), "n_comparisons": len(rows), "n_invalid": n_invalid,
             "n_ties": n_ties, "accuracy_valid_orders": float(np.mean(correct)),
             "position_consistency": float(np.mean(consistent)),
             "first_shown_rate": float(np.mean([r[2] for r in rows]))}
    return np.array(rows, dtype=float), stats


def summarise(fit, names, sd) -> dict:
    iv = fit.c_interval()
    out = {"c": {}, "kappa": {"estimate": fit.kappa, "lo": fit.kappa_interval()[0],
                              "hi": fit.kappa_interval()[1], "se": fit.kappa_se},
           "lam": fit.lam, "converged": fit.converged}
    for m, n in enumerate(names):
        out["c"][n] = {"estimate": float(fit.c[m]), "lo": float(iv[m, 0]),
                       "hi": float(iv[m, 1]), "se": float(fit.c_se[m]), "sd": float(sd[m]),
                       "per_sd": float(fit.c[m] * sd[m])}
    return out


def fit_all(items, comps) -> dict:
    n = 2 * len(items)
    X, names, sd = design(items, gold=False)
    Xg, names_g, sd_g = design(items, gold=True)
    return {
        "as_specified": summarise(fit_model("bias_aware", n, comps, X=X), names, sd),
        "eb": summarise(fit_model("bias_aware", n, comps, X=X, eb_lam=True), names, sd),
        "gold_adjusted": summarise(fit_model("bias_aware", n, comps, X=Xg, eb_lam=True),
                                   names_g, sd_g),
    }


def _iv(d: dict) -> str:
    return f"{d['estimate']:+.2f} [{d['lo']:+.2f}, {d['hi']:+.2f}]"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "llmbar"))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "rank_llmbar.json"))
    args = ap.parse_args()
    data = Path(args.data)
    csv_path = data / "judge_verdicts.csv"
    items = load(f"llmbar:{data}")
    t0 = time.time()
    res: dict = {"schema": "judgeaudit.rank_llmbar/1",
                 "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                 "data": "LLMBar proper (Natural + Adversarial), strategy Vanilla",
                 "n_items": len(items), "covariates": {
                     "length": "log(1 + words) of the response (centred)",
                     "markdown": "distinct markdown constructs / 3 (centred)",
                     "gold": "1 for the gold-better response (gold_adjusted fit only)"},
                 "judges": {}}
    subsets = {"natural": [i for i, it in enumerate(items) if it.id.startswith("LLMBar/Natural")],
               "adversarial": [i for i, it in enumerate(items)
                               if it.id.startswith("LLMBar/Adversarial")]}
    for judge in JUDGES:
        comps, stats = asyncio.run(verdicts(judge, items, csv_path))
        entry = {"verdicts": stats, "fits": fit_all(items, comps), "subsets": {}}
        for name, idx in subsets.items():
            sub = [items[i] for i in idx]
            pos = {2 * i + s: 2 * j + s for j, i in enumerate(idx) for s in (0, 1)}
            keep = [r for r in comps if int(r[0]) in pos]
            sc = np.array([(pos[int(f)], pos[int(s)], y) for f, s, y in keep])
            X, names, sd = design(sub, gold=False)
            entry["subsets"][name] = {"n_items": len(sub), **summarise(
                fit_model("bias_aware", 2 * len(sub), sc, X=X, eb_lam=True), names, sd)}
        res["judges"][judge] = entry
        e, g = entry["fits"]["eb"], entry["fits"]["gold_adjusted"]
        print(f"{judge:13s} acc {stats['accuracy_valid_orders']:.3f} cons "
              f"{stats['position_consistency']:.3f} inv {stats['n_invalid']:3d} | eb: "
              f"c_len {_iv(e['c']['length'])} c_md {_iv(e['c']['markdown'])} kappa "
              f"{_iv(e['kappa'])} | gold-adj c_len {_iv(g['c']['length'])} c_gold "
              f"{_iv(g['c']['gold'])}", flush=True)
    res["seconds"] = time.time() - t0
    Path(args.out).write_text(json.dumps(res, indent=2))
    print(table(res))
    print(f"wrote {args.out} in {res['seconds']:.0f} s")


def table(res: dict) -> str:
    lines = ["| judge | acc | pos. consistency | invalid | fit | c[length] (per log-word) | "
             "c[length] per SD | c[markdown] | kappa | c[gold] |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for judge, e in res["judges"].items():
        v = e["verdicts"]
        for fit in ("as_specified", "eb", "gold_adjusted"):
            f = e["fits"][fit]
            gold = _iv(f["c"]["gold"]) if "gold" in f["c"] else ""
            lines.append(
                f"| {judge} | {v['accuracy_valid_orders']:.3f} | "
                f"{v['position_consistency']:.3f} | {v['n_invalid']} | {fit} | "
                f"{_iv(f['c']['length'])} | {f['c']['length']['per_sd']:+.2f} | "
                f"{_iv(f['c']['markdown'])} | {_iv(f['kappa'])} | {gold} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
