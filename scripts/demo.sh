#!/usr/bin/env bash
# Set up a virtualenv with the embedded judge and run the main job: evaluate and audit the
# embedded judge on the built-in data, ending in out/audit/report.html. The first run
# assembles the local model once (verified by sha256, kept in the model cache); later runs
# load it in seconds and reuse every cached verdict.
#
# The work is sized to the judge's measured speed on this machine: a few verdicts are timed
# first, and the audit takes as many items per probe as fit in DEMO_BUDGET seconds (default
# 420, so the whole demo stays within about 10 minutes), between 12 and 30. The chosen size
# and why are printed up front and kept in the report (its Notes).
#
# The judge runs on an integer backend (the quantized GGUF as integers, under 2.5 GB peak) on
# every CPU, so the demo fits in 3 GB of memory anywhere: ik_llama.cpp where its wheel installs
# (Linux x86_64; the fastest there), else llama.cpp. On a CPU with AMX tiles the transformers
# backend is faster still but peaks near 4.5 GB: DEMO_JUDGE='local' (the provider's own
# choice) or 'local?backend=transformers' runs the demo on it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[local]'
BUDGET=${DEMO_BUDGET:-420}
INTEGER=$(python -c 'from judgeaudit.llm import local_model as m
print(next((b for b in m.integer_backends() if m.llamacpp_cpu_ok() and m.installed(b)),
           "transformers"))')
JUDGE=${DEMO_JUDGE:-local?backend=$INTEGER}
# Accuracy, position consistency and kappa of the judge on 12 pairs (24 verdicts, cached, so
# the audit below reuses them); its timing sizes the audit.
judgeaudit evaluate --judge "$JUDGE" --data builtin:facts --limit 12 --out out/evaluate
SIZING=$(python - "$BUDGET" <<'EOF'
import json, sys
budget = float(sys.argv[1])
r = json.load(open("out/evaluate/results.json"))
made = r["calls"]["made"]
per = r["seconds"] / made if made else 0.0   # 0 made: every verdict came from the cache
# The default audit asks 16 calls per item (6 probes, both orders, repeats; measured: 432
# calls for 27 items, of which the first 12 items' 24 baseline calls came from the cache),
# and an audit call costs up to 1.35x an evaluate call: its perturbed prompts are longer
# (measured ratios 0.99, 1.15 and 1.33 in three runs; benchmarks/results/demo_timing.json).
n = 30 if per == 0 else int(budget / (16 * 1.35 * per))
n = max(12, min(30, n))
msg = (f"demo: the embedded judge ({r['judge']}) takes {per:.2f} s per verdict here; "
       f"auditing {n} items per probe to finish in about {budget / 60:.0f} minutes (DEMO_BUDGET={budget:g} s)")
print(msg, file=sys.stderr)
print(f"{n}\t{msg}")
EOF
)
N=${SIZING%%$'\t'*}
NOTE=${SIZING#*$'\t'}
judgeaudit audit --judge "$JUDGE" --data builtin:facts --n "$N" --out out/audit --note "$NOTE" "$@"
