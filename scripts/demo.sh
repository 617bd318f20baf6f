#!/usr/bin/env bash
# Set up a virtual environment and run the demo (train a model end to end).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if [ "${1:-}" = "--ddp" ]; then      # the same model on 2 processes, DistributedDataParallel
  shift
  .venv/bin/python -m pip install -q -e '.[demo,distributed]' >/dev/null
  exec .venv/bin/python -m ember.distributed.run --standalone --nproc-per-node=2 \
    examples/train_digits_ddp.py "$@"
fi
.venv/bin/python -m pip install -q -e '.[demo]' >/dev/null
.venv/bin/python examples/train_digits.py "$@"
