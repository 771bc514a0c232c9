"""docs_split.py RAW.html OUTDIR: the API reference page redocly built (one HTML file, its scripts
inline) split for the site's Content-Security-Policy, which runs no inline script: each inline
<script> becomes a file of OUTDIR (docs-N.js, loaded by src, in the same order and with the same
type) and the page OUTDIR/index.html. Any script loaded from elsewhere is an error: the page must
work with no network (build-docs --inlineBundle). The renderer's own logo, which it would fetch
from its CDN (and hide when that fails), is made a data: URL that fails at once: no request leaves
the page."""
import re
import sys

raw, out = sys.argv[1], sys.argv[2]
html = open(raw, encoding="utf-8").read()
n = 0


def extract(m):
    global n
    attrs, body = m.group(1), m.group(2)
    if "src=" in attrs:
        sys.exit(f"docs_split.py: {raw} loads a script from elsewhere: <script{attrs}>")
    if re.search(r'type="application/(ld\+)?json"', attrs):
        return m.group(0)  # data, not code: the CSP leaves it alone
    n += 1
    name = f"docs-{n}.js"
    body = re.sub(r"https://cdn\.redoc\.ly/redoc/logo-mini(-full)?\.svg", "data:,", body)
    open(f"{out}/{name}", "w", encoding="utf-8").write(body)
    return f'<script{attrs} src="{name}"></script>'


html = re.sub(r"<script([^>]*)>(.*?)</script>", extract, html, flags=re.S)
if re.search(r'<(?:script|link)[^>]+(?:src|href)="(?:https?:)?//', html):
    sys.exit(f"docs_split.py: {raw} still loads something from another origin")
open(f"{out}/index.html", "w", encoding="utf-8").write(html)
