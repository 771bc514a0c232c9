"""sbxtest.py: run hostile programs through build/sbx and check that nothing of them outlives a run.

Used by every tests/sandbox/*.t file:
    import sbxtest as S
    S.start(probes={"name": C_SOURCE})     # root check, leak baseline, compile C probes
    r = S.py("print(1)", wall_ms=2000)     # -> dict: the CLI's JSON plus _rc, _raw, _err, ...
    S.finish()                             # leak checks (processes, cgroups, mounts), then TAP plan
Compiled probes are bound read-only at /opt/probe inside every run (S.probe("name") gives the path).
Host-side leak checks ignore processes that belong to a live sbx/sbxd started by someone else (the
machine is shared with other suites), and cgroups of a CLI slot another suite holds; anything of
ours is dead by then, so anything left is a leak.
"""
import atexit
import ctypes
import fcntl
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import tap  # noqa: E402

SBX = os.environ.get("SBX_BIN", os.path.join(TOP, "build", "sbx"))
PROBE_DIR_INSIDE = "/opt/probe"
# Host uids the sandbox may give to programs: broker slots from 200000, CLI slots from 300000.
UID_LO, UID_HI = 200000, 400000
PY = "/usr/bin/python3"
NOBODY = 65534

_probe_dir = None
_tmpdirs = []
_baseline = {}
_live = set()  # pids of sbx processes of ours still running

LIMIT_FLAGS = {
    "wall_ms": "--wall-ms", "cpu_ms": "--cpu-ms", "memory_mb": "--memory-mb",
    "processes": "--processes", "output_bytes": "--output-bytes",
    "output_hard_bytes": "--output-hard-bytes", "file_size_mb": "--file-size-mb",
    "open_files": "--open-files", "tmp_mb": "--tmp-mb",
}


def tmpdir(mode=0o755, prefix="sbxt-", owner=NOBODY):
    """A fresh host directory removed at finish(). Owned by nobody: sbx refuses a root-owned
    --workdir (the program's files are stored as the directory's owner). Under /var/tmp, not /tmp:
    sbx stages the sandbox root on /tmp, so host paths under /tmp cannot be bound (see
    filesystem.t)."""
    d = tempfile.mkdtemp(prefix=prefix, dir="/var/tmp")
    os.chmod(d, mode)
    if owner is not None:
        os.chown(d, owner, owner)
    _tmpdirs.append(d)
    return d


def _compile(name, src, out_dir):
    c = os.path.join(out_dir, name + ".c")
    with open(c, "w") as f:
        f.write(src)
    # Static: the probes must not depend on which libraries the sandbox exposes.
    p = subprocess.run(["gcc", "-O1", "-D_GNU_SOURCE", "-static", "-pthread", "-w", "-o",
                        os.path.join(out_dir, name), c], capture_output=True, text=True)
    return p.returncode, p.stderr


