#!/usr/bin/env bash
# mcp_cancel.t: a tools/call stops when its client goes (an SSE stream or a plain JSON request
# closed) or when notifications/cancelled names it, in both protocol generations, and only the
# caller's own calls can be cancelled (the checks are in mcp_cancel.py).
cd "$(dirname "$0")/../.." || exit 1
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/mcp_cancel.py
