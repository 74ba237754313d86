#!/usr/bin/env python3
# bench-fmt.py RESULTS PROC EXTRA ROUNDS KMAX_BEFORE KMAX_AFTER SECONDS NCPU LOAD:
# the Markdown tables of scripts/bench.sh from its raw results.
import os
import statistics as st
import sys

res, proc, extra, rounds, kmax0, kmax1, secs, ncpu, load = sys.argv[1:10]
rows = [l.rstrip("\n").split("\t") for l in open(res) if l.strip()]
WL = {"cpu": "benchcpu (2 busy goroutines)", "deep": "benchdeep (2 goroutines, ~205 frames)",
      "esbuild": "esbuild bundling 400 JS modules"}
CF = {"perf": "perf record (no call graph)", "perf-fp": "perf record --call-graph fp",
      "perf-dwarf": "perf record --call-graph dwarf,8192", "pmuprof": "pmuprof record",
      "pmuprof-nocc": "pmuprof record --no-callchain",
      "base": "base pmuprof record", "base-nocc": "base pmuprof record --no-callchain"}
ORDER = ["perf", "perf-fp", "perf-dwarf", "pmuprof", "base", "pmuprof-nocc", "base-nocc"]
BASE = os.environ.get("BENCH_BASE_NAME", "")


def med(xs):
    return st.median(xs) if xs else float("nan")


print("| workload | recorder | rate | slowdown (elapsed) | target CPU | target + recorder CPU | "
      "samples | lost | recorder CPU/sample | output bytes/sample | stacks reaching runtime.goexit |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
wls = []
for r in rows:
    if r[0] not in wls:
        wls.append(r[0])
for wl in wls:
    base = [float(r[4]) for r in rows if r[0] == wl and r[1] == "none"]
    b = med(base)
    bc = med([float(r[5]) for r in rows if r[0] == wl and r[1] == "none"])
    rates = sorted({int(r[2]) for r in rows if r[0] == wl})
    print("| %s | no profiler | — | 1.00× (%.2f s, n=%d) | 1.00× (%.2f s) | 1.00× | | | | | |" % (
        WL.get(wl, wl), b, len(base), bc))
    for cf in ORDER:
        for rate in rates:
            rs = [r for r in rows if r[0] == wl and r[1] == cf and int(r[2]) == rate]
            if not rs:
                continue
            el = med([float(r[4]) for r in rs])
            tc = med([float(r[5]) for r in rs])
            ac = med([float(r[5]) + float(r[6]) for r in rs])
            sm = [int(r[7]) for r in rs]
            lo = [int(r[8]) for r in rs]
            cpu = [float(r[6]) / int(r[7]) * 1e6 for r in rs if int(r[7]) > 0]
            by = [int(r[9]) / int(r[7]) for r in rs if int(r[7]) > 0]
            comp = [r[10] for r in rs if r[10] != "-"]
            lost = "%d" % med(lo) + (" (max %d)" % max(lo) if max(lo) != med(lo) else "")
            print("| | %s | %g kHz | %.2f× | %.2f× | %.2f× | %d | %s | %.1f µs | %.0f | %s |" % (
                CF[cf], rate / 1000, el / b, tc / bc, ac / bc, med(sm), lost, med(cpu), med(by),
                (comp[0] + " %") if comp else "—"))
print()
print("Processing (cpu workload at 20 kHz, one core, best of 3):")
print()
print("| processor | samples | samples/s | input bytes/sample |")
print("|---|---|---|---|")
pm = None
for l in open(proc):
    name, n, rate, size = l.rstrip("\n").split("\t")
    n, rate, size = int(n), int(rate), int(size)
    if name.startswith("pmuprof") and pm is None:
        pm = rate
        rel = ""
    elif name.startswith("pmuprof"):
        rel = " (%.2f× of pmuprof's)" % (rate / pm) if pm else ""
    else:
        rel = " (pmuprof: %.0f× faster)" % (pm / rate) if pm and rate else ""
    print("| %s | %d | %d%s | %.0f |" % (name, n, rate, rel, size / n if n else 0))
print()
for l in open(extra):
    print(l.rstrip("\n"))
if BASE:
    print("- base: %s, beside pmuprof in the same rounds" % BASE)
print("- median of %s round(s), alternating; %s CPUs, load average %s at the end; "
      "perf_event_max_sample_rate %s before, %s after; run took %s s" % (
          rounds, ncpu, load, kmax0, kmax1, secs))