def build_probes(sources):
    """Compile {name: C source} into the probe dir (parallel); bail out if any fails."""
    global _probe_dir
    if _probe_dir is None:
        _probe_dir = tmpdir(0o755, "sbxt-probe-", owner=None)
    res = {}
    threads = [threading.Thread(target=lambda n=n, s=s: res.__setitem__(n, _compile(n, s, _probe_dir)))
               for n, s in sources.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n, (rc, err) in res.items():
        if rc != 0:
            print(f"Bail out! probe {n} does not compile: {err[:2000]}", flush=True)
            sys.exit(1)


def probe(name):
    """Path inside the sandbox of a compiled probe."""
    return f"{PROBE_DIR_INSIDE}/{name}"


def probe_host(name):
    """Path on the host of a compiled probe (for bare baseline runs)."""
    return os.path.join(_probe_dir, name)


def sbx_argv(argv, workdir=None, stdin=None, env=(), binds=(), extra=(), **limits):
    cmd = [SBX]
    for k, v in limits.items():
        if v is not None:
            cmd += [LIMIT_FLAGS[k], str(v)]
    if workdir:
        cmd += ["--workdir", workdir]
    if stdin:
        cmd += ["--stdin", stdin]
    for e in env:
        cmd += ["--env", e]
    if _probe_dir:
        cmd += ["--bind-ro", f"{_probe_dir}:{PROBE_DIR_INSIDE}"]
    for b in binds:
        cmd += ["--bind-ro", b]
    cmd += list(extra)
    cmd += ["--"] + list(argv)
    return cmd


class Run:
    """A started sbx process; .result() waits for it and returns the parsed dict."""

    def __init__(self, argv, host_timeout=90, host_env=None, cwd=None, host_stdin=None,
                 preexec_fn=None, **kw):
        self.cmd = sbx_argv(argv, **kw)
        self.t0 = time.monotonic()
        self.p = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL if host_stdin is None
                                  else host_stdin, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=host_env, cwd=cwd,
                                  start_new_session=preexec_fn is None, preexec_fn=preexec_fn)
        _live.add(self.p.pid)
        self.host_timeout = host_timeout
        self.bufs = {"out": b"", "err": b""}
        self.readers = [threading.Thread(target=self._read, args=(self.p.stdout, "out")),
                        threading.Thread(target=self._read, args=(self.p.stderr, "err"))]
        for t in self.readers:
            t.start()

    def _read(self, f, key):
        chunks = []
        while True:
            b = f.read(1 << 16)
            if not b:
                break
            chunks.append(b)
        self.bufs[key] = b"".join(chunks)

    def result(self):
        killed = False
        deadline = self.t0 + self.host_timeout
        while True:
            pid, status, ru = os.wait4(self.p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                killed = True
                os.kill(self.p.pid, signal.SIGKILL)
                pid, status, ru = os.wait4(self.p.pid, 0)
                break
            time.sleep(0.01)
        _live.discard(self.p.pid)
        if killed:
            reap_orphans()
        self.p.returncode = os.waitstatus_to_exitcode(status)
        for t in self.readers:
            t.join(10)
        raw = self.bufs["out"]
        try:
            raw.decode("utf-8")
            utf8 = True
        except UnicodeDecodeError:
            utf8 = False
        try:
            # json-c may pass invalid UTF-8 through untouched; keep those bytes as surrogates.
            d = json.loads(raw.decode("utf-8", "surrogateescape"))
            if not isinstance(d, dict):
                raise ValueError("not an object")
        except ValueError as e:
            d = {"status": "__no_json__", "_parse_error": str(e)}
        d["_rc"] = self.p.returncode
        d["_utf8"] = utf8
        d["_raw"] = raw[:4000]
        d["_err"] = self.bufs["err"][-4000:].decode("utf-8", "replace")
        d["_host_wall_ms"] = int((time.monotonic() - self.t0) * 1000)
        d["_maxrss_kb"] = ru.ru_maxrss
        d["_host_killed"] = killed
        return d


def reap_orphans():
    """Reap zombies re-parented to us (we are a child subreaper): a CLI we had to kill leaves its
    init as a zombie, and this host's PID 1 never reaps, so it would stay forever."""
    me = os.getpid()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    s = f.read()
            except OSError:
                continue
            fields = s[s.rindex(")") + 2:].split()
            if fields[0] == "Z" and int(fields[1]) == me:
                try:
                    os.waitpid(int(d), os.WNOHANG)
                except OSError:
                    pass


def run(argv, **kw):
    """Run argv in a fresh sandbox; return the CLI's JSON as a dict (plus _rc, _raw, _err...)."""
    return Run(argv, **kw).result()


def py(code, *args, **kw):
    return run([PY, "-c", code] + list(args), **kw)


def sh(script, shell="/bin/sh", **kw):
    return run([shell, "-c", script], **kw)


def bash(script, **kw):
    return sh(script, shell="/usr/bin/bash", **kw)


def show(r):
    """Short diagnostic text of a result."""
    keep = {k: (v[:600] if isinstance(v, str) else v) for k, v in r.items() if k != "_raw"}
    if r.get("status") == "__no_json__":
        keep["_raw"] = r["_raw"][:600]
    return json.dumps(keep, indent=None, default=str)


def last_json(r):
    """The last JSON line the program printed on stdout, or None."""
    for line in reversed((r.get("stdout") or "").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def status_is(r, status, desc, limit=None):
    okay = r.get("status") == status and (limit is None or r.get("limit") == limit)
    return tap.ok(okay, desc, show(r))


def happened(r):
    """The run happened (exit 0 from the CLI, valid JSON, not internal_error)."""
    return r.get("_rc") == 0 and r.get("status") not in ("__no_json__", "internal_error")


def ran(r, desc):
    return tap.ok(happened(r), desc, show(r))


def warm_and_cold(argv, files=None, **kw):
    """Run argv twice, warm (the default start) then cold (SBX_WARM=0), each in a fresh copy of
    files ({relative path: text}, owned by nobody) in /work; the two results."""
    res = []
    for env in (None, dict(os.environ, SBX_WARM="0")):
        d = tmpdir()
        for name, text in (files or {}).items():
            p = os.path.join(d, name)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        for root, dirs, names in os.walk(d):
            for n in dirs + names:
                os.chown(os.path.join(root, n), NOBODY, NOBODY)
        res.append(run(argv, workdir=d, host_env=env, **kw))
    return res


def same_warm_and_cold(argv, files, desc, keys=("status", "exit_code", "signal", "stdout", "stderr"),
                       **kw):
    """One TAP line: argv ran warm and cold (warm_and_cold) with equal `keys`. The two results."""
    w, c = warm_and_cold(argv, files, **kw)
    diffs = {k: (w.get(k), c.get(k)) for k in keys if w.get(k) != c.get(k)}
    tap.ok(happened(w) and happened(c) and not diffs, desc, "" if not diffs else repr(diffs)[:1500])
    return w, c


# ---------------------------------------------------------------- leak checks

def _proc_uid(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _proc_stat(pid):
    """(comm, ppid) of pid or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    comm = s[s.index("(") + 1:s.rindex(")")]
    ppid = int(s[s.rindex(")") + 2:].split()[1])
    return comm, ppid


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _foreign_run(pid):
    """True when pid descends from a live sbx/sbxd that is not ours (another suite's run)."""
    seen = 0
    while pid > 1 and seen < 64:
        st = _proc_stat(pid)
        if st is None:
            return False
        # The CLI and the broker run as root; a leaked init forked from sbx would not.
        if st[0] in ("sbx", "sbxd") and _proc_uid(pid) == 0:
            return True
        # A broker's zygote or a sandbox it prepared (sandbox/zygote.c): the CLI runs of these
        # tests never make one (a CLI slot serves one run), so it is another suite's, even when
        # its parent chain is gone (a zygote being replaced leaves its prepared init orphaned
        # for the moment it takes to die).
        if st[0] == "sbx-zygote":
            return True
        # Another instance of these tests (we are child subreapers, so what its killed CLIs
        # leave hangs under it until it ends them).
        if pid != os.getpid() and _proc_uid(pid) == 0 and b"tests/sandbox/" in _cmdline(pid):
            return True
        pid = st[1]
        seen += 1
    return False


def sandbox_processes():
    """Processes running as a sandbox host uid that no live foreign sbx/sbxd accounts for."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        uid = _proc_uid(int(d))
        if int(d) in _baseline.get("pids", ()):
            continue  # there before this file started (e.g. a zombie the host init never reaps)
        if uid is not None and UID_LO <= uid < UID_HI and not _foreign_run(int(d)):
            st = _proc_stat(int(d))
            if st and st[0] == "sbxd":
                continue  # a broker's slot helper (other suites' brokers); our runs come from sbx
            found.append((int(d), uid, st[0] if st else "?"))
    return found


def no_leftover_processes(desc):
    left = sandbox_processes()
    if left:
        time.sleep(1)
        still = sandbox_processes()
        return tap.ok(False, desc, f"left right after the run: {left}\nstill there 1 s later: {still}")
    return tap.ok(True, desc)


def cgroup_dirs():
    """Every cgroup directory under */sbx-cli (v1 controllers and the v2 tree)."""
    out = set()
    for top in glob.glob("/sys/fs/cgroup/*/sbx-cli") + glob.glob("/sys/fs/cgroup/sbx-cli"):
        for root, dirs, _files in os.walk(top):
            for d in dirs:
                out.add(os.path.join(root, d))
    return out


def _slot_in_use(d):
    """Whether the CLI slot a cgroup dir belongs to is held right now. Every run of ours has
    ended by finish(), so a held slot is another suite's sbx (the machine is shared): its slot
    group is its own, not a leak of ours. sbx holds /run/sbx-cli/slotN.lock with flock."""
    m = re.search(r"/sbx-cli/(slot[0-9]+)(/|$)", d)
    if not m:
        return False
    try:
        fd = os.open(f"/run/sbx-cli/{m.group(1)}.lock", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _cg_tasks(d):
    for name in ("cgroup.procs", "tasks"):
        try:
            with open(os.path.join(d, name)) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            continue
    return []


SANDBOX_ROOT_NAMES = {"usr", "etc", "proc", "dev", "tmp", "work", "opt", "lib", "lib32", "lib64",
                      "libx32", "sbin", "bin"}


def _could_be_ours(line):
    """Whether a changed host mount could come from a sandbox run. The machine is shared: other
    suites mount their own tmpfs under /tmp/<their dir>/. sbx stages the sandbox root on /tmp, so
    a leak would show at /tmp itself, /tmp/<root entry>, its temp work dirs or ours, or outside
    /tmp; only mounts under another /tmp/<dir>/, or under a /var/tmp/<dir>/ not ours, are
    someone else's."""
    f = line.split()
    point = f[1] if len(f) > 1 else ""
    parts = point.split("/")
    # Under /var/tmp/<dir>/ only our own temp dirs (tmpdir()) are ours: sbx never mounts on the
    # host there, other suites do (btrfs images of their own).
    if len(parts) > 4 and parts[1:3] == ["var", "tmp"]:
        return "/".join(parts[:4]) in _tmpdirs
    if len(parts) > 3 and parts[1] == "tmp":
        top = parts[2]
        return (top in SANDBOX_ROOT_NAMES or top.startswith("sbx-cli-") or top.startswith("sbxt-"))
    return True


def host_mounts():
    with open("/proc/self/mounts") as f:
        return sorted(f.read().splitlines())


def _kill_live():
    """A test that dies must not leave its sbx runs behind (only our own pids are killed)."""
    for pid in list(_live):
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass


def start(probes=None, need=()):
    """Check we can run, take the leak baseline, compile probes."""
    if os.geteuid() != 0:
        tap.skip_all("build/sbx must run as root")
    if not os.access(SBX, os.X_OK):
        print(f"Bail out! {SBX} is missing (make build/sbx)", flush=True)
        sys.exit(1)
    for path in need:
        if not os.path.exists(path):
            tap.skip_all(f"{path} is not installed")
    # Orphans of a CLI we kill come to us, not to the host's PID 1 (which never reaps here).
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    _baseline["mounts"] = host_mounts()
    _baseline["cgroups"] = cgroup_dirs()
    _baseline["pids"] = {p for p, _u, _c in sandbox_processes()}
    atexit.register(_remove_tmpdirs)  # also when a test dies before finish()
    atexit.register(_kill_live)       # (atexit runs this one first)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    if probes:
        build_probes(probes)


def finish():
    """After the file's tests: nothing of any run may remain; then print the plan."""
    reap_orphans()
    left = sandbox_processes()
    if left:
        time.sleep(1)
        left = sandbox_processes()
    tap.ok(not left, "no process with a sandbox uid (200000-399999) remains after this file",
           f"left: {left}")
    busy = {d: _cg_tasks(d) for d in cgroup_dirs()}
    busy = {d: [p for p in t if not _foreign_run(p)] for d, t in busy.items()}
    busy = {d: t for d, t in busy.items() if t}
    tap.ok(not busy, "no cgroup under sbx-cli holds a task", f"busy: {busy}")
    new = sorted(d for d in cgroup_dirs() - _baseline["cgroups"] if not _slot_in_use(d))
    if new:
        time.sleep(0.5)
        new = sorted(d for d in cgroup_dirs() - _baseline["cgroups"] if not _slot_in_use(d))
    tap.ok(not new, "the CLI removed its slot cgroups (no new dir under */sbx-cli)",
           "new: " + "\n".join(new[:30]))
    now = host_mounts()
    before = _baseline["mounts"]
    added = [m for m in now if m not in before]
    removed = [m for m in before if m not in now]
    others = [m for m in added + removed if not _could_be_ours(m)]
    if others:
        tap.diag(f"ignored mount changes of other suites: {others}")
    added = [m for m in added if _could_be_ours(m)]
    removed = [m for m in removed if _could_be_ours(m)]
    tap.ok(not added and not removed, "host /proc/mounts is unchanged",
           f"added: {added}\nremoved: {removed}")
    _remove_tmpdirs()
    tap.done()


def _remove_tmpdirs():
    while _tmpdirs:
        d = _tmpdirs.pop()
        # rm -rf, not shutil.rmtree: programs leave deep trees and odd modes behind.
        subprocess.run(["chmod", "-R", "u+rwx", d], capture_output=True)
        subprocess.run(["rm", "-rf", "--one-file-system", d], capture_output=True)
