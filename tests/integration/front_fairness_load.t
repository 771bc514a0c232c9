#!/usr/bin/env bash
# front_fairness_load.t: the short version of tests/bench/fairness_latency: alice keeps the
# pool's worth of slow runs coming while bob sends print(1) one at a time. Asserts only that
# nothing fails, that bob is never refused and all his runs complete, and that alice's excess is
# refused by design; bob's latencies (quiet and under the flood) are printed, not asserted.
cd "$(dirname "$0")/../.." || exit 1
export HARNESS_WORKERS=6 HARNESS_SLOTS=6 HARNESS_RATE=100000r/s HARNESS_BURST=100000
export HARNESS_CONN=1000 HARNESS_CLIENT_SHARE=50 HARNESS_RESERVE=2 FAIR_SAMPLES=${FAIR_SAMPLES:-15} FAIR_FLOOD=6
# One quiet phase then one flood: the figures are only printed here (the bench alternates them).
export FAIR_ROUNDS=${FAIR_ROUNDS:-1}
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/bench/fairness_latency.py --tap
