#!/usr/bin/env bash
# Set up a virtual environment and run the demo (train a model end to end).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q -e '.[demo]' >/dev/null
.venv/bin/python examples/train_digits.py "$@"
