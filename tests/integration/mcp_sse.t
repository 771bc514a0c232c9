#!/usr/bin/env bash
# mcp_sse.t: a tools/call with _meta.progressToken from a client that accepts text/event-stream
# is answered as an SSE stream (progress notification, then the response); without the token or
# without event-stream in Accept it stays plain JSON (the checks are in mcp_sse.py).
cd "$(dirname "$0")/../.." || exit 1
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/mcp_sse.py
