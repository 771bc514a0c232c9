"""sbx_http.py: one HTTPS request to the harness's stack with the standard library, for Python
integration tests run under tests/lib/harness.sh --exec (SBX_URL, SBX_TOKEN, SBX_TOKEN2)."""
import base64
import http.client
import json
import os
import ssl
import time
import urllib.parse

URL = urllib.parse.urlparse(os.environ.get("SBX_URL", "https://127.0.0.1:1"))
ALICE = os.environ.get("SBX_TOKEN", "")
BOB = os.environ.get("SBX_TOKEN2", "")
CTX = ssl.create_default_context()
CTX.check_hostname = False
CTX.verify_mode = ssl.CERT_NONE


def call_raw(method, path, body=None, token=ALICE, headers=None, timeout=120):
    """(status, {lower-case header: value}, body bytes). A dict/list body is sent as JSON, a str
    as given with Content-Type application/json, bytes as given."""
    c = http.client.HTTPSConnection(URL.hostname, URL.port, context=CTX, timeout=timeout)
    h = dict(headers or {})
    if token:
        h["Authorization"] = "Bearer " + token
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        h.setdefault("Content-Type", "application/json")
    elif isinstance(body, str):
        body = body.encode()
        h.setdefault("Content-Type", "application/json")
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    raw = r.read()
    hdrs = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hdrs, raw


def call(method, path, body=None, token=ALICE, headers=None, timeout=120):
    """call_raw, its body parsed as JSON when it is JSON (else the raw bytes)."""
    st, hdrs, raw = call_raw(method, path, body, token, headers, timeout)
    try:
        return st, hdrs, json.loads(raw)
    except ValueError:
        return st, hdrs, raw


def err(doc):
    """The error object of an envelope ({} when doc is none)."""
    return doc.get("error", {}) if isinstance(doc, dict) else {}


class Stream:
    """A streamed request (NDJSON answer), its events read one line at a time, each with its
    arrival time in "_t" (time.monotonic). A line that is not an event (a server that answered
    the plain way) is shown as an end event {"type": "end", "not_streamed": <it>}."""

    def __init__(self, path, body, token=ALICE, timeout=180):
        self.c = http.client.HTTPSConnection(URL.hostname, URL.port, context=CTX,
                                             timeout=timeout)
        self.c.request("POST", path, body=json.dumps(body).encode(),
                       headers={"Authorization": "Bearer " + token,
                                "Content-Type": "application/json"})
        self.r = self.c.getresponse()
        self.status = self.r.status
        self.ctype = self.r.getheader("Content-Type", "")
        self.events = []

    def next(self):
        line = self.r.readline()
        if not line:
            return None
        ev = json.loads(line)
        if not isinstance(ev, dict) or "type" not in ev:
            ev = {"type": "end", "not_streamed": ev}
        ev["_t"] = time.monotonic()
        self.events.append(ev)
        return ev

    def until(self, pred):
        """Read until an event satisfies pred (returned) or the stream ends (None)."""
        while True:
            ev = self.next()
            if ev is None or pred(ev):
                return ev

    def rest(self):
        """Read to the end; the last event."""
        while self.next() is not None:
            pass
        return self.events[-1] if self.events else None

    def of(self, kind):
        return [e for e in self.events if e["type"] == kind]

    def text(self, kind, b64=False):
        """The data of every event of a kind, joined (decoded from base64 when b64)."""
        parts = [e["data"] for e in self.of(kind)]
        if b64:
            return b"".join(base64.b64decode(p) for p in parts)
        return "".join(parts)

    def close(self):
        self.c.close()
