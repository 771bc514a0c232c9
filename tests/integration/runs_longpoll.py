"""runs_longpoll.py: long-polls of background runs' output cannot starve the FastCGI pool. Client
alice opens more long-polls (wait_ms=10000 on a run that prints nothing) than the pool has
workers; past runs.long_polls_per_client (2) they are refused at once (429 too_many_waits,
Retry-After), and bob's POST /v1/execute answers while alice's admitted long-polls still wait.
Run by runs_longpoll.t under tests/lib/harness.sh (4 workers). Only ordering is asserted, never
this machine's speed: bob must answer before alice's held long-polls end (they hold 10 s)."""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sbx_http  # noqa: E402
from tap import diag, done, is_, ok  # noqa: E402

TOK = {"alice": os.environ["SBX_TOKEN"], "bob": os.environ["SBX_TOKEN2"]}
WORKERS = int(os.environ.get("HARNESS_WORKERS", "4"))


def call(method, path, body=None, who="alice"):
    return sbx_http.call_raw(method, path, body, token=TOK[who], timeout=180)


st, _, b = call("POST", "/v1/sessions", {})
sid = json.loads(b)["id"]
st, _, b = call("POST", f"/v1/sessions/{sid}/runs", {"cmd": "sleep 120", "limits": {"wall_ms": 60000}})
is_(st, 202, "a background run that prints nothing starts")
rid = json.loads(b).get("run_id", "")

N = WORKERS + 2
polls = []  # (status, headers, body, ended at)
lock = threading.Lock()


def poll():
    r = call("GET", f"/v1/sessions/{sid}/runs/{rid}/output?stream=stdout&cursor=0&wait_ms=10000")
    with lock:
        polls.append(r + (time.monotonic(),))


threads = [threading.Thread(target=poll) for _ in range(N)]
for t in threads:
    t.start()
# The refusals come at once; a refusal also proves that the cap's long-polls were held when it
# was made. Waiting for them is bounded (the old code refused none: then bob goes anyway).
end = time.monotonic() + 8
while time.monotonic() < end:
    with lock:
        if sum(1 for p in polls if p[0] != 200) >= N - 2:
            break
    time.sleep(0.05)
st, _, b = call("POST", "/v1/execute", {"language": "python", "code": "print(1)"}, who="bob")
bob_at = time.monotonic()
is_((st, json.loads(b).get("stdout")), (200, "1\n"), "bob's execute answers")
for t in threads:
    t.join()
held = [p for p in polls if p[0] == 200]
refused = [p for p in polls if p[0] == 429]
is_(len(held), 2, f"{N} long-polls of one client on {WORKERS} workers: 2 are held (the cap)")
is_(len(refused), N - 2, "the others are refused at once (429)")
ok(all(json.loads(p[2])["error"]["code"] == "too_many_waits" and p[1].get("retry-after") == "1"
       for p in refused), "as too_many_waits with Retry-After: 1",
   [p[2][:200] for p in refused])
first_end = min((p[3] for p in held), default=0)
ok(held and bob_at < first_end,
   "bob's execute answered while alice's long-polls still held their workers",
   f"bob answered {bob_at - first_end:+.2f} s after the first held long-poll ended")
ok(all(p[1].get("sbx-run-state") == "running" and p[1].get("sbx-cursor") == "0" for p in held),
   "a held long-poll ends with no bytes, the run still running")
st, _, b = call("GET", f"/v1/sessions/{sid}/runs/{rid}/output?stream=stdout&cursor=0&wait_ms=0")
is_(st, 200, "with the long-polls over, a poll without a wait is never refused")
st, _, b = call("GET", f"/v1/sessions/{sid}/runs/{rid}/output?stream=stdout&cursor=0&wait_ms=100")
is_(st, 200, "and a long-poll is admitted again")
call("DELETE", f"/v1/sessions/{sid}")
done()
