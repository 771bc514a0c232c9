#!/usr/bin/env bash
# zygote_isolation.t: tests/integration/warm_isolation.t with the broker's per-slot zygote on
# (SBX_ZYGOTE=1, sandbox/zygote.c): nothing of one zygote-born run reaches the next one in the
# slot, through /v1/execute, session execute and /v1/evaluate.
cd "$(dirname "$0")/../.." || exit 1
SBX_ZYGOTE=1 exec bash tests/integration/warm_isolation.t
