// Write a synthetic pprof profile of N distinct stacks (gzip'd, with npm's
// pprof-format), for the speed check of the flame-graph page: a call graph
// of 3 000 functions, each calling 2 to 6 others, stacks as walks of 4 to 40
// frames down from main.main, values spread as a real profile's are (a few
// heavy stacks, a long tail).  Deterministic (a fixed seed).
//
// Usage: node synth.js OUT.pb.gz N
// $PPROF_FORMAT: the module (default tests/.work/npm/node_modules/pprof-format).
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');

const pf = require(process.env.PPROF_FORMAT ||
	path.join(__dirname, '..', '.work', 'npm', 'node_modules', 'pprof-format'));
const [out, nArg] = process.argv.slice(2);
const N = +nArg;
if (!out || !(N > 0)) {
	console.error('usage: node synth.js OUT.pb.gz N');
	process.exit(2);
}

let seed = 42;
function rnd() { // xorshift32
	seed ^= seed << 13; seed >>>= 0;
	seed ^= seed >>> 17;
	seed ^= seed << 5; seed >>>= 0;
	return seed / 4294967296;
}

const st = new pf.StringTable();
const NF = 3000;
const funcs = [], locs = [], callees = [];
for (let i = 0; i < NF; i++) {
	const name = i === 0 ? 'main.main' : 'pkg' + (i % 60) + '.Func' + i;
	funcs.push(new pf.Function({ id: i + 1, name: st.dedup(name), systemName: st.dedup(name),
		filename: st.dedup('/src/pkg' + (i % 60) + '/f.go'), startLine: 10 + i }));
	locs.push(new pf.Location({ id: i + 1, mappingId: 1, address: 0x401000 + 16 * i,
		line: [new pf.Line({ functionId: i + 1, line: 12 + i })] }));
	const k = 2 + Math.floor(rnd() * 5), c = [];
	for (let j = 0; j < k; j++) c.push(1 + Math.floor(rnd() * (NF - 1)));
	callees.push(c);
}
const seen = new Set(), samples = [];
let total = 0;
while (samples.length < N) {
	const depth = 4 + Math.floor(rnd() * 37), ids = [1];
	let f = 0;
	for (let d = 1; d < depth; d++) {
		f = callees[f][Math.floor(rnd() * callees[f].length)];
		ids.push(f + 1);
	}
	const key = ids.join(',');
	if (seen.has(key)) continue;
	seen.add(key);
	const n = Math.max(1, Math.floor(1000 * Math.pow(rnd(), 8))); // a long tail
	total += n;
	samples.push(new pf.Sample({ locationId: ids.reverse(), value: [n, n * 1000000] }));
}
const prof = new pf.Profile({
	sampleType: [new pf.ValueType({ type: st.dedup('samples'), unit: st.dedup('count') }),
		new pf.ValueType({ type: st.dedup('cpu'), unit: st.dedup('nanoseconds') })],
	sample: samples,
	mapping: [new pf.Mapping({ id: 1, memoryStart: 0x400000, memoryLimit: 0x800000,
		filename: st.dedup('/bin/synth'), hasFunctions: true })],
	location: locs,
	function: funcs,
	stringTable: st,
	periodType: new pf.ValueType({ type: st.dedup('cpu'), unit: st.dedup('nanoseconds') }),
	period: 1000000,
	durationNanos: 1e9,
});
fs.writeFileSync(out, zlib.gzipSync(prof.encode()));
console.log('stacks ' + samples.length + ' samples ' + total);
