"""discover's multiplicity correction against known truth: how often a run flags a null factor,
at raw p < 0.05 and at Benjamini-Hochberg q <= 0.05 (what decides `significant` now), and how
often it still finds the planted factor.

Each seed runs the real pipeline (`judgeaudit.hubj.run.run_discover`: consensus split,
held-out split, G_extract / G_construct / G_assign, G_crit, G_score through a `Client`,
`validate` with its q-values) on simulated data:

- items: pairs whose humans prefer the shorter response; the judge is biased by length only
  (it always prefers the longer response), so every item is a consensus disagreement;
- G modules: a scripted provider. The found factor ("longer response") is the planted one:
  G_score rates a response 3 + Bernoulli(effect) if it is the longer one, 3 otherwise, plus
  uniform noise in {-1, 0, +1}, so mean Delta = effect. Every baseline factor (10: the
  pre-discovered and BiasScope-style sets) is a null: its score is uniform 1-5, drawn
  independently of which response the judge preferred (Delta symmetric about 0).
- m = 11 factors tested per run, m0 = 10 nulls; the decision uses the Wilcoxon p / q.

Reported per effect size, each share with its n (seeds) and a Wilson 95% interval: any null
flagged (raw and BH), the planted factor flagged (raw and BH, i.e. power), and the mean false
discovery proportion V / max(R, 1) (what BH bounds: FDR <= alpha m0 / m). Under the global
null (effect 0) "any null flagged" is the family-wise error and BH holds it at alpha; with a
true factor present BH bounds the FDR, not the chance of any false flag. The null factors'
scores depend on the seed and the text only, so every effect size sees the same nulls (common
random numbers): their raw rates are equal across effects by design. At effect 0 the planted
factor is a null too (its row is the eleventh null), outside "any null flagged".

    nice -n 10 python benchmarks/hubj_multiplicity.py        # 200 seeds x 3 effects; writes
                                                             # results/hubj_multiplicity.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import subprocess
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from judgeaudit.data.schema import PairwiseItem
from judgeaudit.hubj.discover import DiscoverConfig
from judgeaudit.hubj.run import run_discover
from judgeaudit.llm import Client
from judgeaudit.llm.base import Provider, Request, Response
from judgeaudit.llm.registry import register
from judgeaudit.stats import rate

OUT = Path(__file__).parent / "results" / "hubj_multiplicity.json"
PLANTED = "longer response"
ALPHA = 0.05


def _u(*parts: Any) -> float:
    """A uniform [0, 1) draw fixed by its parts (seed, factor, response): the same request
    gets the same answer, as a deterministic provider must give."""
    h = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2 ** 64


@register
class _Script(Provider):
    """The G modules of one simulated run; model "SEED:EFFECT"."""

    name: ClassVar[str] = "bench-hubj-bh"
    deterministic: ClassVar[bool] = True

    async def generate(self, request: Request) -> Response:
        mod = request.meta["module"]
        if mod in ("G_extract", "G_construct"):
            key = "features" if mod == "G_extract" else "factors"
            extra = {"reason": "more words"} if mod == "G_extract" else {}
            return Response(text=json.dumps({key: [{"name": PLANTED, **extra, "definition":
                                                    "The response has many more words."}]}))
        if mod == "G_assign":
            return Response(text='{"factor": 1}')
        if mod == "G_crit":
            return Response(text=json.dumps({str(k): f"level {k}" for k in range(1, 6)}))
        seed, effect = self.model.split(":")
        factor, text = request.meta["factor"], request.meta["response"]
        if factor == PLANTED:
            longer = text.startswith("LONG")
            score = 3 + (longer and _u(seed, "b", text) < float(effect))
            score += int(3 * _u(seed, "n", factor, text)) - 1
        else:
            score = 1 + int(5 * _u(seed, factor, text))
        return Response(text=json.dumps({"score": int(score)}))


class _Embed:
    """One direction per text (as the tests' stand-in for MiniLM): one feature, one factor."""

    name = "stub"

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.eye(max(len(texts), 1), 8)[:len(texts)]


def items_for(seed: int, n: int) -> tuple[list[PairwiseItem], dict[str, dict[str, Any]]]:
    """n pairs whose humans prefer the short response, and the length-only judge's winners."""
    rng = random.Random(seed)
    items, wins = [], {}
    for i in range(n):
        short = f"SHORT {seed} {i} " + " ".join(f"s{rng.randrange(10**6)}" for _ in range(8))
        long = f"LONG {seed} {i} " + " ".join(f"l{rng.randrange(10**6)}" for _ in range(60))
        swap = rng.random() < 0.5
        r1, r2 = (long, short) if swap else (short, long)
        items.append(PairwiseItem(id=f"s{seed}i{i}", prompt=f"question {i}", response_1=r1,
                                  response_2=r2, label=2 if swap else 1))
        wins[items[-1].id] = 1 if swap else 2  # the longer one
    return items, {"sim:length-only": wins}


async def one(seed: int, effect: float, n: int) -> dict[str, Any]:
    items, winners = items_for(seed, n)
    llm = Client(_Script(f"{seed}:{effect}"))
    doc = await run_discover(items, winners, llm, _Embed(), DiscoverConfig(iterations=1,
                                                                           seed=seed))
    rows = {r["factor"]: r for s in doc["validation"]["sets"].values() for r in s["factors"]}
    nulls = [r for f, r in rows.items() if f != PLANTED]
    return {"m": doc["validation"]["multiplicity"]["m"], "n_held": doc["validation"]["n_items"],
            "null_raw": sum(r["p_wilcoxon"] < ALPHA for r in nulls),
            "null_bh": sum(bool(r["significant"]) for r in nulls),
            "planted_raw": rows[PLANTED]["p_wilcoxon"] < ALPHA,
            "planted_bh": bool(rows[PLANTED]["significant"]),
            "run": doc["run"]["status"]}


def share(k: int, n: int) -> dict[str, Any]:
    return rate(k, n).as_dict()


def summarise(rows: list[dict[str, Any]], effect: float) -> dict[str, Any]:
    n = len(rows)

    def fdp(key_null: str, key_planted: str) -> float:
        vals = []
        for r in rows:
            v = r[key_null]
            found = v + (int(r[key_planted]) if effect > 0 else 0)
            vals.append(v / max(found, 1))
        return float(np.mean(vals))

    return {
        "effect_mean_delta": effect, "seeds": n, "m": rows[0]["m"], "m0": rows[0]["m"] - 1,
        "n_heldout_items": rows[0]["n_held"],
        "runs_failed": sum(r["run"] != "ok" for r in rows),
        "any_null_flagged_raw_p": share(sum(r["null_raw"] > 0 for r in rows), n),
        "any_null_flagged_bh_q": share(sum(r["null_bh"] > 0 for r in rows), n),
        "planted_flagged_raw_p": share(sum(r["planted_raw"] for r in rows), n),
        "planted_flagged_bh_q": share(sum(r["planted_bh"] for r in rows), n),
        "mean_false_discovery_proportion_raw": fdp("null_raw", "planted_raw"),
        "mean_false_discovery_proportion_bh": fdp("null_bh", "planted_bh"),
        "nulls_flagged_per_run_raw": float(np.mean([r["null_raw"] for r in rows])),
        "nulls_flagged_per_run_bh": float(np.mean([r["null_bh"] for r in rows])),
    }


def machine() -> dict[str, Any]:
    """What a timing holds for: the CPU's deciding flags (from lscpu) and the load."""
    flags: list[str] = []
    with contextlib.suppress(OSError, subprocess.SubprocessError, StopIteration):
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        flags = next(ln.split(":", 1)[1].split() for ln in out.splitlines()
                     if ln.startswith("Flags"))
    return {"cpu_flags": {f: f in flags for f in ("avx2", "avx512f", "avx512_bf16",
                                                  "amx_bf16")},
            "cores": os.cpu_count(), "loadavg_end": list(os.getloadavg())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--items", type=int, default=80, help="disagreements (half held out)")
    ap.add_argument("--effects", default="0,0.5,1")
    a = ap.parse_args()
    os.environ.setdefault("JUDGEAUDIT_CACHE", "/tmp/hubj-bench-cache-unused.sqlite")
    t0, c0 = time.perf_counter(), time.process_time()
    load0 = list(os.getloadavg())
    out = []
    for eff in map(float, a.effects.split(",")):
        rows = [asyncio.run(one(s, eff, a.items)) for s in range(a.seeds)]
        out.append(summarise(rows, eff))
        print(json.dumps(out[-1]), flush=True)
    doc = {"benchmark": "hubj_multiplicity", "alpha": ALPHA, "decided_on": "q_wilcoxon",
           "setup": __doc__.split("\n\n")[1:4],
           "results": out,
           "timing": {"wall_s": round(time.perf_counter() - t0, 1),
                      "cpu_s": round(time.process_time() - c0, 1), "loadavg_start": load0,
                      **machine()}}
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
