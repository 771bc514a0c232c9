"""evaluate_checkhost.py: checkers that attack the check host (judge.c: a lane's checks run one
after another in one checker sandbox, forked by runner/check.py --host). A check must not reach
a later check (a background process, files in /work, /tmp, /dev/shm, System V IPC), must not
turn a later verdict, and a check that kills or stops the host, spins past its CPU limit,
crashes or writes past its output limit is JE for its own case only: every other case is still
judged by its own checker run. Run by evaluate_checkhost.t under tests/lib/harness.sh --exec."""
import os
import sys
import time

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from tap import done, ok  # noqa: E402

URL = os.environ["SBX_URL"]
c = httpx.Client(base_url=URL, verify=False, timeout=300,
                 headers={"Authorization": "Bearer " + os.environ["SBX_TOKEN"]})

N = 8
# Case i: stdin i, answer 2i; the solution is wrong on case 5 only. Case 0 is where the checker
# attacks (its input is 0).
CASES = [{"stdin": "%d\n" % i, "expected_stdout": "%d\n" % (2 * i)} for i in range(N)]
SOL = "x = int(input())\nprint(2 * x + (1 if x == 5 else 0))\n"
HONEST = ["AC", "AC", "AC", "AC", "AC", "WA", "AC", "AC"]

# Every check: AC when the output is the answer, unless it finds something an earlier check
# left behind (then WA with FOUND in its feedback). ATTACK runs first, on case 0 only.
CHECK = r'''
import ctypes, os, sys
inp = open(sys.argv[1]).read().strip()
ans = open(sys.argv[2]).read().split()
got = sys.stdin.read().split()
libc = ctypes.CDLL(None, use_errno=True)
found = []
for p in ("/tmp/mark", "/dev/shm/mark", "/work/mark", "/work/feedback/judgemessage.txt"):
    if os.path.exists(p):
        found.append(p)
if inp != "0":
    if libc.shmget(4242, 0, 0) >= 0:
        found.append("shm")
    if libc.msgget(4243, 0) >= 0:
        found.append("msg")
    print("ppid", os.getppid())
if inp == "0":
    ATTACK
if found:
    print("FOUND", found)
    sys.exit(43)
sys.exit(42 if got == ans else 43)
'''


def run(attack, limits=None, cases=CASES, sol=SOL):
    code = CHECK.replace("ATTACK", attack.strip().replace("\n", "\n    "))
    checker = {"language": "python", "code": code}
    if limits:
        checker["limits"] = limits
    t = time.monotonic()
    r = c.post("/v1/evaluate", json={"language": "python", "code": sol, "cases": cases,
                                     "checker": checker})
    secs = time.monotonic() - t
    try:
        d = r.json()
    except ValueError:
        d = {"raw": r.text}
    return r.status_code, d, secs


def verdicts(d):
    return [x.get("verdict") for x in d.get("cases") or []]


def feedbacks(d):
    return " ".join(str(x.get("feedback")) for x in d.get("cases") or [])


def brief(d):
    return [{k: x.get(k) for k in ("index", "verdict", "error", "feedback")}
            for x in d.get("cases") or []] or d


# 0. The lane's checks share a host: their parent is the host, not the sandbox's init.
s, d, _ = run("sys.exit(42)")
ppids = {ln.split()[1] for x in d.get("cases") or [] for ln in (x.get("feedback") or "").splitlines()
         if ln.startswith("ppid ")}
ok(s == 200 and verdicts(d) == HONEST, "an honest checker through the host: AC and WA", brief(d))
ok(ppids and "1" not in ppids, "the checks ran under the check host (parent is not init)", ppids)

