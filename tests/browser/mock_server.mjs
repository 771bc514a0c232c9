// mock_server.mjs: a DEV AID ONLY: serves www/ and imitates the API shapes of API.md (runs code
// unsandboxed on the host!) so the page can be worked on before the real stack is up. The tests
// never use it: they go through tests/lib/harness.sh. Usage: node tests/browser/mock_server.mjs [port]
// Token: "dev-token". Never expose it beyond loopback.
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';

const WWW = path.resolve(new URL('../../www', import.meta.url).pathname);
const PORT = Number(process.argv[2] || 8099);
const TOKEN = 'dev-token';
// The same policy as nginx/sbx-static.conf.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
  "connect-src 'self'; worker-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };
const ROOT = fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-mock-'));
const sessions = new Map(); // id -> {created, used}
const LANGS = [
  { id: 'python', version: '3.11.2', aliases: ['py', 'python3'], compiled: false, file: 'main.py', run: (f) => ['python3', '-u', f] },
  { id: 'bash', version: '5.2.15', aliases: ['sh'], compiled: false, file: 'main.sh', run: (f) => ['bash', f] },
  { id: 'node', version: '20.19.2', aliases: ['javascript', 'js'], compiled: false, file: 'main.js', run: (f) => ['node', f] },
  { id: 'c', version: '12.2.0', aliases: ['gcc'], compiled: true, file: 'main.c', cc: ['gcc', '-O2', '-o', 'main'], run: () => ['./main'] },
  { id: 'cpp', version: '12.2.0', aliases: ['c++'], compiled: true, file: 'main.cpp', cc: ['g++', '-O2', '-o', 'main'], run: () => ['./main'] },
];

function send(res, status, body, headers = {}) {
  const json = body === null ? '' : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(json);
}
const fail = (res, status, code, message, field, headers) =>
  send(res, status, { error: { code, message, ...(field ? { field } : {}) } }, headers);

function runIn(dir, argv, stdin = '') {
  const t0 = Date.now();
  const r = spawnSync(argv[0], argv.slice(1), { cwd: dir, input: stdin, timeout: 10000, maxBuffer: 1 << 20 });
  const cut = (b) => (b || Buffer.alloc(0)).toString('utf8');
  const out = cut(r.stdout), err = cut(r.stderr);
  const timedOut = r.error && r.error.code === 'ETIMEDOUT';
  return {
    status: timedOut ? 'timeout' : r.signal ? 'signal' : r.status === 0 ? 'ok' : 'error',
    ...(timedOut ? { limit: 'wall' } : {}),
    exit_code: r.signal ? null : r.status, signal: timedOut ? null : r.signal,
    stdout: out.slice(0, 65536), stderr: err.slice(0, 65536),
    stdout_truncated: out.length > 65536, stderr_truncated: err.length > 65536,
    wall_ms: Date.now() - t0, cpu_ms: Math.round((Date.now() - t0) * 0.8), memory_kb: 9012,
  };
}

function execute(dir, body) {
  const lang = LANGS.find((l) => l.id === body.language || l.aliases.includes(body.language));
  if (!lang) return [400, { error: { code: 'unknown_language', message: `No language "${body.language}".`, field: 'language' } }];
  let file = lang.file;
  if (body.files && body.files.length) {
    for (const f of body.files) fs.writeFileSync(path.join(dir, f.name), f.content);
    file = body.files[0].name;
  } else fs.writeFileSync(path.join(dir, file), body.code || '');
  let compile;
  if (lang.cc) {
    compile = runIn(dir, [...lang.cc, file]);
    if (compile.status !== 'ok') return [200, { ...compile, stage: 'compile', compile }];
  }
  return [200, { ...runIn(dir, lang.run(file), body.stdin || ''), ...(compile ? { compile } : {}) }];
}

