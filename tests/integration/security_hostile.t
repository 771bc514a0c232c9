#!/usr/bin/env bash
# security_hostile.t: SANDBOX.md's hostile checklist (all of it with security_checklist.t) as
# requests to POST /v1/execute through the real stack: resources, lifetime, host data, kernel surface,
# network, terminal, and the tokens file and state directory seen from inside a run. The checks
# are in security_hostile.py.
cd "$(dirname "$0")/../.." || exit 1
export HARNESS_RATE=${HARNESS_RATE:-1000r/s} HARNESS_BURST=${HARNESS_BURST:-1000}
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/security_hostile.py
