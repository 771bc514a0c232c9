"""health_probe.py SECONDS INTERVAL OUT: GET /v1/health every INTERVAL seconds for SECONDS over one
keep-alive HTTPS connection, then write {"ms": [...], "at": [...], "fail": [...]} to OUT as JSON
(at: each probe's start, CLOCK_MONOTONIC seconds). A process of
its own, so that what it times is the service, not a load generator's busy event loop in the same
process (reliability_load.py starts it next to its load)."""
import json
import os
import sys
import time

import httpx

seconds, interval, out = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
ms, at, fail = [], [], []
end = time.monotonic() + seconds
with httpx.Client(base_url=os.environ["SBX_URL"], verify=False, timeout=30) as cl:
    while time.monotonic() < end:
        t0 = time.monotonic()
        try:
            r = cl.get("/v1/health")
            dt = (time.monotonic() - t0) * 1000
            if r.status_code == 200 and r.json().get("status") == "ok":
                ms.append(dt)
                at.append(t0)
            else:
                fail.append(f"{r.status_code} {r.text[:100]}")
        except Exception as e:  # noqa: BLE001 (every failure is reported)
            fail.append(f"{type(e).__name__} {e}")
        time.sleep(max(0.0, interval - (time.monotonic() - t0)))
with open(out + ".tmp", "w") as f:
    json.dump({"ms": ms, "at": at, "fail": fail}, f)
os.rename(out + ".tmp", out)
