"""security_common.py: helpers shared by the security_* and reliability_* tests (they run under
tests/lib/harness.sh --exec, which exports SBX_URL, SBX_TOKEN, SBX_TOKEN2, SBX_STATE_DIR,
SBX_UID_BASE, SBX_SLOTS and SBX_HARNESS_DIR)."""
import os
import sys

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))

URL = os.environ["SBX_URL"]
TOKEN = os.environ["SBX_TOKEN"]
TOKEN2 = os.environ["SBX_TOKEN2"]
STATE = os.environ["SBX_STATE_DIR"]
UID_BASE = int(os.environ["SBX_UID_BASE"])
SLOTS = int(os.environ["SBX_SLOTS"])
BIN = os.path.realpath(os.environ.get("SBX_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "build")))


def client(token=TOKEN, timeout=90):
    """An HTTPS client for one token (caller closes it)."""
    return httpx.Client(base_url=URL, verify=False, timeout=timeout,
                        headers={"Authorization": "Bearer " + token} if token else {})


def execute(lang, code, limits=None, token=TOKEN, **extra):
    """POST /v1/execute; (status code, JSON body)."""
    import textwrap
    body = {"language": lang, "code": textwrap.dedent(code)}
    if limits:
        body["limits"] = limits
    body.update(extra)
    with client(token) as cl:
        r = cl.post("/v1/execute", json=body)
    return r.status_code, as_json(r)


def as_json(r):
    try:
        return r.json()
    except ValueError:
        return {"raw": r.text[:300]}


def is_envelope(r, code=None):
    """True when r is a JSON error envelope (with that code, when given)."""
    j = as_json(r)
    e = j.get("error") if isinstance(j, dict) else None
    return (isinstance(e, dict) and isinstance(e.get("code"), str) and isinstance(e.get("message"), str)
            and (code is None or e["code"] == code))


def proc_uid(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def parent_is_broker(pid):
    """Is pid's parent sbxd (a prepared sandbox's init)?"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            ppid = f.read().rsplit(")", 1)[1].split()[1]
        exe = os.readlink(f"/proc/{ppid}/exe")
    except (OSError, IndexError):
        return False
    return exe.replace(" (deleted)", "") == os.path.join(BIN, "sbxd")


def zygote_idle(pid):
    """Is pid a slot's zygote (its parent is sbxd) or a sandbox it prepared that has no job yet
    (every process up to the zygote is named sbx-zygote: a run's program renames itself when its
    job arrives, and a run's init exits with its program, taking the rest with it)?"""
    for _ in range(3):
        if parent_is_broker(pid):
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = f.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != "sbx-zygote":
                    return False
        except (OSError, IndexError):
            return False
    return False


def run_pids():
    """Programs of runs still alive: processes with a slot uid that are not the broker's own
    helpers (sbxd itself, which also serves as the in-sandbox init). Zombies count too: a reaped
    run leaves none."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        uid = proc_uid(d)
        if uid is None or not UID_BASE <= uid < UID_BASE + SLOTS:
            continue
        try:
            exe = os.readlink(f"/proc/{d}/exe")
        except OSError:
            exe = "?"
        if exe.replace(" (deleted)", "") == os.path.join(BIN, "sbxd"):
            continue
        try:
            with open(f"/proc/{d}/comm") as f:
                comm = f.read().strip()
        except OSError:
            comm = "?"
        if comm == "sbx-warm" and parent_is_broker(d):
            continue  # an idle slot's pre-started interpreter, waiting for its job (warm.c)
        if comm == "sbx-zygote" and zygote_idle(d):
            continue  # a slot's zygote, or the init and program it prepared (zygote.c)
        found.append((int(d), uid, comm))
    return found


def wait_no_run_pids(seconds=10.0):
    """run_pids() once it is empty, or what is left after seconds."""
    import time
    end = time.monotonic() + seconds
    left = run_pids()
    while left and time.monotonic() < end:
        time.sleep(0.2)
        left = run_pids()
    return left