function evaluate(dir, body) {
  const cases = [];
  const list = body.io_cases || body.cases || [];
  list.forEach((c, index) => {
    let r, got, expected, passed;
    if (body.io_cases) {
      const prog = `${body.code}\nimport sys\nr = ${body.entry_point}(**dict(${c.input}))\nprint(repr(r))\nprint(r == (${c.output}), file=sys.stderr)`;
      fs.writeFileSync(path.join(dir, 'eval.py'), prog);
      r = runIn(dir, ['python3', 'eval.py']);
      got = r.stdout.trim(); expected = c.output;
      passed = r.status === 'ok' && r.stderr.trim().endsWith('True');
    } else {
      r = execute(dir, { ...body, stdin: c.stdin })[1];
      got = r.stdout; expected = c.expected_stdout;
      const norm = (s) => s.split('\n').map((l) => l.trimEnd()).join('\n').replace(/\n+$/, '');
      passed = r.status === 'ok' && norm(got) === norm(expected);
    }
    cases.push({ index, passed, status: r.status, got, expected,
      error: r.status === 'ok' ? null : r.stderr, stdout: r.stdout, stderr: r.stderr,
      wall_ms: r.wall_ms, cpu_ms: r.cpu_ms, memory_kb: r.memory_kb });
  });
  const passedCount = cases.filter((c) => c.passed).length;
  return { passed: passedCount === cases.length, passed_count: passedCount, total: cases.length, cases };
}

// Runs (API.md "Runs"): "stream": true answers NDJSON as the program writes; a run's id takes stdin
// and signals; a session's background commands keep their output for cursor reads.
const runs = new Map(); // run_id -> {proc, sid, cmd, out: {stdout, stderr}, result, waiters}

function liveRun(dir, argv, body, res, sid) {
  const id = crypto.randomBytes(16).toString('hex');
  const t0 = Date.now();
  const proc = spawn(argv[0], argv.slice(1), { cwd: dir, stdio: ['pipe', 'pipe', 'pipe'] });
  const run = { proc, sid, out: { stdout: '', stderr: '' }, result: null, interactive: Boolean(body.interactive) };
  runs.set(id, run);
  res.writeHead(200, { 'Content-Type': 'application/x-ndjson', 'X-Accel-Buffering': 'no' });
  const ev = (o) => res.write(JSON.stringify(o) + '\n');
  ev({ type: 'start', run_id: id });
  if (body.stdin) proc.stdin.write(body.stdin);
  if (!body.interactive) proc.stdin.end();
  for (const name of ['stdout', 'stderr']) {
    proc[name].on('data', (d) => { run.out[name] += d; ev({ type: name, data: d.toString('utf8') }); });
  }
  const keep = setInterval(() => ev({ type: 'keepalive' }), 5000);
  const timer = setTimeout(() => proc.kill('SIGKILL'), (body.limits && body.limits.wall_ms) || 10000);
  proc.on('close', (code, signal) => {
    clearInterval(keep);
    clearTimeout(timer);
    runs.delete(id);
    ev({ type: 'end', run_id: id, status: signal ? 'signal' : code === 0 ? 'ok' : 'error', exit_code: signal ? null : code,
      signal, stdout: run.out.stdout, stderr: run.out.stderr, stdout_truncated: false, stderr_truncated: false,
      wall_ms: Date.now() - t0, cpu_ms: 1, memory_kb: 9000 });
    res.end();
  });
}

function runRoute(res, req, url, raw) {
  const m = url.pathname.match(/^\/v1\/runs\/([0-9a-f]+)\/(stdin|signal)$/);
  const run = m && runs.get(m[1]);
  if (!run) return fail(res, 404, 'not_found', 'No such run.');
  if (m[2] === 'signal') {
    const sig = JSON.parse(raw || '{}').signal;
    if (!['SIGINT', 'SIGTERM', 'SIGKILL'].includes(sig)) return fail(res, 400, 'bad_signal', 'SIGINT, SIGTERM or SIGKILL.', 'signal');
    run.proc.kill(sig);
    return send(res, 200, { signal: sig });
  }
  if (!run.interactive || run.proc.stdin.writableEnded) return fail(res, 409, 'stdin_closed', 'This run\'s stdin is closed.');
  run.proc.stdin.write(raw);
  if (url.searchParams.get('eof') === '1') run.proc.stdin.end();
  return send(res, 200, { bytes: raw.length });
}

