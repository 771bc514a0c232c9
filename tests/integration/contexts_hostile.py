"""contexts_hostile.py: SANDBOX.md's hostile checklist inside contexts, through the real stack over
HTTPS (run by contexts_hostile.t under the harness). A context is a long-lived sandbox: what a run
may not do, a cell may not do either, and one client's context sees nothing of another's."""
import json
import os
import socket
import sys

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "sandbox"))
from tap import diag, done, ok  # noqa: E402
import probes  # noqa: E402 (the library tests' C probes)

URL = os.environ["SBX_URL"]
c = httpx.Client(base_url=URL, verify=False, timeout=180,
                 headers={"Authorization": "Bearer " + os.environ["SBX_TOKEN"]})
cb = httpx.Client(base_url=URL, verify=False, timeout=180,
                  headers={"Authorization": "Bearer " + os.environ["SBX_TOKEN2"]})
LIM = {"wall_ms": 60000, "cpu_ms": 30000}


def session(client):
    r = client.post("/v1/sessions")
    assert r.status_code == 201, r.text
    return r.json()["id"]


def context(client, sid, lang):
    r = client.post(f"/v1/sessions/{sid}/contexts", json={"language": lang})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def cell(client, sid, cid, code):
    r = client.post(f"/v1/sessions/{sid}/contexts/{cid}/execute",
                    json={"code": code, "limits": LIM})
    try:
        return r.status_code, r.json()
    except ValueError:
        return r.status_code, {"raw": r.text}