# 1. A background process of check 0 (setsid + double fork) rewrites what later checks read
#    and write: the program, the feedback, the answer.
BACKGROUND = r'''
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import time
        for _ in range(300):
            for path, text in (("/work/main.py", "import sys\nsys.exit(42)\n"),
                               ("/work/feedback/judgemessage.txt", "FORGED"),
                               ("/work/answer", "FORGED"), ("/work/.sbx_out", "FORGED"),
                               ("/tmp/mark", "x")):
                try:
                    with open(path, "w") as f:
                        f.write(text)
                except OSError:
                    pass
            time.sleep(0.01)
    os._exit(0)
sys.exit(43)
'''
s, d, _ = run(BACKGROUND)
later = {"cases": d.get("cases", [])[1:]}
ok(s == 200 and verdicts(d) == ["WA"] + HONEST[1:] and "FORGED" not in feedbacks(later)
   and "FOUND" not in feedbacks(d),
   "a background process of a check reaches no later check", brief(d))

# 2. Files and IPC objects left for the next check.
LEAVE = r'''
for p in ("/tmp/mark", "/dev/shm/mark", "/work/mark"):
    open(p, "w").write("x")
libc.shmget(4242, 4096, 0o1000 | 0o600)
libc.msgget(4243, 0o1000 | 0o000)
sys.exit(43)
'''
s, d, _ = run(LEAVE)
ok(s == 200 and verdicts(d) == ["WA"] + HONEST[1:] and "FOUND" not in feedbacks(d),
   "files in /tmp, /dev/shm, /work and System V IPC of a check are gone for the next", brief(d))

# 3. A check kills its parent then accepts: never AC; every other case judged.
s, d, _ = run("import signal\nos.kill(os.getppid(), signal.SIGKILL)\nsys.exit(42)")
ok(s == 200 and verdicts(d) == ["JE"] + HONEST[1:],
   "a check that kills its parent: JE for its case, the others judged", brief(d))

# 4. A check stops its parent then accepts: JE, and the request does not hang.
s, d, secs = run("import signal\nos.kill(os.getppid(), signal.SIGSTOP)\nsys.exit(42)",
                 limits={"wall_ms": 2000})
ok(s == 200 and verdicts(d) == ["JE"] + HONEST[1:] and secs < 60,
   "a check that stops its parent: JE for its case, the others judged, no hang",
   (secs, brief(d)))

# 4b. kill(-1): everything it may signal (the host among them).
s, d, _ = run("import signal\nos.kill(-1, signal.SIGKILL)\nsys.exit(42)")
ok(s == 200 and verdicts(d) == ["JE"] + HONEST[1:],
   "a check that kills every process it can: JE for its case, the others judged", brief(d))

# 4c. Signals the host does not name (real-time ones, by number): the host blocks every signal
#     it may, so the check's own verdict stands and the same host judges the later cases.
s, d, _ = run("import signal, time\nfor k in (2, 9, 15):\n    os.kill(os.getppid(), signal.SIGRTMIN + k)\n"
              "os.kill(os.getppid(), signal.SIGTERM)\ntime.sleep(0.2)\nsys.exit(42)")
ppids = {ln.split()[1] for x in d.get("cases") or [] for ln in (x.get("feedback") or "").splitlines()
         if ln.startswith("ppid ")}
ok(s == 200 and verdicts(d) == HONEST and ppids and "1" not in ppids,
   "a check that sends its parent real-time signals and SIGTERM: the host lives on", brief(d))

# 4d. What a check sees of signals is what `python3 -u main.py` sees: nothing blocked, SIGTERM
#     at its default, SIGINT raising KeyboardInterrupt, SIGPIPE ignored.
s, d, _ = run("import signal\nbad = [signal.pthread_sigmask(signal.SIG_BLOCK, []),\n"
              "       signal.getsignal(signal.SIGTERM) != signal.SIG_DFL,\n"
              "       signal.getsignal(signal.SIGINT) is not signal.default_int_handler,\n"
              "       signal.getsignal(signal.SIGPIPE) != signal.SIG_IGN]\n"
              "print('signals', bad)\nsys.exit(43 if any(bad) else 42)")
ok(s == 200 and verdicts(d) == HONEST, "a check's signal state is python3's own", brief(d)[:1])

