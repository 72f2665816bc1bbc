#!/usr/bin/env bash
# Issue 5 end to end with the embedded judge (CPU): Ref-1..4 by generation and review on
# REF_N MT-Bench instances, then scoring-bias on N instances under the templates below.
# Run it under `nice -n 10`. Resumable: every call is cached in $JUDGEAUDIT_CACHE, so re-running skips finished calls
# (calls go item by item, so a run cut short leaves the first items complete: re-run with a
# smaller N to report them).
set -euo pipefail
cd "$(dirname "$0")/.."
export JUDGEAUDIT_CACHE="${JUDGEAUDIT_CACHE:-/work/cache/scoring.sqlite}"
DATA="${DATA:-prometheus:../shared/data/prometheus_eval?set=mt_bench}"
JUDGE="${JUDGE:-local}"
GEN="${GEN:-local:qwen-0.5b}"
REV="${REV:-local:qwen-0.5b}"
N="${N:-100}"
REF_N="${REF_N:-20}"
PERTS="${PERTS:-order_desc,order_random,ids_letters,ids_roman,ref_1,ref_2,ref_3,ref_4,ref_5}"
OUT="${OUT:-out/scoring-bias-local}"
PY="${PY:-.venv/bin/python}"

ja() {
  # `judgeaudit scoring-bias` once cli/main.py registers it; until then a shim app.
  if "$PY" -m judgeaudit.cli.main scoring-bias --help >/dev/null 2>&1; then
    "$PY" -m judgeaudit.cli.main "$@"
  else
    "$PY" -c 'import sys, typer
from judgeaudit.cli.scoring_cmd import register
app = typer.Typer()
@app.callback()
def main() -> None: pass
register(app)
app(sys.argv[1:])' "$@"
  fi
}

STAGE="${STAGE:-all}"   # refs | score | all
if [ "$STAGE" != score ]; then
  echo "== references: $REF_N instances, generator $GEN, reviewer $REV"
  "$PY" - "$DATA" "$GEN" "$REV" "$REF_N" "$OUT" <<'PY'
import asyncio, os, sys, time
from pathlib import Path
from judgeaudit.data import load
from judgeaudit.judges import make_judge
from judgeaudit.llm import Cache
from judgeaudit.scoring.references import ReferencePipeline, summarize, write_references
data, gen, rev, n, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), Path(sys.argv[5])
items = load(data)[int(os.environ.get("REF_START", "0")):n]  # REF_START: split the work
cache = Cache()
g = make_judge(gen, cache=cache)
r = g if rev == gen else make_judge(rev, cache=cache)
pipe = ReferencePipeline(g.client, r.client, max_attempts=2,
                         max_tokens=int(os.environ.get("REF_TOKENS", "64")), words=45,
                         review=os.environ.get("REF_REVIEW", "order"))
t0 = time.perf_counter()
chunk = int(os.environ.get("REF_CHUNK", "4"))


async def main() -> None:
    res = []
    for start in range(0, len(items), chunk):  # written after every chunk: safe to stop
        res += await pipe.run(items[start:start + chunk])
        done = min(start + chunk, len(items))
        s = summarize(res)
        write_references(out / "references.json", res, {
            "generator": gen, "reviewer": rev, "data": data, "n_items": done,
            "max_attempts": pipe.max_attempts, "tolerance": pipe.tolerance,
            "review": pipe.review,
            "max_tokens": pipe.max_tokens, "seconds": time.perf_counter() - t0,
            "calls": {"generator": g.client.stats.as_dict(),
                      "reviewer": r.client.stats.as_dict()}})
        print(f"{done} items: accepted {s['accepted']}/{s['n']} ({s['acceptance_rate']:.2f}) "
              f"in {s['attempts']} attempts, {time.perf_counter() - t0:.0f} s; by score:",
              {k: f"{v['accepted']}/{v['n']}" for k, v in s["by_score"].items()}, flush=True)


asyncio.run(main())
PY
fi

[ "$STAGE" = refs ] && exit 0
REFS=()
[ -f "$OUT/references.json" ] && REFS=(--references "$OUT/references.json")
echo "== scoring-bias: $JUDGE on $N instances: $PERTS"
ja scoring-bias --judge "$JUDGE" --data "$DATA" --limit "$N" --perturbations "$PERTS" \
  --repeats 1 "${REFS[@]}" --out "$OUT"