const bgRuns = new Map(); // run_id -> {sid, cmd, proc, out: {stdout: Buffer, stderr: Buffer}, result, waiters}
function bgRoute(res, req, url, sid, rest, body) {
  const dir = path.join(ROOT, sid);
  if (rest === '/runs' && req.method === 'POST') {
    const id = crypto.randomBytes(16).toString('hex');
    const t0 = Date.now();
    const proc = spawn('/bin/sh', ['-c', body.cmd], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    const r = { sid, cmd: body.cmd, proc, out: { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) }, result: null, waiters: [], started_at: new Date().toISOString() };
    const wake = () => { const w = r.waiters; r.waiters = []; w.forEach((f) => f()); };
    for (const name of ['stdout', 'stderr']) proc[name].on('data', (d) => { r.out[name] = Buffer.concat([r.out[name], d]); wake(); });
    proc.on('close', (code, signal) => {
      r.result = { status: signal ? 'signal' : code === 0 ? 'ok' : 'error', exit_code: signal ? null : code, signal, wall_ms: Date.now() - t0 };
      wake();
    });
    bgRuns.set(id, r);
    return send(res, 202, { run_id: id });
  }
  const view = (id, r) => ({ run_id: id, started_at: r.started_at, state: r.result ? 'ended' : 'running', ...(r.result || {}) });
  if (rest === '/runs') return send(res, 200, { runs: [...bgRuns.entries()].filter(([, r]) => r.sid === sid).map(([id, r]) => view(id, r)) });
  const m = rest.match(/^\/runs\/([0-9a-f]+)(\/output)?$/);
  const r = m && bgRuns.get(m[1]);
  if (!r || r.sid !== sid) return fail(res, 404, 'not_found', 'No such run.');
  if (!m[2] && req.method === 'DELETE') { r.proc.kill('SIGKILL'); return send(res, 204, null); }
  if (!m[2]) return send(res, 200, view(m[1], r));
  const stream = url.searchParams.get('stream') === 'stderr' ? 'stderr' : 'stdout';
  const cursor = Number(url.searchParams.get('cursor') || 0);
  const answer = () => {
    const bytes = r.out[stream].subarray(cursor);
    res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Sbx-Cursor': String(cursor + bytes.length),
      'Sbx-Ended': r.result ? '1' : '0' });
    res.end(bytes);
  };
  if (r.out[stream].length > cursor || r.result) return answer();
  const t = setTimeout(() => { r.waiters = r.waiters.filter((f) => f !== go); answer(); }, Math.min(Number(url.searchParams.get('wait_ms') || 0), 30000));
  const go = () => { clearTimeout(t); answer(); };
  r.waiters.push(go);
  return undefined;
}

// Contexts: the project's kernel (sandbox/kernel/sbx_kernel.py, or $SBX_KERNEL) run UNSANDBOXED,
// one process per context, spoken to as the broker's holder does (CONTEXTS.md section 2): fd 3 a
// socket of JSON lines, each request's output on fds 1 and 2 ended by "\0<marker>\0".
const contexts = new Map(); // cid -> {sid, language, created, proc, busy, count, call}
const KERNEL = process.env.SBX_KERNEL || path.join(WWW, '../sandbox/kernel/sbx_kernel.py');

