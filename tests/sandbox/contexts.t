#!/usr/bin/python3
"""contexts.t: contexts in the broker (sandbox.h "contexts", CONTEXTS.md): a private sbxd with
--contexts, driven through the client API by `sbx ctx`. Create, execute, delete; state across
cells; stdout and stderr apart and capped; a wall or CPU limit that interrupts with state kept; a
hang with SIGINT blocked that is killed (lost) and a fresh kernel after it; memory and fork bombs;
os._exit; a cell closing its stdout; two callers at once; the caps; idle TTL; delete during a
busy cell; a caller that goes away; nothing left after the broker stops. Runs the real kernel
(sandbox/kernel) when it is there, else the protocol fixture (tests/sandbox/ctx_fixture);
SBX_CTX_KERNEL=fixture forces the fixture."""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
from tap import ok, is_, diag, done, skip, skip_all  # noqa: E402

SBX = os.path.join(TOP, "build", "sbx")
SBXD = os.path.join(TOP, "build", "sbxd")
if os.geteuid() != 0:
    skip_all("needs root (namespaces, cgroups)")
if not (os.access(SBX, os.X_OK) and os.access(SBXD, os.X_OK)):
    skip_all("build/sbx or build/sbxd missing (make all)")

real = os.path.join(TOP, "sandbox", "kernel")
if os.environ.get("SBX_CTX_KERNEL") != "fixture" and os.path.exists(os.path.join(real, "sbx_kernel.py")):
    KERNEL = real
else:
    KERNEL = os.path.join(HERE, "ctx_fixture")
diag(f"kernel: {KERNEL}")

SLOTS, CONTEXTS = 1, 4
UID_BASE = 392000 + (os.getpid() % 64) * 16
CTX_UIDS = range(UID_BASE + SLOTS, UID_BASE + SLOTS + CONTEXTS)
CG = f"sbx-ctxtest-{os.getpid()}"
top = tempfile.mkdtemp(prefix="sbx-ctx-t.", dir="/var/tmp")
os.chmod(top, 0o755)
work = os.path.join(top, "work")
os.mkdir(work)
os.chown(work, 65534, 65534)
SOCK = os.path.join(top, "sock")
log = open(os.path.join(top, "log"), "w")
broker = None


def cleanup():
    if broker and broker.poll() is None:
        broker.kill()
        broker.wait()
    for u in CTX_UIDS:
        subprocess.run(["pkill", "-9", "-U", str(u)], capture_output=True)
    shutil.rmtree(top, ignore_errors=True)


def start(kernel=None):
    global broker
    for f in (SOCK, SOCK + "-health"):  # a killed broker leaves its sockets behind
        if os.path.exists(f):
            os.unlink(f)
    broker = subprocess.Popen(
        [SBXD, "--socket", SOCK, "--slots", str(SLOTS), "--client-uid", "0", "--files-uid", "65534",
         "--files-gid", "65534", "--uid-base", str(UID_BASE), "--cgroup-name", CG,
         "--contexts", str(CONTEXTS), "--contexts-memory-mb", "1024",
         "--bind-ro", f"{kernel or KERNEL}:/opt/sbx-kernel"], stderr=log)
    return wait_for(30, lambda: os.path.exists(SOCK + "-health"))


def wait_for(seconds, cond):
    end = time.time() + seconds
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def ctx(*args, timeout=120):
    p = subprocess.run([SBX, "ctx", "--broker", SOCK] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=timeout)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"rc": None, "raw": p.stdout, "stderr": p.stderr}


def ctx_bg(*args):
    return subprocess.Popen([SBX, "ctx", "--broker", SOCK] + [str(a) for a in args],
                            stdout=subprocess.PIPE, text=True)


def result(p, timeout=120):
    out, _ = p.communicate(timeout=timeout)
    try:
        return json.loads(out)
    except ValueError:
        return {"rc": None, "raw": out}


def req(code):
    return json.dumps({"op": "execute", "code": code})


