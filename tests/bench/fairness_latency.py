"""fairness_latency.py: one client floods while another's latency is measured (issue 13).

Run on a private stack (tests/lib/harness.sh --exec). Bob sends print(1) one at a time, on a quiet
service and while alice keeps as many slow runs (a one-second sleep each) in flight as the pool has
workers, retrying every refusal at once. Prints bob's p50/p99 in both phases and the ratio of his
p99s (target: 2x). Every answer must be a success or, for alice only, a designed refusal (429/503
with Retry-After and the error envelope); bob must never be refused.

How it measures, and why:
  - Alice and bob are separate processes. Alice's flood is FAIR_FLOOD processes, each one
    connection with one request in flight at all times: on an answer (a run done, or a refusal)
    it sends the next at once, ignoring Retry-After; so the service always holds FAIR_FLOOD of
    her requests (the threads of the first version paused 50 ms after a refusal). Bob measures from a process of his own with a single thread: with
    alice's threads in bob's Python process his timings also counted the waits for the GIL while
    her threads parsed answers (Python's thread switch interval is 5 ms), which is the bench's
    cost, not the service's.
  - The phases alternate, FAIR_ROUNDS times quiet then flood, bob's samples split evenly: on a
    shared machine whose load drifts, a quiet phase measured only before the flood would compare
    two different machines. Before each quiet phase alice stops sending and her runs in flight
    end, so "quiet" means no request of hers at the service at all.
  - Besides bob's own timings, the service's for the same requests are printed (matched by
    X-Request-Id): nginx's (access log), the FastCGI worker's and the broker's (pool log); where
    his tail is spent, in the client, nginx and the wait for a worker, or the run.

  --tap   print TAP and assert only that (no failures, no starvation): the short version in
          make test (tests/integration/front_fairness_load.t); the figures are printed as
          comments, never asserted, since they depend on the machine.
Environment: FAIR_SAMPLES (bob's requests per phase, 40), FAIR_FLOOD (alice's requests in flight:
the pool's workers, HARNESS_WORKERS, default 8), FAIR_ROUNDS (quiet/flood alternations, 4; at most
FAIR_SAMPLES), FAIR_RETRY_MS (alice's pause after a refusal, 0; the first version's was 50).
"""
import multiprocessing as mp
import os
import queue
import re
import sys
import time

import httpx

URL = os.environ["SBX_URL"]
ALICE, BOB = os.environ["SBX_TOKEN"], os.environ["SBX_TOKEN2"]
SAMPLES = int(os.environ.get("FAIR_SAMPLES", "40"))
FLOOD = int(os.environ.get("FAIR_FLOOD", os.environ.get("HARNESS_WORKERS", "8")))
RETRY_MS = int(os.environ.get("FAIR_RETRY_MS", "0"))
ROUNDS = max(1, min(SAMPLES, int(os.environ.get("FAIR_ROUNDS", "4"))))
LOG_DIR = os.path.join(os.environ.get("SBX_STATE_DIR", ""), "log")
TAP = "--tap" in sys.argv


def execute(client, token, code):
    return client.post(URL + "/v1/execute", json={"language": "python", "code": code},
                       headers={"Authorization": "Bearer " + token})


def designed_refusal(r):
    try:
        e = r.json()["error"]
        return r.status_code in (429, 503) and e["code"] and r.headers.get("Retry-After")
    except Exception:
        return False


def alice(flooding, busy, ready, done, out):
    """One of alice's flood processes: one request in flight whenever `flooding` is set; `busy`
    counts her requests in flight (all processes), `ready` her processes started; at `done`, her
    figures go to `out`."""
    ok = refused = 0
    failures = []
    with httpx.Client(verify=False, timeout=120) as c:
        with ready.get_lock():
            ready.value += 1
        while not done.is_set():
            if not flooding.wait(0.1):
                continue
            with busy.get_lock():
                busy.value += 1
            if not flooding.is_set():  # cleared meanwhile: bob may have seen busy at 0
                with busy.get_lock():
                    busy.value -= 1
                continue
            try:
                r = execute(c, ALICE, "import time; time.sleep(1)")
                if r.status_code == 200:
                    ok += 1
                elif designed_refusal(r):
                    refused += 1  # and at once the next: a client that ignores Retry-After
                    if RETRY_MS:
                        time.sleep(RETRY_MS / 1000)
                else:
                    failures.append(f"alice: {r.status_code} {r.text[:200]}")
            except Exception as e:
                failures.append(f"alice: {type(e).__name__}: {e}")
            finally:
                with busy.get_lock():
                    busy.value -= 1
    out.put((ok, refused, failures[:5]))


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


class Bob:
    def __init__(self, client):
        self.client = client
        self.refused = 0
        self.failures = []
        self.rids = {}  # X-Request-Id -> phase

    def phase(self, n, name=None):
        times = []
        for _ in range(n):
            t0 = time.monotonic()
            r = execute(self.client, BOB, "print(1)")
            ms = (time.monotonic() - t0) * 1000
            if r.status_code == 200 and r.json().get("stdout") == "1\n":
                times.append(ms)
                if name and r.headers.get("X-Request-Id"):
                    self.rids[r.headers["X-Request-Id"]] = name
            elif r.status_code in (429, 503):
                self.refused += 1
            else:
                self.failures.append(f"bob: {r.status_code} {r.text[:200]}")
        return times


