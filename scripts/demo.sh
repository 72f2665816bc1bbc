#!/usr/bin/env bash
# Set up a virtualenv with the embedded judge and run the main job: the bias audit of the
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
judgeaudit audit --judge local --data builtin:facts --n 30 --out out/audit "$@"
