"""evaluate_humaneval.py: HumanEval through the evaluate route's test mode, 4 clients at once.
Run by evaluate_humaneval.t under tests/lib/harness.sh --exec."""
import gzip
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from tap import done, is_, ok  # noqa: E402

URL = os.environ["SBX_URL"]
H = {"Authorization": "Bearer " + os.environ["SBX_TOKEN"]}
with gzip.open(os.environ["HUMANEVAL"], "rt") as f:
    problems = [json.loads(line) for line in f if line.strip()]
is_(len(problems), 164, "164 problems in the dataset")
local = threading.local()


def evaluate(client, p, body):
    r = client.post("/v1/evaluate", json={"code": p["prompt"] + body, "test": p["test"],
                                          "entry_point": p["entry_point"]})
    try:
        return r.status_code, r.json()
    except ValueError:
        return r.status_code, {"raw": r.text[:300]}


def run_all(body_of):
    def one(p):
        c = getattr(local, "c", None)
        if c is None:  # one client (one kept-alive connection) per thread
            c = local.c = httpx.Client(base_url=URL, verify=False, timeout=300, headers=H)
        for attempt in range(5):  # a 429 under the per-client cap is the caller's to retry
            s, d = evaluate(c, p, body_of(p))
            if s != 429:
                return p["task_id"], s, d
            time.sleep(0.5)
        return p["task_id"], s, d
    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(one, problems))


res = run_all(lambda p: p["canonical_solution"])
bad = [(t, s, (d.get("cases") or [{}])[0].get("error") or d) for t, s, d in res
       if s != 200 or d.get("passed") is not True]
ok(not bad, "all 164 canonical solutions pass (%d failed)" % len(bad), "\n".join(
    "%s: %s %s" % (t, s, str(e)[:300]) for t, s, e in bad[:10]))

res = run_all(lambda p: "    raise NotImplementedError('no solution')\n")
bad = [(t, s, d) for t, s, d in res if s != 200 or d.get("passed") is not False]
ok(not bad, "all 164 bodies that only raise fail (%d passed or broke)" % len(bad),
   "\n".join("%s: %s %s" % (t, s, str(d)[:300]) for t, s, d in bad[:10]))
why = [t for t, s, d in res if s == 200 and "NotImplementedError" not in
       str((d.get("cases") or [{}])[0].get("error"))]
ok(not why, "each fails with the NotImplementedError it raised", why[:10])
done()
