#!/usr/bin/env bash
# mcp_sdk_modern.t: the official v2 MCP TypeScript client (@modelcontextprotocol/client) against
# the real stack over HTTPS with a token: protocol 2026-07-28 negotiated through server/discover,
# and its legacy mode (the checks are in tests/mcp_sdk/mcp_sdk_modern.mjs).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
command -v node >/dev/null 2>&1 || { echo "1..0 # SKIP node is not installed"; exit 0; }
if [ ! -d tests/mcp_sdk/node_modules/@modelcontextprotocol/client ]; then
	(cd tests/mcp_sdk && npm ci --no-audit --no-fund --loglevel=error) >&2 ||
		{ echo "1..0 # SKIP npm ci in tests/mcp_sdk failed (no registry?)"; exit 0; }
fi
# The harness's certificate is self-signed: trust it (not TLS checks off) for Node's fetch.
exec bash tests/lib/harness.sh --exec bash -c \
	'NODE_EXTRA_CA_CERTS="$SBX_STATE_DIR/tls/cert.pem" exec node tests/mcp_sdk/mcp_sdk_modern.mjs'
