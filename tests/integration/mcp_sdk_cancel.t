#!/usr/bin/env bash
# mcp_sdk_cancel.t: cancelling a call with the official MCP TypeScript SDK (an AbortSignal on
# callTool: the SDK sends notifications/cancelled), plain and with progress; the run stops (the
# checks are in tests/mcp_sdk/mcp_cancel.mjs). The SDK is pinned in tests/mcp_sdk/package-lock.json.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
command -v node >/dev/null 2>&1 || { echo "1..0 # SKIP node is not installed"; exit 0; }
if [ ! -d tests/mcp_sdk/node_modules/@modelcontextprotocol/sdk ]; then
	(cd tests/mcp_sdk && npm ci --no-audit --no-fund --loglevel=error) >&2 ||
		{ echo "1..0 # SKIP npm ci in tests/mcp_sdk failed (no registry?)"; exit 0; }
fi
exec bash tests/lib/harness.sh --exec bash -c \
	'NODE_EXTRA_CA_CERTS="$SBX_STATE_DIR/tls/cert.pem" exec node tests/mcp_sdk/mcp_cancel.mjs'
