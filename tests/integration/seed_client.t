#!/usr/bin/env bash
# seed_client.t: the seed-compatible routes driven like basic-code-exec's async httpx client,
# through the real stack over HTTPS (the checks are in seed_client.py).
cd "$(dirname "$0")/../.." || exit 1
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/seed_client.py