# 5. CPU limit.
s, d, _ = run("while True:\n    pass", limits={"cpu_ms": 1000, "wall_ms": 5000})
ok(s == 200 and verdicts(d) == ["JE"] + HONEST[1:],
   "a check past its CPU limit: JE for its case only", brief(d))

# 6. Crashes: a segfault, an uncaught exception.
s, d, _ = run("ctypes.string_at(0)")
ok(s == 200 and verdicts(d) == ["JE"] + HONEST[1:] and "SIGSEGV" in str(d["cases"][0].get("error")),
   "a check that segfaults: JE (never AC)", brief(d))
s, d, _ = run("raise ValueError('boom')")
ok(s == 200 and verdicts(d) == ["JE"] + HONEST[1:] and "ValueError: boom" in
   str(d["cases"][0].get("feedback")), "a check that raises: JE with its traceback", brief(d))

# 7. Output and feedback caps: 20 MiB on stdout (past the 16 MiB file limit) and a huge
#    judgemessage.txt.
s, d, _ = run("sys.stdout.write('x' * (20 << 20))\nsys.exit(42)")
ok(s == 200 and verdicts(d) == ["JE"] + HONEST[1:]
   and len(d["cases"][0].get("feedback") or "") <= 3 * 4096,
   "a check past its output limit: JE, feedback capped", brief(d)[:1])
s, d, _ = run("open(sys.argv[3] + 'judgemessage.txt', 'w').write('m' * 100000)\nsys.exit(43)")
ok(s == 200 and verdicts(d) == ["WA"] + HONEST[1:]
   and len(d["cases"][0].get("feedback") or "") <= 3 * 4096,
   "a long judgemessage.txt is capped in feedback", [len(d["cases"][0].get("feedback") or "")])

# 7b. A memory bomb in one check (twice its memory limit).
s, d, _ = run("b = bytearray(128 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\nsys.exit(42)",
              limits={"memory_mb": 64})
ok(s == 200 and verdicts(d) == ["JE"] + HONEST[1:],
   "a check past its memory limit: JE for its case only", brief(d))

# 7c. Case after case (stop_on_first_failure: judge_case()'s host): a check that kills its parent
#     on case 0 is JE, and the first failure stops the rest.
r = c.post("/v1/evaluate", json={"language": "python", "code": SOL, "cases": CASES,
                                 "stop_on_first_failure": True,
                                 "checker": {"language": "python", "code": CHECK.replace(
                                     "ATTACK", "sys.exit(42)")}})
d = r.json()
ok(r.status_code == 200 and verdicts(d)[:6] == HONEST[:6]
   and [x.get("status") for x in d["cases"][6:]] == ["skipped", "skipped"],
   "stop_on_first_failure: cases judged one after another through a host", brief(d))

# 8. A C checker through the host, which leaves a child behind on case 0.
C_CHECK = r'''
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    long in, want, got;
    FILE *f = fopen(argv[1], "r"), *a = fopen(argv[2], "r");
    if (!f || !a || fscanf(f, "%ld", &in) != 1 || fscanf(a, "%ld", &want) != 1) return 1;
    if (in == 0 && fork() == 0) { setsid(); for (;;) { FILE *m = fopen("/work/mark", "w"); if (m) fclose(m); usleep(1000); } }
    if (access("/work/mark", F_OK) == 0 && in != 0) { printf("FOUND /work/mark"); return 43; }
    if (scanf("%ld", &got) != 1) return 43;
    printf("got %ld", got);
    return got == want ? 42 : 43;
}
'''
r = c.post("/v1/evaluate", json={"language": "python", "code": SOL, "cases": CASES,
                                 "checker": {"language": "c", "code": C_CHECK}})
d = r.json()
ok(r.status_code == 200 and verdicts(d) == HONEST and "FOUND" not in feedbacks(d),
   "a C checker through the host; its straggler reaches no later case", brief(d))

done()
