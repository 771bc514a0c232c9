// mcp_sdk.mjs: the official MCP TypeScript SDK (its Streamable HTTP client) against the real
// stack over HTTPS with a token: connect (initialize), list the tools, call every one, keep files
// across calls through the session id, a failing program as isError, a bad argument as an error.
// The client validates every structuredContent against the tool's outputSchema with Ajv in its
// JSON Schema 2020-12 mode; the schemas themselves are compiled by Ajv2020 too. Run by
// tests/integration/mcp_sdk.t under tests/lib/harness.sh --exec.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import Ajv2020Module from 'ajv/dist/2020.js';

const Ajv2020 = Ajv2020Module.default ?? Ajv2020Module;
let n = 0;
let failed = 0;
function ok(cond, desc, diag) {
  n++;
  console.log(`${cond ? 'ok' : 'not ok'} ${n} - ${desc}`);
  if (!cond) {
    failed++;
    if (diag !== undefined)
      for (const l of JSON.stringify(diag, null, 1).split('\n').slice(0, 30)) console.log(`#   ${l}`);
  }
  return cond;
}

function connect(token) {
  const transport = new StreamableHTTPClientTransport(new URL(process.env.SBX_URL + '/mcp'), {
    requestInit: { headers: { Authorization: 'Bearer ' + token } },
  });
  const client = new Client({ name: 'sbx-sdk-test', version: '1.0.0' }, {
    jsonSchemaValidator: new AjvJsonSchemaValidator(new Ajv2020({ strict: false, allErrors: true })),
  });
  return client.connect(transport).then(() => client);
}

const client = await connect(process.env.SBX_TOKEN);
ok(client.getServerVersion()?.name === 'sbx', 'connect: initialize over Streamable HTTP, serverInfo', client.getServerVersion());
ok(client.getServerCapabilities()?.tools !== undefined, 'server capabilities include tools');

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
ok(JSON.stringify(names) === JSON.stringify(['create_session', 'evaluate', 'execute', 'list_files', 'python', 'read_file', 'run_command', 'write_file']),
  'listTools: the eight tools', names);
const ajv = new Ajv2020({ strict: true, allErrors: true });
for (const t of tools) {
  let good = true;
  try {
    ajv.compile(t.inputSchema);
    ajv.compile(t.outputSchema);
  } catch (e) {
    good = false;
    console.log(`# ${t.name}: ${e.message}`);
  }
  ok(good, `${t.name}: inputSchema and outputSchema compile under Ajv2020 (strict)`);
}

// callTool validates structuredContent against the outputSchema (and throws when it does not
// match); every call below goes through that check.
async function call(name, args) {
  try {
    return await client.callTool({ name, arguments: args });
  } catch (e) {
    return { thrown: e };
  }
}

let r = await call('execute', { language: 'python', code: 'print(6*7)' });
ok(!r.thrown && r.isError === false && r.structuredContent?.stdout === '42\n', 'execute python', r);
r = await call('execute', { language: 'cpp', code: '#include <iostream>\nint main(){std::cout<<"cpp\\n";}' });
ok(!r.thrown && r.structuredContent?.stdout === 'cpp\n', 'execute c++ (compiled)', r);
r = await call('execute', { language: 'python', code: 'raise SystemExit(4)' });
ok(!r.thrown && r.isError === true && r.structuredContent?.exit_code === 4, 'a failing program: isError true with its result', r);
r = await call('write_file', { path: 'state.txt', content: 'one\n' });
const sid = r.structuredContent?.session_id;
ok(!r.thrown && sid && r.structuredContent.created === true, 'write_file makes a session', r);
r = await call('run_command', { session_id: sid, cmd: 'echo two >> state.txt; cat state.txt' });
ok(!r.thrown && r.structuredContent?.stdout === 'one\ntwo\n', 'run_command keeps files across calls through session_id', r);
r = await call('execute', { session_id: sid, language: 'python', code: "open('plot.txt','w').write('3')" });
ok(!r.thrown && r.isError === false, 'execute in the session', r);
r = await call('list_files', { session_id: sid });
const paths = (r.structuredContent?.files ?? []).map((f) => f.path).sort();
ok(!r.thrown && paths.includes('plot.txt') && paths.includes('state.txt'), 'list_files', paths);
r = await call('read_file', { session_id: sid, path: 'state.txt' });
ok(!r.thrown && r.structuredContent?.content === 'one\ntwo\n' && r.content?.[0]?.type === 'text', 'read_file', r);
r = await call('evaluate', { code: 'def sq(x):\n    return x * x\n', entry_point: 'sq', io_cases: [{ input: 'x=3', output: '9' }] });
ok(!r.thrown && r.structuredContent?.passed === true && r.isError === false, 'evaluate', r);
r = await call('execute', { language: 'python' });
ok(r.thrown && r.thrown.code === -32602, 'a missing argument: McpError -32602', r.thrown?.message);
r = await call('no_such_tool', {});
ok(r.thrown && r.thrown.code === -32602, 'an unknown tool: McpError -32602', r.thrown?.message);

const bob = await connect(process.env.SBX_TOKEN2);
r = await bob.callTool({ name: 'read_file', arguments: { session_id: sid, path: 'state.txt' } }).catch((e) => ({ thrown: e }));
ok(!r.thrown && r.isError === true && !JSON.stringify(r).includes('one'), "another client cannot read the session", r);
await bob.close();
await client.close();
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
