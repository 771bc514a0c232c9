"""evaluate_interactor.py: interactive problems (Kattis's interactor convention) on /v1/evaluate
through the real stack over HTTPS: a guessing game by binary search in Python and C (AC), a
solution that guesses wrong (WA), an interactor that fails (JE), a solution that never reads
(TLE) and one that crashes (RTE), what the solution can see, and request errors. Run by
evaluate_interactor.t under tests/lib/harness.sh --exec."""
import os
import sys

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from tap import done, ok  # noqa: E402

URL = os.environ["SBX_URL"]
c = httpx.Client(base_url=URL, verify=False, timeout=300,
                 headers={"Authorization": "Bearer " + os.environ["SBX_TOKEN"]})


def ev(body, path="/v1/evaluate"):
    r = c.post(path, json=body)
    try:
        return r.status_code, r.json()
    except ValueError:
        return r.status_code, {"raw": r.text}


def brief(d):
    if "cases" not in d:
        return d
    return {k: v for k, v in d.items() if k != "cases"}, [
        {k: x.get(k) for k in ("index", "passed", "status", "verdict", "error", "feedback",
                               "stderr")} for x in d.get("cases") or []]


def verdicts(d):
    return [x.get("verdict") for x in d.get("cases") or []]


# The interactor: the secret number is in input_file; it answers "<", ">" or "=" to each guess,
# at most 20 guesses in 1..1000.
INTERACTOR = r'''
import sys
secret = int(open(sys.argv[1]).read())
print(1000, flush=True)
for n in range(1, 21):
    line = sys.stdin.readline()
    if not line:
        open(sys.argv[3] + "judgemessage.txt", "w").write("no guess (EOF) after %d" % (n - 1))
        sys.exit(43)
    g = int(line)
    if g == secret:
        print("=", flush=True)
        open(sys.argv[3] + "judgemessage.txt", "w").write("found in %d guesses" % n)
        sys.exit(42)
    print("<" if secret < g else ">", flush=True)
open(sys.argv[3] + "judgemessage.txt", "w").write("too many guesses")
sys.exit(43)
'''
SOLVER = r'''
hi = int(input()); lo = 1
while True:
    mid = (lo + hi) // 2
    print(mid, flush=True)
    r = input()
    if r == "=":
        break
    if r == "<":
        hi = mid - 1
    else:
        lo = mid + 1
'''
cases = [{"stdin": "%d\n" % n} for n in (1, 500, 777, 1000)]
s, d = ev({"language": "python", "code": SOLVER, "cases": cases,
           "interactor": {"language": "python", "code": INTERACTOR}})
ok(s == 200 and verdicts(d) == ["AC"] * 4 and d.get("passed") is True,
   "guessing game by binary search (Python): AC on every case", brief(d))
ok(s == 200 and "found in" in (d["cases"][0].get("feedback") or ""),
   "the interactor's judgemessage.txt is the case's feedback", brief(d))

C_SOLVER = r'''
#include <stdio.h>
int main(void) {
    int hi, lo = 1; char r[8];
    if (scanf("%d", &hi) != 1) return 1;
    for (;;) {
        int mid = (lo + hi) / 2;
        printf("%d\n", mid); fflush(stdout);
        if (scanf("%7s", r) != 1) return 2;
        if (r[0] == '=') return 0;
        if (r[0] == '<') hi = mid - 1; else lo = mid + 1;
    }
}
'''
C_INTERACTOR = r'''
#include <stdio.h>
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "r"); int secret, g;
    if (argc != 4 || !f || fscanf(f, "%d", &secret) != 1) return 1;
    printf("1000\n"); fflush(stdout);
    for (int n = 0; n < 20; n++) {
        if (scanf("%d", &g) != 1) return 43;
        if (g == secret) { printf("=\n"); fflush(stdout); return 42; }
        printf(secret < g ? "<\n" : ">\n"); fflush(stdout);
    }
    return 43;
}
'''
s, d = ev({"language": "c", "code": C_SOLVER, "cases": cases[:3],
           "interactor": {"language": "c", "code": C_INTERACTOR}})
ok(s == 200 and verdicts(d) == ["AC"] * 3 and (d.get("compile") or {}).get("status") == "ok"
   and (d.get("interactor_compile") or {}).get("status") == "ok",
   "guessing game in C, solution and interactor compiled once: AC", brief(d))

