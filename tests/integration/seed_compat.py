"""seed_compat.py: basic-code-exec's own Python client, used the way its README shows with only a
token added (the recipe of README.md, "The seed client"), against the real stack: `python
example.py`, FastAPI's "detail" in errors, the seed's path normalisation (inside the session
only), seed-route default limits under the client's timeout, and matplotlib in a run.

The client is mimicked, not embedded: ReplLike below behaves as that client does where it matters
here (a bare httpx.AsyncClient with no headers and a 10 s timeout, a fresh client per
evaluate_code call, errors read from resp.json()["detail"]).
Run by seed_compat.t under tests/lib/harness.sh --exec, which exports SBX_URL and the tokens."""
import asyncio
import os
import sys
import traceback
import uuid

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from tap import diag, done, is_, ok  # noqa: E402

URL = os.environ["SBX_URL"]
TOKEN = os.environ["SBX_TOKEN"]
ALICE = {"Authorization": "Bearer " + TOKEN}
CLIENT_TIMEOUT_S = 10.0  # ReplClient's default timeout
PNG = b"\x89PNG\r\n\x1a\n"

# The harness's self-signed certificate: the client verifies TLS, and httpx reads SSL_CERT_FILE.
CERT = os.path.join(os.environ.get("SBX_STATE_DIR", ""), "tls", "cert.pem")
if os.path.exists(CERT):
    os.environ["SSL_CERT_FILE"] = CERT


class ServerError(Exception):
    def __init__(self, message, status_code=None, details=None):
        super().__init__(f"{message} (status_code={status_code}, details={details})")
        self.status_code = status_code
        self.details = details


class ReplLike:
    """What the seed client does: no headers of its own, errors from "detail"."""

    def __init__(self, base_url, timeout=CLIENT_TIMEOUT_S):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(timeout=timeout))

    @staticmethod
    def _check(resp, what):
        if resp.status_code != 200:
            try:
                detail = resp.json().get("detail", "")
            except Exception:
                detail = resp.text
            raise ServerError(what, resp.status_code, detail)
        return resp.json()

    async def create_session(self):
        sid = str(uuid.uuid4())
        await self.write_file(sid, "placeholder.txt", "")
        return sid

    async def write_file(self, sid, rel_path, content):
        r = await self._client.post(f"{self.base_url}/write_file",
                                    json={"id": sid, "rel_path": rel_path, "content": content})
        return self._check(r, "Failed to write file")

    async def read_file(self, sid, rel_path):
        r = await self._client.get(f"{self.base_url}/read_file", params={"id": sid, "rel_path": rel_path})
        return self._check(r, "Failed to read file")

    async def delete_file(self, sid, rel_path):
        r = await self._client.post(f"{self.base_url}/delete_file", json={"id": sid, "rel_path": rel_path})
        return self._check(r, "Failed to delete file")

    async def rename_file(self, sid, old, new):
        r = await self._client.post(f"{self.base_url}/rename_file",
                                    json={"id": sid, "old_path": old, "new_path": new})
        return self._check(r, "Failed to rename file")

    async def run(self, sid, cmd):
        r = await self._client.post(f"{self.base_url}/run", json={"id": sid, "cmd": cmd})
        return self._check(r, "Failed to execute command")

    async def evaluate_code(self, sid, code, entry_point, io_cases):
        async with httpx.AsyncClient(timeout=httpx.Timeout(timeout=self.timeout)) as c:
            r = await c.post(f"{self.base_url}/evaluate_code",
                             json={"id": sid, "code": code, "entry_point": entry_point, "io_cases": io_cases})
            return self._check(r, "Failed to evaluate code")

    async def aclose(self):
        await self._client.aclose()


def install_token_recipe(token):
    """README.md's recipe, verbatim in spirit: every httpx.AsyncClient made after this carries
    the token (the client makes a new one per evaluate_code call, so patching its _client is not
    enough). Returns a function that undoes it."""
    base = httpx.AsyncClient

    class TokenClient(base):
        def __init__(self, *args, **kwargs):
            kwargs["headers"] = {"Authorization": f"Bearer {token}", **(kwargs.get("headers") or {})}
            super().__init__(*args, **kwargs)

    httpx.AsyncClient = TokenClient

    def undo():
        httpx.AsyncClient = base
    return undo


async def expect_error(coro):
    try:
        await coro
    except ServerError as e:
        return e
    return None


async def readme_example(client, raw, sid):
    # The README example, unchanged but for the token.
    await client.write_file(sid, "example.py", "print('Hello, REPL!')")
    res = await client.run(sid, "python example.py")
    if not os.path.exists("/usr/bin/python"):
        diag("no /usr/bin/python on the host: `make deps` installs python-is-python3 (PACKAGES)")
    is_(res.get("stdout"), "Hello, REPL!\n", "README example: `python example.py` runs in the sandbox")
    ev = await client.evaluate_code(sid, "def add(a, b): return a + b", "add",
                                    [{"input": "a=2, b=3", "output": "5"}])
    ok(ev.get("passed") is True, "README example: evaluate_code through the token recipe", ev)
    r = await client.delete_file(sid, "example.py")
    ok(r.get("success") is True, "README example: delete_file")