def server_times(rids):
    """Where bob's measured requests spent their time, by phase, in ms: nginx's whole request
    (access log rt), the FastCGI worker's (pool log ms, from its accept: so rt - ms is nginx's
    part and the wait for a free worker) and, inside it, the broker's round trip (sandbox_ms:
    the wait for a slot and the run)."""
    out = {ph: {"nginx": [], "worker": [], "broker": []} for ph in ("quiet", "flood")}
    logs = [("access.log", r"rid=(\S+) .* rt=([0-9.]+)", ["nginx"], 1000),
            ("pool.log", r"req=(\S+) .* ms=([0-9.]+) .*sandbox_ms=([0-9.]+)", ["worker", "broker"],
             1)]
    for name, pattern, keys, scale in logs:
        try:
            with open(os.path.join(LOG_DIR, name)) as f:
                for line in f:
                    m = re.search(pattern, line)
                    if m and m.group(1) in rids:
                        for k, key in enumerate(keys):
                            out[rids[m.group(1)]][key].append(float(m.group(k + 2)) * scale)
        except OSError:
            pass
    return out


def main():
    ctx = mp.get_context("spawn")  # children share nothing with bob's client
    flooding, done = ctx.Event(), ctx.Event()
    busy, ready = ctx.Value("i", 0), ctx.Value("i", 0)
    out = ctx.Queue()
    procs = [ctx.Process(target=alice, args=(flooding, busy, ready, done, out))
             for _ in range(FLOOD)]
    for p in procs:
        p.start()
    # A loaded machine can take seconds to start them (Python, httpx): the flood must be whole.
    t0 = time.monotonic()
    while ready.value < FLOOD and time.monotonic() - t0 < 120:
        time.sleep(0.05)
    quiet, loaded = [], []
    with httpx.Client(verify=False, timeout=120) as c:
        bob = Bob(c)
        bob.phase(max(10, SAMPLES // 4))  # warm-up: slots and caches
        for k in range(ROUNDS):
            n = SAMPLES * (k + 1) // ROUNDS - SAMPLES * k // ROUNDS
            # Quiet: alice sends nothing and has nothing in flight (her runs last 1 s).
            flooding.clear()
            while busy.value:
                time.sleep(0.05)
            quiet += bob.phase(n, "quiet")
            flooding.set()
            time.sleep(2)  # the flood reaches its steady state
            loaded += bob.phase(n, "flood")
    flooding.clear()
    done.set()
    alice_ok = alice_refused = 0
    failures = bob.failures
    for _ in procs:
        try:
            ok, refused, f = out.get(timeout=180)
        except queue.Empty:
            failures.append("alice: a flood process ended without its figures")
            continue
        alice_ok += ok
        alice_refused += refused
        failures += f
    for p in procs:
        p.join()
    srv = server_times(bob.rids)

    q99, l99 = pct(quiet, 99), pct(loaded, 99)
    lines = [
        f"bob's print(1), quiet: p50 {pct(quiet, 50):.0f} ms, p99 {q99:.0f} ms ({len(quiet)} runs)",
        f"bob's print(1), while alice floods with {FLOOD} requests in flight: p50 "
        f"{pct(loaded, 50):.0f} ms, p99 {l99:.0f} ms ({len(loaded)} runs)",
        *[f"  {what} ({len(srv['quiet'][key])}+{len(srv['flood'][key])} found): quiet p50 "
          f"{pct(srv['quiet'][key], 50):.0f} p99 {pct(srv['quiet'][key], 99):.0f} ms; flood p50 "
          f"{pct(srv['flood'][key], 50):.0f} p99 {pct(srv['flood'][key], 99):.0f} ms"
          for key, what in [("nginx", "in nginx"), ("worker", "of which in a FastCGI worker"),
                            ("broker", "of which in the broker (slot and run)")]],
        f"alice meanwhile: {alice_ok} runs done, {alice_refused} designed 429/503 "
        f"({ROUNDS} rounds of quiet then flood)",
        f"bob's p99 under the flood / quiet p99: {l99 / q99:.2f} (target 2)",
    ]
    if TAP:
        for line in lines:
            print("# " + line)
        n = 0
        for cond, what in [
            (not failures, f"no failed request ({'; '.join(failures[:3])})"),
            (bob.refused == 0, f"bob is never refused ({bob.refused} refusals)"),
            (len(loaded) == SAMPLES, f"all {SAMPLES} of bob's runs during the flood completed"),
            (alice_refused > 0, "alice's excess was refused (429/503 with Retry-After)"),
        ]:
            n += 1
            print(("ok" if cond else "not ok") + f" {n} - {what}")
        print(f"1..{n}")
        sys.exit(0 if not failures and bob.refused == 0 and len(loaded) == SAMPLES else 1)
    for line in lines:
        print(line)
    if failures:
        print("failures:", failures[:5])
        sys.exit(1)


if __name__ == "__main__":
    main()