def execute(cid, code, *opts, timeout=120):
    r = ctx("call", cid, *opts, req(code), timeout=timeout)
    r["_reply"] = json.loads(r["reply"]) if r.get("reply") else None
    return r


def main_text(r):
    rep = r.get("_reply") or {}
    for x in rep.get("results") or []:
        if x.get("is_main_result"):
            return x.get("text")
    return None


_n = 0


def new_id():
    global _n
    _n += 1
    return f"{os.getpid():08x}{_n:024x}"


def create(cid, owner="alice", *opts):
    return ctx("create", cid, "--owner", owner, "--workdir", work, *opts)


def uid_procs(uids):
    n = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if os.stat(f"/proc/{d}").st_uid in uids:
                    n += 1
            except OSError:
                pass
    return n


try:
    ok(start(), "sbxd starts with --contexts")

    # ---- create, execute, state, list, delete ----
    A = new_id()
    t0 = time.time()
    r = create(A, "alice", "--memory-mb", "256", "--processes", "32")
    is_(r.get("rc"), 0, "create answers 0 once the kernel is ready")
    diag(f"create took {(time.time() - t0) * 1000:.0f} ms")
    r = execute(A, 'x = 41\nprint("hi")\nx + 1')
    ok(r.get("rc") == 0 and r.get("status") == "ok" and r.get("stdout") == "hi\n" and not r.get("lost"),
       "a cell runs: status ok, its stdout", r)
    is_(main_text(r), "42", "the reply carries the last expression's value")
    for i in range(20):
        r = execute(A, "x += 1")
    r = execute(A, "x")
    is_(main_text(r), "61", "state is kept across 22 cells")
    is_((r.get("_reply") or {}).get("execution_count"), 22, "execution_count counts the cells")
    r = ctx("list")
    mine = [c for c in r.get("contexts", []) if c["id"] == A]
    diag(f"an idle context holds {mine[0]['memory_kb'] if mine else '?'} KiB (anonymous memory)")
    ok(len(mine) == 1 and mine[0]["owner"] == "alice" and mine[0]["language"] == "python"
       and mine[0]["execution_count"] == 22 and not mine[0]["busy"] and mine[0]["memory_kb"] > 0,
       "list shows it: owner, language, execution count, idle, memory", r)
    r = ctx("list", "--owner", "bob")
    is_(r.get("contexts"), [], "list by another owner shows none of alice's")

    # ---- stdout and stderr apart, capped ----
    r = execute(A, 'import sys\nprint("o")\nprint("e", file=sys.stderr)')
    ok(r.get("stdout") == "o\n" and r.get("stderr") == "e\n", "stdout and stderr come apart", r)
    r = execute(A, 'print("a" * 5000)', "--output-bytes", 1000)
    ok(len(r.get("stdout", "")) == 1000 and r.get("stdout_truncated") and r.get("status") == "ok"
       and not r.get("lost"), "output past output_bytes is cut and flagged, the cell is fine",
       {k: r.get(k) for k in ("status", "lost", "stdout_truncated")})
    r = execute(A, 'import sys\nsys.stdout.write("b" * 3000000)\nsys.stdout.flush()', "--output-bytes", 1000,
                "--output-hard-bytes", 100000)
    ok(r.get("status") == "output_limit" and r.get("lost"), "past output_hard_bytes: output_limit, lost",
       {k: r.get(k) for k in ("status", "lost", "message")})
    r = execute(A, "x")
    ok(r.get("status") == "error" and "NameError" in json.dumps(r.get("_reply")),
       "after a loss the next cell runs on a fresh kernel (x is gone)", r)

    # ---- limits: interrupt keeps state; a hang that ignores SIGINT is killed ----
    execute(A, "y = 7")
    r = execute(A, "while True: pass", "--wall-ms", 1000)
    ok(r.get("status") == "timeout" and r.get("limit") == "wall" and not r.get("lost"),
       "while True: pass past wall_ms: timeout (wall), state kept", r)
    ok("KeyboardInterrupt" in json.dumps(r.get("_reply")), "the cell saw KeyboardInterrupt")
    r = execute(A, "while True: pass", "--cpu-ms", 500, "--wall-ms", 20000)
    ok(r.get("status") == "timeout" and r.get("limit") == "cpu" and not r.get("lost")
       and r.get("cpu_ms", 0) >= 500, "a CPU spin past cpu_ms: timeout (cpu), state kept, CPU counted",
       {k: r.get(k) for k in ("status", "limit", "lost", "cpu_ms", "wall_ms")})
    is_(main_text(execute(A, "y")), "7", "state survived both interrupts")
    t0 = time.time()
    r = execute(A, "import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])\n"
                   "time.sleep(100)", "--wall-ms", 1000)
    took = time.time() - t0
    ok(r.get("status") == "timeout" and r.get("lost"),
       "SIGINT blocked, sleeping: killed after the grace, timeout and lost", r)
    ok(took < 30, f"and promptly (took {took:.1f} s: wall 1 s + 2 s grace + a fresh kernel)")
    r = execute(A, "y")
    ok(r.get("status") == "error" and r.get("rc") == 0, "the next call runs on a fresh kernel", r)

    # ---- memory and fork bombs, os._exit, closing stdout ----
    r = execute(A, "b = b'x' * (400 << 20)", "--wall-ms", 30000, timeout=120)
    ok(r.get("status") == "memory_limit" and r.get("lost"), "a memory bomb: memory_limit, lost", r)
    r = execute(A, "1 + 1")
    is_(main_text(r), "2", "the context works after the memory bomb")
    r = execute(A, "import os, time\nn = 0\nfor i in range(200):\n    try:\n        pid = os.fork()\n"
                   "    except OSError as e:\n        print('fork failed', e.errno)\n        break\n"
                   "    if pid == 0:\n        time.sleep(60)\n        os._exit(0)\n    n += 1\nn",
                "--wall-ms", 20000)
    ok("fork failed" in r.get("stdout", "") and r.get("status") == "ok"
       and int(main_text(r) or 999) < 40, "a fork bomb stops at the context's process limit", r)
    is_(ctx("restart", A).get("rc"), 0, "restart answers 0")
    ok(wait_for(10, lambda: uid_procs(CTX_UIDS) <= 3),
       "restart leaves none of the bomb's processes (only a fresh kernel)", uid_procs(CTX_UIDS))
    r = execute(A, "n")
    ok(r.get("status") == "error" and not r.get("lost"), "restart: a fresh interpreter, state gone", r)
    r = execute(A, "import os\nos._exit(3)")
    ok(r.get("lost") and "3" in r.get("message", ""), "os._exit: lost, its exit status said", r)
    r = execute(A, "1 + 1")
    ok(main_text(r) == "2" and (r.get("_reply") or {}).get("execution_count") == 1,
       "the next call works on a fresh kernel (execution_count 1)", r)
    r = execute(A, "import os\nos.close(1)\nos.close(2)")
    ok(r.get("rc") == 0 and not r.get("lost"), "a cell that closes its stdout and stderr still ends", r)
    r = execute(A, 'print("after")')
    is_(r.get("stdout"), "after\n", "and the next cell's output comes back")

    # ---- isolation ----
    r = execute(A, "import os\n(os.getuid(), sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))")
    is_(main_text(r), "(1000, [2])", "uid 1000 inside, its own pid namespace: the kernel alone (pid 2)")
    r = execute(A, "open('/proc/self/oom_score_adj').read().strip()")
    adj = set()
    for p in (p for p in os.listdir("/proc") if p.isdigit()):
        try:  # the broker's children that run as root: its slot and the holders
            if open(f"/proc/{p}/stat").read().split()[3] == str(broker.pid):
                adj.add(open(f"/proc/{p}/oom_score_adj").read().strip())
        except (OSError, IndexError):
            pass
    is_(main_text(r), "'0'", "the OOM killer may pick the kernel (oom_score_adj 0)")
    can_lower = subprocess.run(["sh", "-c", "echo -1 > /proc/self/oom_score_adj"],
                               capture_output=True).returncode == 0
    if can_lower:
        ok("-1000" in adj, "never its holder (-1000)", adj)
    else:
        skip("this host refuses to lower oom_score_adj (no CAP_SYS_RESOURCE)",
             "never its holder (-1000)")
    r = execute(A, "import os\ntry:\n    open('/opt/sbx-kernel/x', 'w')\nexcept OSError as e:\n    print(e.errno)")
    is_(r.get("stdout"), "30\n", "the kernel's directory is read-only (EROFS)")
    holder_uids = set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                u = os.stat(f"/proc/{d}").st_uid
                if u in CTX_UIDS:
                    holder_uids.add(u)
            except OSError:
                pass
    ok(holder_uids and all(u >= UID_BASE + SLOTS for u in holder_uids),
       "the context runs as a host uid of its own, after the slots'", holder_uids)

    # ---- two callers ----
    slow = ctx_bg("call", A, req("import time\ntime.sleep(2)\n'slow'"))
    ok(wait_for(10, lambda: any(c["busy"] for c in ctx("list").get("contexts", []) if c["id"] == A)),
       "list shows the context busy during a cell")
    r = ctx("call", A, req("1"))
    is_(r.get("error"), "EBUSY", "a second caller with wait_ms 0 gets EBUSY")
    r2 = execute(A, "'second'", "--wait-ms", 30000)
    r1 = result(slow)
    ok(main_text(r2) == "'second'" and r1.get("status") == "ok",
       "a caller that may wait runs after the first, never interleaved", (r1, r2))

    # ---- a caller that goes away; the interrupt request ----
    execute(A, "z = 5")
    r = ctx("call", A, "--cancel-after-ms", 500, "--wall-ms", 60000, req("while True: pass"))
    is_(r.get("error"), "ECANCELED", "the caller gives up (its cancel descriptor)")
    ok(wait_for(10, lambda: not any(c["busy"] for c in ctx("list").get("contexts", []) if c["id"] == A)),
       "its cell is interrupted: the context is idle again")
    is_(main_text(execute(A, "z")), "5", "and its state is kept")
    spin = ctx_bg("call", A, "--wall-ms", 60000, req("while True: pass"))
    wait_for(10, lambda: any(c["busy"] for c in ctx("list").get("contexts", []) if c["id"] == A))
    is_(ctx("interrupt", A).get("rc"), 0, "interrupt answers 0")
    r = result(spin)
    ok(r.get("status") == "error" and not r.get("lost") and "KeyboardInterrupt" in (r.get("reply") or ""),
       "the interrupted cell ends with KeyboardInterrupt, state kept", r)

    # ---- delete during a busy cell ----
    B = new_id()
    is_(create(B, "bob").get("rc"), 0, "a second context (bob)")
    busy = ctx_bg("call", B, req("import time\ntime.sleep(60)"))
    wait_for(10, lambda: any(c["busy"] for c in ctx("list").get("contexts", []) if c["id"] == B))
    t0 = time.time()
    is_(ctx("delete", B).get("rc"), 0, "delete during a busy cell answers 0")
    r = result(busy)
    ok(r.get("lost") and "deleted" in r.get("message", "") and time.time() - t0 < 20,
       "the busy caller is answered at once: lost, context deleted", r)
    is_(ctx("call", B, req("1")).get("error"), "ENOENT", "a deleted context is ENOENT")
    ok(not any(c["id"] == B for c in ctx("list").get("contexts", [])), "and is not listed")
    for i in range(3):  # deleted and made again at once, while its old holder may still exit
        r1 = ctx("delete", B) if i else {"rc": 0}
        r2 = create(B, "bob")
        if r2.get("rc") != 0:
            break
    ok(r2.get("rc") == 0, "a deleted id can be created again at once, repeatedly", (r1, r2))
    ctx("delete", B)

    # ---- caps ----
    C = new_id()
    is_(create(C, "alice", "--max-per-owner", 2).get("rc"), 0, "alice's second context")
    is_(create(new_id(), "alice", "--max-per-owner", 2).get("error"), "EDQUOT",
        "her third, over max_per_owner 2: EDQUOT")
    D, E = new_id(), new_id()
    is_(create(D, "carol", "--memory-mb", 1000).get("rc"), 0, "a third context (carol)")
    r = execute(D, "b = b'x' * (960 << 20)\nlen(b) >> 20", "--wall-ms", 60000, "--cpu-ms", 60000)
    is_(main_text(r), "960", "it holds 960 MiB of the 1024 MiB budget")
    is_(create(E, "dave", "--memory-mb", 64).get("error"), "EAGAIN",
        "while it does, the contexts' memory budget is full: EAGAIN")
    execute(D, "del b")
    is_(create(E, "dave", "--memory-mb", 64).get("rc"), 0, "once it let go, a fourth fits")
    is_(create(new_id(), "erin", "--memory-mb", 16).get("error"), "EAGAIN",
        "a fifth, over --contexts 4: EAGAIN")
    is_(create(C, "alice").get("error"), "EEXIST", "an id in use: EEXIST")
    # Two contexts at once share nothing (SANDBOX.md checklist 26, for contexts).
    execute(C, "import os\nopen('/tmp/secret', 'w').write('c')\nopen('/dev/shm/s', 'w').write('c')\n"
               "import time\nkeep = os.getpid()")
    r = execute(D, "import os\n(os.path.exists('/tmp/secret'), os.path.exists('/dev/shm/s'), "
                   "sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))")
    is_(main_text(r), "(False, False, [2])",
        "another context sees none of its /tmp, /dev/shm or processes")
    r = execute(D, "import os, signal\nfor pid in range(1, 64):\n    try:\n"
                   "        os.kill(pid, 0)\n        print(pid)\n    except OSError:\n        pass")
    is_(r.get("stdout"), "1\n2\n", "nor can it signal anything beyond its own init and kernel")
    for x in (C, D, E):
        ctx("delete", x)

    # ---- idle TTL ----
    F = new_id()
    is_(create(F, "alice", "--idle-ttl-s", 1).get("rc"), 0, "a context with idle_ttl_s 1")
    execute(F, "1")
    ok(wait_for(20, lambda: not any(c["id"] == F for c in ctx("list").get("contexts", []))),
       "it ends after being idle for its TTL")
    is_(ctx("call", F, req("1")).get("error"), "ENOENT", "a call to it then is ENOENT")
    is_(create(F, "alice").get("rc"), 0, "and the caller can create it again at once")
    ctx("delete", F)

    # ---- bash (the real kernel only: the fixture speaks Python) ----
    if KERNEL == real:
        G = new_id()
        is_(create(G, "alice", "--language", "bash").get("rc"), 0, "a bash context")
        execute(G, "cd /tmp; X=5; f() { echo fn; }")
        r = execute(G, "pwd; echo $X; f")
        is_(r.get("stdout"), "/tmp\n5\nfn\n", "bash: cwd, variables and functions persist")
        r = execute(G, "sleep 100", "--wall-ms", 1000)
        ok(r.get("status") == "timeout" and not r.get("lost"), "bash: a sleep past wall_ms is "
           "interrupted, the shell kept", r)
        is_(execute(G, "echo $X").get("stdout"), "5\n", "bash: its variables survived")
        r = execute(G, "exit 3")
        ok(r.get("lost"), "bash: exit in a cell ends the shell: lost", r)
        is_(execute(G, "echo ${X:-gone}").get("stdout"), "gone\n", "bash: a fresh shell after it")
        ctx("delete", G)
    else:
        diag("bash contexts not tested: the fixture kernel speaks Python only")

    # ---- speed: 1+1 through the client API ----
    r = ctx("bench", A, "--count", 200)
    if r.get("rc") == 0:
        bare = []
        for i in range(20):
            t0 = time.time()
            subprocess.run(["/usr/bin/python3", "-c", "print(1)"], capture_output=True)
            bare.append((time.time() - t0) * 1e6)
        bare.sort()
        diag(f"1+1 through the client API: p50 {r['p50_us']} us, p90 {r['p90_us']} us, "
             f"min {r['min_us']} us; bare python3 -c 'print(1)' p50 {bare[10]:.0f} us "
             f"(ratio {r['p50_us'] / bare[10]:.2f})")
    ok(r.get("rc") == 0, "200 calls of 1+1 in a row all succeed", r)

    # ---- stop: nothing left ----
    busy = ctx_bg("call", A, req("import time\ntime.sleep(60)"))
    wait_for(10, lambda: any(c["busy"] for c in ctx("list").get("contexts", []) if c["id"] == A))
    broker.send_signal(signal.SIGTERM)
    try:
        broker.wait(timeout=30)
        stopped = True
    except subprocess.TimeoutExpired:
        stopped = False
    ok(stopped, "sbxd stops on SIGTERM while a cell is busy")
    r = result(busy)
    ok(r.get("rc") != 0 or r.get("lost"), "the busy caller is answered (context gone)", r)
    ok(wait_for(10, lambda: uid_procs(CTX_UIDS) == 0), "no process of a context uid is left",
       uid_procs(CTX_UIDS))
    left = [p for p in glob.glob(f"/sys/fs/cgroup/**/{CG}-ctx*", recursive=True)]
    ok(not left, "no context cgroup is left", left)
    mounts = open("/proc/self/mountinfo").read()
    ok("sbx-kernel" not in mounts and top not in mounts, "no mount of a context is visible on the host")

    # ---- a broker killed outright: its holders follow it; a new broker starts clean ----
    ok(start(), "sbxd starts again")
    H = new_id()
    is_(create(H, "alice").get("rc"), 0, "a context on the new broker")
    busy = ctx_bg("call", H, req("import time\ntime.sleep(60)"))
    wait_for(10, lambda: any(c["busy"] for c in ctx("list").get("contexts", []) if c["id"] == H))
    broker.kill()
    broker.wait()
    result(busy)
    ok(wait_for(20, lambda: uid_procs(CTX_UIDS) == 0),
       "SIGKILL to sbxd: its holders and their sandboxes die with it", uid_procs(CTX_UIDS))
    ok(start(), "sbxd starts after a broker was killed (stale context groups removed)")
    is_(create(H, "alice").get("rc"), 0, "the same id can be created again on it")
    is_(main_text(execute(H, "6 * 7")), "42", "and runs cells")
    broker.send_signal(signal.SIGTERM)
    broker.wait(timeout=60)
    left = [p for p in glob.glob(f"/sys/fs/cgroup/**/{CG}-ctx*", recursive=True)]
    ok(not left and uid_procs(CTX_UIDS) == 0, "and after its stop nothing is left", left)

    # ---- fail closed: a kernel that cannot start is an error, with the reason ----
    empty = os.path.join(top, "nokernel")
    os.mkdir(empty)
    ok(start(kernel=empty), "sbxd starts with no kernel in /opt/sbx-kernel")
    r = create(new_id(), "alice")
    ok(r.get("error") == "EIO" and "sbx_kernel.py" in r.get("message", ""),
       "create fails (internal) and says why", r)
    ok(wait_for(10, lambda: ctx("list").get("contexts") == [] and uid_procs(CTX_UIDS) == 0),
       "nothing of the failed context is left")
    broker.send_signal(signal.SIGTERM)
    broker.wait(timeout=60)
finally:
    cleanup()
done()
