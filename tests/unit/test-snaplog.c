/*
 * Unit tests for lib/snaplog: snapshots logged live, encoded against the
 * one before and decoded at replay serve each read what its live read got
 * (the same address twice, failed reads, reads that moved, changed,
 * appeared and went away); an unchanged snapshot encodes to a few bytes;
 * a read made again after snapshots without it is a patch against the
 * dictionary, unless its bound evicted it;
 * and every truncation and byte flip of an encoding decodes or is refused
 * without reading outside it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture/snaplog.h"
#include "test.h"
#include "base/util.h"

#define NG 300  /* "goroutines" a snapshot reads */
#define GSZ 64  /* bytes of each */

struct world {
	uint8_t g[NG][GSZ];
	uint8_t stack[NG][200];
};

/* One snapshot of @w: every g, then the stacks of those that @walk says, then those g again. */
static void take(struct pm_slog *l, const struct world *w, const bool *walk, const bool *fails)
{
	for (int i = 0; i < NG; i++)
		pm_slog_log(l, 7, 0x100000 + (uint64_t)i * 0x1000, fails && fails[i] ? NULL : w->g[i],
			    GSZ);
	for (int i = 0; i < NG; i++)
		if (walk[i])
			pm_slog_log(l, 7, 0x900000 + (uint64_t)i * 0x400 + w->g[i][0], w->stack[i],
				    sizeof(w->stack[i]));
	for (int i = 0; i < NG; i++)
		if (walk[i])
			pm_slog_log(l, 7, 0x100000 + (uint64_t)i * 0x1000, w->g[i], GSZ);
	pm_slog_log(l, 0, 32, "12345678", 8); /* a value */
}

/* The replay's reads of that snapshot, in the same order: what the live ones got. */
static int check(struct pm_slog *r, const struct world *w, const bool *walk, const bool *fails)
{
	uint8_t got[256];

	for (int i = 0; i < NG; i++) {
		int rc = pm_slog_read(r, 7, 0x100000 + (uint64_t)i * 0x1000, got, GSZ);

		if (fails && fails[i]) {
			CHECK_INT(rc, -EFAULT);
			continue;
		}
		CHECK_INT(rc, 0);
		CHECK(!memcmp(got, w->g[i], GSZ));
	}
	for (int i = 0; i < NG; i++)
		if (walk[i]) {
			CHECK_INT(pm_slog_read(r, 7, 0x900000 + (uint64_t)i * 0x400 + w->g[i][0], got,
					       sizeof(w->stack[i])),
				  0);
			CHECK(!memcmp(got, w->stack[i], sizeof(w->stack[i])));
		}
	for (int i = 0; i < NG; i++)
		if (walk[i]) {
			CHECK_INT(pm_slog_read(r, 7, 0x100000 + (uint64_t)i * 0x1000, got, GSZ), 0);
			CHECK(!memcmp(got, w->g[i], GSZ));
		}
	CHECK_INT(pm_slog_read(r, 0, 32, got, 8), 0);
	CHECK(!memcmp(got, "12345678", 8));
	/* past the end, or a read it never made: fails */
	CHECK_INT(pm_slog_read(r, 7, 0x100000, got, GSZ), -EFAULT);
	return PM_PASS;
}

static void seeded(struct world *w, unsigned seed)
{
	srand(seed);
	for (int i = 0; i < NG; i++) {
		for (int k = 0; k < GSZ; k++)
			w->g[i][k] = (uint8_t)rand();
		for (size_t k = 0; k < sizeof(w->stack[i]); k++)
			w->stack[i][k] = (uint8_t)rand();
	}
}

/*
 * Ten snapshots of a world that changes a little each time: a few g change
 * a byte or two (and their stacks, read at a new address), some reads fail
 * and come back; each replay equals its live snapshot, and an unchanged
 * snapshot costs a few bytes.
 */
