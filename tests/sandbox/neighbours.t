#!/usr/bin/python3
"""neighbours.t: the terminal, the output channel and other runs (SANDBOX.md checklist 23-26, and
concurrency). TIOCSTI/TIOCLINUX are refused even with the high 32 bits of the request set and
even when the CLI's own stdin is a terminal; hostile bytes in output come back as data; the
environment holds only what was set; concurrent and later runs share no channel."""
import fcntl
import json
import os
import secrets
import sys
import termios
import time
import tty

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbxtest as S  # noqa: E402
import probes  # noqa: E402
from tap import ok, is_, diag  # noqa: E402

S.start(probes={"sysprobe": probes.SYSPROBE, "ipc": probes.IPC})

# ---------------------------------------------------------------- 23: TIOCSTI / TIOCLINUX
STI = ["tiocsti_fd0", "tiocsti_fd1", "tiocsti_fd2", "tiocsti_fd0_high", "tiocsti_devtty",
       "tiocsti_pty", "tiocsti_pty_high", "tiocsti_pty_high2", "tioclinux_fd1", "tioclinux_pty",
       "tioclinux_pty_high"]
# The CLI runs with a pty as its stdin and controlling terminal, as when someone types the command.
master, slave = os.openpty()
tty.setraw(slave)


def make_ctty():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


r = S.run([S.probe("sysprobe")] + STI, host_stdin=slave, preexec_fn=make_ctty)
got = {}
for line in (r.get("stdout") or "").splitlines():
    parts = line.split()
    if len(parts) == 2:
        got[parts[0]] = parts[1]
diag("tty: " + " ".join(f"{n}={got.get(n)}" for n in STI))
ok(S.happened(r) and set(got) == set(STI) and all(v != "ok" for v in got.values()),
   "TIOCSTI/TIOCLINUX on fds 0-2, /dev/tty and a pty of its own (also with high bits set in the "
   "request): refused", S.show(r))
injected = b""
for fd in (master, slave):
    os.set_blocking(fd, False)
    try:
        injected += os.read(fd, 1024)
    except BlockingIOError:
        pass
is_(injected, b"", "nothing was injected into the CLI's terminal")
TTY_PY = r"""
import fcntl, json, os, termios
res = {'isatty': [os.isatty(fd) for fd in (0, 1, 2)]}
for fd in (0, 1, 2):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b'x')
        res[fd] = 'ok'
    except OSError as e:
        res[fd] = e.strerror
print(json.dumps(res))
"""
r = S.py(TTY_PY, host_stdin=slave, preexec_fn=make_ctty)
j = S.last_json(r) or {}
ok(j.get("isatty") == [False, False, False] and all(j.get(str(fd)) != "ok" for fd in (0, 1, 2)),
   "the program's fds 0-2 are not the CLI's terminal; python TIOCSTI fails", S.show(r))
os.close(master)
os.close(slave)

# ---------------------------------------------------------------- 24: hostile output is data
OUT_PY = r"""
import sys
data = bytes.fromhex(sys.argv[1])
sys.stdout.buffer.write(data)
sys.stderr.buffer.write(b'E:' + data)
"""


def roundtrip(data, desc):
    r = S.py(OUT_PY, data.hex())
    text = data.decode("utf-8")
    ok(r.get("status") == "ok" and r.get("stdout") == text and r.get("stderr") == "E:" + text
       and r["_utf8"], desc, S.show(r))


roundtrip(b"\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b[31mred\x1b[0m\r\x08\x07\x1b[6n\x1bP+q\x1b\\",
          "terminal escape sequences (clear, title, colour, DSR, DCS) come back byte for byte")
roundtrip(b"a\x00b\x00\x00c\x00", "NUL bytes come back as \\u0000, nothing cut")
roundtrip(bytes(range(1, 32)) + b'\x7f"\\/' + "\u2028\u2029\U0001F600é".encode(),
          "control characters, quotes, backslashes, U+2028/9 and astral characters round-trip")
bad = b"\xff\xfe ok \xc3 \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 end\x80"
r = S.py(OUT_PY, bad.hex())
out = r.get("stdout") or ""
ok(r.get("status") == "ok" and r["_utf8"] and " ok " in out and out.count(" end") == 1
   and "\ufffd" in out and all(not 0xD800 <= ord(c) <= 0xDFFF for c in out),
   "invalid UTF-8 (stray bytes, overlong, surrogates, > U+10FFFF, truncated) becomes U+FFFD; the "
   "JSON stays valid UTF-8", S.show(r))
r = S.py("import sys; sys.stdout.write('x' * 60000)")
ok(r.get("status") == "ok" and r.get("stdout") == "x" * 60000 and not r.get("stdout_truncated"),
   "a 60000-character line without newline comes back whole", S.show(r))
r = S.py("import sys; sys.stdout.write('y' * 200000); sys.stderr.write('z' * 200000)")
ok(r.get("stdout") == "y" * 65536 and r.get("stdout_truncated") is True
   and r.get("stderr") == "z" * 65536 and r.get("stderr_truncated") is True,
   "a 200000-character line is cut at 64 KiB and flagged, on both streams", S.show(r))
