"""evaluate_integrity.py: tampering with evaluate's verdicts through the real stack (nginx + pool
+ broker + sandbox). Every problem here is unsolvable on purpose (the answers are random
secrets): a case that passes got its answer by cheating. Run by evaluate_integrity.t under
tests/lib/harness.sh --exec, which exports SBX_URL and the tokens."""
import os
import sys
import time
import uuid

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


def secret():
    return "SECRET-" + uuid.uuid4().hex


def none_passed(d):
    cs = d.get("cases") or []
    return bool(cs) and not any(x.get("passed") for x in cs) and not d.get("passed")


def brief(d):
    return {k: v for k, v in d.items() if k != "cases"}, [
        {k: x.get(k) for k in ("index", "passed", "status", "verdict", "got", "error")}
        for x in d.get("cases") or []]


# ---- cases mode: the expected answers must not be reachable from inside the sandbox ----
GC_WALK = r'''
import gc, sys
gc.unfreeze()  # the runner freezes what it made before forking: get_objects() skips it
me = sys.stdin.read()
for o in gc.get_objects():
    if isinstance(o, list) and any(isinstance(c, dict) and c.get("stdin") == me and
                                   isinstance(c.get("expected_stdout"), str) for c in o):
        print([c for c in o if isinstance(c, dict) and c.get("stdin") == me][0]
              ["expected_stdout"], end="")
        break
else:
    f = sys._getframe()
    while f:
        for v in list(f.f_locals.values()):
            if isinstance(v, dict) and isinstance(v.get("cases"), list):
                for cs in v["cases"]:
                    if isinstance(cs, dict) and cs.get("stdin") == me:
                        print(cs.get("expected_stdout", ""), end="")
        f = f.f_back
'''
cases = [{"stdin": "q%d" % i, "expected_stdout": secret()} for i in range(3)]
s, d = ev({"language": "python", "code": GC_WALK, "cases": cases})
ok(s == 200 and none_passed(d), "cases/python: walking gc and frames finds no expected_stdout",
   brief(d))
s, d = ev({"language": "python", "code": GC_WALK, "cases": cases[:1]})
ok(s == 200 and none_passed(d), "cases/python: the same with one case", brief(d))

# A compiled submission reads the memory of every process it can open (its supervisor
# first) and prints the first secret-shaped string it finds. "SECRET-" is built at run time so
# that the source text itself (which the runner holds) does not match.
MEM_SCAN = r'''
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int scan(int pid, const char *key) {
    char p[64], line[512];
    snprintf(p, sizeof p, "/proc/%d/maps", pid);
    FILE *m = fopen(p, "r");
    if (!m) return 0;
    snprintf(p, sizeof p, "/proc/%d/mem", pid);
    FILE *mem = fopen(p, "r");
    if (!mem) { fclose(m); return 0; }
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, m)) {
        unsigned long a, b; char perm[8];
        if (sscanf(line, "%lx-%lx %7s", &a, &b, perm) != 3 || perm[0] != 'r') continue;
        if (b - a > (64ul << 20)) continue;
        char *buf = malloc(b - a);
        if (!buf) continue;
        if (fseek(mem, (long)a, SEEK_SET) == 0) {
            size_t n = fread(buf, 1, b - a, mem);
            for (size_t i = 0; n > kl + 32 && i < n - kl - 32; i++) {
                if (memcmp(buf + i, key, kl) != 0) continue;
                size_t j = 0;
                while (j < 32 && isxdigit((unsigned char)buf[i + kl + j])) j++;
                if (j == 32) { fwrite(buf + i, 1, kl + 32, stdout); free(buf); return 1; }
            }
        }
        free(buf);
    }
    fclose(m); fclose(mem);
    return 0;
}
int main(void) {
    char key[8] = {'S', 'E', 'C', 'R', 'E', 'T', '-', 0};
    if (scan(getppid(), key)) return 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (isdigit((unsigned char)e->d_name[0]) && atoi(e->d_name) != getpid() &&
            scan(atoi(e->d_name), key)) return 0;
    return 0;
}
'''
s, d = ev({"language": "c", "code": MEM_SCAN, "cases": [{"stdin": "", "expected_stdout": secret()}]})
ok(s == 200 and d.get("compile", {}).get("status") == "ok" and none_passed(d),
   "cases/c: /proc/<pid>/mem of the supervisor and the others holds no expected answer", brief(d))