static int t_snapshots(void)
{
	struct pm_slog *live = pm_slog_new(), *rep = pm_slog_new();
	static struct world w;
	bool walk[NG], fails[NG];
	size_t first = 0, same = 0;

	seeded(&w, 1);
	for (int s = 0; s < 10; s++) {
		uint8_t *enc;
		size_t len;

		memset(walk, s == 0, sizeof(walk));
		memset(fails, 0, sizeof(fails));
		if (s > 0 && s != 5) { /* snapshot 5: nothing changed */
			for (int k = 0; k < 7; k++) {
				int i = rand() % NG;

				w.g[i][rand() % GSZ]++;
				w.g[i][0] += 3;
				w.stack[i][rand() % 200] ^= 0x55;
				walk[i] = true;
			}
			fails[(s * 37) % NG] = s % 3 == 0;
		}
		pm_slog_start(live);
		take(live, &w, walk, fails);
		pm_slog_encode(live, &enc, &len);
		if (s == 0)
			first = len;
		if (s == 5)
			same = len;
		CHECK_INT(pm_slog_decode(rep, enc, len), 0);
		free(enc);
		CHECK_INT((int)pm_slog_nreads(rep), (int)pm_slog_nreads(live));
		if (check(rep, &w, walk, fails) != PM_PASS)
			return PM_FAIL;
	}
	/* the whole first one; then only what changed: nothing, a copy run */
	CHECK(first > NG * GSZ);
	CHECK(same < 16);
	pm_slog_free(live);
	pm_slog_free(rep);
	return PM_PASS;
}

/* Every truncation and every single-byte change of an encoding: decoded or refused, never past it. */
static int t_hostile(void)
{
	struct pm_slog *live = pm_slog_new();
	static struct world w;
	bool walk[NG];
	uint8_t *enc0, *enc1, *cp;
	size_t len0, len1;
	uint8_t got[256];

	seeded(&w, 2);
	memset(walk, 0, sizeof(walk));
	walk[3] = walk[77] = true;
	pm_slog_start(live);
	take(live, &w, walk, NULL);
	pm_slog_encode(live, &enc0, &len0);
	w.g[5][9]++;
	w.g[77][0]++;
	pm_slog_start(live);
	take(live, &w, walk, NULL);
	pm_slog_encode(live, &enc1, &len1);
	for (size_t cut = 0; cut <= len1; cut++) {
		struct pm_slog *r = pm_slog_new();

		CHECK_INT(pm_slog_decode(r, enc0, len0), 0);
		cp = xmalloc(cut ? cut : 1); /* exactly @cut bytes: ASan sees a read past them */
		memcpy(cp, enc1, cut);
		if (pm_slog_decode(r, cp, cut) == 0)
			pm_slog_read(r, 7, 0x100000, got, GSZ);
		else
			CHECK_INT((int)pm_slog_nreads(r), 0);
		free(cp);
		pm_slog_free(r);
	}
	for (size_t i = 0; i < len1; i++)
		for (int v = 0; v < 256; v += 51) {
			struct pm_slog *r = pm_slog_new();

			CHECK_INT(pm_slog_decode(r, enc0, len0), 0);
			cp = xmalloc(len1);
			memcpy(cp, enc1, len1);
			cp[i] = (uint8_t)(cp[i] ^ (v | 1));
			if (pm_slog_decode(r, cp, len1) == 0)
				for (int k = 0; k < 4; k++)
					pm_slog_read(r, 7, 0x100000 + (uint64_t)k * 0x1000, got, GSZ);
			free(cp);
			pm_slog_free(r);
		}
	/* against no base at all: a copy or a patch has nothing to refer to */
	{
		struct pm_slog *r = pm_slog_new();
		const uint8_t copy[] = { 1, 1 }, patch[] = { 3, 0 }, seek[] = { 2, 2 },
			      fail[] = { 5 }, big[] = { 4, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 1 },
			      dict[] = { 6, 7, 0, 8, 0 };

		CHECK_INT(pm_slog_decode(r, copy, sizeof(copy)), -EINVAL);
		CHECK_INT(pm_slog_decode(r, patch, sizeof(patch)), -EINVAL);
		CHECK_INT(pm_slog_decode(r, seek, sizeof(seek)), -EINVAL);
		CHECK_INT(pm_slog_decode(r, fail, sizeof(fail)), -EINVAL);
		CHECK_INT(pm_slog_decode(r, big, sizeof(big)), -EINVAL);
		CHECK_INT(pm_slog_decode(r, dict, sizeof(dict)), -EINVAL); /* nothing kept */
		CHECK_INT(pm_slog_decode(r, copy, 0), 0);
		pm_slog_free(r);
	}
	free(enc0);
	free(enc1);
	pm_slog_free(live);
	return PM_PASS;
}

