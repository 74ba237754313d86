// Decode a pprof file with npm's pprof-format (an independent decoder) and
// print what the e2e tests compare with pmuprof report:
//
//   types: samples/count cpu/nanoseconds
//   default: cpu
//   period: cpu/nanoseconds 500000
//   samples: <sample records> total: <sum of the default value>
//   leaf <value> <function>        (self, leaf = innermost line of the first location;
//   ...                             sorted by value, then name)
//
// Usage: node decode.js FILE [TOP]   (exit 1 with one line on a broken profile)
// The module path comes from $PPROF_FORMAT (default: tests/.work/npm/node_modules/pprof-format).
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');

const modDir = process.env.PPROF_FORMAT ||
	path.join(__dirname, '..', '.work', 'npm', 'node_modules', 'pprof-format');
const { Profile } = require(modDir);

function die(msg) {
	process.stderr.write('decode.js: ' + msg + '\n');
	process.exit(1);
}

const file = process.argv[2];
const top = process.argv[3] === undefined ? 10 : Number(process.argv[3]);
if (!file) die('usage: node decode.js FILE [TOP]');
let buf = fs.readFileSync(file);
if (buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b) {
	try {
		buf = zlib.gunzipSync(buf);
	} catch (e) {
		die('gunzip: ' + e.message);
	}
}
let p;
try {
	p = Profile.decode(buf);
} catch (e) {
	die('decode: ' + e.message);
}
const strs = p.stringTable.strings;
const str = (i) => {
	const n = Number(i);
	if (!Number.isInteger(n) || n < 0 || n >= strs.length) die('string index ' + i + ' out of range');
	return strs[n];
};
if (strs.length === 0 || strs[0] !== '') die('string_table[0] is not ""');

const types = p.sampleType.map((t) => str(t.type) + '/' + str(t.unit));
if (types.length === 0) die('no sample types');
let def = types.length - 1; // pprof's rule: the last type unless default_sample_type names one
if (Number(p.defaultSampleType) !== 0) {
	const name = str(p.defaultSampleType);
	def = p.sampleType.findIndex((t) => str(t.type) === name);
	if (def < 0) die('default_sample_type ' + name + ' is not a sample type');
}

const fns = new Map();
for (const f of p.function) {
	if (Number(f.id) === 0 || fns.has(Number(f.id))) die('bad or duplicate function id ' + f.id);
	fns.set(Number(f.id), f);
	str(f.name); str(f.systemName); str(f.filename);
}
const maps = new Set();
for (const m of p.mapping) {
	if (Number(m.id) === 0 || maps.has(Number(m.id))) die('bad or duplicate mapping id ' + m.id);
	maps.add(Number(m.id));
	str(m.filename); str(m.buildId);
}
const locs = new Map();
for (const l of p.location) {
	if (Number(l.id) === 0 || locs.has(Number(l.id))) die('bad or duplicate location id ' + l.id);
	if (Number(l.mappingId) !== 0 && !maps.has(Number(l.mappingId)))
		die('location ' + l.id + ' has unknown mapping ' + l.mappingId);
	for (const ln of l.line)
		if (!fns.has(Number(ln.functionId)))
			die('location ' + l.id + ' has unknown function ' + ln.functionId);
	locs.set(Number(l.id), l);
}
const self = new Map();
let total = 0n;
for (const s of p.sample) {
	if (s.value.length !== types.length)
		die('sample has ' + s.value.length + ' values for ' + types.length + ' types');
	const v = BigInt(s.value[def]);
	total += v;
	for (const id of s.locationId)
		if (!locs.has(Number(id))) die('sample has unknown location ' + id);
	let leaf = '[no frames]';
	if (s.locationId.length > 0) {
		const l = locs.get(Number(s.locationId[0]));
		leaf = l.line.length > 0 ? str(fns.get(Number(l.line[0].functionId)).name)
			: '0x' + BigInt(l.address).toString(16);
	}
	self.set(leaf, (self.get(leaf) || 0n) + v);
}
str(p.comment.length ? p.comment[0] : 0);
console.log('types: ' + types.join(' '));
console.log('default: ' + types[def].split('/')[0]);
if (p.periodType) console.log('period: ' + str(p.periodType.type) + '/' + str(p.periodType.unit) + ' ' + p.period);
console.log('samples: ' + p.sample.length + ' total: ' + total);
for (const c of p.comment) console.log('comment: ' + str(c));
const rows = [...self.entries()].sort((a, b) => (a[1] < b[1] ? 1 : a[1] > b[1] ? -1 : a[0] < b[0] ? -1 : 1));
for (const [name, v] of rows.slice(0, top)) console.log('leaf ' + v + ' ' + name);
