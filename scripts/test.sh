#!/usr/bin/env bash
# Set up a virtual environment with the test extra (torch 2.13 as the oracle) and run
# the whole test suite. Usage: bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test]'
# the sox program: the oracle of tests/audio's effects
command -v sox >/dev/null || (apt-get install -y -q sox >/dev/null) || echo 'sox not installed: its tests skip' >&2
set +e
.venv/bin/python -m pytest -q -n 2 -p no:cacheprovider --durations=25 "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
