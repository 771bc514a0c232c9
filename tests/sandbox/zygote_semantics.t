#!/usr/bin/env bash
# zygote_semantics.t: warm_semantics.t with runs forked from the slot's zygote (SBX_ZYGOTE=1,
# sandbox/zygote.c): every program must give the same result as `python3 main.py` started cold.
cd "$(dirname "$0")/../.." || exit 1
SBX_ZYGOTE=1 exec /usr/bin/python3 tests/sandbox/warm_semantics.t
