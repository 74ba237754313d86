// Drive Debian's chromium headless (puppeteer-core from npm, no browser
// download) for the e2e tests of pmuprof's flame-graph page and of the
// clients that read pmuprof's profiles.  Prints "key value" lines for the
// shell test to compare with pmuprof report; exit 1 with one line when the
// browser or the page fails.
//
//   node browse.js page HTML SHOT FUNC [CREATORFUNC]
//       the page of `report --html`: the root's tooltip, FUNC's tooltip,
//       search for FUNC (count, share), click on FUNC (zoom), reset, the
//       creator switch, the sample-type switch; a screenshot to SHOT
//   node browse.js diff HTML FUNC...   each FUNC's tooltip change and colour
//   node browse.js speed HTML [N]      the time from navigation to the first drawing, N loads
//   node browse.js speedscope PBGZ N SHOT   speedscope's sandwich table: its top N by self
//   node browse.js text URL WAITFOR    the page's text once WAITFOR appears in it
//
// $PUPPETEER: the puppeteer-core module (default tests/.work/npm/node_modules/
// puppeteer-core); $SPEEDSCOPE: speedscope's package; $CHROMIUM: the browser.
'use strict';
const fs = require('fs');
const path = require('path');
const os = require('os');

const npm = path.join(__dirname, '..', '.work', 'npm', 'node_modules');
const puppeteer = require(process.env.PUPPETEER || path.join(npm, 'puppeteer-core'));
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';

function die(msg) {
	console.log('error ' + msg);
	process.exit(1);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function launch() {
	return puppeteer.launch({
		executablePath: chromium,
		headless: true,
		// no network: the page must need none
		args: ['--no-sandbox', '--disable-dev-shm-usage', '--enable-unsafe-swiftshader',
			'--use-angle=swiftshader', '--no-first-run', '--disable-background-networking',
			'--user-data-dir=' + fs.mkdtempSync(path.join(os.tmpdir(), 'pmuprof-chromium-'))],
	});
}

async function open(browser, url) {
	const p = await browser.newPage();
	const errors = [];
	const requests = [];
	p.on('pageerror', (e) => errors.push(e.message));
	p.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) requests.push(r.url()); });
	await p.setViewport({ width: 1200, height: 800 });
	await p.goto(url, { waitUntil: 'load', timeout: 60000 });
	return { p, errors, requests };
}

// The tooltip's text over the widest drawn frame named @name (or at depth 0 for the root).
async function tip(p, pick) {
	// the widest such frame: a narrow one's centre may be a neighbour's pixel
	const widest = (fs) => fs.filter(pick).reduce((a, b) => (!a || b.w > a.w ? b : a), null);
	let f = widest(await p.evaluate(() => window.pmflame.frames()));
	if (!f) return null;
	// in the viewport first: a frame below it is hovered at the point that is there
	const h = await p.evaluate(() => window.innerHeight);
	if (f.y < 0 || f.y >= h) {
		await p.evaluate((y) => window.scrollBy(0, y), f.y - h / 2);
		f = widest(await p.evaluate(() => window.pmflame.frames()));
	}
	await p.mouse.move(f.x, f.y);
	await sleep(30);
	const text = await p.$eval('#tip', (e) => e.textContent);
	const name = await p.$eval('#tip', (e) => e.dataset.frame || '');
	if (name !== f.name) console.log('error tooltip names ' + name + ', not ' + f.name);
	return { f, text };
}

function share(text, what) { // "total: 1.34 s (40.17% of all...)"
	const m = new RegExp('^' + what + ': .*?\\(([-0-9.]+)% of all').exec(text.split('\n').find((l) => l.startsWith(what + ':')) || '');
	return m ? m[1] : 'none';
}

