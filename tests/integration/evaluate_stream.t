#!/usr/bin/env bash
# evaluate_stream.t: "stream": true on the evaluate routes through the real stack over HTTPS,
# read line by line (the checks are in evaluate_stream.py).
cd "$(dirname "$0")/../.." || exit 1
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/evaluate_stream.py