function startKernel(ctx) {
  ctx.proc = spawn('python3', [KERNEL, ctx.language], { cwd: path.join(ROOT, ctx.sid),
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
  const bufs = { out: Buffer.alloc(0), err: Buffer.alloc(0), ctl: '' };
  let pending = null; // {marker, out, err, reply, resolve}
  const settle = () => {
    if (!pending || pending.out === null || pending.err === null || pending.reply === null) return;
    const p = pending;
    pending = null;
    p.resolve(p);
  };
  const stream = (name) => (d) => {
    bufs[name] = Buffer.concat([bufs[name], d]);
    if (!pending || pending[name] !== null) return;
    const at = bufs[name].indexOf(`\0${pending.marker}\0`);
    if (at < 0) return;
    pending[name] = bufs[name].subarray(0, at).toString('utf8');
    bufs[name] = bufs[name].subarray(at + pending.marker.length + 2);
    settle();
  };
  ctx.proc.stdout.on('data', stream('out'));
  ctx.proc.stderr.on('data', stream('err'));
  ctx.proc.stdio[3].on('data', (d) => {
    bufs.ctl += d;
    let i;
    while ((i = bufs.ctl.indexOf('\n')) >= 0) {
      const msg = JSON.parse(bufs.ctl.slice(0, i));
      bufs.ctl = bufs.ctl.slice(i + 1);
      if (msg.op !== 'ready' && pending) { pending.reply = msg; settle(); }
    }
  });
  ctx.proc.on('exit', () => { if (pending) { const p = pending; pending = null; p.resolve({ ...p, lost: true }); } });
  ctx.call = (req) => new Promise((resolve) => {
    const marker = crypto.randomBytes(16).toString('hex');
    pending = { marker, out: null, err: null, reply: null, resolve };
    ctx.proc.stdio[3].write(JSON.stringify({ ...req, marker }) + '\n');
  });
}

async function contextRoute(res, req, sid, rest, body) {
  if (!fs.existsSync(KERNEL)) return fail(res, 404, 'no_route', `No contexts here: ${KERNEL} is missing.`);
  if (rest === '/contexts' && req.method === 'GET') {
    return send(res, 200, [...contexts.entries()].filter(([, c]) => c.sid === sid).map(([id, c]) =>
      ({ id, language: c.language, state: c.busy ? 'busy' : 'idle', memory_kb: 14000, created_at: c.created, last_used_at: c.created, execution_count: c.count })));
  }
  if (rest === '/contexts' && req.method === 'POST') {
    if (!['python', 'bash'].includes(body.language)) return fail(res, 400, 'bad_language', 'python or bash.', 'language');
    const id = crypto.randomBytes(16).toString('hex');
    const ctx = { sid, language: body.language, created: new Date().toISOString(), busy: false, count: 0 };
    startKernel(ctx);
    contexts.set(id, ctx);
    return send(res, 201, { id, language: ctx.language, created_at: ctx.created, execution_count: 0 });
  }
  const m = rest.match(/^\/contexts\/([0-9a-f]+)(\/[a-z]+)?$/);
  const ctx = m && contexts.get(m[1]);
  if (!ctx || ctx.sid !== sid) return fail(res, 404, 'not_found', 'No such context.');
  const op = m[2] || '';
  if (op === '' && req.method === 'DELETE') { ctx.proc.kill('SIGKILL'); contexts.delete(m[1]); return send(res, 204, null); }
  if (op === '/interrupt') { if (ctx.busy) ctx.proc.kill('SIGINT'); return send(res, 200, { interrupted: ctx.busy }); }
  if (op === '/restart') { ctx.proc.kill('SIGKILL'); startKernel(ctx); ctx.count = 0; return send(res, 200, { state: 'lost', execution_count: 0 }); }
  if (ctx.busy) return fail(res, 409, 'context_busy', 'Another call is running in this context.');
  ctx.busy = true;
  try {
    if (op === '/variables') return send(res, 200, (await ctx.call({ op: 'variables' })).reply.variables);
    if (op === '/execute') {
      const t0 = Date.now();
      // The wall limit as the holder applies it: SIGINT, and the answer says "timeout".
      let late = false;
      const timer = setTimeout(() => { late = true; ctx.proc.kill('SIGINT'); },
        (body.limits && body.limits.wall_ms) || 10000);
      const r = await ctx.call({ op: 'execute', code: body.code });
      clearTimeout(timer);
      if (late && r.reply) Object.assign(r.reply, { status: 'timeout' });
      if (r.lost) { startKernel(ctx); ctx.count = 0; }
      const reply = r.reply || {};
      ctx.count = reply.execution_count || ctx.count;
      return send(res, 200, { status: r.lost ? 'signal' : reply.status, exit_code: reply.exit_code ?? null,
        ...(late ? { limit: 'wall' } : {}), signal: null, stdout: r.out || '', stderr: r.err || '', stdout_truncated: false, stderr_truncated: false,
        wall_ms: Date.now() - t0, cpu_ms: Date.now() - t0, memory_kb: 14000,
        execution_count: reply.execution_count ?? 0, results: reply.results || [], error: reply.error || null,
        state: r.lost ? 'lost' : 'kept' });
    }
  } finally {
    ctx.busy = false;
  }
  return fail(res, 404, 'no_route', 'No such route.');
}

function sessionInfo(id) {
  const s = sessions.get(id);
  const dir = path.join(ROOT, id);
  let bytes = 0, count = 0;
  const walk = (d) => { for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) walk(p); else { bytes += fs.statSync(p).size; count++; }
  } };
  walk(dir);
  return { id, created_at: s.created, last_used_at: new Date().toISOString(),
    expires_at: new Date(Date.now() + 3600e3).toISOString(), bytes_used: bytes, file_count: count,
    quota_bytes: 100 * 1024 * 1024 };
}

