// mcp_cancel.mjs: a call cancelled through the official MCP TypeScript SDK (v1, 2025-11-25):
// callTool with an AbortSignal, aborted while the program runs, makes the SDK send
// notifications/cancelled; the run must stop (a file the program appends to every 0.1 s stops
// growing, its last line never comes), with and without progress (an SSE response), and the
// server keeps answering. Run by tests/integration/mcp_sdk_cancel.t under harness.sh --exec.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

let n = 0;
let failed = 0;
function ok(cond, desc, diag) {
  n++;
  console.log(`${cond ? 'ok' : 'not ok'} ${n} - ${desc}`);
  if (!cond) {
    failed++;
    if (diag !== undefined) console.log(`#   ${JSON.stringify(diag).slice(0, 400)}`);
  }
  return cond;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const auth = { Authorization: 'Bearer ' + process.env.SBX_TOKEN };

async function size(sid, path) {
  const r = await fetch(`${process.env.SBX_URL}/v1/sessions/${sid}/files/${path}`, { headers: auth });
  return r.status === 200 ? (await r.arrayBuffer()).byteLength : -1;
}
async function growing(sid, path) {
  let first = -1;
  for (const end = Date.now() + 30000; Date.now() < end; await sleep(300)) {
    const s = await size(sid, path);
    if (s > 0 && first < 0) first = s;
    else if (first > 0 && s > first) return true;
  }
  return false;
}
// The file stops growing for 3 s within 20 s (the program would write for 25 s).
async function stopped(sid, path) {
  let last = await size(sid, path), since = Date.now();
  for (const end = Date.now() + 20000; Date.now() < end;) {
    await sleep(500);
    const s = await size(sid, path);
    if (s !== last) { last = s; since = Date.now(); } else if (Date.now() - since >= 3000) return true;
  }
  return false;
}
const program = (path) => `import time\nfor i in range(250):\n    open('${path}', 'a').write('beat\\n')\n    time.sleep(0.1)\nopen('${path}.done', 'w').write('done')\n`;

const transport = new StreamableHTTPClientTransport(new URL(process.env.SBX_URL + '/mcp'), {
  requestInit: { headers: auth },
});
const client = new Client({ name: 'sbx-sdk-cancel', version: '1.0.0' });
await client.connect(transport);
const made = await client.callTool({ name: 'create_session', arguments: {} });
const sid = made.structuredContent?.session_id;
ok(typeof sid === 'string' && sid.length > 0, 'a session through the SDK', made);

for (const progress of [false, true]) {
  const what = progress ? 'with progress (SSE)' : 'plain JSON';
  const path = progress ? 'sse.txt' : 'plain.txt';
  const ctl = new AbortController();
  const opts = { signal: ctl.signal, timeout: 60000 };
  if (progress) opts.onprogress = () => {};
  const call = client.callTool({ name: 'execute', arguments: {
    language: 'python', session_id: sid, code: program(path), limits: { wall_ms: 40000, cpu_ms: 30000 } } },
  undefined, opts).then(() => 'resolved', (e) => e);
  ok(await growing(sid, path), `${what}: the program runs`);
  ctl.abort('the test cancels it');
  const outcome = await call;
  ok(outcome instanceof Error, `${what}: the aborted callTool rejects`, String(outcome));
  ok(await stopped(sid, path), `${what}: notifications/cancelled from the SDK stops the run`);
  ok(await size(sid, path + '.done') === -1, `${what}: the program never reached its end`);
}

const after = await client.callTool({ name: 'execute', arguments: { language: 'python', code: 'print(1)' } });
ok(after.structuredContent?.stdout === '1\n', 'the server still answers', after);
await client.close();
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