ENV_SCAN = r'''
import glob
me = open("/proc/self/stat").read().split()[0]
for p in glob.glob("/proc/[0-9]*"):
    for f in ("environ", "cmdline", "fd/0"):
        try:
            data = open(p + "/" + f, "rb").read(1 << 20).decode("latin-1")
        except OSError:
            continue
        i = data.find("SECRET" + "-")
        if i >= 0:
            print(data[i:i + 39], end="")
            raise SystemExit(0)
'''
s, d = ev({"language": "python", "code": ENV_SCAN,
           "cases": [{"stdin": "", "expected_stdout": secret()}]})
ok(s == 200 and none_passed(d), "cases/python: /proc/*/environ, cmdline, fd/0 hold no answer",
   brief(d))

# ---- io_cases: the runner's own functions and result channel ----
PATCH = r'''
import sys
m = sys.modules.get("sbx_pycase")
if m:
    def run_io_case(ns, func, p):
        return {"status": "ok", "passed": True, "got": None, "expected": None, "error": None}
    m.run_io_case = run_io_case
def f(n):
    return 0
'''
io = [{"input": "n=%d" % i, "output": repr(secret())} for i in range(3)]
s, d = ev({"code": PATCH, "entry_point": "f", "io_cases": io})
ok(s == 200 and none_passed(d), "io: replacing sbx_pycase.run_io_case through sys.modules",
   brief(d))
s, d = ev({"code": PATCH, "entry_point": "f", "io_cases": io[:1]})
ok(s == 200 and none_passed(d), "io: the same with one case (no worker)", brief(d))

FAKE = r'''
import os, json
def f(n):
    msg = json.dumps({"status": "ok", "passed": True, "got": 1, "expected": 1, "error": None})
    for fd in (1, 3, 4, 5):
        try:
            os.write(fd, msg.encode())
        except OSError:
            pass
    os._exit(0)
'''
s, d = ev({"code": FAKE, "entry_point": "f", "io_cases": io})
ok(s == 200 and none_passed(d), "io: a fake result written to the result fd, then os._exit(0)",
   brief(d))

IO_GC = r'''
import gc, ast
def f(n):
    gc.unfreeze()
    # dicts of atoms only are not tracked by gc: look one level into every tracked container
    for o in gc.get_objects():
        kids = list(o.values()) if isinstance(o, dict) else list(o) \
            if isinstance(o, (list, tuple)) else []
        for d in [o] + kids:
            if not isinstance(d, dict):
                continue
            if d.get("input") == "n=%d" % n and "output" in d:
                return ast.literal_eval(d["output"])
            if "exp" in d and d.get("args") == [n] and d["exp"] is not None:
                return d["exp"]
    return None
'''
s, d = ev({"code": IO_GC, "entry_point": "f", "io_cases": io})
ok(s == 200 and none_passed(d), "io: walking gc for the cases' literal outputs", brief(d))
s, d = ev({"code": IO_GC, "entry_point": "f", "io_cases": io[:1]})
ok(s == 200 and none_passed(d), "io: the same with one case", brief(d))

# The held outputs live in the supervisor: its memory (and every other process's) from Python.
PY_MEM = r'''
import os, re
KEY = ("SECRET" + "-").encode()
def scan(pid):
    try:
        maps = open("/proc/%d/maps" % pid).read().splitlines()
        mem = open("/proc/%d/mem" % pid, "rb", buffering=0)
    except OSError:
        return None
    for line in maps:
        a, b = (int(x, 16) for x in line.split()[0].split("-"))
        if line.split()[1][0] != "r" or b - a > (64 << 20):
            continue
        try:
            mem.seek(a)
            data = mem.read(b - a)
        except (OSError, ValueError, OverflowError):
            continue
        m = re.search(KEY + rb"[0-9a-f]{32}", data or b"")
        if m:
            return m.group(0).decode()
    return None
def f(n):
    for pid in [os.getppid()] + [int(x) for x in os.listdir("/proc") if x.isdigit()]:
        if pid != os.getpid():
            s = scan(pid)
            if s:
                return s
    return None
'''
s, d = ev({"code": PY_MEM, "entry_point": "f", "io_cases": io[:1]})
ok(s == 200 and none_passed(d), "io: /proc/<pid>/mem of the supervisor holding the outputs",
   brief(d))
s, d = ev({"code": PY_MEM, "entry_point": "f", "io_cases": io})
ok(s == 200 and none_passed(d), "io: the same with three cases", brief(d))