function tree(dir, prefix = '') {
  const out = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const rel = prefix + e.name, st = fs.statSync(path.join(dir, e.name));
    out.push({ path: rel, type: e.isDirectory() ? 'dir' : 'file', size: st.size, mtime: st.mtime.toISOString() });
    if (e.isDirectory()) out.push(...tree(path.join(dir, e.name), rel + '/'));
  }
  return out;
}

function staticFile(req, res) {
  let p = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  if (p === '/') p = '/index.html';
  const file = path.join(WWW, path.normalize(p));
  if (!file.startsWith(WWW + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) return false;
  res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream',
    'Content-Security-Policy': CSP, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-cache' });
  res.end(fs.readFileSync(file));
  return true;
}

async function handle(req, res, raw) {
  const url = new URL(req.url, 'http://x');
  const accept = req.headers.accept || '';
  if (url.pathname === '/' && !accept.includes('text/html')) return send(res, 200, 'ping');
  if (!url.pathname.startsWith('/v1/') && staticFile(req, res)) return undefined;
  if (req.headers.authorization !== `Bearer ${TOKEN}`) {
    return fail(res, 401, 'unauthorized', 'A valid bearer token is required.', null, { 'WWW-Authenticate': 'Bearer' });
  }
  if (raw.length > 1 << 20 && !url.pathname.includes('/files/')) {
    return fail(res, 413, 'body_too_large', 'The request body is larger than 1 MiB.');
  }
  if (url.searchParams.has('mock429')) return fail(res, 429, 'rate_limited', 'Slow down.', null, { 'Retry-After': '7' });
  const body = raw.length && (req.headers['content-type'] || '').includes('json') ? JSON.parse(raw) : {};
  const m = url.pathname.match(/^\/v1\/sessions\/([^/]+)(\/.*)?$/);
  if (url.pathname === '/v1/openapi.json') {
    return send(res, 200, JSON.parse(fs.readFileSync(path.join(WWW, '../fcgi/openapi.json'), 'utf8')));
  }
  if (url.pathname === '/v1/languages') return send(res, 200, LANGS.map(({ id, version, aliases, compiled }) => ({ id, version, aliases, compiled })));
  if (url.pathname.startsWith('/v1/runs/')) return runRoute(res, req, url, raw);
  if (url.pathname === '/v1/execute' && body.stream && !process.env.MOCK_NO_STREAM) {
    const lang = LANGS.find((l) => l.id === body.language || l.aliases.includes(body.language));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-run-'));
    fs.writeFileSync(path.join(dir, lang.file), body.code || '');
    return liveRun(dir, lang.run(lang.file), body, res, null);
  }
  if (url.pathname === '/v1/execute' && body.stream) return fail(res, 400, 'unknown_field', 'Unknown field "stream".', 'stream');
  if (url.pathname === '/v1/execute') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-run-'));
    const [st, out] = execute(dir, body);
    fs.rmSync(dir, { recursive: true, force: true });
    return send(res, st, out);
  }
  if (url.pathname === '/v1/evaluate') return send(res, 200, evaluate(fs.mkdtempSync(path.join(os.tmpdir(), 'sbx-ev-')), body));
  if (url.pathname === '/v1/sessions' && req.method === 'POST') {
    const id = crypto.randomUUID();
    fs.mkdirSync(path.join(ROOT, id));
    sessions.set(id, { created: new Date().toISOString() });
    return send(res, 201, { id, created_at: sessions.get(id).created, expires_at: new Date(Date.now() + 3600e3).toISOString() });
  }
  if (url.pathname === '/v1/sessions') return send(res, 200, { sessions: [...sessions.keys()].map(sessionInfo) });
  if (!m || !sessions.has(decodeURIComponent(m[1]))) return fail(res, 404, 'not_found', 'No such session.');
  const id = decodeURIComponent(m[1]), dir = path.join(ROOT, id), rest = m[2] || '';
  if (!rest && req.method === 'GET') return send(res, 200, sessionInfo(id));
  if (!rest && req.method === 'DELETE') { sessions.delete(id); fs.rmSync(dir, { recursive: true }); return send(res, 204, null); }
  if (rest === '/fork') {
    const nid = crypto.randomUUID();
    fs.cpSync(dir, path.join(ROOT, nid), { recursive: true });
    sessions.set(nid, { created: new Date().toISOString() });
    return send(res, 201, { id: nid });
  }
  if (rest === '/files') return send(res, 200, tree(dir));
  if (rest.startsWith('/files/')) {
    const rel = decodeURIComponent(rest.slice(7)), file = path.join(dir, rel);
    if (!file.startsWith(dir + path.sep)) return fail(res, 400, 'bad_path', 'Bad path.', 'path');
    if (req.method === 'PUT') { fs.mkdirSync(path.dirname(file), { recursive: true }); fs.writeFileSync(file, raw); return send(res, 200, { path: rel, size: raw.length }); }
    if (!fs.existsSync(file)) return fail(res, 404, 'not_found', `No file ${rel}.`, 'path');
    if (req.method === 'DELETE') { fs.rmSync(file, { recursive: true }); return send(res, 204, null); }
    res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
    return res.end(fs.readFileSync(file));
  }
  if (rest === '/move') {
    const to = path.join(dir, body.to);
    if (fs.existsSync(to) && !body.overwrite) return fail(res, 409, 'exists', `${body.to} exists.`, 'to');
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.renameSync(path.join(dir, body.from), to);
    return send(res, 200, { from: body.from, to: body.to });
  }
  if (rest.startsWith('/runs')) return bgRoute(res, req, url, id, rest, body);
  if (rest === '/run' && body.stream) return liveRun(dir, ['/bin/sh', '-c', body.cmd], body, res, id);
  if (rest === '/execute' && body.stream && !body.files) {
    const lang = LANGS.find((l) => l.id === body.language || l.aliases.includes(body.language));
    fs.writeFileSync(path.join(dir, lang.file), body.code || '');
    return liveRun(dir, lang.run(lang.file), body, res, id);
  }
  if (rest === '/run') return send(res, 200, runIn(dir, ['/bin/sh', '-c', body.cmd], body.stdin || ''));
  if (rest === '/execute') { const [st, out] = execute(dir, body); return send(res, st, out); }
  if (rest === '/evaluate') return send(res, 200, evaluate(dir, body));
  if (rest.startsWith('/contexts')) return contextRoute(res, req, id, rest, body);
  return fail(res, 404, 'no_route', 'No such route.');
}

http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => handle(req, res, Buffer.concat(chunks)).catch((err) =>
    fail(res, 500, 'internal_error', String(err))));
}).listen(PORT, '127.0.0.1', () => console.log(`mock on http://127.0.0.1:${PORT}/#token=${TOKEN}`));
