"""mcp_cluster.py: MCP through the multi-host front (run by mcp_cluster.t). Sessions made by
create_session land on any host; then python (state kept across calls), run_command, write_file,
read_file and execute with that session_id are each answered, by the session's host only (its
directory exists there and nowhere else), however the front spread the calls; some calls were
bounced (the front's access log shows two upstreams for them); calls without a session still
work; a call naming an unknown host's session is an isError result, not a hang or a 421."""
import json
import os
import re
import sys

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from tap import done, is_, ok  # noqa: E402

URL = os.environ["SBX_URL"]
MODERN = "2026-07-28"
HOSTS = os.environ["SBX_HOSTS"].split()
c = httpx.Client(base_url=URL, verify=False, timeout=120,
                 headers={"Authorization": "Bearer " + os.environ["SBX_TOKEN"],
                          "Accept": "application/json, text/event-stream"})
n = [0]


def tool(name, args):
    n[0] += 1
    body = {"jsonrpc": "2.0", "id": n[0], "method": "tools/call",
            "params": {"name": name, "arguments": args,
                       "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}}
    r = c.post("/mcp", content=json.dumps(body),
               headers={"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                        "Mcp-Name": name, "Content-Type": "application/json"})
    try:
        d = r.json()
    except ValueError:
        d = {"raw": r.text[:300]}
    return r.status_code, d.get("result") or d


def where(sid):
    return [h for h in HOSTS
            if os.path.isdir(os.path.join(os.environ["MCP_STATE_" + h], "sessions", "u-alice",
                                          sid))]


sessions = []
for i in range(3):
    st, res = tool("create_session", {})
    sid = (res.get("structuredContent") or {}).get("session_id", "")
    ok(st == 200 and re.match(r"^h[123]-[0-9a-f-]{36}$", sid), f"create_session {i}: {sid}", res)
    sessions.append(sid)

for sid in sessions:
    host = sid.split("-", 1)[0]
    is_(where(sid), [host], f"{sid}: its directory is on host {host} only")
    st, res = tool("python", {"session_id": sid, "code": "n = 0"})
    ok(st == 200 and res.get("isError") is False, f"{host}: python n = 0", res)
    got = []
    for k in range(6):
        st, res = tool("python", {"session_id": sid, "code": "n += 1\nprint(n)"})
        got.append((st, (res.get("structuredContent") or {}).get("stdout")))
    is_(got, [(200, f"{k}\n") for k in range(1, 7)],
        f"{host}: six python calls, every one answered, the state kept")
    outs = []
    for k in range(4):
        st, res = tool("run_command", {"session_id": sid,
                                       "cmd": "echo hi >> log.txt; wc -l < log.txt"})
        outs.append((res.get("structuredContent") or {}).get("stdout", "").strip())
    is_(outs, ["1", "2", "3", "4"], f"{host}: run_command four times on the same files")
    st, res = tool("write_file", {"session_id": sid, "path": "w.txt", "content": "from mcp"})
    ok(res.get("isError") is False, f"{host}: write_file", res)
    st, res = tool("read_file", {"session_id": sid, "path": "w.txt"})
    is_((res.get("structuredContent") or {}).get("content"), "from mcp", f"{host}: read_file")
    st, res = tool("execute", {"session_id": sid, "language": "python",
                               "code": "print(open('log.txt').read().count('hi'))"})
    is_((res.get("structuredContent") or {}).get("stdout"), "4\n",
        f"{host}: execute with session_id sees the session's files")
    is_(where(sid), [host], f"{sid}: still on host {host} only")

# The same tools through POST /v1/tools/{name} (function-calling glue): routed the same way.
for sid in sessions:
    host = sid.split("-", 1)[0]
    got = []
    for k in range(4):
        r = c.post("/v1/tools/python", json={"session_id": sid, "code": "n += 1\nprint(n)"})
        got.append((r.status_code, ((r.json() if r.status_code == 200 else {})
                                    .get("structuredContent") or {}).get("stdout")))
    is_(got, [(200, f"{k}\n") for k in range(7, 11)],
        f"{host}: POST /v1/tools/python four times, each answered by the session's host")

st, res = tool("execute", {"language": "python", "code": "print(1)"})
is_((res.get("structuredContent") or {}).get("stdout"), "1\n", "a call without a session")

st, res = tool("list_files", {"session_id": "h9-00000000-0000-4000-8000-000000000000"})
ok(st == 200 and res.get("isError") is True,
   "a session id naming no host: an isError result (the seed host has no such session)",
   (st, res))

log = open(os.environ["MCP_ACCESS_LOG"]).read().splitlines()
mcp = [ln for ln in log if 'path="/mcp"' in ln]
bounced = [ln for ln in mcp if re.search(r"upstream=\S+ : \S+", ln)]
viatools = [ln for ln in log if 'path="/v1/tools/python"' in ln]
ok(any(re.search(r"upstream=\S+ : \S+", ln) for ln in viatools),
   f"some /v1/tools calls were passed on too ({len(viatools)} logged)", "\n".join(viatools[:5]))
ok(len(mcp) >= 40, f"the front logged the /mcp calls ({len(mcp)})")
ok(bounced, f"some calls reached a host that passed them on ({len(bounced)} of {len(mcp)})",
   "\n".join(mcp[:5]))
done()
