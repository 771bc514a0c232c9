// snippets.js: "Copy this run as curl / Python / JavaScript": the request the Run button would
// send (route, language, code or files, stdin, args, limits) as a program to paste elsewhere.
// The token is never in the text: each snippet reads it from the SBX_TOKEN environment variable.

const TITLES = { curl: 'curl (shell)', python: 'Python 3 (standard library only)', javascript: 'JavaScript (Node 18+)' };

/** A loopback host: the development stack, whose certificate is self-signed. */
function isLoopback(url) {
  const host = new URL(url).hostname;
  return host === 'localhost' || host === '[::1]' || /^127\./.test(host);
}

function curl(url, body, insecure) {
  // A quoted here-document: the shell expands nothing in the JSON, whatever the code holds.
  // JSON.stringify escapes newlines inside strings, so no line of the body can be "JSON" alone.
  return [
    '# The token is read from $SBX_TOKEN: export SBX_TOKEN=<your token> first.',
    ...(insecure ? ['# -k: the development stack\'s certificate is self-signed (drop it in production).'] : []),
    `curl -sS${insecure ? ' -k' : ''} -X POST '${url}' \\`,
    '  -H "Authorization: Bearer $SBX_TOKEN" \\',
    "  -H 'Content-Type: application/json' \\",
    "  --data-binary @- <<'JSON'",
    JSON.stringify(body, null, 2),
    'JSON',
    '',
  ].join('\n');
}

function python(url, body, insecure) {
  // The body holds only strings, numbers, lists and objects: its JSON is a Python literal too.
  return [
    '# The token is read from $SBX_TOKEN: export SBX_TOKEN=<your token> first.',
    'import json',
    'import os',
    ...(insecure ? ['import ssl'] : []),
    'import sys',
    'import urllib.error',
    'import urllib.request',
    '',
    `body = ${JSON.stringify(body, null, 4)}`,
    '',
    'request = urllib.request.Request(',
    `    ${JSON.stringify(url)},`,
    '    data=json.dumps(body).encode(),',
    '    headers={"Authorization": "Bearer " + os.environ["SBX_TOKEN"],',
    '             "Content-Type": "application/json"},',
    ')',
    ...(insecure ? ["# The development stack's certificate is self-signed (verify it in production).",
      'context = ssl._create_unverified_context()'] : []),
    'try:',
    `    with urllib.request.urlopen(request${insecure ? ', context=context' : ''}) as response:`,
    '        result = json.load(response)',
    'except urllib.error.HTTPError as e:',
    '    sys.exit(f"HTTP {e.code}: {e.read().decode()}")',
    'print("status:", result["status"], "exit code:", result.get("exit_code"))',
    'print(result.get("stdout") or "", end="")',
    'print(result.get("stderr") or "", end="", file=sys.stderr)',
    '',
  ].join('\n');
}

function javascript(url, body, insecure) {
  return [
    '// Save as run.mjs and run with Node 18+ (or use the fetch call in a page of the same origin).',
    '// The token is read from $SBX_TOKEN: export SBX_TOKEN=<your token> first.',
    ...(insecure ? ["// The development stack's certificate is self-signed: run with NODE_TLS_REJECT_UNAUTHORIZED=0",
      '// (never in production).'] : []),
    `const body = ${JSON.stringify(body, null, 2)};`,
    '',
    `const response = await fetch(${JSON.stringify(url)}, {`,
    '  method: "POST",',
    '  headers: {',
    '    Authorization: `Bearer ${process.env.SBX_TOKEN}`,',
    '    "Content-Type": "application/json",',
    '  },',
    '  body: JSON.stringify(body),',
    '});',
    'const result = await response.json();',
    'if (!response.ok) throw new Error(`HTTP ${response.status}: ${result.error?.message}`);',
    'console.log("status:", result.status, "exit code:", result.exit_code);',
    'process.stdout.write(result.stdout ?? "");',
    'process.stderr.write(result.stderr ?? "");',
    '',
  ].join('\n');
}

const MAKERS = { curl, python, javascript };

/** {title, text} of the snippet of kind ('curl' | 'python' | 'javascript') for POST url with body. */
export function snippet(kind, url, body) {
  const clean = JSON.parse(JSON.stringify(body)); // drops the fields left undefined
  return { title: TITLES[kind], text: MAKERS[kind](url, clean, isLoopback(url)) };
}
