#!/usr/bin/env bash
# seed_compat.t: basic-code-exec's own client, as its README uses it with only a token added,
# through the real stack (the checks are in seed_compat.py).
cd "$(dirname "$0")/../.." || exit 1
exec bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/seed_compat.py