s, d = ev({"language": "c", "code": "int main(void) { return nope; }", "cases": cases[:2],
           "interactor": {"language": "c", "code": C_INTERACTOR}})
ok(s == 200 and verdicts(d) == ["CE", "CE"] and (d.get("compile") or {}).get("status") != "ok",
   "a solution that does not compile: CE, with its compile result", brief(d))

# A wrong solution: linear from the top, gives up after 20 guesses.
s, d = ev({"language": "python", "code": "input()\nfor g in range(1000, 0, -1):\n"
           "    print(g, flush=True)\n    if input() == '=': break\n",
           "cases": [{"stdin": "1000\n"}, {"stdin": "3\n"}],
           "interactor": {"language": "python", "code": INTERACTOR}})
ok(s == 200 and verdicts(d) == ["AC", "WA"] and d.get("passed_count") == 1,
   "a solution that needs too many guesses: WA (the interactor exited 43 first)", brief(d))
ok("too many guesses" in (d["cases"][1].get("feedback") or ""), "WA feedback", brief(d))

# The interactor itself fails: JE, never AC.
for name, code in [("exit 1", "import sys; print(1000, flush=True); sys.exit(1)"),
                   ("an exception", "print(1000, flush=True)\nraise RuntimeError('itr bug')")]:
    s, d = ev({"language": "python", "code": SOLVER, "cases": cases[:1],
               "interactor": {"language": "python", "code": code}})
    ok(s == 200 and verdicts(d) == ["JE"] and d.get("passed") is False,
       "interactor %s: JE" % name, brief(d))
ok("itr bug" in (d["cases"][0].get("feedback") or ""), "the interactor's stderr is feedback",
   brief(d))

# The solution's own failure is judged when it came first.
s, d = ev({"language": "python", "code": "while True: pass", "cases": cases[:1],
           "limits": {"wall_ms": 1000, "cpu_ms": 1000},
           "interactor": {"language": "python", "code": INTERACTOR}})
ok(s == 200 and verdicts(d) == ["TLE"], "a solution that never reads: TLE", brief(d))
s, d = ev({"language": "python", "code": "input()\nraise ValueError('boom')",
           "cases": cases[:1], "interactor": {"language": "python", "code": INTERACTOR}})
ok(s == 200 and verdicts(d) == ["RTE"] and "boom" in (d["cases"][0].get("stderr") or ""),
   "a solution that crashes: RTE, its stderr kept", brief(d))

# The solution sees neither the input nor the answer.
SPY = r'''
import os
print(1, flush=True)
seen = []
for root, dirs, files in os.walk("/work"):
    seen += [os.path.join(root, f) for f in files]
import sys
print("seen:", sorted(seen), file=sys.stderr)
input()
'''
s, d = ev({"language": "python", "code": SPY,
           "cases": [{"stdin": "1\n", "expected_stdout": "SECRET-ANSWER"}],
           "interactor": {"language": "python", "code": INTERACTOR}})
err = (d.get("cases") or [{}])[0].get("stderr") or ""
ok(s == 200 and "seen:" in err and "input" not in err.replace("sol.in", "")
   and "answer" not in err and "SECRET" not in str(d.get("cases")),
   "the solution's /work holds only its program and the two pipes", brief(d))

# Request errors.
for body, field, code, path in [
        ({"interactor": {"language": "python", "code": "x", "limits": {"wall_ms": 10 ** 9}}},
         "interactor.limits.wall_ms", "limit_too_high", "/v1/evaluate"),
        ({"interactor": {"language": "python", "code": "x"},
          "checker": {"language": "python", "code": "x"}}, "interactor", "invalid_request",
         "/v1/evaluate"),
        ({"interactor": {"language": "nope", "code": "x"}}, "interactor.language",
         "unknown_language", "/v1/evaluate")]:
    b = {"language": "python", "code": "print(1)", "cases": [{"stdin": ""}]}
    b.update(body)
    s, d = ev(b, path)
    e = d.get("error") or {}
    ok(s == 400 and e.get("code") == code and e.get("field") == field,
       "400 %s on %s" % (code, field), (s, d))
s, sess = ev({}, "/v1/sessions")
s, d = ev({"language": "python", "code": SOLVER, "cases": cases[:1],
           "interactor": {"language": "python", "code": INTERACTOR}},
          "/v1/sessions/%s/evaluate" % sess.get("id"))
ok(s == 400 and (d.get("error") or {}).get("field") == "interactor",
   "interactor on a session's evaluate: 400", (s, d))

done()
