#!/usr/bin/env bash
# tools_api.t: GET /v1/tools in the OpenAI Chat, OpenAI Responses (strict) and Anthropic forms,
# validated against the vendors' documented shapes, and one source with the MCP tools (the checks
# are in tools_api.py).
cd "$(dirname "$0")/../.." || exit 1
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/tools_api.py
