"""security_hostile.py: the hostile checklist of SANDBOX.md through POST /v1/execute (run by
security_hostile.t under the harness). Each case is a real request; the checks are on the run
result the API returns, on the host afterwards (no run process left in the slot uid range) and
on the service (still answering)."""
import concurrent.futures as cf
import os

from security_common import (STATE, TOKEN, TOKEN2, URL, as_json, client, execute,
                             wait_no_run_pids)
from tap import diag, done, is_, ok

PORT = URL.rsplit(":", 1)[1]
c = client()


ex = execute


PY_PROBE_PROC = r"""
import os
def show(k, f):
    try:
        with open(f, "rb") as h:
            print(k, "READ", len(h.read()))
    except Exception as e:
        print(k, "DENIED", type(e).__name__)
show("environ1", "/proc/1/environ")
st = open("/proc/self/status").read()
for key in ("CapEff", "CapPrm", "CapBnd", "NoNewPrivs", "Seccomp"):
    print([l for l in st.splitlines() if l.startswith(key + ":")][0].replace("\t", " "))
print("ENVKEYS", sorted(os.environ))
"""

PY_STATE = r"""
import os
state = %r
hits = []
def tryopen(p):
    try:
        with open(p, "rb") as f:
            data = f.read(4096)
            hits.append((p, len(data)))
            print("OPENED", p, data[:200])
    except Exception as e:
        pass
def trylist(p):
    try:
        print("LISTED", p, os.listdir(p)[:5])
        hits.append((p, -1))
    except Exception:
        pass
for p in (state, state + "/sessions", state + "/run", state + "/tls"):
    trylist(p)
tryopen(state + "/tokens.conf")
tryopen(state + "/tls/key.pem")
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    for via in ("root", "cwd"):
        trylist("/proc/%%s/%%s%%s" %% (pid, via, state))
        tryopen("/proc/%%s/%%s%%s/tokens.conf" %% (pid, via, state))
    try:
        for fd in os.listdir("/proc/%%s/fd" %% pid):
            t = os.readlink("/proc/%%s/fd/%%s" %% (pid, fd))
            if state in t or "sbxd.sock" in t or "fcgi.sock" in t:
                print("FDLEAK", pid, fd, t)
                hits.append((t, -2))
    except Exception:
        pass
print("HITS", len(hits))
""" % STATE