/* Live: a snapshot over its bound is refused read by read (the read then fails live too). */
static int t_full(void)
{
	struct pm_slog *l = pm_slog_new();
	uint8_t *big = xcalloc(1, PM_SLOG_MAX), *enc;
	size_t len;

	pm_slog_start(l);
	CHECK(pm_slog_log(l, 1, 0x1000, big, PM_SLOG_MAX));
	CHECK(!pm_slog_log(l, 1, 0x1000, big, 1));
	CHECK(pm_slog_log(l, 1, 0x1000, NULL, 1)); /* a failure costs no bytes */
	pm_slog_encode(l, &enc, &len);
	CHECK(len > PM_SLOG_MAX);
	free(enc);
	free(big);
	pm_slog_free(l);
	return PM_PASS;
}

/* One snapshot of one read (and a value): encoded, decoded, served as read; its encoding's length. */
static size_t one(struct pm_slog *live, struct pm_slog *rep, uint64_t addr, const uint8_t *b,
		  size_t n)
{
	uint8_t *enc, *got = xmalloc(n);
	size_t len;
	int ok;

	pm_slog_start(live);
	if (n)
		pm_slog_log(live, 7, addr, b, n);
	pm_slog_log(live, 0, 32, "12345678", 8);
	pm_slog_encode(live, &enc, &len);
	ok = pm_slog_decode(rep, enc, len) == 0 &&
	     (!n || (pm_slog_read(rep, 7, addr, got, n) == 0 && !memcmp(got, b, n)));
	free(enc);
	free(got);
	return ok ? len : 0;
}

/*
 * A stack read, absent from the next snapshot, read again a byte changed:
 * a patch against the dictionary.  Reads of more than the dictionary's
 * bound push it out: read again, it is new.
 */
static int t_dict(void)
{
	struct pm_slog *live = pm_slog_new(), *rep = pm_slog_new();
	const size_t big = 1u << 20;
	uint8_t st[600], *b = xmalloc(big);
	size_t n;

	for (size_t i = 0; i < sizeof(st); i++)
		st[i] = (uint8_t)(i * 7 + 1);
	n = one(live, rep, 0x5000, st, sizeof(st));
	CHECK(n > sizeof(st));
	CHECK(one(live, rep, 0, NULL, 0) > 0);
	st[100]++;
	n = one(live, rep, 0x5000, st, sizeof(st));
	CHECK(n > 0 && n < 32);
	for (unsigned k = 0; k < 2 * PM_SLOG_DICT_MAX / big; k++) {
		memset(b, (int)k + 1, big);
		CHECK(one(live, rep, 0x10000000 + (uint64_t)k * big, b, big) > big);
	}
	st[101]++; /* evicted: whole again */
	CHECK(one(live, rep, 0x5000, st, sizeof(st)) > sizeof(st));
	b[5] = 0; /* the last one: kept */
	n = one(live, rep, 0x10000000 + (2 * PM_SLOG_DICT_MAX / big - 1) * big, b, big);
	CHECK(n > 0 && n < 32);
	free(b);
	pm_slog_free(live);
	pm_slog_free(rep);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "snapshots", t_snapshots },
	{ "hostile", t_hostile },
	{ "full", t_full },
	{ "dict", t_dict },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "snaplog", tests);
}
