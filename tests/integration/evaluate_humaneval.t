#!/usr/bin/env bash
# evaluate_humaneval.t: all 164 HumanEval problems through POST /v1/evaluate in test mode over
# the real stack: every canonical solution passes, every body that only raises fails. The dataset
# lives beside the checkout (../shared/datasets); without it the test says SKIP and why.
cd "$(dirname "$0")/../.." || exit 1
data=../shared/datasets/HumanEval.jsonl.gz
if [ ! -f "$data" ]; then
	echo "1..0 # SKIP $data is absent (the datasets folder sits beside the checkout)"
	exit 0
fi
HUMANEVAL="$data" exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/evaluate_humaneval.py
