/*
 * pmuprof's flame graph: an icicle (the root on top) of the call tree that
 * lib/output/html.c writes into the page as JSON (element #pmdata), drawn on a
 * canvas.  Click a frame to zoom, the root or Reset to zoom out, search by
 * regular expression (the matched frames turn magenta, their share is
 * shown), hover for a frame's details.  Colours tell the kinds of frames
 * apart; with a base profile (diff view) red is more, blue is less, in
 * shares of each profile's total.  No network, no library: plain ES5.
 *
 * window.pmflame exposes the state to tests (frames drawn, their places).
 */
(function () {
	"use strict";
	var t0 = performance.now();
	var D = JSON.parse(document.getElementById("pmdata").textContent);
	var tParsed = performance.now();
	var KINDS = [
		{ name: "Go", hue: 28, sat: 85, light: 58 },
		{ name: "Go runtime", hue: 180, sat: 42, light: 55 },
		{ name: "native", hue: 340, sat: 60, light: 66 },
		{ name: "kernel", hue: 110, sat: 45, light: 52 },
		{ name: "creator", hue: 270, sat: 50, light: 72 },
		{ name: "other", hue: 0, sat: 0, light: 72 }
	];
	var MATCH = "#e000e0", ROW = 17, FONT = "11px monospace";
	var N = D.up.length, NF = D.frames.length, i, k;
	D.parent = new Int32Array(N);
	for (i = 0; i < N; i++) D.parent[i] = i - D.up[i];
	D.parent[0] = -1;
	for (k = 0; k < D.self.length; k++) if (typeof D.self[k] === "number") D.self[k] = D.self[D.self[k]];
	if (D.bself)
		for (k = 0; k < D.bself.length; k++) if (typeof D.bself[k] === "number") D.bself[k] = D.bself[D.bself[k]];
	var isDiff = !!D.base;

	/* ---- elements ---- */
	function el(tag, attrs, text) {
		var e = document.createElement(tag), k;
		for (k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
		if (text !== undefined) e.textContent = text;
		return e;
	}
	var top = el("div", { id: "top" });
	var h1 = el("h1", {}, (isDiff ? "pmuprof diff: " + D.title + " against " + D.base.title : "pmuprof: " + D.title));
	var hdr = el("pre", { id: "hdr" });
	var bar = el("div", { id: "bar" });
	var sel = el("select", { id: "type", title: "sample type" });
	var creators = el("input", { type: "checkbox", id: "creators", checked: "checked" });
	var reset = el("button", { id: "reset", type: "button" }, "Reset zoom");
	var search = el("input", { type: "search", id: "search", placeholder: "search (regexp)", spellcheck: "false" });
	var clear = el("button", { id: "clear", type: "button" }, "Clear");
	var legend = el("div", { id: "legend" });
	var crumb = el("div", { id: "crumb" });
	var match = el("div", { id: "match" });
	var notes = el("div", { id: "notes" });
	var wrap = el("div", { id: "wrap" });
	var cv = el("canvas", { id: "cv" });
	var tip = el("div", { id: "tip" });
	var lab = el("label", { "for": "creators" }, " creator frames");

	for (i = 0; i < D.types.length; i++) {
		var o = el("option", { value: String(i) }, "value: " + D.types[i].type + " (" + D.types[i].unit + ")");
		sel.appendChild(o);
	}
	sel.value = String(D.def);
	bar.appendChild(sel);
	var cspan = el("span", {});
	cspan.appendChild(creators);
	cspan.appendChild(lab);
	bar.appendChild(cspan);
	bar.appendChild(reset);
	bar.appendChild(search);
	bar.appendChild(clear);
	bar.appendChild(legend);
	top.appendChild(h1);
	top.appendChild(hdr);
	top.appendChild(bar);
	top.appendChild(crumb);
	top.appendChild(match);
	top.appendChild(notes);
	document.body.appendChild(top);
	wrap.appendChild(cv);
	document.body.appendChild(wrap);
	document.body.appendChild(tip);

	var hasCreators = false;
	for (i = 0; i < NF; i++) if (D.frames[i][3] === 4) hasCreators = true;
	if (!hasCreators) {
		creators.disabled = true;
		lab.textContent = " creator frames (none in this profile)";
	}

	/* legend */
	function swatch(color, text) {
		var s = el("span", { "class": "sw" });
		s.style.background = color;
		legend.appendChild(s);
		legend.appendChild(document.createTextNode(text));
	}
	function drawLegend() {
		legend.textContent = "";
		if (diffOn()) {
			swatch("hsl(0,85%,55%)", "more than in the base");
			swatch("hsl(220,85%,55%)", "less");
			swatch("#f4f4f4", "same share");
		} else {
			for (var j = 0; j < KINDS.length; j++)
				swatch("hsl(" + KINDS[j].hue + "," + KINDS[j].sat + "%," + KINDS[j].light + "%)", KINDS[j].name);
		}
		swatch(MATCH, "search match");
	}

	/* ---- values ---- */
	function human(v, unit) {
		var a = Math.abs(v), mul = { nanoseconds: 1, microseconds: 1e3, milliseconds: 1e6, seconds: 1e9 }[unit];
		if (mul) {
			var ns = v * mul;
			a = Math.abs(ns);
			if (a < 1e3) return ns.toFixed(0) + " ns";
			if (a < 1e6) return (ns / 1e3).toFixed(2) + " us";
			if (a < 1e9) return (ns / 1e6).toFixed(2) + " ms";
			return (ns / 1e9).toFixed(2) + " s";
		}
		if (unit === "bytes") {
			var sfx = ["B", "KiB", "MiB", "GiB", "TiB"], j = 0;
			while (a >= 1024 && j < 4) { a /= 1024; v /= 1024; j++; }
			return j ? v.toFixed(2) + " " + sfx[j] : v + " B";
		}
		return !unit || unit === "count" ? String(v) : v + " " + unit;
	}
	function pct(v, t) { return (t ? 100 * v / t : 0).toFixed(2) + "%"; }

	/* ---- the view tree: one sample type, creators shown or merged away ---- */
	var V; /* { n, par, frame, self, tot, bself, btot, depth, kids (sorted), total, btotal } */
	var type = D.def, zoom = 0, re = null, hide = false;

	function diffOn() { return isDiff && D.base.has[type] === 1; }

	function build() {
		var sc = D.types[type].scale, s = D.self[type], bs = isDiff ? D.bself[type] : null;
		var par, frame, self = new Float64Array(N), bself = new Float64Array(N), n = 0, j, p, f;
		if (!hide) { /* the tree as written */
			n = N; par = D.parent; frame = D.frame;
			for (j = 0; j < N; j++) { self[j] = s[j] * sc; if (bs) bself[j] = bs[j] * sc; }
		} else { /* creator frames merged into their parent, equal children merged */
			var vid = new Int32Array(N), map = new Map();
			par = new Int32Array(N); frame = new Int32Array(N);
			par[0] = -1; frame[0] = -1; n = 1;
			for (j = 1; j < N; j++) {
				p = vid[D.parent[j]];
				f = D.frame[j];
				if (D.frames[f][3] === 4) {
					vid[j] = p;
				} else {
					var key = p * (NF + 1) + f, v = map.get(key);
					if (v === undefined) {
						v = n++;
						map.set(key, v);
						par[v] = p; frame[v] = f;
					}
					vid[j] = v;
				}
				self[vid[j]] += s[j] * sc;
				if (bs) bself[vid[j]] += bs[j] * sc;
			}
			self = self.subarray(0, n); bself = bself.subarray(0, n);
		}
		var tot = Float64Array.from(self), btot = Float64Array.from(bself), depth = new Int32Array(n);
		for (j = n - 1; j > 0; j--) { tot[par[j]] += tot[j]; btot[par[j]] += btot[j]; }
		for (j = 1; j < n; j++) depth[j] = depth[par[j]] + 1;
		/* children, heaviest first */
		var cnt = new Int32Array(n + 1), kids = new Int32Array(n), start = new Int32Array(n + 1);
		for (j = 1; j < n; j++) cnt[par[j]]++;
		for (j = 0; j < n; j++) start[j + 1] = start[j] + cnt[j];
		var fill = start.slice(0, n);
		for (j = 1; j < n; j++) kids[fill[par[j]]++] = j;
		V = { n: n, par: par, frame: frame, self: self, tot: tot, bself: bself, btot: btot, depth: depth,
			kids: kids, start: start, sorted: new Uint8Array(n), total: tot[0], btotal: btot[0] };
	}

	/* a node's children heaviest first, sorted when first drawn */
	function sortKids(v) {
		var tot = V.tot, btot = V.btot;
		V.sorted[v] = 1;
		if (V.start[v + 1] - V.start[v] > 1)
			V.kids.subarray(V.start[v], V.start[v + 1]).sort(function (a, b) {
				return tot[b] - tot[a] || btot[b] - btot[a] || a - b;
			});
	}

	function name(v) { return V.frame[v] < 0 ? "all" : D.frames[V.frame[v]][0]; }
	function kind(v) { return V.frame[v] < 0 ? 5 : D.frames[V.frame[v]][3]; }

	/* ---- search ---- */
	var matched = null, nmatch = 0, mshare = 0;
	function doSearch() {
		var q = search.value, j;
		matched = null; nmatch = 0; mshare = 0;
		re = null;
		if (q) {
			try { re = new RegExp(q); } catch (e) { re = new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")); }
			var fm = new Uint8Array(NF), under = new Uint8Array(V.n), sum = 0;
			for (j = 0; j < NF; j++) fm[j] = re.test(D.frames[j][0]) ? 1 : 0;
			matched = new Uint8Array(V.n);
			for (j = 1; j < V.n; j++) {
				var m = fm[V.frame[j]] && (V.tot[j] !== 0 || V.btot[j] !== 0);
				if (m) { matched[j] = 1; nmatch++; if (!under[V.par[j]]) sum += V.tot[j]; }
				under[j] = under[V.par[j]] || m ? 1 : 0;
			}
			mshare = V.total ? 100 * sum / V.total : 0;
			match.textContent = nmatch + " frames match /" + q + "/: " + mshare.toFixed(2) + "% of all";
			match.className = "on";
		} else {
			match.textContent = "";
			match.className = "";
		}
	}

	/* ---- drawing ---- */
	var R = { n: 0, x: [], y: [], w: [], v: [] }; /* the rectangles drawn, for hovering */
	var maxAbs = 0;
	function color(v) {
		if (matched && matched[v]) return MATCH;
		if (diffOn() && V.frame[v] >= 0) {
			var d = share(v) - bshare(v), t = maxAbs ? Math.sqrt(Math.abs(d) / maxAbs) : 0;
			if (Math.abs(d) < 1e-12) return "#f4f4f4";
			return "hsl(" + (d > 0 ? 0 : 220) + ",85%," + (96 - 41 * t).toFixed(1) + "%)";
		}
		var K = KINDS[kind(v)], nm = name(v), h = 0;
		for (var j = 0; j < nm.length && j < 24; j++) h = (h * 31 + nm.charCodeAt(j)) | 0;
		var jit = ((h >>> 0) % 1000) / 1000;
		return "hsl(" + (K.hue + 8 * (jit - 0.5)).toFixed(1) + "," + K.sat + "%," + (K.light - 6 + 12 * jit).toFixed(1) + "%)";
	}
	function share(v) { return V.total ? V.tot[v] / V.total : 0; }
	function bshare(v) { return V.btotal ? V.btot[v] / V.btotal : 0; }

	function render() {
		var W = Math.max(200, (wrap.clientWidth || window.innerWidth) - 20), dpr = window.devicePixelRatio || 1;
		var z = zoom, zt = V.tot[z] || V.btot[z], chain = [], j;
		for (j = z; j >= 0; j = V.par[j]) chain.push(j);
		chain.reverse();
		if (diffOn()) {
			maxAbs = 0;
			for (j = 1; j < V.n; j++) maxAbs = Math.max(maxAbs, Math.abs(share(j) - bshare(j)));
		}
		/* layout first (the height depends on it) */
		R.n = 0; R.x.length = 0; R.y.length = 0; R.w.length = 0; R.v.length = 0;
		var maxd = 0, stack = [], useB = !V.tot[z];
		for (j = 0; j < chain.length; j++) { R.x.push(0); R.y.push(j); R.w.push(W); R.v.push(chain[j]); }
		stack.push(z, 0, W);
		while (stack.length) {
			var w = stack.pop(), x = stack.pop(), v = stack.pop(), d = V.depth[v] - V.depth[z] + chain.length - 1;
			if (v !== z) { R.x.push(x); R.y.push(d); R.w.push(w); R.v.push(v); }
			if (d > maxd) maxd = d;
			var t = useB ? V.btot[v] : V.tot[v];
			if (!t) continue;
			var cx = x;
			if (!V.sorted[v]) sortKids(v);
			for (var c = V.start[v]; c < V.start[v + 1]; c++) {
				var u = V.kids[c], cw = w * (useB ? V.btot[u] : V.tot[u]) / t;
				if (cw >= 0.4) stack.push(u, cx, cw);
				cx += cw;
			}
		}
		R.n = R.v.length;
		var H = (maxd + 1) * ROW + 2;
		cv.width = Math.round(W * dpr); cv.height = Math.round(H * dpr);
		cv.style.width = W + "px"; cv.style.height = H + "px";
		var g = cv.getContext("2d");
		g.setTransform(dpr, 0, 0, dpr, 0, 0);
		g.font = FONT;
		g.textBaseline = "middle";
		var cw1 = g.measureText("mmmmmmmmmm").width / 10;
		for (j = 0; j < R.n; j++) {
			var rv = R.v[j], rx = R.x[j], ry = R.y[j] * ROW, rw = R.w[j];
			var faded = j < chain.length - 1;
			g.fillStyle = color(rv);
			g.globalAlpha = faded ? 0.55 : 1;
			g.fillRect(rx, ry, Math.max(rw - 0.5, 0.4), ROW - 1);
			if (rw > 3 * cw1 + 6) {
				var nm = name(rv), fit = Math.floor((rw - 6) / cw1);
				if (nm.length > fit) nm = nm.slice(0, fit - 2) + "..";
				g.fillStyle = "#000";
				g.fillText(nm, rx + 3, ry + ROW / 2);
			}
		}
		g.globalAlpha = 1;
		crumb.textContent = z ? "zoomed: " + name(z) + " (" + pct(V.tot[z], V.total) + " of all); click the root or Reset to zoom out" : "";
		crumb.dataset.zoom = z ? name(z) : "";
		pmflame.rendered = performance.now();
		pmflame.draws++;
	}

	function hit(ev) {
		var r = cv.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top, row = Math.floor(y / ROW);
		for (var j = R.n - 1; j >= 0; j--)
			if (R.y[j] === row && x >= R.x[j] && x < R.x[j] + R.w[j]) return R.v[j];
		return -1;
	}

	function info(v) {
		var T = D.types[type], f = V.frame[v] >= 0 ? D.frames[V.frame[v]] : null, lines = [name(v)];
		if (f && f[1]) lines.push(f[1] + (f[2] > 0 ? ":" + f[2] : ""));
		lines.push("kind: " + KINDS[kind(v)].name);
		lines.push("total: " + human(V.tot[v], T.unit) + " (" + pct(V.tot[v], V.total) + " of all" +
			(zoom && zoom !== v ? ", " + pct(V.tot[v], V.tot[zoom]) + " of the zoomed frame" : "") + ")");
		lines.push("self: " + human(V.self[v], T.unit) + " (" + pct(V.self[v], V.total) + " of all)");
		if (diffOn()) {
			var d = 100 * (share(v) - bshare(v));
			lines.push("base total: " + human(V.btot[v], T.unit) + " (" + pct(V.btot[v], V.btotal) + " of the base)");
			lines.push("change: " + (d >= 0 ? "+" : "") + d.toFixed(2) + " points of the total share");
		}
		return lines.join("\n");
	}

	cv.addEventListener("mousemove", function (ev) {
		var v = hit(ev);
		if (v < 0) { tip.style.display = "none"; return; }
		tip.textContent = info(v);
		tip.dataset.frame = name(v);
		tip.style.display = "block";
		var tx = ev.clientX + 12, ty = ev.clientY + 14;
		if (tx + tip.offsetWidth > window.innerWidth) tx = Math.max(0, ev.clientX - tip.offsetWidth - 12);
		if (ty + tip.offsetHeight > window.innerHeight) ty = Math.max(0, ev.clientY - tip.offsetHeight - 14);
		tip.style.left = tx + "px"; tip.style.top = ty + "px";
	});
	cv.addEventListener("mouseleave", function () { tip.style.display = "none"; });
	cv.addEventListener("click", function (ev) {
		var v = hit(ev);
		if (v < 0) return;
		zoom = v;
		render();
	});
	reset.addEventListener("click", function () { zoom = 0; render(); });
	var timer = 0;
	search.addEventListener("input", function () {
		clearTimeout(timer);
		timer = setTimeout(function () { doSearch(); render(); }, 120);
	});
	search.addEventListener("keydown", function (ev) {
		if (ev.key === "Enter") { clearTimeout(timer); doSearch(); render(); }
	});
	clear.addEventListener("click", function () { search.value = ""; doSearch(); render(); });
	sel.addEventListener("change", function () { type = +sel.value; refresh(); });
	creators.addEventListener("change", function () { hide = !creators.checked; refresh(); });
	document.addEventListener("keydown", function (ev) {
		if (ev.key === "Escape" && ev.target !== search) { zoom = 0; render(); }
	});
	var rt = 0;
	window.addEventListener("resize", function () { clearTimeout(rt); rt = setTimeout(render, 100); });

	function refresh() {
		var zn = zoom ? name(zoom) : null;
		build();
		tBuilt = tBuilt || performance.now();
		zoom = 0;
		if (zn) for (var j = 1; j < V.n; j++) if (name(j) === zn) { zoom = j; break; }
		hdr.textContent = D.header[type].join("\n");
		var P = D.prune, nt = [];
		if (P.pruned)
			nt.push("Pruned: call-tree nodes under " + (100 * P.fraction).toPrecision(2) + "% of every sample type's total (" +
				P.pruned + " of " + (P.nodes - 1) + ") are merged into " + P.frames + " [pruned] frames" +
				(P.auto ? ", to keep the page under " + P.max + " nodes" : "") +
				"; totals stay exact. pmuprof report --html --nodefraction 0 keeps them all.");
		if (isDiff)
			nt.push(diffOn() ? "Diff view: widths are this profile's, colours the change of each frame's share of the total (normalised: " +
				human(V.total, D.types[type].unit) + " here, " + human(V.btotal, D.types[type].unit) + " in the base)." :
				"The base has no " + D.types[type].type + " values: no diff colours for this sample type.");
		if (hide) nt.push("Creator frames hidden: each goroutine's stack starts at the root.");
		notes.textContent = nt.join(" ");
		drawLegend();
		doSearch();
		render();
	}

	var pmflame = window.pmflame = {
		draws: 0,
		rendered: 0,
		/* the rectangles drawn: name, page coordinates of their centre, width, total share */
		frames: function () {
			var r = cv.getBoundingClientRect(), out = [];
			for (var j = 0; j < R.n; j++)
				out.push({ name: name(R.v[j]), x: r.left + R.x[j] + Math.min(R.w[j], 40) / 2, y: r.top + R.y[j] * ROW + ROW / 2,
					w: R.w[j], depth: R.y[j], share: 100 * share(R.v[j]), kind: KINDS[kind(R.v[j])].name, color: color(R.v[j]) });
			return out;
		},
		matches: function () { return { count: nmatch, share: mshare }; },
		nodes: function () { return V.n; }
	};
	var tBuilt;
	refresh();
	pmflame.timing = { start: t0, parse: tParsed - t0, build: tBuilt - tParsed, draw: pmflame.rendered - tBuilt };
})();