r = S.py("import sys; sys.stdout.write('x' + 'é' * 40000)")
out = r.get("stdout") or ""
ok(r["_utf8"] and r.get("stdout_truncated") is True and out.startswith("x" + "é" * 1000)
   and len(out.encode()) <= 65536 + 3,
   "the 64 KiB cut inside a multi-byte character still gives valid UTF-8", S.show(r))

# ---------------------------------------------------------------- 25: environment
SECRET = "sbxt-env-" + secrets.token_hex(8)
host_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SBXT_SECRET": SECRET,
            "LD_PRELOAD": "/nonexistent-" + SECRET + ".so", "PYTHONPATH": "/" + SECRET,
            "BASH_ENV": "/" + SECRET, "HOME": "/root", "http_proxy": "http://" + SECRET,
            "SBX_TOKEN": SECRET}
r = S.py("import json, os; print(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd()}))",
         host_env=host_env, env=["FOO=bar", "WITH_EQ=a=b=c"])
j = S.last_json(r) or {"env": {"?": "?"}}
env = j["env"]
# MPLBACKEND/MPLCONFIGDIR: the sandbox's own, so matplotlib works read-only (sandbox/run.c).
extra = set(env) - {"PATH", "HOME", "LANG", "TMPDIR", "USER", "MPLBACKEND", "MPLCONFIGDIR",
                    "FOO", "WITH_EQ"}
ok(not extra and SECRET not in json.dumps(env),
   "the environment holds only PATH, HOME, LANG, TMPDIR (USER, MPL*) and --env; nothing of the CLI's",
   S.show(r))
ok(env.get("HOME") == "/work" and j.get("cwd") == "/work" and env.get("TMPDIR") == "/tmp"
   and env.get("FOO") == "bar" and env.get("WITH_EQ") == "a=b=c",
   "HOME=/work (also the cwd), TMPDIR=/tmp, --env values kept verbatim", env)
if "USER" in env:
    diag(f"note: USER={env['USER']} is set besides PATH, HOME, LANG, TMPDIR")
r = S.sh("env", host_env=host_env)
ok(r.get("status") == "ok" and SECRET not in (r.get("stdout") or "") and "LD_PRELOAD"
   not in (r.get("stdout") or ""), "shell env: no variable of the CLI's environment", S.show(r))

# ---------------------------------------------------------------- 26: no channel between runs
TOKEN = "sbxt-chan-" + secrets.token_hex(8)
A_PY = r"""
import fcntl, json, os, socket, subprocess, sys, time
tok = sys.argv[1]
for p in ('/tmp/chan', '/dev/shm/chan', '/work/../tmp/chan2'):
    with open(p, 'w') as f:
        f.write(tok)
lock = open('/tmp/lock', 'w')
fcntl.flock(lock, fcntl.LOCK_EX)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind('\0sbxt-chan')
srv.listen(4)
srv.setblocking(False)
ipc = json.loads(subprocess.run(['/opt/probe/ipc', 'make'], capture_output=True, text=True).stdout)
bg = subprocess.Popen(['/usr/bin/sleep', '60'])
open('/work/ready', 'w').close()
t = time.time()
while not os.path.exists('/work/done') and time.time() - t < 150:
    time.sleep(0.05)
try:
    srv.accept()
    got = 'connection'
except BlockingIOError:
    got = 'none'
print(json.dumps({'ipc': ipc, 'got': got, 'uid': open('/proc/self/uid_map').read().split()[1]}))
"""
B_PY = r"""
import errno, fcntl, json, os, socket, subprocess, sys
tok = sys.argv[1]
res = {}
for p in ('/tmp/chan', '/dev/shm/chan', '/tmp/chan2', '/tmp/lock'):
    try:
        res[p] = open(p).read()
    except OSError as e:
        res[p] = errno.errorcode[e.errno]
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect('\0sbxt-chan')
    res['abstract'] = 'connected'
except OSError as e:
    res['abstract'] = errno.errorcode[e.errno]
res['ipc'] = json.loads(subprocess.run(['/opt/probe/ipc', 'find'], capture_output=True,
                                       text=True).stdout)
res['pids'] = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
res['comms'] = [open('/proc/%d/comm' % p).read().strip() for p in res['pids']]
res['uid'] = open('/proc/self/uid_map').read().split()[1]
res['tok_seen'] = tok in json.dumps(res)
print(json.dumps(res))
"""
wd_a, wd_b = S.tmpdir(), S.tmpdir()
# Generous waits (A holds its channels until the host says done, B runs meanwhile): on a slow
# or loaded machine they only take longer, they never decide the outcome.
a = S.Run([S.PY, "-c", A_PY, TOKEN], workdir=wd_a, wall_ms=180000, host_timeout=240)
t0 = time.monotonic()
while not os.path.exists(os.path.join(wd_a, "ready")) and time.monotonic() - t0 < 120:
    time.sleep(0.05)
