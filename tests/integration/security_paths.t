#!/usr/bin/env bash
# security_paths.t: sessions and file routes under attack through the real stack: two clients
# reaching for each other's sessions, path tricks (.., absolute, %-encoded slashes and dots, NUL)
# on every file route (/v1 and seed), and symlinks made by code in the session pointing at
# /etc/passwd, /etc and another client's session directory. Checks are in security_paths.py.
cd "$(dirname "$0")/../.." || exit 1
export HARNESS_RATE=${HARNESS_RATE:-1000r/s} HARNESS_BURST=${HARNESS_BURST:-1000}
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/security_paths.py
