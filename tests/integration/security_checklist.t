#!/usr/bin/env bash
# security_checklist.t: the items of SANDBOX.md's hostile checklist that security_hostile.t and
# security_paths.t do not cover, through the real stack (POST /v1/execute and session runs), with
# the sandbox tests' own C probes compiled by the service. The checks are in security_checklist.py.
cd "$(dirname "$0")/../.." || exit 1
export HARNESS_RATE=${HARNESS_RATE:-1000r/s} HARNESS_BURST=${HARNESS_BURST:-1000}
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/security_checklist.py
