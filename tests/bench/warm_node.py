"""warm_node.py: one phase of tests/bench/warm_node (BENCH_PHASE=cold|warm names the stack's
SBX_WARM setting): p50 of POST /v1/execute node `console.log(1)` over HTTPS keep-alive, and of
bare `/usr/bin/node main.js` alternated with it, so a change in the machine's load hits both
sides alike. Run under tests/lib/harness.sh --exec (warm_node does that)."""
import json
import os
import statistics
import subprocess
import tempfile
import time

import execute_latency as E

PHASE = os.environ.get("BENCH_PHASE", "warm")
N = int(os.environ.get("BENCH_N", "30"))
E.BODY = {"language": "node", "code": "console.log(1)"}


def main():
    with tempfile.TemporaryDirectory() as d:
        main_js = os.path.join(d, "main.js")
        with open(main_js, "w") as f:
            f.write("console.log(1)\n")
        bare = ["/usr/bin/node", main_js]

        def bare_once():
            t = time.perf_counter()
            subprocess.run(bare, stdout=subprocess.DEVNULL, check=True)
            return time.perf_counter() - t

        c = E.Conn()
        for _ in range(3):
            E.api_once(c)
            bare_once()
        a, b = [], []
        for _ in range(N):
            # the slot prepares its next sandbox while idle: a client's think time
            time.sleep(0.3)
            a.append(E.api_once(c))
            b.append(bare_once())
    ma, mb = statistics.median(a) * 1e3, statistics.median(b) * 1e3
    print(f"warm_node[{PHASE}] execute_p50_ms {ma:.1f} bare_node_p50_ms {mb:.1f} "
          f"ratio {ma / mb:.2f} n={N}")
    print(json.dumps({"phase": PHASE, "execute_p50_ms": ma, "bare_p50_ms": mb}))


main()
