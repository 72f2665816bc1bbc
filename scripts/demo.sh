#!/usr/bin/env bash
# Set up a virtualenv with the embedded judge and run the main job: evaluate and audit the
# embedded judge on the built-in data, ending in out/audit/report.html. The first run
# assembles and converts the local model once (about a minute); later runs load it in
# seconds and reuse every cached verdict.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[local]'
# Accuracy, position consistency and kappa of the judge (its verdicts are cached, so the
# audit below reuses them), then the bias battery and its report.
judgeaudit evaluate --judge local --data builtin:facts --limit 30 --out out/evaluate
judgeaudit audit --judge local --data builtin:facts --n 30 --out out/audit "$@"
