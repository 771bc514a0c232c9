"""evaluate_checker.py: checkers (Kattis output validators) on /v1/evaluate and the session's
evaluate through the real stack over HTTPS: AC/WA/JE by exit code, feedback and
judgemessage.txt, a C checker compiled once, checker limits, and a checker that tries to read
another case's answer or write where the solution reads. Run by evaluate_checker.t under
tests/lib/harness.sh --exec."""
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
        {k: x.get(k) for k in ("index", "passed", "status", "verdict", "got", "error",
                               "feedback")} for x in d.get("cases") or []]


def verdicts(d):
    return [x.get("verdict") for x in d.get("cases") or []]


# A float-tolerance checker in Python: the answer within 1e-3 of the expected one.
PY_CHECK = r'''
import sys
inp = open(sys.argv[1]).read()
ans = float(open(sys.argv[2]).read())
got = sys.stdin.read()
try:
    v = float(got)
except ValueError:
    print("not a number:", got.strip()[:20])
    sys.exit(43)
if abs(v - ans) <= 1e-3:
    sys.exit(42)
with open(sys.argv[3] + "judgemessage.txt", "w") as f:
    f.write("expected %s, got %s (input %s)" % (ans, v, inp.strip()))
sys.exit(43)
'''
SOL = "import sys\nx = float(input())\nprint(x / 3 + (0.1 if x == 7 else 0))\n"
cases = [{"stdin": "%d\n" % i, "expected_stdout": "%.6f\n" % (i / 3)} for i in (1, 2, 7)]
s, d = ev({"language": "python", "code": SOL, "cases": cases,
           "checker": {"language": "python", "code": PY_CHECK}})
ok(s == 200 and verdicts(d) == ["AC", "AC", "WA"] and d.get("passed_count") == 2
   and d.get("passed") is False, "python checker: AC, AC, WA by exit 42/43", brief(d))
fb = (d.get("cases") or [{}] * 3)[2].get("feedback") or ""
ok("expected 2.333333, got 2.43333" in fb and "(input 7)" in fb,
   "feedback holds feedback_dir/judgemessage.txt (and sees the input file)", fb)
s, d2 = ev({"language": "python", "code": "print('abc')", "cases": cases[:1],
            "checker": {"language": "python", "code": PY_CHECK}})
ok(s == 200 and verdicts(d2) == ["WA"] and "not a number: abc" in
   (d2["cases"][0].get("feedback") or ""), "feedback holds what the checker printed", brief(d2))

# stop_on_first_failure: cases are judged one after another, those after the first WA skipped.
s, d = ev({"language": "python", "code": SOL, "cases": [cases[2], cases[0]],
           "stop_on_first_failure": True, "checker": {"language": "python", "code": PY_CHECK}})
ok(s == 200 and verdicts(d) == ["WA", None] and d["cases"][1].get("status") == "skipped",
   "stop_on_first_failure with a checker: WA then skipped", brief(d))

