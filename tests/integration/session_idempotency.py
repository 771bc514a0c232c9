"""session_idempotency.py: Idempotency-Key on POST /v1/sessions and fork, through the real stack:
a retry with the same key returns the same 201 and id and creates nothing; the same key with
another request is 422 idempotency_key_reused; keys are per client; a bad key is 400; without
the header every POST creates. Run by session_idempotency.t under tests/lib/harness.sh --exec."""
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from sbx_http import ALICE, BOB, call, err  # noqa: E402
from tap import done, is_, ok  # noqa: E402


def count(token=ALICE):
    st, _, d = call("GET", "/v1/sessions", token=token)
    return len(d) if st == 200 else -1


n0 = count()
K = {"Idempotency-Key": "create-7f3a"}
st1, h1, d1 = call("POST", "/v1/sessions", headers=K)
ok(st1 == 201 and d1.get("id"), "a create with an Idempotency-Key: 201 with an id", d1)
st2, h2, d2 = call("POST", "/v1/sessions", headers=K)
is_((st2, d2), (st1, d1), "the same key again: the same status and body (same id)")
is_(h2.get("idempotent-replayed"), "true", "... marked Idempotent-Replayed: true")
is_(count(), n0 + 1, "... and only one session was created")

st, _, d = call("POST", "/v1/sessions", body={"nope": 1}, headers=K)
ok(st == 422 and err(d).get("code") == "idempotency_key_reused",
   "the same key with another body: 422 idempotency_key_reused", d)
st, _, d = call("POST", f"/v1/sessions/{d1['id']}/fork", headers=K)
ok(st == 422 and err(d).get("code") == "idempotency_key_reused",
   "the same key on another route: 422 too", d)

nb = count(BOB)
st, _, d = call("POST", "/v1/sessions", headers=K, token=BOB)
ok(st == 201 and d.get("id") and d["id"] != d1["id"],
   "bob with alice's key gets his own new session, never hers", d)
is_(count(BOB), nb + 1, "... counted in bob's sessions")
st, _, d = call("GET", f"/v1/sessions/{d1['id']}", token=BOB)
is_(st, 404, "... and alice's session is still not bob's")

F = {"Idempotency-Key": "fork-1"}
st1, _, f1 = call("POST", f"/v1/sessions/{d1['id']}/fork", headers=F)
st2, _, f2 = call("POST", f"/v1/sessions/{d1['id']}/fork", headers=F)
ok(st1 == 201 and (st2, f2) == (st1, f1) and f1["id"] != d1["id"],
   "fork: a retry with the same key returns the same new id", (f1, f2))
is_(count(), n0 + 2, "... one fork was made")

st, _, _ = call("POST", "/v1/sessions")
st, _, _ = call("POST", "/v1/sessions")
is_(count(), n0 + 4, "without the header, each POST creates")

st, _, d = call("POST", "/v1/sessions", headers={"Idempotency-Key": "x" * 256})
ok(st == 400 and err(d).get("field") == "Idempotency-Key", "a key over 255 characters: 400", d)

st, _, d = call("POST", "/v1/sessions", body={"bad": 1}, headers={"Idempotency-Key": "fails"})
is_(st, 400, "a create that fails (400) with a key ...")
st, _, d = call("POST", "/v1/sessions", headers={"Idempotency-Key": "fails"})
is_(st, 201, "... is not kept: the key then serves a request that succeeds")
n1 = count()

# Racing retries: one creates, the others wait for it and replay its answer.
answers = []


def post():
    answers.append(call("POST", "/v1/sessions", headers={"Idempotency-Key": "race"}))


threads = [threading.Thread(target=post) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
ids = {a[2].get("id") for a in answers if a[0] == 201}
ok(len(answers) == 4 and all(a[0] == 201 for a in answers) and len(ids) == 1,
   "4 racing requests with one key: all 201 with one id", [a[:1] + (a[2],) for a in answers])
is_(count(), n1 + 1, "... and one session")
done()
