#!/usr/bin/env bash
# contexts_limits.t: the context caps and the idle TTL through the real stack over HTTPS (the
# checks are in contexts_limits.py), with a config of its own: contexts.per_client 2,
# contexts.idle_ttl_s 3, runs.per_client 1, and a broker that holds 3 contexts (SBX_CONTEXTS).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/harness.sh
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (the stack)"; exit 0; }
harness_config <<'PY' || exit 1
c["contexts"].update({"per_client": 2, "idle_ttl_s": 3, "wait_ms": 500})
c["metrics"] = {"clients": ["alice"]}
c["runs"].update({"per_client": 1, "client_share_percent": 100, "reserve": 0})
c.setdefault("disk", {})["client_share_percent"] = 0
PY
export SBX_CONTEXTS=3
harness_start
harness_py tests/integration/contexts_limits.py