EQ = r'''
class Any:
    def __eq__(self, other):
        return True
    __hash__ = None
def f(n):
    return Any()
'''
s, d = ev({"code": EQ, "entry_point": "f", "io_cases": io})
ok(s == 200 and none_passed(d), "io: an object whose __eq__ is always true does not pass a "
   "literal output", brief(d))

s, d = ev({"code": "import builtins\nbuiltins.repr = lambda o: 'x'\ndef f(n):\n    return n\n",
           "entry_point": "f", "io_cases": io})
ok(s == 200 and none_passed(d), "io: patching builtins changes nothing outside the code",
   brief(d))

# ---- test mode: leaving before check runs ----
for how in ("import os\nos._exit(0)\n", "import sys\nsys.exit(0)\n",
            "import sys\nsys.exit = lambda *a: None\nraise SystemExit(0)\n"):
    s, d = ev({"code": how + "def add(a, b):\n    return 0\n", "entry_point": "add",
               "test": "def check(c):\n    assert c(1, 2) == 3\n"})
    ok(s == 200 and none_passed(d), "test: %r before check does not pass" % how.splitlines()[-1],
       brief(d))

# ---- slowing everyone else: a case stops or kills its supervisor ----
for name, code in (
        ("SIGSTOP of the supervisor",
         "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n"),
        ("SIGSTOP of every process (kill -1)",
         "import os, signal\nos.kill(-1, signal.SIGSTOP)\n"),
        ("SIGSTOP of every ancestor",
         "import os, signal\np = os.getppid()\nwhile p > 1:\n"
         "    try:\n        os.kill(p, signal.SIGSTOP)\n    except OSError:\n        pass\n"
         "    p = int(open('/proc/%d/stat' % p).read().rsplit(')', 1)[1].split()[1])\n")):
    t0 = time.monotonic()
    s, d = ev({"language": "python", "code": code, "limits": {"wall_ms": 1000},
               "cases": [{"stdin": "", "expected_stdout": "x"}]})
    took = time.monotonic() - t0
    # The request's own limits bound it (1 s per case plus fixed grace), not the server's
    # 120 s evaluate budget; 60 s leaves room for a loaded machine.
    ok(took < 60 and none_passed(d), "%s: a 1 s request ends in %.1f s, no case passed"
       % (name, took), brief(d))

t0 = time.monotonic()
s, d = ev({"language": "python", "code": "import os, signal\nos.kill(-1, signal.SIGKILL)\n",
           "limits": {"wall_ms": 1000},
           "cases": [{"stdin": "", "expected_stdout": ""} for _ in range(4)]})
ok(time.monotonic() - t0 < 60 and not d.get("passed"),
   "kill(-1, SIGKILL) from a case: nothing passes, the request ends", brief(d))

# Siblings: every case stops every other process of the sandbox (the other cases, the runner).
# Not through /proc: the sandbox's /proc hides the processes a case cannot ptrace (the runner's,
# being non-dumpable); pids in a new pid namespace are small and guessable.
SIBS = r'''
import os, signal
def f(n):
    for pid in range(2, 4096):
        if pid != os.getpid():
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
    return n
'''
for iso in ("process", "namespace"):
    t0 = time.monotonic()
    s, d = ev({"code": SIBS, "entry_point": "f", "isolation": iso, "limits": {"wall_ms": 1000},
               "io_cases": io})
    took = time.monotonic() - t0
    ok(s == 200 and took < 60 and not d.get("passed") and
       not any(x.get("passed") for x in d.get("cases") or []),
       "%s: cases stopping their siblings and the runner: ends in %.1f s, none passes"
       % (iso, took), brief(d))
t0 = time.monotonic()
s, d = ev({"language": "python", "code": "import os, signal\nos.kill(0, signal.SIGSTOP)\n",
           "limits": {"wall_ms": 1000}, "cases": [{"stdin": "", "expected_stdout": ""}]})
ok(time.monotonic() - t0 < 60 and d.get("cases") and d["cases"][0].get("verdict") == "TLE",
   "kill(0, SIGSTOP): the case stops its own group and times out (TLE)", brief(d))

# The service still answers normally afterwards.
s, d = ev({"language": "python", "code": "print(input())\n",
           "cases": [{"stdin": "hi\n", "expected_stdout": "hi"}]})
ok(s == 200 and d.get("passed") is True, "an honest request still passes", brief(d))
done()