ready = os.path.exists(os.path.join(wd_a, "ready"))
rb = S.py(B_PY, TOKEN, workdir=wd_b, wall_ms=60000)
open(os.path.join(wd_a, "done"), "w").close()
ra = a.result()
ja, jb = S.last_json(ra) or {}, S.last_json(rb) or {}
diag(f"A: {ja}\nB: {jb}")
ok(ready and ra.get("status") == "ok" and ja.get("ipc", {}).get("shm") == "ok",
   "run A set up its channels (/tmp, /dev/shm, lock, abstract socket, SysV IPC)", S.show(ra))
ok(jb and not jb.get("tok_seen") and all(jb.get(p) == "ENOENT" for p in
                                         ("/tmp/chan", "/dev/shm/chan", "/tmp/chan2", "/tmp/lock"))
   and jb.get("abstract") in ("ECONNREFUSED", "ENOENT")
   and all(v != "ok" for v in jb.get("ipc", {"x": "ok"}).values()),
   "run B, at the same time, finds none of them: no file, no socket, no SysV IPC", S.show(rb))
ok(ja.get("got") == "none", "nothing connected to A's abstract socket")
ok(jb and "sleep" not in jb.get("comms", []) and len(jb.get("pids", [])) <= 3,
   "B sees only its own processes", jb.get("comms"))
ok(ja.get("uid") and jb.get("uid") and ja["uid"] != jb["uid"],
   "A and B run as different host uids", f"A {ja.get('uid')} B {jb.get('uid')}")
# A later run, normally in A's slot again (the first free one), sees nothing A left behind.
rc = S.py(B_PY, TOKEN)
jc = S.last_json(rc) or {}
diag(f"later run: uid {jc.get('uid')} (A had {ja.get('uid')})")
ok(jc and not jc.get("tok_seen") and all(jc.get(p) == "ENOENT" for p in
                                         ("/tmp/chan", "/dev/shm/chan", "/tmp/chan2", "/tmp/lock"))
   and all(v != "ok" for v in jc.get("ipc", {"x": "ok"}).values())
   and "sleep" not in jc.get("comms", []),
   "a later run sees no file, IPC object or process of the earlier one", S.show(rc))
ok(sorted(os.listdir(wd_a)) == ["done", "ready"] and sorted(os.listdir(wd_b)) == [],
   "each /work held only its own run's files", (os.listdir(wd_a), os.listdir(wd_b)))

# ---------------------------------------------------------------- 8 runs at once
CONC_PY = r"""
import json, os, sys, time
me = sys.argv[1]
for p in ('/tmp/me', '/work/me', '/dev/shm/me'):
    with open(p, 'w') as f:
        f.write(me)
time.sleep(1)
print(json.dumps({'tmp': sorted(os.listdir('/tmp')), 'work': sorted(os.listdir('/work')),
                  'vals': [open(p).read() for p in ('/tmp/me', '/work/me', '/dev/shm/me')],
                  'pids': len([p for p in os.listdir('/proc') if p.isdigit()]),
                  'uid': open('/proc/self/uid_map').read().split()[1], 'sum': sum(range(10**6))}))
"""
KILLER_PY = r"""
import os, signal, time
t = time.time()
while time.time() - t < 1.5:
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
    time.sleep(0.005)
print('killer done')
"""
runs, wds = [], []
for i in range(6):
    wds.append(S.tmpdir())
    runs.append(S.Run([S.PY, "-c", CONC_PY, f"run-{i}"], workdir=wds[-1], wall_ms=20000))
killer = S.Run([S.PY, "-c", KILLER_PY], wall_ms=20000)
hog = S.Run([S.PY, "-c", "b = [b'x' * (1 << 20) for i in range(512)]"], memory_mb=64,
            wall_ms=20000)
results = [x.result() for x in runs]
rk, rh = killer.result(), hog.result()
good = []
for i, r in enumerate(results):
    j = S.last_json(r) or {}
    good.append(r.get("status") == "ok" and j.get("vals") == [f"run-{i}"] * 3
                and j.get("tmp") == ["me"] and j.get("work") == ["me"] and j.get("pids", 9) <= 3
                and j.get("sum") == sum(range(10 ** 6)))
    if not good[-1]:
        diag(f"run {i}: {S.show(r)}")
ok(all(good), "6 runs at once beside a kill(-1) loop and a memory hog: each sees only its own "
   "/tmp, /work, /dev/shm and processes, and computes the right answer", good)
uids = [(S.last_json(r) or {}).get("uid") for r in results]
ok(None not in uids and len(set(uids)) == 6, "the concurrent runs have 6 distinct host uids", uids)
ok(rk.get("status") == "ok" and rh.get("status") == "memory_limit",
   "the killer ended ok (it reached nothing), the hog hit memory_limit",
   f"{S.show(rk)}\n{S.show(rh)}")

S.finish()
