"""sbx_http.py: one HTTPS request to the harness's stack with the standard library, for Python
integration tests run under tests/lib/harness.sh --exec (SBX_URL, SBX_TOKEN, SBX_TOKEN2)."""
import http.client
import json
import os
import ssl
import urllib.parse

URL = urllib.parse.urlparse(os.environ.get("SBX_URL", "https://127.0.0.1:1"))
ALICE = os.environ.get("SBX_TOKEN", "")
BOB = os.environ.get("SBX_TOKEN2", "")
CTX = ssl.create_default_context()
CTX.check_hostname = False
CTX.verify_mode = ssl.CERT_NONE


def call(method, path, body=None, token=ALICE, headers=None, timeout=120):
    """(status, {lower-case header: value}, parsed JSON or raw bytes). A dict/list body is sent as
    JSON, a str as given with Content-Type application/json, bytes as given."""
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
    try:
        return r.status, hdrs, json.loads(raw)
    except ValueError:
        return r.status, hdrs, raw


def err(doc):
    """The error object of an envelope ({} when doc is none)."""
    return doc.get("error", {}) if isinstance(doc, dict) else {}