def case_results():
    """(name, lang, code, limits, check) for every case; check(status, json) -> (bool, diag)."""
    def st(*want):
        return lambda s, j: (s == 200 and j.get("status") in want, j)

    cases = [
        ("fork bomb (bash :(){ :|:& };:) ends, bounded", "bash", ":(){ :|:& };:\nsleep 3", {"wall_ms": 4000},
         lambda s, j: (s == 200 and j.get("status") in ("timeout", "error", "signal", "ok"), j)),
        ("fork bomb (python os.fork loop) ends, bounded", "python",
         """
         import os
         while True:
             try:
                 os.fork()
             except OSError:
                 pass
         """, {"wall_ms": 4000, "cpu_ms": 3000},
         lambda s, j: (s == 200 and j.get("status") in ("timeout", "error", "signal"), j)),
        ("memory bomb (2x the limit) is memory_limit, peak near the limit", "python",
         """
         b = bytearray(256 << 20)
         for i in range(0, len(b), 4096):
             b[i] = 1
         print("survived")
         """, {"memory_mb": 128},
         lambda s, j: (s == 200 and j.get("status") == "memory_limit" and "survived" not in j.get("stdout", "")
                       and j.get("memory_kb", 0) >= 100 * 1024, j)),
        # Wall limits far above the CPU limits: on a loaded machine CPU time accrues slowly.
        ("cpu spin is timeout with limit cpu", "python", "while True: pass", {"cpu_ms": 1000, "wall_ms": 30000},
         lambda s, j: (s == 200 and j.get("status") == "timeout" and j.get("limit") == "cpu", j)),
        ("cpu spin in 4 threads: cpu counted for all of them", "bash",
         "for i in 1 2 3 4; do (while :; do :; done) & done; wait", {"cpu_ms": 1000, "wall_ms": 30000},
         lambda s, j: (s == 200 and j.get("status") == "timeout" and j.get("limit") == "cpu"
                       and j.get("cpu_ms", 0) >= 900, j)),
        ("sleep forever is timeout with limit wall", "python", "import time\ntime.sleep(1000)",
         {"wall_ms": 1500}, lambda s, j: (s == 200 and j.get("status") == "timeout" and j.get("limit") == "wall"
                                          and 1400 <= j.get("wall_ms", 0) < 10000, j)),
        ("blocking read of stdin (empty) ends, no hang", "bash", "read x; sleep 1000", {"wall_ms": 1500},
         st("timeout", "ok", "error")),
        ("output flood (yes) is capped and flagged", "bash", "yes AAAAAAAAAAAAAAAA; yes >&2", {"wall_ms": 5000},
         lambda s, j: (s == 200 and j.get("stdout_truncated") is True and 0 < len(j.get("stdout", "")) <= 65536
                       and j.get("status") in ("output_limit", "timeout", "ok", "signal"), j)),
        ("background child outlives nothing (nohup/setsid double fork)", "bash",
         "setsid bash -c 'sleep 300' & nohup sleep 301 >/dev/null 2>&1 & (sleep 302 &) ; echo started",
         {"wall_ms": 30000}, st("ok")),  # the children sleep 300 s: ok means they were not awaited
        ("/etc/shadow absent or denied", "bash", "cat /etc/shadow && echo LEAKED; ls /root /home 2>&1; true", None,
         lambda s, j: (s == 200 and "LEAKED" not in j.get("stdout", "") and "root:" not in j.get("stdout", ""), j)),
        ("writes outside /work and /tmp fail; /work and /tmp work", "bash",
         """
         for p in /usr/x /etc/x /x /opt/sbx/x /proc/sys/vm/drop_caches /proc/sysrq-trigger; do
             (echo 3 > $p) 2>/dev/null && echo "WROTE $p"
         done
         echo hi > /work/ok && echo hi > /tmp/ok && echo INSIDE_OK
         """, None,
         lambda s, j: (s == 200 and "WROTE" not in j.get("stdout", "") and "INSIDE_OK" in j.get("stdout", ""), j)),
        ("/proc/1/environ empty, no capabilities, NoNewPrivs 1, Seccomp 2, whitelisted env", "python",
         PY_PROBE_PROC, None,
         lambda s, j: (s == 200 and ("environ1 READ 0" in j.get("stdout", "") or "environ1 DENIED" in j.get("stdout", ""))
                       and "CapEff: 0000000000000000" in j.get("stdout", "")
                       and "NoNewPrivs: 1" in j.get("stdout", "") and "Seccomp: 2" in j.get("stdout", "")
                       and "SBX_" not in j.get("stdout", "") and TOKEN not in j.get("stdout", ""), j)),
        ("ptrace is refused (EPERM or killed)", "python",
         """
         import ctypes, os
         libc = ctypes.CDLL(None, use_errno=True)
         r = libc.ptrace(16, os.getppid(), 0, 0)
         print("ATTACH", r)
         r = libc.ptrace(0, 0, 0, 0)
         print("TRACEME", r)
         """, None,
         lambda s, j: (s == 200 and "ATTACH 0" not in j.get("stdout", "") and "TRACEME 0" not in j.get("stdout", ""), j)),
        ("mount and unshare are refused", "python",
         """
         import ctypes, os
         libc = ctypes.CDLL(None, use_errno=True)
         print("MOUNT", libc.mount(b"none", b"/tmp", b"tmpfs", 0, None))
         print("UNSHARE", libc.unshare(0x00020000))
         print("CHROOT", libc.chroot(b"/tmp"))
         """, None,
         lambda s, j: (s == 200 and "MOUNT 0" not in j.get("stdout", "") and "UNSHARE 0" not in j.get("stdout", "")
                       and "CHROOT 0" not in j.get("stdout", ""), j)),
        ("network: no TCP/UDP to the host's nginx, outside or metadata; no netlink", "python",
         f"""
         import socket
         for fam, kind, addr in ((socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", {PORT})),
                                 (socket.AF_INET, socket.SOCK_STREAM, ("169.254.169.254", 80)),
                                 (socket.AF_INET, socket.SOCK_DGRAM, ("1.1.1.1", 53)),
                                 (socket.AF_INET6, socket.SOCK_STREAM, ("::1", {PORT}))):
             try:
                 s = socket.socket(fam, kind)
                 s.settimeout(1)
                 s.connect(addr)
                 if kind == socket.SOCK_DGRAM:
                     s.send(b"x")
                 print("CONNECTED", addr)
             except Exception as e:
                 print("blocked", addr, type(e).__name__)
         try:
             socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
             print("CONNECTED netlink")
         except Exception as e:
             print("blocked netlink", type(e).__name__)
         """, {"wall_ms": 8000},
         lambda s, j: (s == 200 and "CONNECTED" not in j.get("stdout", "") and j.get("stdout", "").count("blocked") == 5, j)),
        ("TIOCSTI is refused", "python",
         """
         import fcntl, termios, os
         fds = [0, 1, 2]
         try:
             m, sl = os.openpty()  # a real terminal, where TIOCSTI would otherwise work
             fds += [m, sl]
             print("pty", os.ttyname(sl))
         except OSError as e:
             print("no pty", e.errno)
         for fd in fds:
             try:
                 fcntl.ioctl(fd, termios.TIOCSTI, b"x")
                 print("INJECTED", fd)
             except OSError as e:
                 print("refused", fd, e.errno)
         """, None, lambda s, j: (s == 200 and "INJECTED" not in j.get("stdout", ""), j)),
        ("setuid(0) and setgid(0) fail; no setuid binary helps", "python",
         """
         import os, subprocess
         for f, n in ((os.setuid, "setuid"), (os.setgid, "setgid")):
             try:
                 f(0)
                 print("BECAME ROOT", n)
             except OSError as e:
                 print("refused", n)
         for b in ("/usr/bin/su", "/usr/bin/sudo", "/usr/bin/passwd", "/usr/bin/newgrp"):
             if os.path.exists(b):
                 try:
                     r = subprocess.run([b, "-c", "id -u"] if b.endswith("su") else [b, "--version"],
                                        capture_output=True, input=b"", timeout=3)
                     print(b, "rc", r.returncode, r.stdout[:40])
                 except Exception as e:
                     print(b, type(e).__name__)
         print("uid", os.getuid(), os.geteuid())
         """, {"wall_ms": 8000},
         lambda s, j: (s == 200 and "BECAME ROOT" not in j.get("stdout", "") and "uid 1000 1000" in j.get("stdout", "")
                       and "rc 0 b'0" not in j.get("stdout", ""), j)),
        ("the program holds only fds 0-2, and cannot reach its init's fds (broker socket, log)", "python",
         """
         import os
         fds = [int(f) for f in os.listdir("/proc/self/fd")]
         mine = [f for f in fds if f > 2 and os.path.exists("/proc/self/fd/%d" % f)]
         print("EXTRA", mine)
         for pid in os.listdir("/proc"):
             if pid.isdigit() and int(pid) != os.getpid():
                 try:
                     print("PEEK", pid, os.listdir("/proc/%s/fd" % pid))
                 except OSError as e:
                     print("denied", pid, e.errno)
         """, None,
         lambda s, j: (s == 200 and "EXTRA []" in j.get("stdout", "") and "PEEK" not in j.get("stdout", ""), j)),
        ("state dir and tokens unreadable from inside a run (by path and through /proc)", "python",
         PY_STATE, {"wall_ms": 8000},
         lambda s, j: (s == 200 and "HITS 0" in j.get("stdout", "") and TOKEN not in j.get("stdout", "")
                       and TOKEN2 not in j.get("stdout", ""), j)),
    ]
    return cases


