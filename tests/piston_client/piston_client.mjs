// piston_client.mjs: npm's piston-client, unchanged, against the stack through the per-client
// base URL https://HOST/piston/<key> (it sends no header of its own: no token, no Content-Type).
// Prints TAP; run by tests/integration/piston_client.t with PISTON_URL set.
import piston from 'piston-client';

let n = 0, failed = 0;
const ok = (cond, desc, diag) => {
  n++;
  console.log(`${cond ? '' : 'not '}ok ${n} - ${desc}`);
  if (!cond) {
    failed++;
    if (diag !== undefined) console.log('# ' + JSON.stringify(diag).slice(0, 600));
  }
};

const client = piston({ server: process.env.PISTON_URL });
const runtimes = await client.runtimes();
ok(Array.isArray(runtimes) && runtimes.some(r => r.language === 'python' && r.version),
  'runtimes(): an array with python and its version', runtimes);

let r = await client.execute('python', 'import sys\nprint("hi", sys.argv[1:])');
ok(r && r.language === 'python' && r.run && r.run.stdout === "hi ['1', '2', '3']\n" &&
  r.run.code === 0 && r.run.output === r.run.stdout,
  "execute('python', code): run.stdout, output and code (its default args 1 2 3)", r);

r = await client.execute('python', 'import sys\nsys.exit(3)');
ok(r && r.run && r.run.code === 3 && r.run.signal === null, 'a non-zero exit: run.code 3', r);

r = await client.execute('c', '#include <stdio.h>\nint main(void){int x; scanf("%d",&x); printf("%d\\n", x*2); return 0;}',
  { stdin: '21' });
ok(r && r.compile && r.compile.code === 0 && r.run && r.run.stdout === '42\n',
  'execute C with stdin: a compile stage and the run', r);

r = await client.execute('javascript', 'console.log(6*7)');
ok(r && r.run && r.run.stdout === '42\n', "execute('javascript', ...): Piston's name for node", r);

r = await client.execute({ language: 'python', version: '0.1', files: [{ content: 'print(1)' }] });
ok(r && r.success === false || (r && typeof r.message === 'string' && /runtime is unknown/.test(r.message)),
  'an uninstalled version: refused with Piston\'s message', r);

console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
