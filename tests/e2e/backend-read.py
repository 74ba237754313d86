#!/usr/bin/env python3
"""Read back what a test backend received, as text the tests compare with awk
(tests/e2e/lib-backends.sh calls it; one tab between fields).

  backend-read.py otlp FILE WHAT [KEY=VALUE...]
      FILE: the collector's file exporter output, one OTLP
      ExportProfilesServiceRequest as JSON a line.  Only the profiles whose
      resource has every KEY=VALUE are read.  WHAT:
        profiles   one line a profile: its sample type/unit, period type/unit,
                   period, samples, sum of values, then its resource
                   attributes key=value, sorted
        folded     root;...;leaf sum, as `pmuprof report --folded`, summed over
                   the profiles
        leaf       sum<TAB>function, the values summed by leaf function
        attr:KEY   sum<TAB>value, by the value of the sample attribute KEY
                   ("-" where a sample has none)
  backend-read.py pprof-json WHAT < JSON
      a pprof Profile as protobuf JSON (Pyroscope's SelectMergeProfile):
      folded or leaf, of its first sample type
"""
import json
import sys
from collections import defaultdict


def num(v):
    """protobuf JSON writes 64-bit integers as strings"""
    return int(v) if v is not None else 0


def anyvalue(v, strs=()):
    """an OTLP AnyValue as text"""
    if "stringValueStrindex" in v:
        return strs[v["stringValueStrindex"]]
    for k in ("stringValue", "intValue", "doubleValue", "boolValue"):
        if k in v:
            return str(v[k])
    return json.dumps(v, sort_keys=True)


def keyvalue(kv, strs):
    """a resource attribute's (key, value): the collector writes their
    strings as references to the dictionary's string table"""
    key = kv["key"] if "key" in kv else strs[kv.get("keyStrindex", 0)]
    return key, anyvalue(kv.get("value", {}), strs)


def clean(s):
    """a name on one field of one line"""
    return s.replace("\t", " ").replace("\n", " ").replace(";", ":")


def otlp_requests(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def otlp_profiles(path, want):
    """(resource attributes, profile, dictionary) of each matching profile;
    want's "type" (e.g. wall/nanoseconds) picks the profile's sample type"""
    want = dict(want)
    vt = want.pop("type", None)
    for req in otlp_requests(path):
        d = req.get("dictionary", {})
        strs = d.get("stringTable", [])
        for rp in req.get("resourceProfiles", []):
            attrs = dict(keyvalue(kv, strs)
                         for kv in rp.get("resource", {}).get("attributes", []))
            if any(attrs.get(k) != v for k, v in want.items()):
                continue
            for sp in rp.get("scopeProfiles", []):
                for p in sp.get("profiles", []):
                    if vt is None or vtype(d, p.get("sampleType", {})) == vt:
                        yield attrs, p, d


def otlp_stack(d, sample):
    """the sample's frames, leaf first, inlined frames first"""
    strs = d.get("stringTable", [])
    stacks = d.get("stackTable", [])
    locs = d.get("locationTable", [])
    funcs = d.get("functionTable", [])
    frames = []
    st = stacks[sample.get("stackIndex", 0)] if stacks else {}
    for li in st.get("locationIndices", []):
        loc = locs[li]
        lines = loc.get("lines", [])
        if not lines:
            frames.append("0x%x" % num(loc.get("address")))
        for ln in lines:
            fn = funcs[ln.get("functionIndex", 0)]
            frames.append(clean(strs[fn.get("nameStrindex", 0)]))
    return frames


def otlp_attr(d, sample, key):
    strs = d.get("stringTable", [])
    table = d.get("attributeTable", [])
    for i in sample.get("attributeIndices", []):
        kv = table[i]
        if strs[kv.get("keyStrindex", 0)] == key:
            return clean(anyvalue(kv.get("value", {}), strs))
    return "-"


def vtype(d, vt):
    strs = d.get("stringTable", [])
    return "%s/%s" % (strs[vt.get("typeStrindex", 0)], strs[vt.get("unitStrindex", 0)])


def otlp(path, what, want):
    sums = defaultdict(int)
    for attrs, p, d in otlp_profiles(path, want):
        samples = p.get("samples", [])
        if what == "profiles":
            total = sum(num(v) for s in samples for v in s.get("values", []))
            res = "\t".join("%s=%s" % (k, clean(attrs[k])) for k in sorted(attrs))
            print("%s\t%s\t%d\t%d\t%d\t%s" % (
                vtype(d, p.get("sampleType", {})), vtype(d, p.get("periodType", {})),
                num(p.get("period")), len(samples), total, res))
            continue
        for s in samples:
            v = sum(num(x) for x in s.get("values", []))
            if what == "folded":
                sums[";".join(reversed(otlp_stack(d, s)))] += v
            elif what == "leaf":
                frames = otlp_stack(d, s)
                sums[frames[0] if frames else "-"] += v
            elif what.startswith("attr:"):
                sums[otlp_attr(d, s, what[5:])] += v
            else:
                sys.exit("backend-read: unknown WHAT %r" % what)
    emit(what, sums)


def pprof_json(what, prof):
    strs = prof.get("stringTable", [])
    funcs = {f.get("id"): f for f in prof.get("function", [])}
    locs = {l.get("id"): l for l in prof.get("location", [])}
    sums = defaultdict(int)
    for s in prof.get("sample", []):
        frames = []
        for lid in s.get("locationId", []):
            for ln in locs[lid].get("line", []):
                frames.append(clean(strs[num(funcs[ln.get("functionId")].get("name"))]))
        v = num((s.get("value") or [0])[0])
        if what == "folded":
            sums[";".join(reversed(frames))] += v
        elif what == "leaf":
            sums[frames[0] if frames else "-"] += v
        else:
            sys.exit("backend-read: unknown WHAT %r" % what)
    emit(what, sums)


def emit(what, sums):
    for k in sorted(sums, key=lambda k: (-sums[k], k)):
        if what == "folded":
            print("%s %d" % (k, sums[k]))
        else:
            print("%d\t%s" % (sums[k], k))


def main(argv):
    if len(argv) >= 4 and argv[1] == "otlp":
        want = dict(a.split("=", 1) for a in argv[4:])
        otlp(argv[2], argv[3], want)
    elif len(argv) == 3 and argv[1] == "pprof-json":
        pprof_json(argv[2], json.load(sys.stdin))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