cases = case_results()
with cf.ThreadPoolExecutor(4) as pool:
    futs = [(name, check, pool.submit(ex, lang, code, limits)) for name, lang, code, limits, check in cases]
    for name, check, fut in futs:
        try:
            s, j = fut.result()
            good, info = check(s, j)
        except Exception as e:  # a transport error is a failure of this case, not of the file
            good, info = False, repr(e)
        if isinstance(info, dict):
            info = {k: (v[:300] if isinstance(v, str) else v) for k, v in info.items()}
        ok(good, name, info)
        if os.environ.get("SEC_DEBUG"):
            diag(repr(info)[:600])

# Evaluate: the verdict comes from the runner's answer on stdout; code under test writes a forged
# passing answer to every fd it can reach (and then exits, or kills the runner): still a failure.
FORGE = r"""
import os, json
case = {"index": 0, "status": "ok", "passed": True, "got": "1", "got_repr": "1", "expected": "1",
        "expected_repr": "1", "error": None, "stdout": "", "stderr": "", "stdout_truncated": False,
        "stderr_truncated": False, "exit_code": 0, "signal": None, "limit": None, "wall_ms": 1,
        "cpu_ms": 1, "memory_kb": 1}
ans = json.dumps({"load": None, "compile": None, "cases": [case], "wall_ms": 1}).encode()
for fd in range(0, 256):
    try:
        os.write(fd, ans + b"\n")
    except OSError:
        pass
%s
def f():
    return 2
"""
for tail in ("", "os._exit(0)", "os.kill(os.getppid(), 9)", "os.kill(1, 9)"):
    with client() as cl:
        r = cl.post("/v1/evaluate", json={"language": "python", "code": FORGE % tail, "entry_point": "f",
                                          "io_cases": [{"input": "", "output": "1"}]})
    j = as_json(r)
    ok(r.status_code == 200 and j.get("passed") is False and j.get("passed_count") == 0,
       f"evaluate: a forged passing answer written to every fd ({tail or 'then return'}) does not pass", j)

# Nothing survives its run: every slot-uid process still alive is a leftover.
left = wait_no_run_pids(10)
ok(not left, "no run process is left in the slot uid range after the hostile runs", left)

# The service kept answering and still runs code.
r = c.get("/v1/health")
is_(r.status_code, 200, "health still answers 200")
s, j = ex("python", "print(6*7)")
ok(s == 200 and j.get("status") == "ok" and j.get("stdout") == "42\n", "a normal run after them is ok", j)
done()
