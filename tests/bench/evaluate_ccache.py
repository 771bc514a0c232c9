"""evaluate_ccache.py: a C (and a C++) submission with 20 `cases` graded twice through
/v1/evaluate: the first grading compiles (a new source each round: a comment with a fresh id),
the second finds the binary in the client's compile cache (compile.cached). Prints the medians
of BENCH_N rounds (default 5) of each grading's wall time as the client sees it, the
second/first ratio, and the compile step's own wall_ms both times. Nothing is asserted: a
figure, not a test. Run under tests/lib/harness.sh --exec (tests/bench/evaluate_ccache does)."""
import os
import statistics
import time
import uuid

import httpx

URL = os.environ["SBX_URL"]
H = {"Authorization": "Bearer " + os.environ["SBX_TOKEN"]}
N = int(os.environ.get("BENCH_N", "5"))
CASES = [{"stdin": "%d %d\n" % (i, 2 * i), "expected_stdout": "%d\n" % (3 * i)}
         for i in range(20)]
SOURCES = {
    "c": "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
         "int main(void) { long a, b; if (scanf(\"%ld %ld\", &a, &b) != 2) return 1;\n"
         "  printf(\"%ld\\n\", a + b); return 0; }\n",
    "cpp": "#include <iostream>\n#include <vector>\n#include <numeric>\n"
           "int main() { long a, b; std::cin >> a >> b; std::vector<long> v{a, b};\n"
           "  std::cout << std::accumulate(v.begin(), v.end(), 0L) << std::endl; }\n",
}


def grade(c, body):
    t = time.perf_counter()
    r = c.post("/v1/evaluate", json=body)
    ms = (time.perf_counter() - t) * 1e3
    d = r.json() if r.status_code == 200 else {}
    if r.status_code != 200 or d.get("passed_count") != len(CASES):
        raise SystemExit("evaluate failed: %s %s" % (r.status_code, r.text[:300]))
    return ms, d["compile"]


def main():
    with httpx.Client(base_url=URL, headers=H, verify=False, timeout=120) as c:
        for lang, src in SOURCES.items():
            first, second, cfirst, csecond, cached = [], [], [], [], []
            for _ in range(N):
                body = {"language": lang, "code": src + "/* %s */\n" % uuid.uuid4().hex,
                        "cases": CASES}
                ms1, comp1 = grade(c, body)
                ms2, comp2 = grade(c, body)
                first.append(ms1)
                second.append(ms2)
                cfirst.append(comp1.get("wall_ms", 0))
                csecond.append(comp2.get("wall_ms", 0))
                cached.append((comp1.get("cached"), comp2.get("cached")))
            f, s = statistics.median(first), statistics.median(second)
            print("%s, %d cases, median of %d rounds: first grading %.0f ms (compile %d ms), "
                  "second %.0f ms (compile %d ms, from the cache); second/first = %.2f"
                  % (lang, len(CASES), N, f, statistics.median(cfirst), s,
                     statistics.median(csecond), s / f))
            print("  cached flags (first, second) per round: %s" % cached)


main()
