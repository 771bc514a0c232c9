#!/usr/bin/env bash
# mcp_cluster.t: POST /mcp through the multi-host front (nginx/sbx-cluster.conf.in) with three
# hosts: a session made through MCP lives on one host, and every later call naming it (python
# state, run_command, files) is answered by that host, whichever host the front first picked
# (a wrong one bounces the call with 421 + X-Sbx-Shard, the front passes it on once). The checks
# are in mcp_cluster.py.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh
harness_start_cluster h1 h2 h3
for sh in $SBX_HOSTS; do
	export "MCP_STATE_$sh=$(harness_host_state "$sh")"
done
export MCP_ACCESS_LOG="$SBX_LOG/access.log"
/usr/bin/python3 tests/integration/mcp_cluster.py
