// mcp_sdk_modern.mjs: the official v2 MCP TypeScript client (@modelcontextprotocol/client) against
// the real stack over HTTPS with a token, in its "auto" version negotiation: it must settle on
// protocol 2026-07-28 through server/discover (no initialize), then list and call tools with the
// per-request _meta and the mirrored MCP-Protocol-Version/Mcp-Method/Mcp-Name headers it sends.
// A "legacy" client of the same package checks the 2025 path. Run by mcp_sdk.t.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

let n = 0;
let failed = 0;
function ok(cond, desc, diag) {
  n++;
  console.log(`${cond ? 'ok' : 'not ok'} ${n} - ${desc}`);
  if (!cond) {
    failed++;
    if (diag !== undefined)
      for (const l of String(diag instanceof Error ? diag.stack : JSON.stringify(diag, null, 1)).split('\n').slice(0, 30))
        console.log(`#   ${l}`);
  }
  return cond;
}

async function connect(mode, token) {
  const transport = new StreamableHTTPClientTransport(new URL(process.env.SBX_URL + '/mcp'), {
    requestInit: { headers: { Authorization: 'Bearer ' + token } },
  });
  const client = new Client({ name: 'sbx-sdk-v2-test', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(transport);
  return client;
}

async function attempt(f) {
  try {
    return await f();
  } catch (e) {
    return { thrown: e };
  }
}

for (const mode of ['auto', 'legacy']) {
  const client = await attempt(() => connect(mode, process.env.SBX_TOKEN));
  if (!ok(!client.thrown, `${mode}: connect`, client.thrown)) continue;
  const version = client.getNegotiatedProtocolVersion?.();
  if (mode === 'auto') ok(version === '2026-07-28', 'auto: negotiates 2026-07-28 (server/discover)', version);
  else ok(version === '2025-11-25', 'legacy: negotiates 2025-11-25 (initialize)', version);
  const list = await attempt(() => client.listTools());
  ok(!list.thrown && list.tools?.length === 8, `${mode}: listTools`, list.thrown ?? list);
  let r = await attempt(() => client.callTool({ name: 'execute', arguments: { language: 'python', code: "print('v2')" } }));
  ok(!r.thrown && r.structuredContent?.stdout === 'v2\n' && r.isError === false, `${mode}: callTool execute`, r.thrown ?? r);
  r = await attempt(() => client.callTool({ name: 'write_file', arguments: { path: 'a.txt', content: 'kept' } }));
  const sid = r.structuredContent?.session_id;
  ok(!r.thrown && sid, `${mode}: write_file returns a session id`, r.thrown ?? r);
  r = await attempt(() => client.callTool({ name: 'read_file', arguments: { session_id: sid, path: 'a.txt' } }));
  ok(!r.thrown && r.structuredContent?.content === 'kept', `${mode}: read_file in the same session`, r.thrown ?? r);
  r = await attempt(() => client.callTool({ name: 'run_command', arguments: { session_id: sid, cmd: 'exit 7' } }));
  ok(!r.thrown && r.isError === true && r.structuredContent?.exit_code === 7, `${mode}: a failing command is isError`, r.thrown ?? r);
  r = await attempt(() => client.callTool({ name: 'no_such_tool', arguments: {} }));
  ok(r.thrown !== undefined || r.isError === true, `${mode}: an unknown tool is refused`, r);
  await client.close();
}
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
