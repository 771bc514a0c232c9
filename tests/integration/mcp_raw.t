#!/usr/bin/env bash
# mcp_raw.t: POST /mcp as raw JSON-RPC through the real stack over HTTPS: both protocol
# generations, every tool, the error paths, client isolation, JSON Schema 2020-12 checks of every
# schema and structuredContent (the checks are in mcp_raw.py).
cd "$(dirname "$0")/../.." || exit 1
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/mcp_raw.py
