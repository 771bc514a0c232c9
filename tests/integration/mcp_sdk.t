#!/usr/bin/env bash
# mcp_sdk.t: the official MCP TypeScript SDK (@modelcontextprotocol/sdk, Streamable HTTP client)
# against the real stack over HTTPS with a token (the checks are in tests/mcp_sdk/mcp_sdk.mjs).
# The SDK is pinned in tests/mcp_sdk/package-lock.json and installed there by npm ci.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
command -v node >/dev/null 2>&1 || { echo "1..0 # SKIP node is not installed"; exit 0; }
if [ ! -d tests/mcp_sdk/node_modules/@modelcontextprotocol/client ] || [ ! -d tests/mcp_sdk/node_modules/@modelcontextprotocol/sdk ]; then
	(cd tests/mcp_sdk && npm ci --no-audit --no-fund --loglevel=error) >&2 ||
		{ echo "1..0 # SKIP npm ci in tests/mcp_sdk failed (no registry?)"; exit 0; }
fi
# The harness's certificate is self-signed: trust it (not TLS checks off) for Node's fetch.
exec bash tests/lib/harness.sh --exec bash -c \
	'NODE_EXTRA_CA_CERTS="$SBX_STATE_DIR/tls/cert.pem" exec node tests/mcp_sdk/mcp_sdk.mjs'
