#!/usr/bin/env bash
# redteam_api.t: holes found by attacking the last waves' routes as a hostile client (the checks
# and what each hole was are in redteam_api.py), through the real stack over HTTPS.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/harness.sh
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (the stack)"; exit 0; }
# 4 slots: the broker runs at most 2 background runs at once (slots/2), as many as one client may.
export HARNESS_SLOTS=4
harness_config <<'PY' || harness_bail "cannot write the config"
c["runs"]["client_share_percent"] = 100
c["runs"]["reserve"] = 0
c["runs"]["background_per_client"] = 2
c["runs"]["background_per_session"] = 2
c.setdefault("disk", {})["client_share_percent"] = 0
PY
harness_start
harness_py tests/integration/redteam_api.py
