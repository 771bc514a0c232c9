#!/usr/bin/env bash
# session_idempotency.t: Idempotency-Key on the POSTs that create sessions, through the real
# stack (the checks are in session_idempotency.py).
cd "$(dirname "$0")/../.." || exit 1
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/session_idempotency.py
