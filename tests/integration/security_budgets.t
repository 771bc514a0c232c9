#!/usr/bin/env bash
# security_budgets.t: kernel budgets and host data through the real stack with two clients (issue
# 13): while alice's session run holds every POSIX timer, inotify instance and queued signal it
# can, bob's run and host root still get theirs; io_setup, prlimit on init, sysinfo refused;
# mountinfo names no host path (state dir, checkout); the disk reserve's qgroup bounds all
# sessions together. The checks are in security_budgets.py.
cd "$(dirname "$0")/../.." || exit 1
export HARNESS_RATE=${HARNESS_RATE:-1000r/s} HARNESS_BURST=${HARNESS_BURST:-1000}
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/security_budgets.py
