// sbx-warm: a pre-started node waiting for its one job (sandbox/warm.c), run with `node -e`.
(function (req) {
	'use strict';
	const fs = req('fs'), M = req('module'), path = req('path'), os = req('os');
	const g = globalThis;
	// What `node -e` adds for its script and `node main.js` does not have.
	for (const n of ['module', 'exports', '__filename', '__dirname', 'require'])
		delete g[n];
	for (const n of M.builtinModules) {
		const d = Object.getOwnPropertyDescriptor(g, n);
		if (d && d.get && d.configurable && /dummyModule\.require/.test(String(d.get)))
			delete g[n];
	}
	delete process._eval;
	process.execArgv.length = 0;
	function readAll(n) {
		const b = Buffer.alloc(n);
		let got = 0;
		while (got < n) {
			let k;
			try {
				k = fs.readSync(3, b, got, n - got, null);
			} catch (e) {
				if (e.code === 'EINTR' || e.code === 'EAGAIN')
					continue;
				process.reallyExit(127);
			}
			if (k <= 0)
				process.reallyExit(127);
			got += k;
		}
		return b;
	}
	fs.writeSync(3, 'r');
	const h = readAll(20);
	const le = os.endianness() === 'LE';
	const u32 = (o) => (le ? h.readUInt32LE(o) : h.readUInt32BE(o));
	const argc = u32(0), envc = u32(4), len = u32(8), holder = u32(12), infd = u32(16);
	const v = (len ? readAll(len).toString('utf8') : '').split('\0');
	if (holder) {
		// stdin: reopened from the init's holder (child_warm.c: stdin_holder) as fd 0
		let good = false;
		try {
			fs.closeSync(0);
			good = fs.openSync('/proc/' + holder + '/fd/' + infd, 'r') === 0;
		} catch (e) {
			good = false;
		}
		fs.writeSync(3, good ? 'k' : 'f');
		if (!good || readAll(1)[0] !== 0x67)
			process.reallyExit(127);
	}
	fs.closeSync(3);
	for (const k of Object.keys(process.env))
		delete process.env[k];
	for (const e of v.slice(argc, argc + envc)) {
		const i = e.indexOf('=');
		if (i > 0)
			process.env[e.slice(0, i)] = e.slice(i + 1);
	}
	process.argv.length = 1;
	process.argv.push(path.resolve(v[0]), ...v.slice(1, argc));
	M._initPaths();
	M.runMain();
})(require);