def last_json(d):
    for line in reversed((d.get("stdout") or "").splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


REFUSED = {"EPERM", "EACCES", "ENOSYS", "SIGSYS"}
GROUPS = [
    ("ptrace and process_vm_readv/writev", ["ptrace_attach_parent", "ptrace_attach_init",
     "ptrace_traceme", "process_vm_readv", "process_vm_writev"], {"EPERM", "SIGSYS"}),
    ("unshare, clone with namespace flags, setns", ["unshare_user", "unshare_mount",
     "unshare_net", "unshare_pid", "clone_newuser", "clone_newns", "setns_net"], REFUSED),
    ("mount, remount /usr rw, umount /proc, fsopen, open_tree, pivot_root, chroot",
     ["mount_tmpfs", "remount_usr_rw", "umount_proc", "fsopen", "open_tree", "pivot_root",
      "chroot"], REFUSED),
    ("bpf, perf_event_open, userfaultfd, io_uring, keyrings, kexec, modules, reboot, mknod",
     ["bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "keyctl", "kexec_load",
      "init_module", "reboot", "mknod_mem"], REFUSED),
    ("setuid(0), setgid(0), setgroups", ["setuid0", "setgid0", "setgroups"], REFUSED | {"EINVAL"}),
    ("clock_settime, settimeofday", ["clock_settime", "settimeofday"], REFUSED),
]
NAMES = [n for _, g, _ in GROUPS for n in g]

# ---- the kernel surface, from a bash context: the service's own C probe ----
SA = session(c)
r = c.put(f"/v1/sessions/{SA}/files/probe.c",
          content=("#define _GNU_SOURCE\n" + probes.SYSPROBE).encode())
ok(r.status_code in (200, 201), "the syscall probe is written into alice's session", r.text)
BA = context(c, SA, "bash")
s, d = cell(c, SA, BA, "gcc -O0 -o probe probe.c && ./probe " + " ".join(NAMES))
got = dict(line.split() for line in (d.get("stdout") or "").splitlines() if len(line.split()) == 2)
ok(s == 200 and len(got) == len(NAMES),
   f"the probe compiles and runs in a bash context ({len(got)} of {len(NAMES)} reported)",
   {k: d.get(k) for k in ("status", "stderr", "error")})
for desc, group, allowed in GROUPS:
    bad = {n: got.get(n, "missing") for n in group if got.get(n, "missing") not in allowed}
    ok(not bad, "in a context, refused as in a run: " + desc, bad)

# ---- identity, capabilities, seccomp, network, /proc, mounts: a Python context ----
PA = context(c, SA, "python")
s, d = cell(c, SA, PA, r'''
import json, os, socket
st = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2); net = "connected"
except OSError as e:
    net = type(e).__name__
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
print(json.dumps({"uid": os.getuid(), "euid": os.geteuid(), "capeff": st["CapEff"].strip(),
                  "capbnd": st["CapBnd"].strip(), "seccomp": st["Seccomp"].strip(),
                  "nnp": st["NoNewPrivs"].strip(), "net": net, "pids": pids,
                  "hostname": socket.gethostname(), "mounts": open("/proc/self/mountinfo").read(),
                  "shadow": os.access("/etc/shadow", os.R_OK), "cwd": os.getcwd()}))
''')
w = last_json(d) or {}
ok(s == 200 and w.get("uid") == 1000 and w.get("euid") == 1000, "a context runs as uid 1000",
   {k: d.get(k) for k in ("status", "stdout", "stderr", "error")})
ok(w.get("capeff") == "0000000000000000" and w.get("capbnd") == "0000000000000000",
   "no capability, none in the bounding set", w.get("capeff"))
ok(w.get("seccomp") == "2" and w.get("nnp") == "1", "seccomp filter mode and no_new_privs",
   (w.get("seccomp"), w.get("nnp")))
ok(w.get("net") not in (None, "connected"), "no network from a context", w.get("net"))
ok(w.get("hostname") == "sandbox" and w.get("shadow") is False and w.get("cwd") == "/work",
   "the sandbox's own name, no /etc/shadow, /work as the working directory", w)
ok(len(w.get("pids") or []) <= 8, "/proc shows only the context's own few processes", w.get("pids"))
host_paths = [p for p in (os.getcwd(), os.environ.get("SBX_HARNESS_DIR", "/nonexistent"), "/var/lib/sbx")
              if p and p in (w.get("mounts") or "")]
ok(w.get("mounts") and not host_paths, "mountinfo names no host path of the service", host_paths)

# ---- two clients' contexts see nothing of each other (checklist 26) ----
s, d = cell(c, SA, PA, r'''
import socket, os
secret = "alice-secret-4711"
open("/tmp/alice-tmp", "w").write(secret)
open("/dev/shm/alice-shm", "w").write(secret)
open("/work/alice-file", "w").write(secret)
held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
held.bind("\0alice-abstract"); held.listen(1)
print(os.getpid())
''')
ok(s == 200 and d.get("status") == "ok", "alice's context leaves files in /tmp, /dev/shm, /work and "
   "holds an abstract socket", d)
SB = session(cb)
PB = context(cb, SB, "python")
s, d = cell(cb, SB, PB, r'''
import json, os, socket, glob
seen = glob.glob("/tmp/alice*") + glob.glob("/dev/shm/alice*") + glob.glob("/work/alice*")
try:
    x = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); x.connect("\0alice-abstract"); ab = "reached"
except OSError as e:
    ab = type(e).__name__
found = []
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            if b"alice" in open(f"/proc/{p}/cmdline", "rb").read():
                found.append(p)
        except OSError:
            pass
print(json.dumps({"seen": seen, "abstract": ab, "procs": found}))
''')
w = last_json(d) or {}
ok(s == 200 and w.get("seen") == [], "bob's context sees none of alice's files in /tmp, /dev/shm "
   "or /work", w or d)
ok(w.get("abstract") not in (None, "reached"), "bob cannot reach alice's abstract socket",
   w.get("abstract"))
ok(w.get("procs") == [], "bob's /proc shows none of alice's processes", w.get("procs"))
r = cb.post(f"/v1/sessions/{SA}/contexts/{PA}/execute", json={"code": "1"})
ok(r.status_code == 404, "bob's cell on alice's context: 404", r.status_code)
s, d = cell(c, SA, PA, "held.getsockname()")
ok(s == 200 and "alice-abstract" in json.dumps(d.get("results")),
   "alice's context still holds its socket: nothing of bob's touched it", d.get("results"))
for cl, sid in ((c, SA), (cb, SB)):
    cl.delete(f"/v1/sessions/{sid}")
diag("probe: " + " ".join(f"{n}={got.get(n)}" for n in NAMES))
done()