async def detail(client, raw, sid):
    # FastAPI's "detail" beside our envelope: the client reads nothing else.
    e = await expect_error(client.read_file(sid, "nothere.txt"))
    ok(e and e.status_code == 404 and isinstance(e.details, str) and "nothere.txt" in e.details,
       "a 404 reaches the client as detail naming the file", e)
    e = await expect_error(client.write_file(sid, "../x.txt", "x"))
    ok(e and e.status_code == 400 and isinstance(e.details, str) and "session" in e.details,
       "a 400 path reaches the client as detail saying why", e)
    e = await expect_error(client.write_file("a/b", "x.txt", "x"))
    ok(e and e.status_code == 400 and isinstance(e.details, str) and e.details,
       "a bad id reaches the client as detail", e)
    r = await raw.post("/run", json={"id": sid})
    j = r.json()
    ok(r.status_code == 400 and j.get("error", {}).get("code") and j.get("detail") == j["error"]["message"],
       "detail equals error.message and the envelope is kept", r.text)
    r = await raw.post("/run", content=b"{not json", headers={"Content-Type": "application/json"})
    ok(r.status_code == 400 and isinstance(r.json().get("detail"), str), "a malformed body has detail too", r.text)
    r = await raw.get(f"/v1/sessions/{uuid.uuid4()}")
    ok(r.status_code == 404 and "detail" not in r.json(), "/v1 errors are unchanged (no detail)", r.text)


async def paths(client, raw, sid):
    # The seed's path normalisation, inside the session only.
    for given, lands in (("./x.py", "x.py"), ("a//b.txt", "a/b.txt"), ("d/../e.txt", "e.txt"),
                         ("./f/./g//h.txt", "f/g/h.txt")):
        w = await expect_error(client.write_file(sid, given, given))
        r = await raw.get(f"/v1/sessions/{sid}/files/{lands}")
        ok(w is None and r.status_code == 200 and r.text == given,
           f"write_file {given!r} lands at {lands!r}", w or r.text)
    r = await client.read_file(sid, "./a//b.txt")
    ok(r.get("content") == "a//b.txt" and r.get("rel_path") == "a/b.txt",
       "read_file normalises and answers with the normalised path (as the seed did)", r)
    r = await client.rename_file(sid, "./x.py", "sub//y.py")
    ok(r.get("old_path") == "./x.py" and r.get("new_path") == "sub//y.py", "rename_file accepts both forms", r)
    r = await raw.get(f"/v1/sessions/{sid}/files/sub/y.py")
    ok(r.status_code == 200 and r.text == "./x.py", "and moved x.py to sub/y.py", r.text)
    e = await expect_error(client.delete_file(sid, "q/../e.txt"))
    r = await raw.get(f"/v1/sessions/{sid}/files/e.txt")
    ok(e is None and r.status_code == 404, "delete_file 'q/../e.txt' deletes e.txt", e)
    bad = []
    for p in ("../x", "d/../../x", "./..", "a/./../../x", ".", "./", "", "/etc/passwd", "//x"):
        e = await expect_error(client.write_file(sid, p, "x"))
        if not e or e.status_code != 400:
            bad.append(f"{p!r}: {e}")
        e = await expect_error(client.read_file(sid, p))
        if not e or e.status_code != 400:
            bad.append(f"read {p!r}: {e}")
    ok(not bad, "paths leaving the session (or empty, or absolute) are still 400", "\n".join(bad))
    await client.run(sid, "ln -s /etc lnk")
    e = await expect_error(client.read_file(sid, "./lnk/passwd"))
    ok(e and e.status_code == 404, "a symlink is still never followed after normalisation", e)
    r = await raw.put(f"/v1/sessions/{sid}/files/a//c.txt", content=b"x")
    is_(r.status_code, 400, "/v1 keeps its strict rules ('a//c.txt' is 400)")


async def wall(client, raw, sid):
    # Default wall under the client's timeout; partial output survives it.
    r = await raw.post("/run", json={"id": sid, "cmd": "echo partial; sleep 60"})
    j = r.json()
    ok(r.status_code == 200 and j.get("status") == "timeout" and j.get("stdout") == "partial\n",
       "a run that outlives the default wall returns its partial output", r.text[:300])
    ok(isinstance(j.get("wall_ms"), int) and j["wall_ms"] < CLIENT_TIMEOUT_S * 1000 - 1000,
       "the seed default wall limit ends the run well before the client's 10 s timeout",
       f"wall_ms={j.get('wall_ms')}")
    r = await raw.post("/run", json={"id": sid, "cmd": "sleep 9; echo late", "limits": {"wall_ms": 20000}})
    ok(r.status_code == 200 and r.json().get("stdout") == "late\n", "an explicit wall_ms still wins", r.text[:300])


async def matplotlib(client, raw, sid):
    # matplotlib in a run: a PNG saved into /work.
    plot = ("import matplotlib.pyplot as plt\n"
            "plt.plot([1, 2, 3], [1, 4, 9])\n"
            "plt.savefig('plot.png')\n"
            "print('saved')\n")
    await client.write_file(sid, "plot.py", plot)
    r = await raw.post("/run", json={"id": sid, "cmd": "python plot.py",
                                     "limits": {"wall_ms": 60000, "cpu_ms": 30000}})
    j = r.json()
    ok(r.status_code == 200 and j.get("status") == "ok" and j.get("stdout") == "saved\n",
       "a run plots with matplotlib", r.text[:1500])
    r = await raw.get(f"/v1/sessions/{sid}/files/plot.png")
    ok(r.status_code == 200 and r.content.startswith(PNG), "the saved file is a PNG",
       f"{r.status_code} {r.content[:16]!r}")


async def main():
    undo = install_token_recipe(TOKEN)
    client = ReplLike(URL)
    raw = httpx.AsyncClient(base_url=URL, verify=False, headers=ALICE, timeout=httpx.Timeout(timeout=120))
    try:
        sid = await client.create_session()
        for section in (readme_example, detail, paths, wall, matplotlib):
            # A section that raises is one failure, and the next section still runs.
            try:
                await section(client, raw, sid)
            except Exception:
                ok(False, f"{section.__name__}: the client raised", traceback.format_exc())
    finally:
        undo()
        await client.aclose()
        await raw.aclose()


asyncio.run(main())
done()