# Judge errors: exit 1, a crash, a timeout: JE, never AC.
for name, code, lim in [
        ("exit 1", "import sys; print('oops'); sys.exit(1)", None),
        ("a crash", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", None),
        ("an exception", "raise RuntimeError('checker bug')", None),
        ("a timeout", "import sys\nsys.stdin.read()\nwhile True: pass", {"wall_ms": 1000,
                                                                       "cpu_ms": 1000})]:
    chk = {"language": "python", "code": code}
    if lim:
        chk["limits"] = lim
    s, d = ev({"language": "python", "code": "print(1)", "cases": cases[:2], "checker": chk})
    ok(s == 200 and verdicts(d) == ["JE", "JE"] and d.get("passed") is False
       and d.get("passed_count") == 0, "checker %s: JE for every case" % name, brief(d))
    if name == "an exception":
        ok("checker bug" in (d["cases"][0].get("feedback") or ""),
           "a crashing checker's traceback is in feedback", brief(d))

# The solution's own failure is judged first: the checker never turns RTE/TLE into AC.
ALWAYS_AC = "import sys; sys.exit(42)"
s, d = ev({"language": "python", "code": "import sys\nif input() == '2': raise SystemExit(3)\n"
           "if input() == '': pass\n", "cases": [{"stdin": "1\n\n"}, {"stdin": "2\n"}],
           "checker": {"language": "python", "code": ALWAYS_AC}})
ok(s == 200 and verdicts(d) == ["AC", "RTE"], "a solution that fails is RTE even with an "
   "accepting checker", brief(d))
s, d = ev({"language": "python", "code": "while True: pass", "cases": [{"stdin": ""}],
           "limits": {"wall_ms": 500, "cpu_ms": 500},
           "checker": {"language": "python", "code": ALWAYS_AC}})
ok(s == 200 and verdicts(d) == ["TLE"], "a solution over its time is TLE, the checker unasked",
   brief(d))

# Isolation: a checker sees only its own case's files and cannot forge anything elsewhere.
SPY = r'''
import os, sys
found = []
# Everywhere writable or per-run (the system's own read-only trees are the image's files).
tops = [p for p in ("/work", "/tmp", "/home", "/opt", "/var", "/run", "/root", "/mnt", "/srv",
                    "/dev/shm") if os.path.isdir(p)]
for root, dirs, files in (w for t in tops for w in os.walk(t)):
    for f in files:
        p = os.path.join(root, f)
        try:
            if os.path.getsize(p) < 4096 and (b"ANS" + b"WER-") in open(p, "rb").read():
                found.append(p)
        except OSError:
            pass
mine = open(sys.argv[2]).read()
others = [p for p in found if open(p).read() != mine]
for p in ("/work/main.py", "/work/input", "/work/solution.txt"):
    try:
        with open(p, "r+") as f:
            f.seek(0, 2)
            f.write("\nprint('FORGED')\n")
    except OSError:
        pass
print("listing:", sorted(os.listdir("/work")), "others:", others)
sys.exit(43 if others else 42)
'''
spy_cases = [{"stdin": "%d\n" % i, "expected_stdout": "ANSWER-%d\n" % i} for i in range(3)]
s, d = ev({"language": "python", "code": "print(input())", "cases": spy_cases,
           "checker": {"language": "python", "code": SPY}})
ok(s == 200 and verdicts(d) == ["AC", "AC", "AC"],
   "a checker finds no other case's answer anywhere it can read", brief(d))
fb = (d.get("cases") or [{}])[0].get("feedback") or ""
ok("'answer'" in fb and "'input'" in fb and "'feedback'" in fb and "main.py" in fb
   and "others: []" in fb, "its /work holds only input, answer, feedback/ and itself", fb)

# The solution's output reaches the checker on stdin only: never in its argv or environment.
ARGV_ENV = r'''
import os, sys
mark = "OUT" + "MARK-"
print("argv:", sys.argv, "env:", sorted(os.environ.items()), file=sys.stderr)
print("stdin-has-mark:", mark in sys.stdin.read())
sys.exit(42 if sys.argv[1:] == ["/work/input", "/work/answer", "/work/feedback/"] else 43)
'''
s, d = ev({"language": "python", "code": "print('OUTMARK-' + 'x' * 10)", "cases": [{"stdin": ""}],
           "checker": {"language": "python", "code": ARGV_ENV}})
fb = (d.get("cases") or [{}])[0].get("feedback") or ""
ok(s == 200 and verdicts(d) == ["AC"] and "stdin-has-mark: True" in fb
   and fb.count("OUTMARK-") == 0 and "argv:" in fb,
   "the solution's output is on the checker's stdin, not in its argv or env", brief(d))

# A Python checker runs as `python3 -u main.py <input> <answer> <feedback_dir>` would (judge.c
# starts it through the runner's check.py): __main__, its argv, /work first on sys.path, the
# site directories, exit()/quit(), and unbuffered output (what it printed before a limit killed
# it is in its feedback).
SEMANTICS = r'''
import sys
import os
ok = (__name__ == "__main__" and os.path.basename(sys.argv[0]) == "main.py"
      and sys.argv[1:] == ["/work/input", "/work/answer", "/work/feedback/"]
      and sys.path[0] == "/work" and "/usr/lib/python3/dist-packages" in sys.path
      and callable(exit) and __file__.endswith("main.py"))
print("semantics:", ok, sys.argv[0], sys.path[:2], __name__)
if sys.stdin.read().strip() == "slow":
    while True:
        pass
raise SystemExit(42 if ok else 43)
'''
s, d = ev({"language": "python", "code": "print(input())",
           "cases": [{"stdin": "fast\n"}, {"stdin": "slow\n"}],
           "checker": {"language": "python", "code": SEMANTICS, "limits": {"wall_ms": 1500}}})
fbs = [x.get("feedback") or "" for x in d.get("cases") or [{}, {}]]
ok(s == 200 and verdicts(d) == ["AC", "JE"] and "semantics: True" in fbs[0],
   "a Python checker sees python3 main.py's __main__, argv, sys.path and builtins", brief(d))
ok("semantics: True" in fbs[1], "what a checker printed before its limit is in its feedback",
   brief(d))

# A session: the checker never sees the session's files, and its writes never reach them.
s, sess = ev({}, "/v1/sessions")
sid = sess.get("id") if isinstance(sess, dict) else None
if sid:
    c.put("/v1/sessions/%s/files/solution.txt" % sid, content=b"SESSION-FILE\n")
    s, d = ev({"language": "python",
               "code": "print(open('solution.txt').read().strip() + ' ' + input())",
               "cases": [{"stdin": "1\n", "expected_stdout": "x"},
                         {"stdin": "2\n", "expected_stdout": "y"}],
               "checker": {"language": "python", "code": SPY}},
              "/v1/sessions/%s/evaluate" % sid)
    ok(s == 200 and all(x.get("got") == "SESSION-FILE %d\n" % (i + 1)
                        for i, x in enumerate(d.get("cases") or [])) and len(d["cases"]) == 2,
       "session evaluate: the solution reads its session file, the checker cannot reach it",
       brief(d))
    r = c.get("/v1/sessions/%s/files/solution.txt" % sid)
    ok(r.status_code == 200 and r.content == b"SESSION-FILE\n",
       "the checker's write to solution.txt did not reach the session", r.content[:100])
    names = str(c.get("/v1/sessions/%s/files" % sid).json())
    ok("answer" not in names and "feedback" not in names,
       "no checker file lands in the session", names[:300])
else:
    for _ in range(3):
        ok(False, "session create", sess)

# A C checker, compiled once per request: token comparison.
C_CHECK = r'''
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    char want[256] = "", got[256] = "";
    FILE *a = fopen(argv[2], "r");
    if (argc != 4 || !a) return 1;
    if (fscanf(a, "%255s", want) != 1) return 1;
    if (scanf("%255s", got) != 1 || strcmp(want, got) != 0) {
        char p[512];
        snprintf(p, sizeof p, "%sjudgemessage.txt", argv[3]);
        FILE *f = fopen(p, "w");
        if (f) { fprintf(f, "want %s got %s", want, got); fclose(f); }
        return 43;
    }
    return 42;
}
'''
c_cases = [{"stdin": "%d\n" % i, "expected_stdout": str(i * 2)} for i in range(5)]
s, d = ev({"language": "c", "code": "#include <stdio.h>\nint main(void){int x;scanf(\"%d\",&x);"
           "printf(\"  %d \\n\", x == 3 ? 0 : 2 * x);return 0;}",
           "cases": c_cases, "checker": {"language": "c", "code": C_CHECK}})
ok(s == 200 and verdicts(d) == ["AC", "AC", "AC", "WA", "AC"]
   and (d.get("checker_compile") or {}).get("status") == "ok",
   "C solution, C checker: compiled once, AC and WA", brief(d))
ok("want 6 got 0" in (d.get("cases") or [{}] * 4)[3].get("feedback", ""),
   "C checker's judgemessage.txt in feedback", brief(d))
s, d = ev({"language": "python", "code": "print(1)", "cases": c_cases[:2],
           "checker": {"language": "c", "code": "int main(void) { return syntax error; }"}})
ok(s == 200 and verdicts(d) == ["JE", "JE"] and "did not compile" in
   (d["cases"][0].get("feedback") or "") and d["checker_compile"]["status"] != "ok",
   "a checker that does not compile: JE for every case, its compile result shown", brief(d))

# Request errors.
big = 10 ** 9
for body, field, code in [
        ({"checker": {"language": "python", "code": "x", "limits": {"wall_ms": big}}},
         "checker.limits.wall_ms", "limit_too_high"),
        ({"checker": {"language": "python", "code": "x", "limits": {"memory_mb": big}}},
         "checker.limits.memory_mb", "limit_too_high"),
        ({"checker": {"language": "cobol", "code": "x"}}, "checker.language",
         "unknown_language"),
        ({"checker": {"language": "python"}}, "checker.code", "missing_field"),
        ({"checker": {"language": "python", "code": "x", "extra": 1}}, "checker.extra",
         "unknown_field"),
        ({"checker": "python"}, "checker", "invalid_type"),
        ({"checker": {"language": "python", "code": "x"}, "compare": "tokens"}, "compare",
         "invalid_request")]:
    b = {"language": "python", "code": "print(1)", "cases": [{"stdin": ""}]}
    b.update(body)
    s, d = ev(b)
    e = d.get("error") or {}
    ok(s == 400 and e.get("code") == code and e.get("field") == field,
       "400 %s on %s" % (code, field), (s, d))
s, d = ev({"language": "python", "code": "def f(): return 1", "entry_point": "f",
           "io_cases": [{"input": "", "output": "1"}],
           "checker": {"language": "python", "code": "x"}})
ok(s == 400 and (d.get("error") or {}).get("field") == "checker",
   "checker with io_cases: 400", d)

done()