async function page(file, shot, func, creatorFunc) {
	const b = await launch();
	try {
		const { p, errors, requests } = await open(b, 'file://' + path.resolve(file));
		const root = await tip(p, (f) => f.depth === 0);
		if (!root) die('no root frame drawn');
		console.log('root_name ' + root.f.name);
		console.log('root_share ' + share(root.text, 'total'));
		console.log('root_total ' + /^total: (.*?) \(/m.exec(root.text)[1]);
		const fn = await tip(p, (f) => f.name === func);
		if (!fn) die('no frame ' + func + ' drawn');
		console.log('func_total_share ' + share(fn.text, 'total'));
		console.log('func_self_share ' + share(fn.text, 'self'));
		console.log('func_tip_file ' + (fn.text.split('\n')[1] || ''));
		console.log('func_kind ' + fn.f.kind);
		// search: every frame of func, highlighted
		await p.type('#search', '^' + func.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$');
		await p.keyboard.press('Enter');
		await sleep(50);
		const m = await p.evaluate(() => window.pmflame.matches());
		console.log('match_count ' + m.count);
		console.log('match_share ' + m.share.toFixed(2));
		console.log('match_text ' + (await p.$eval('#match', (e) => e.textContent)));
		const drawn = await p.evaluate(() => window.pmflame.frames());
		console.log('match_drawn_highlighted ' + drawn.filter((f) => f.color === '#e000e0').length);
		console.log('match_drawn_named ' + drawn.filter((f) => f.name === func).length);
		await p.click('#clear');
		await sleep(50);
		// click: zoom into func's frame (the widest)
		const before = (await p.evaluate(() => window.pmflame.frames())).filter((f) => f.name === func)
			.sort((a, b2) => b2.w - a.w)[0];
		await p.mouse.click(before.x, before.y);
		await sleep(50);
		const z = await p.evaluate(() => window.pmflame.frames());
		const zf = z.find((f) => f.name === func && f.depth === before.depth);
		console.log('zoom_crumb ' + (await p.$eval('#crumb', (e) => e.dataset.zoom)));
		console.log('zoom_width_before ' + before.w.toFixed(1));
		console.log('zoom_width_after ' + (zf ? zf.w.toFixed(1) : 'none'));
		console.log('zoom_full_width ' + z[0].w.toFixed(1));
		console.log('zoom_frames_below ' + z.filter((f) => f.depth > before.depth).length);
		await p.click('#reset');
		await sleep(50);
		console.log('reset_crumb ' + ((await p.$eval('#crumb', (e) => e.dataset.zoom)) || '-'));
		// the creator switch
		const kinds = (fr) => fr.filter((f) => f.kind === 'creator').length;
		const all = await p.evaluate(() => window.pmflame.frames());
		console.log('creators_drawn_on ' + kinds(all));
		const hues = {};
		for (const f of all) {
			const h = /^hsl\(([-0-9.]+),/.exec(f.color);
			if (h && f.depth > 0) (hues[f.kind] = hues[f.kind] || new Set()).add(Math.round(+h[1]));
		}
		console.log('kind_hues ' + Object.keys(hues).sort().map((k) => k.replace(/ /g, '_') + ':' +
			Math.min(...hues[k]) + '-' + Math.max(...hues[k])).join(' '));
		if (creatorFunc) {
			const c = await tip(p, (f) => f.name === creatorFunc);
			console.log('creator_tip_kind ' + (c ? /^kind: (.*)$/m.exec(c.text)[1] : 'none'));
		}
		const disabled = await p.$eval('#creators', (e) => e.disabled);
		if (!disabled) {
			await p.click('#creators');
			await sleep(50);
			const off = await p.evaluate(() => window.pmflame.frames());
			console.log('creators_drawn_off ' + kinds(off));
			const f2 = await tip(p, (f) => f.name === func);
			console.log('func_total_share_off ' + (f2 ? share(f2.text, 'total') : 'none'));
			console.log('root_children_off ' + off.filter((f) => f.depth === 1).map((f) => f.name).slice(0, 3).join(','));
			await p.click('#creators');
			await sleep(50);
			console.log('creators_drawn_back ' + kinds(await p.evaluate(() => window.pmflame.frames())));
		}
		// the sample-type switch
		const types = await p.$$eval('#type option', (os) => os.map((o) => o.value + ':' + o.textContent));
		console.log('types ' + types.join(';'));
		if (types.length > 1) {
			const cur = await p.$eval('#type', (e) => e.value);
			const other = types.map((t) => t.split(':')[0]).find((v) => v !== cur);
			await p.select('#type', other);
			await sleep(50);
			console.log('switched_header ' + (await p.$eval('#hdr', (e) => e.textContent)).split('\n').find((l) => l.includes('(shown)')));
			const s = await tip(p, (f) => f.name === func);
			console.log('switched_func_share ' + (s ? share(s.text, 'total') : 'none'));
			await p.select('#type', cur);
			await sleep(50);
		}
		console.log('header ' + (await p.$eval('#hdr', (e) => e.textContent)).split('\n').join(' | '));
		console.log('legend ' + (await p.$eval('#legend', (e) => e.textContent)));
		await p.mouse.move(5, 5);
		await p.screenshot({ path: shot });
		console.log('page_errors ' + errors.length + (errors.length ? ' ' + errors[0] : ''));
		console.log('requests ' + requests.length + (requests.length ? ' ' + requests[0] : ''));
	} finally {
		await b.close();
	}
}

async function diff(file, funcs) {
	const b = await launch();
	try {
		const { p, errors } = await open(b, 'file://' + path.resolve(file));
		for (const func of funcs) {
			const t = await tip(p, (f) => f.name === func);
			if (!t) { console.log('change ' + func + ' none none'); continue; }
			const c = /^change: ([-+0-9.]+) points/m.exec(t.text);
			const col = /^hsl\((\d+),/.exec(t.f.color);
			console.log('change ' + func + ' ' + (c ? c[1] : 'none') + ' ' +
				(col ? (col[1] === '0' ? 'red' : col[1] === '220' ? 'blue' : 'hue' + col[1]) : t.f.color));
		}
		console.log('notes ' + (await p.$eval('#notes', (e) => e.textContent)));
		console.log('legend ' + (await p.$eval('#legend', (e) => e.textContent)));
		console.log('page_errors ' + errors.length + (errors.length ? ' ' + errors[0] : ''));
	} finally {
		await b.close();
	}
}

// The time from navigation to the end of the first drawing (the page's own
// performance.now() then), over @n loads in one browser: min and median.
async function speed(file, n) {
	const b = await launch();
	try {
		const runs = [];
		let info;
		for (let i = 0; i < n; i++) {
			const { p, errors } = await open(b, 'file://' + path.resolve(file));
			info = await p.evaluate(() => ({ ms: window.pmflame.rendered, nodes: window.pmflame.nodes(),
				drawn: window.pmflame.frames().length, notes: document.getElementById('notes').textContent,
				timing: window.pmflame.timing }));
			if (errors.length) die('page error: ' + errors[0]);
			runs.push(info.ms);
			await p.close();
		}
		const sorted = runs.slice().sort((a, b2) => a - b2);
		console.log('render_ms_min ' + sorted[0].toFixed(0));
		console.log('render_ms_median ' + sorted[(n - 1) >> 1].toFixed(0));
		console.log('render_ms_all ' + runs.map((x) => x.toFixed(0)).join(','));
		console.log('nodes ' + info.nodes);
		console.log('drawn ' + info.drawn);
		console.log('notes ' + info.notes);
		console.log('timing ' + JSON.stringify(info.timing));
	} finally {
		await b.close();
	}
}

async function speedscope(file, n, shot) {
	const dir = process.env.SPEEDSCOPE || path.join(npm, 'speedscope');
	const js = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pmuprof-ss-')), 'load.js');
	fs.writeFileSync(js, 'speedscope.loadFileFromBase64(' + JSON.stringify(path.basename(file)) + ', ' +
		JSON.stringify(fs.readFileSync(file).toString('base64')) + ')');
	const b = await launch();
	try {
		const { p } = await open(b, 'file://' + path.join(dir, 'dist', 'release', 'index.html') +
			'#localProfilePath=' + js + '&view=sandwich');
		let text = '';
		for (let i = 0; i < 100 && !text.includes('Symbol Name'); i++) {
			await sleep(100);
			text = await p.evaluate(() => document.body.innerText);
		}
		await sleep(300);
		text = await p.evaluate(() => document.body.innerText);
		const lines = text.split('\n').map((l) => l.trim()).filter((l) => l);
		const h = lines.findIndex((l) => l.replace(/\s+/g, ' ') === 'Total Self Symbol Name');
		if (h < 0) die('no sandwich table in speedscope: ' + lines.slice(0, 5).join(' | '));
		for (let i = 0; i < n; i++) {
			const row = lines.slice(h + 1 + 3 * i, h + 4 + 3 * i);
			if (row.length < 3) break;
			console.log('top ' + row[2] + ' ' + /\(([<>0-9.]+)%\)/.exec(row[1])[1]);
		}
		if (shot) await p.screenshot({ path: shot });
	} finally {
		await b.close();
		fs.rmSync(path.dirname(js), { recursive: true, force: true });
	}
}

async function text(url, waitFor) {
	const b = await launch();
	try {
		const { p, errors } = await open(b, url);
		let t = '';
		for (let i = 0; i < 100; i++) {
			t = await p.evaluate(() => document.body.innerText + '\n' + document.documentElement.outerHTML);
			if (t.includes(waitFor)) break;
			await sleep(100);
		}
		console.log('found ' + (t.includes(waitFor) ? 'yes' : 'no'));
		console.log('title ' + (await p.title()));
		console.log('page_errors ' + errors.length + (errors.length ? ' ' + errors[0] : ''));
	} finally {
		await b.close();
	}
}

const [cmd, ...args] = process.argv.slice(2);
const cmds = {
	page: () => page(args[0], args[1], args[2], args[3]),
	diff: () => diff(args[0], args.slice(1)),
	speed: () => speed(args[0], +args[1] || 5),
	speedscope: () => speedscope(args[0], +args[1] || 5, args[2]),
	text: () => text(args[0], args[1]),
};
if (!cmds[cmd]) die('usage: browse.js page|diff|speed|speedscope|text ARGS');
cmds[cmd]().catch((e) => die(String(e && e.message ? e.message : e).split('\n')[0]));
