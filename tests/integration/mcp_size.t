#!/usr/bin/env bash
# mcp_size.t: MCP tool results sized for a model (mcp.result_bytes, mcp.result_cases): a 2 MB
# stdout comes back as its head and tail around a marker with the exact count left out, UTF-8
# never split, and a large evaluate lists a bounded number of cases, failures first (the checks
# are in mcp_size.py). The config raises the output maximum so a run may keep 2 MB.
cd "$(dirname "$0")/../.." || exit 1
conf_dir=$(mktemp -d /tmp/mcp-size.XXXXXX)
chmod 0755 "$conf_dir"
/usr/bin/python3 - "$conf_dir/sbx.conf.json" <<'PY'
import json, os, shutil, sys
c = json.load(open("fcgi/sbx.conf.json"))
c["limits"]["maxima"]["output_bytes"] = 4194304
c["mcp"] = {"result_bytes": 16384, "result_cases": 50}
c.setdefault("runs", {})["client_share_percent"] = 100
c["runs"]["reserve"] = 0
json.dump(c, open(sys.argv[1], "w"))
shutil.copy("fcgi/openapi.json", os.path.dirname(sys.argv[1]))
PY
chmod 0644 "$conf_dir"/*
trap 'rm -rf "$conf_dir"' EXIT
export SBX_CONFIG=$conf_dir/sbx.conf.json MCP_RESULT_BYTES=16384 MCP_RESULT_CASES=50
bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/mcp_size.py
