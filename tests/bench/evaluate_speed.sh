#!/usr/bin/env bash
# evaluate_speed.sh: evaluate route speed on a private stack, each figure against a baseline from
# the same run (see evaluate_speed.py). Prints its figures.
cd "$(dirname "$0")/../.." || exit 1
export HARNESS_WORKERS=${HARNESS_WORKERS:-8} HARNESS_RATE=${HARNESS_RATE:-100000r/s}
export HARNESS_BURST=${HARNESS_BURST:-100000} HARNESS_CONN=${HARNESS_CONN:-1000}
export HUMANEVAL=${HUMANEVAL:-../shared/datasets/HumanEval.jsonl.gz}
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/bench/evaluate_speed.py
