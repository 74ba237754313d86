/*
 * Unit tests for lib/pprof: encode/decode round trip of every field,
 * byte-reproducible gzip output, atomic writes, every class of read error
 * (empty, missing, truncated, corrupt gzip, garbage, rule-breaking
 * protobufs, zip bomb), and interoperation with Go 1.19: `go tool pprof`
 * must accept what we write, and we must read what runtime/pprof writes
 * (its top function agreeing with `go tool pprof -top`).
 */
#include "profile/pprof.h"

#include "profile/profile.h"
#include "output/report.h"
#include "base/util.h"

#include "profile.pb-c.h"

#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define GO "/usr/lib/go-1.19/bin/go"
#define NOT_PPROF "not a pprof profile (no gzip header and not a protobuf message)"

/* ---- helpers ---- */

static struct pm_profile *rich_profile(void)
{
	struct pm_profile *p = pm_prof_new();
	uint64_t m1, m2, fmain, fwork, fleaf, frt, l1, l2, l3, l4, l5;
	struct pm_prof_line ln[2];
	struct pm_prof_label la[2] = { { "thread", "main", 0, NULL },
				       { "bytes", NULL, 64, "bytes" } };
	struct pm_prof_label lb[1] = { { "n", NULL, -5, NULL } };
	uint64_t st[4];
	int64_t v[2];

	pm_prof_add_sample_type(p, "samples", "count");
	pm_prof_add_sample_type(p, "cpu", "nanoseconds");
	pm_prof_set_default_type(p, 0);
	pm_prof_set_period(p, "cpu", "nanoseconds", 10000000);
	pm_prof_set_time(p, 1700000000123456789LL, 2030000000LL);
	pm_prof_add_comment(p, "lost 0 samples");
	pm_prof_add_comment(p, "pmuprof test");
	m1 = pm_prof_mapping(p, 0x400000, 0x500000, 0, "/bin/prog", "0123abcd");
	m2 = pm_prof_mapping(p, 0x7f0000000000ULL, 0x7f0000100000ULL, 0x28000,
			     "/lib/x86_64-linux-gnu/libc.so.6", "");
	pm_prof_mapping_flags(p, m1, true, true, true, true);
	fmain = pm_prof_func(p, "main.main", "main.main", "/src/main.go", 10);
	fwork = pm_prof_func(p, "main.work", "main.work", "/src/main.go", 20);
	fleaf = pm_prof_func(p, "main.leaf", "main.leaf_sys", "/src/leaf.go", 5);
	frt = pm_prof_func(p, "runtime.main", "runtime.main", "/go/src/runtime/proc.go", 144);
	ln[0] = (struct pm_prof_line){ fleaf, 7 };
	ln[1] = (struct pm_prof_line){ fwork, 22 };
	l1 = pm_prof_loc(p, m1, 0x401000, ln, 2);
	ln[0] = (struct pm_prof_line){ fmain, 12 };
	l2 = pm_prof_loc(p, m1, 0x401100, ln, 1);
	ln[0] = (struct pm_prof_line){ frt, 250 };
	l3 = pm_prof_loc(p, m1, 0x401200, ln, 1);
	l4 = pm_prof_loc(p, m2, 0x7f0000001234ULL, NULL, 0);
	ln[0] = (struct pm_prof_line){ fwork, 25 };
	l5 = pm_prof_loc(p, 0, 0, ln, 1);

	st[0] = l1, st[1] = l2, st[2] = l3;
	v[0] = 3, v[1] = 30000000;
	pm_prof_add(p, st, 3, v, NULL, 0);
	st[0] = l4, st[1] = l1, st[2] = l2, st[3] = l3;
	v[0] = 1, v[1] = 10000000;
	pm_prof_add(p, st, 4, v, la, 2);
	st[0] = l5, st[1] = l3;
	v[0] = 2, v[1] = 20000000;
	pm_prof_add(p, st, 2, v, lb, 1);
	v[0] = 1, v[1] = 1;
	pm_prof_add(p, NULL, 0, v, NULL, 0);
	return p;
}

static int str_same(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

/* Every field of @a equals that of @b. */
static int prof_equal(const struct pm_profile *a, const struct pm_profile *b)
{
	size_t i, j;

	CHECK_INT(pm_prof_nsample_types(a), pm_prof_nsample_types(b));
	for (i = 0; i < pm_prof_nsample_types(a); i++) {
		CHECK_STR(pm_prof_sample_type(a, i)->type, pm_prof_sample_type(b, i)->type);
		CHECK_STR(pm_prof_sample_type(a, i)->unit, pm_prof_sample_type(b, i)->unit);
	}
	CHECK_INT(pm_prof_default_type(a), pm_prof_default_type(b));
	CHECK((pm_prof_period_type(a) == NULL) == (pm_prof_period_type(b) == NULL));
	if (pm_prof_period_type(a)) {
		CHECK_STR(pm_prof_period_type(a)->type, pm_prof_period_type(b)->type);
		CHECK_STR(pm_prof_period_type(a)->unit, pm_prof_period_type(b)->unit);
	}
	CHECK_INT(pm_prof_period(a), pm_prof_period(b));
	CHECK_INT(pm_prof_time(a), pm_prof_time(b));
	CHECK_INT(pm_prof_duration(a), pm_prof_duration(b));
	CHECK_INT(pm_prof_ncomments(a), pm_prof_ncomments(b));
	for (i = 0; i < pm_prof_ncomments(a); i++)
		CHECK_STR(pm_prof_comment(a, i), pm_prof_comment(b, i));

	CHECK_INT(pm_prof_nmappings(a), pm_prof_nmappings(b));
	for (i = 0; i < pm_prof_nmappings(a); i++) {
		const struct pm_prof_mapping *x = pm_prof_mapping_at(a, i);
		const struct pm_prof_mapping *y = pm_prof_mapping_at(b, i);

		CHECK_INT(x->id, y->id);
		CHECK_INT(x->start, y->start);
		CHECK_INT(x->limit, y->limit);
		CHECK_INT(x->offset, y->offset);
		CHECK_STR(x->file, y->file);
		CHECK_STR(x->build_id, y->build_id);
		CHECK_INT(x->has_functions, y->has_functions);
		CHECK_INT(x->has_filenames, y->has_filenames);
		CHECK_INT(x->has_lines, y->has_lines);
		CHECK_INT(x->has_inline, y->has_inline);
	}
	CHECK_INT(pm_prof_nfuncs(a), pm_prof_nfuncs(b));
	for (i = 0; i < pm_prof_nfuncs(a); i++) {
		const struct pm_prof_func *x = pm_prof_func_at(a, i), *y = pm_prof_func_at(b, i);

		CHECK_INT(x->id, y->id);
		CHECK_STR(x->name, y->name);
		CHECK_STR(x->system_name, y->system_name);
		CHECK_STR(x->file, y->file);
		CHECK_INT(x->start_line, y->start_line);
	}
	CHECK_INT(pm_prof_nlocs(a), pm_prof_nlocs(b));
	for (i = 0; i < pm_prof_nlocs(a); i++) {
		const struct pm_prof_loc *x = pm_prof_loc_at(a, i), *y = pm_prof_loc_at(b, i);

		CHECK_INT(x->id, y->id);
		CHECK_INT(x->mapping_id, y->mapping_id);
		CHECK_INT(x->address, y->address);
		CHECK_INT(x->nlines, y->nlines);
		for (j = 0; j < x->nlines; j++) {
			CHECK_INT(x->lines[j].func_id, y->lines[j].func_id);
			CHECK_INT(x->lines[j].line, y->lines[j].line);
		}
	}
	CHECK_INT(pm_prof_nsamples(a), pm_prof_nsamples(b));
	for (i = 0; i < pm_prof_nsamples(a); i++) {
		const struct pm_prof_sample *x = pm_prof_sample_at(a, i);
		const struct pm_prof_sample *y = pm_prof_sample_at(b, i);

		CHECK_INT(x->nlocs, y->nlocs);
		for (j = 0; j < x->nlocs; j++)
			CHECK_INT(x->loc_ids[j], y->loc_ids[j]);
		for (j = 0; j < pm_prof_nsample_types(a); j++)
			CHECK_INT(x->values[j], y->values[j]);
		CHECK_INT(x->nlabels, y->nlabels);
		for (j = 0; j < x->nlabels; j++) {
			CHECK_STR(x->labels[j].key, y->labels[j].key);
			CHECK(str_same(x->labels[j].str, y->labels[j].str));
			CHECK_INT(x->labels[j].num, y->labels[j].num);
			CHECK(str_same(x->labels[j].num_unit, y->labels[j].num_unit));
		}
	}
	return PM_PASS;
}

static int gzip_level(const void *in, size_t len, uint8_t **out, size_t *outlen, int level)
{
	z_stream z;
	size_t cap;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	cap = deflateBound(&z, len) + 64;
	*out = xmalloc(cap);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = *out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(*out);
		return -1;
	}
	*outlen = cap - z.avail_out;
	deflateEnd(&z);
	return 0;
}

static int gzip_bytes(const void *in, size_t len, uint8_t **out, size_t *outlen)
{
	return gzip_level(in, len, out, outlen, 6);
}

static char tmpdir[64];

static const char *tmp_path(const char *name)
{
	static char buf[256];

	if (!tmpdir[0]) {
		strcpy(tmpdir, "/tmp/pmuprof-test-pprof-XXXXXX");
		if (!mkdtemp(tmpdir))
			return NULL;
	}
	snprintf(buf, sizeof(buf), "%s/%s", tmpdir, name);
	return buf;
}

static int write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		return -1;
	if (len && fwrite(buf, 1, len, f) != len) {
		fclose(f);
		return -1;
	}
	return fclose(f);
}

/* Decode @buf and expect an error whose text starts with @prefix and contains @part. */
static int expect_err(const uint8_t *buf, size_t len, const char *prefix, const char *part)
{
	struct pm_profile *p = (struct pm_profile *)1;
	char err[256];
	int rc;

	err[0] = 'X';
	err[1] = '\0';
	rc = pm_pprof_decode(buf, len, &p, err, sizeof(err));
	if (rc >= 0 || p != NULL || strncmp(err, prefix, strlen(prefix)) != 0 ||
	    (part && !strstr(err, part)) || strchr(err, '\n')) {
		fprintf(stderr, "  decode of %zu bytes: rc %d, err \"%s\"\n", len, rc, err);
		fprintf(stderr, "  expected \"%s...\" with \"%s\"\n", prefix, part ? part : "");
		pm_prof_free(p == (struct pm_profile *)1 ? NULL : p);
		return PM_FAIL;
	}
	return PM_PASS;
}

/* Run @cmd through the shell; its output goes to @out_name in the temp dir. */
static int sh(const char *cmd)
{
	int rc = system(cmd);

	return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

static char *slurp(const char *path)
{
	char *s = NULL;
	long n = pm_read_file(path, &s, 1 << 24);

	return n < 0 ? NULL : s;
}

/* ---- round trip and reproducibility ---- */

static int test_roundtrip(void)
{
	struct pm_profile *p = rich_profile(), *q = NULL;
	uint8_t *buf, *buf2;
	size_t len, len2;
	char err[256] = "";
	int rc;

	CHECK_INT(pm_pprof_encode(p, &buf, &len), 0);
	rc = pm_pprof_decode(buf, len, &q, err, sizeof(err));
	if (rc)
		fprintf(stderr, "  decode: %s\n", err);
	CHECK_INT(rc, 0);
	CHECK(q != NULL);
	CHECK_INT(prof_equal(p, q), PM_PASS);
	/* the decoded profile encodes to the very same bytes */
	CHECK_INT(pm_pprof_encode(q, &buf2, &len2), 0);
	CHECK_INT(len2, len);
	CHECK(memcmp(buf, buf2, len) == 0);
	free(buf2);
	free(buf);
	pm_prof_free(q);
	pm_prof_free(p);

	/* an empty profile round-trips too */
	p = pm_prof_new();
	CHECK_INT(pm_pprof_encode(p, &buf, &len), 0);
	CHECK_INT(pm_pprof_decode(buf, len, &q, err, sizeof(err)), 0);
	CHECK_INT(prof_equal(p, q), PM_PASS);
	CHECK(pm_prof_period_type(q) == NULL);
	free(buf);
	pm_prof_free(q);
	pm_prof_free(p);
	return PM_PASS;
}

static int test_reproducible(void)
{
	struct pm_profile *a = rich_profile(), *b = rich_profile();
	uint8_t *x, *y;
	size_t nx, ny;

	CHECK_INT(pm_pprof_encode(a, &x, &nx), 0);
	CHECK_INT(pm_pprof_encode(b, &y, &ny), 0);
	CHECK_INT(nx, ny);
	CHECK(memcmp(x, y, nx) == 0);
	CHECK(nx > 18);
	CHECK_INT(x[0], 0x1f);
	CHECK_INT(x[1], 0x8b);
	CHECK_INT(x[2], 8);   /* deflate */
	CHECK_INT(x[3], 0);   /* no name, no extra */
	CHECK_INT(pm_le32(x + 4), 0); /* mtime 0 */
	free(x);
	free(y);
	pm_prof_free(a);
	pm_prof_free(b);
	return PM_PASS;
}

/* A raw (not gzip'd) protobuf reads too, and the string table starts with "". */
static int test_raw_protobuf(void)
{
	struct pm_profile *p = rich_profile(), *q;
	uint8_t *gz, *raw = NULL;
	size_t gzlen, rawlen;
	Perftools__Profiles__Profile *m;
	char err[256] = "";
	z_stream z;

	CHECK_INT(pm_pprof_encode(p, &gz, &gzlen), 0);
	memset(&z, 0, sizeof(z));
	CHECK_INT(inflateInit2(&z, 15 + 16), Z_OK);
	rawlen = 1 << 20;
	raw = xmalloc(rawlen);
	z.next_in = gz;
	z.avail_in = (uInt)gzlen;
	z.next_out = raw;
	z.avail_out = (uInt)rawlen;
	CHECK_INT(inflate(&z, Z_FINISH), Z_STREAM_END);
	rawlen = z.total_out;
	inflateEnd(&z);
	m = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	CHECK(m != NULL);
	CHECK(m->n_string_table > 5);
	CHECK_STR(m->string_table[0], "");
	CHECK_INT(m->n_sample_type, 2);
	CHECK_STR(m->string_table[m->default_sample_type], "samples");
	CHECK(m->period_type != NULL);
	CHECK_STR(m->string_table[m->period_type->unit], "nanoseconds");
	CHECK_INT(m->period, 10000000);
	CHECK_INT(m->n_comment, 2);
	CHECK_INT(m->mapping[0]->has_functions, 1);
	CHECK_INT(m->mapping[1]->has_functions, 0);
	CHECK_INT(m->location[0]->n_line, 2);
	perftools__profiles__profile__free_unpacked(m, NULL);

	CHECK_INT(pm_pprof_decode(raw, rawlen, &q, err, sizeof(err)), 0);
	CHECK_INT(prof_equal(p, q), PM_PASS);
	pm_prof_free(q);
	free(raw);
	free(gz);
	pm_prof_free(p);
	return PM_PASS;
}

/* ---- writing files ---- */

static int test_write(void)
{
	struct pm_profile *p = rich_profile(), *q = NULL;
	char dir[256], path[300], sub[300], err[256] = "";
	uint8_t *buf;
	size_t len;
	struct stat st;
	mode_t um;
	char *data = NULL;
	long n;

	CHECK(tmp_path("w") != NULL);
	snprintf(dir, sizeof(dir), "%s", tmp_path("w"));
	CHECK_INT(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/out.pb.gz", dir);
	CHECK_INT(pm_pprof_write(p, path, NULL), 0);
	CHECK_INT(pm_test_count_entries(dir), 1);
	CHECK_INT(pm_pprof_read(path, &q, err, sizeof(err)), 0);
	CHECK_INT(prof_equal(p, q), PM_PASS);
	pm_prof_free(q);
	CHECK_INT(stat(path, &st), 0);
	um = umask(0);
	umask(um);
	CHECK_INT(st.st_mode & 0777, 0666 & ~um);
	/* the file holds exactly the encoding */
	CHECK_INT(pm_pprof_encode(p, &buf, &len), 0);
	n = pm_read_file(path, &data, 1 << 20);
	CHECK_INT(n, (long)len);
	CHECK(memcmp(data, buf, len) == 0);
	free(data);

	/* replacing an existing file */
	CHECK_INT(write_file(path, "old", 3), 0);
	CHECK_INT(pm_pprof_write(p, path, NULL), 0);
	CHECK_INT(pm_test_count_entries(dir), 1);
	CHECK_INT(stat(path, &st), 0);
	CHECK_INT(st.st_size, (long)len);

	/* failures leave nothing behind */
	snprintf(sub, sizeof(sub), "%s/nodir/out.pb.gz", dir);
	CHECK_INT(pm_pprof_write(p, sub, NULL), -ENOENT);
	snprintf(sub, sizeof(sub), "%s/adir", dir);
	CHECK_INT(mkdir(sub, 0755), 0);
	CHECK(pm_pprof_write(p, sub, NULL) < 0); /* rename onto a directory */
	CHECK_INT(pm_test_count_entries(dir), 2);
	CHECK_INT(pm_test_count_entries(sub), 0);
	snprintf(sub, sizeof(sub), "%s/adir/", dir);
	CHECK(pm_pprof_write(p, sub, NULL) < 0);
	CHECK_INT(pm_test_count_entries(sub), 0);

	/* "-" is standard output */
	{
		int saved, fd;

		snprintf(sub, sizeof(sub), "%s/stdout.bin", dir);
		fflush(stdout);
		saved = dup(STDOUT_FILENO);
		fd = open(sub, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CHECK(saved >= 0 && fd >= 0);
		dup2(fd, STDOUT_FILENO);
		close(fd);
		n = pm_pprof_write(p, "-", NULL);
		fflush(stdout);
		dup2(saved, STDOUT_FILENO);
		close(saved);
		CHECK_INT(n, 0);
		data = NULL;
		CHECK_INT(pm_read_file(sub, &data, 1 << 20), (long)len);
		CHECK(memcmp(data, buf, len) == 0);
		free(data);
	}
	free(buf);
	pm_prof_free(p);
	return PM_PASS;
}

/* ---- read errors ---- */

static int test_err_files(void)
{
	struct pm_profile *p = (struct pm_profile *)1;
	char err[256];
	char path[300];

	CHECK(tmp_path("x") != NULL);
	CHECK_INT(pm_pprof_read("/nonexistent/pmuprof/x.pb.gz", &p, err, sizeof(err)), -ENOENT);
	CHECK(p == NULL);
	CHECK_STR(err, strerror(ENOENT));
	snprintf(path, sizeof(path), "%s", tmp_path("empty.pb.gz"));
	CHECK_INT(write_file(path, "", 0), 0);
	CHECK_INT(pm_pprof_read(path, &p, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "file is empty");
	CHECK_INT(pm_pprof_read(tmpdir, &p, err, sizeof(err)), -EISDIR);
	CHECK_STR(err, strerror(EISDIR));
	/* a tiny error buffer is fine */
	CHECK_INT(pm_pprof_read(path, &p, err, 5), -EINVAL);
	CHECK_STR(err, "file");
	CHECK_INT(pm_pprof_read(path, &p, NULL, 0), -EINVAL);
	return PM_PASS;
}

static int test_err_gzip(void)
{
	struct pm_profile *p = rich_profile();
	uint8_t *buf, *cp;
	size_t len, cuts[8], i;
	static const char garbage[] = "this is not a profile\n";

	CHECK_INT(pm_pprof_encode(p, &buf, &len), 0);
	pm_prof_free(p);
	cuts[0] = 2, cuts[1] = 5, cuts[2] = 10, cuts[3] = 20, cuts[4] = len / 2;
	cuts[5] = len - 8, cuts[6] = len - 4, cuts[7] = len - 1;
	for (i = 0; i < PM_ARRAY_SIZE(cuts); i++)
		CHECK_INT(expect_err(buf, cuts[i], "truncated gzip stream", NULL), PM_PASS);

	cp = xmalloc(len + 8);
	memcpy(cp, buf, len);
	cp[2] = 7;
	CHECK_INT(expect_err(cp, len, "corrupt gzip stream: ", "method"), PM_PASS);
	memcpy(cp, buf, len);
	cp[len - 6] ^= 0xff; /* the CRC */
	CHECK_INT(expect_err(cp, len, "corrupt gzip stream: ", "check"), PM_PASS);
	memcpy(cp, buf, len);
	memcpy(cp + len, "trailer", 7);
	CHECK_INT(expect_err(cp, len + 7, "corrupt gzip stream: ", "trailing"), PM_PASS);
	free(cp);

	CHECK_INT(expect_err((const uint8_t *)garbage, sizeof(garbage) - 1, NOT_PPROF, NULL),
		  PM_PASS);
	CHECK_INT(expect_err((const uint8_t *)"\x1f", 1, "not a pprof profile (", NULL), PM_PASS);
	CHECK_INT(expect_err((const uint8_t *)"", 0, "file is empty", NULL), PM_PASS);

	/* gzip'd garbage, gzip'd text, gzip'd nothing */
	{
		uint8_t rnd[1000], *gz;
		size_t gzlen;
		uint64_t x = 12345;

		for (i = 0; i < sizeof(rnd); i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			rnd[i] = (uint8_t)(x >> 56);
		}
		CHECK_INT(gzip_bytes(rnd, sizeof(rnd), &gz, &gzlen), 0);
		CHECK_INT(expect_err(gz, gzlen, "not a pprof profile: ", NULL), PM_PASS);
		free(gz);
		CHECK_INT(gzip_bytes(garbage, sizeof(garbage) - 1, &gz, &gzlen), 0);
		CHECK_INT(expect_err(gz, gzlen, "not a pprof profile: ", NULL), PM_PASS);
		free(gz);
		CHECK_INT(gzip_bytes("", 0, &gz, &gzlen), 0);
		CHECK_INT(expect_err(gz, gzlen, "not a pprof profile: ", "string table"), PM_PASS);
		free(gz);
	}
	free(buf);
	return PM_PASS;
}

/* A small valid message to break one rule at a time. */
struct mini {
	Perftools__Profiles__Profile m;
	Perftools__Profiles__ValueType vt, *vtp[1];
	Perftools__Profiles__Mapping mp, *mpp[1];
	Perftools__Profiles__Function fn[2], *fnp[2];
	Perftools__Profiles__Line ln, *lnp[1];
	Perftools__Profiles__Location loc, *locp[1];
	Perftools__Profiles__Label lab, *labp[1];
	Perftools__Profiles__Sample s, *sp[1];
	uint64_t locids[1];
	int64_t vals[2];
	char *strs[6];
};

static void mini_init(struct mini *x)
{
	static char s0[] = "", s1[] = "samples", s2[] = "count", s3[] = "main.f", s4[] = "f.go",
		    s5[] = "/bin/prog";

	memset(x, 0, sizeof(*x));
	perftools__profiles__profile__init(&x->m);
	perftools__profiles__value_type__init(&x->vt);
	perftools__profiles__mapping__init(&x->mp);
	perftools__profiles__function__init(&x->fn[0]);
	perftools__profiles__function__init(&x->fn[1]);
	perftools__profiles__line__init(&x->ln);
	perftools__profiles__location__init(&x->loc);
	perftools__profiles__label__init(&x->lab);
	perftools__profiles__sample__init(&x->s);
	x->strs[0] = s0, x->strs[1] = s1, x->strs[2] = s2;
	x->strs[3] = s3, x->strs[4] = s4, x->strs[5] = s5;
	x->m.n_string_table = 6;
	x->m.string_table = x->strs;
	x->vt.type = 1;
	x->vt.unit = 2;
	x->vtp[0] = &x->vt;
	x->m.n_sample_type = 1;
	x->m.sample_type = x->vtp;
	x->mp.id = 1;
	x->mp.filename = 5;
	x->mpp[0] = &x->mp;
	x->m.n_mapping = 1;
	x->m.mapping = x->mpp;
	x->fn[0].id = 1;
	x->fn[0].name = 3;
	x->fn[0].filename = 4;
	x->fn[1].id = 2;
	x->fn[1].name = 1;
	x->fnp[0] = &x->fn[0];
	x->fnp[1] = &x->fn[1];
	x->m.n_function = 2;
	x->m.function = x->fnp;
	x->ln.function_id = 1;
	x->ln.line = 3;
	x->lnp[0] = &x->ln;
	x->loc.id = 1;
	x->loc.mapping_id = 1;
	x->loc.address = 0x1000;
	x->loc.n_line = 1;
	x->loc.line = x->lnp;
	x->locp[0] = &x->loc;
	x->m.n_location = 1;
	x->m.location = x->locp;
	x->lab.key = 1;
	x->lab.str = 3;
	x->labp[0] = &x->lab;
	x->locids[0] = 1;
	x->vals[0] = 5;
	x->s.n_location_id = 1;
	x->s.location_id = x->locids;
	x->s.n_value = 1;
	x->s.value = x->vals;
	x->s.n_label = 1;
	x->s.label = x->labp;
	x->sp[0] = &x->s;
	x->m.n_sample = 1;
	x->m.sample = x->sp;
}

static int mini_pack(struct mini *x, uint8_t **gz, size_t *gzlen)
{
	size_t n = perftools__profiles__profile__get_packed_size(&x->m);
	uint8_t *raw = xmalloc(n + 1);
	int rc;

	perftools__profiles__profile__pack(&x->m, raw);
	rc = gzip_bytes(raw, n, gz, gzlen);
	free(raw);
	return rc;
}

static int mini_expect(struct mini *x, const char *part)
{
	uint8_t *gz;
	size_t n;
	int rc;

	if (mini_pack(x, &gz, &n))
		return PM_FAIL;
	rc = expect_err(gz, n, "not a pprof profile: ", part);
	free(gz);
	return rc;
}

static int test_err_rules(void)
{
	struct mini x;
	struct pm_profile *p;
	uint8_t *gz;
	size_t n;
	char err[256] = "";
	static char bad0[] = "x";

	mini_init(&x);
	CHECK_INT(mini_pack(&x, &gz, &n), 0);
	CHECK_INT(pm_pprof_decode(gz, n, &p, err, sizeof(err)), 0);
	free(gz);
	CHECK_INT(pm_prof_nsamples(p), 1);
	CHECK_STR(pm_prof_sample_at(p, 0)->labels[0].str, "main.f");
	CHECK_STR(pm_prof_func_by_id(p, pm_prof_loc_by_id(p, 1)->lines[0].func_id)->name, "main.f");
	CHECK_STR(pm_prof_mapping_by_id(p, 1)->file, "/bin/prog");
	pm_prof_free(p);

	/* file ids need not be dense: they are renumbered */
	mini_init(&x);
	x.mp.id = 77;
	x.loc.mapping_id = 77;
	x.fn[0].id = 1000;
	x.ln.function_id = 1000;
	x.loc.id = 5;
	x.locids[0] = 5;
	CHECK_INT(mini_pack(&x, &gz, &n), 0);
	CHECK_INT(pm_pprof_decode(gz, n, &p, err, sizeof(err)), 0);
	free(gz);
	CHECK_INT(pm_prof_sample_at(p, 0)->loc_ids[0], 1);
	CHECK_INT(pm_prof_loc_at(p, 0)->mapping_id, 1);
	CHECK_STR(pm_prof_func_by_id(p, pm_prof_loc_at(p, 0)->lines[0].func_id)->name, "main.f");
	pm_prof_free(p);

	mini_init(&x);
	x.fn[0].name = 99;
	CHECK_INT(mini_expect(&x, "string 99"), PM_PASS);
	mini_init(&x);
	x.fn[0].filename = -1;
	CHECK_INT(mini_expect(&x, "string -1"), PM_PASS);
	mini_init(&x);
	x.vt.unit = 6;
	CHECK_INT(mini_expect(&x, "sample_type[0].unit"), PM_PASS);
	mini_init(&x);
	x.lab.key = 40;
	CHECK_INT(mini_expect(&x, "label"), PM_PASS);
	mini_init(&x);
	x.vals[1] = 60;
	x.m.n_comment = 1;
	x.m.comment = &x.vals[1];
	CHECK_INT(mini_expect(&x, "comment"), PM_PASS);
	mini_init(&x);
	x.m.doc_url = 6;
	CHECK_INT(mini_expect(&x, "doc_url"), PM_PASS);
	mini_init(&x);
	x.strs[0] = bad0;
	CHECK_INT(mini_expect(&x, "string_table[0]"), PM_PASS);
	mini_init(&x);
	x.locids[0] = 7;
	CHECK_INT(mini_expect(&x, "no location 7"), PM_PASS);
	mini_init(&x);
	x.locids[0] = 0;
	CHECK_INT(mini_expect(&x, "no location 0"), PM_PASS);
	mini_init(&x);
	x.loc.mapping_id = 3;
	CHECK_INT(mini_expect(&x, "no mapping 3"), PM_PASS);
	mini_init(&x);
	x.ln.function_id = 9;
	CHECK_INT(mini_expect(&x, "no function 9"), PM_PASS);
	mini_init(&x);
	x.ln.function_id = 0;
	CHECK_INT(mini_expect(&x, "no function 0"), PM_PASS);
	mini_init(&x);
	x.s.n_value = 2;
	CHECK_INT(mini_expect(&x, "2 values for 1 sample types"), PM_PASS);
	mini_init(&x);
	x.s.n_value = 0;
	CHECK_INT(mini_expect(&x, "0 values"), PM_PASS);
	mini_init(&x);
	x.m.n_sample_type = 0;
	x.s.n_value = 0;
	CHECK_INT(mini_expect(&x, "no sample types"), PM_PASS);
	mini_init(&x);
	x.fn[1].id = 1;
	CHECK_INT(mini_expect(&x, "two functions have id 1"), PM_PASS);
	mini_init(&x);
	x.fn[1].id = 0;
	CHECK_INT(mini_expect(&x, "function[1] has id 0"), PM_PASS);
	mini_init(&x);
	x.mp.id = 0;
	CHECK_INT(mini_expect(&x, "mapping[0] has id 0"), PM_PASS);
	mini_init(&x);
	x.loc.id = 0;
	CHECK_INT(mini_expect(&x, "location[0] has id 0"), PM_PASS);
	mini_init(&x);
	x.m.n_string_table = 0;
	CHECK_INT(mini_expect(&x, "string table is empty"), PM_PASS);
	return PM_PASS;
}

/*
 * Over 1 GiB inflated is refused: a zip bomb of 1025 concatenated gzip
 * members of 1 MiB of zeros each (about 5 MiB of input; level 1, as zlib
 * inflates the long distance-1 matches of higher levels slowly).
 */
/*
 * Ids a file chose to pile into one probe chain: 400000 locations whose
 * ids all hash to a multiple of 2^20 under the plain pm_hash_u64.  The
 * reader's id tables hash with a secret seed, so this reads as fast as any
 * other ids; with the plain hash it took 50 s (every insert probing
 * past all the earlier ones).
 */
static int test_id_flood(void)
{
	enum { N = 400000 };
	struct mini x;
	Perftools__Profiles__Location *locs = xcalloc(N, sizeof(*locs)), **lp = xcalloc(N, sizeof(*lp));
	struct pm_profile *p = NULL;
	uint8_t *gz;
	size_t n;
	char err[256];
	int rc;

	CHECK(pm_test_unhash(pm_hash_u64(12345)) == 12345);
	mini_init(&x);
	for (size_t j = 0; j < N; j++) {
		perftools__profiles__location__init(&locs[j]);
		locs[j].id = pm_test_unhash((uint64_t)(j + 1) << 20);
		locs[j].mapping_id = 1;
		locs[j].address = 0x1000 + j;
		lp[j] = &locs[j];
	}
	CHECK(locs[0].id != 0);
	x.m.n_location = N;
	x.m.location = lp;
	x.locids[0] = locs[N - 1].id;
	x.s.n_label = 0;
	CHECK_INT(mini_pack(&x, &gz, &n), 0);
	alarm(20);
	rc = pm_pprof_decode(gz, n, &p, err, sizeof(err));
	alarm(0);
	if (rc)
		fprintf(stderr, "  %s\n", err);
	CHECK_INT(rc, 0);
	CHECK_INT(pm_prof_nlocs(p), N);
	CHECK_INT(pm_prof_nsamples(p), 1);
	pm_prof_free(p);
	free(gz);
	free(locs);
	free(lp);
	return PM_PASS;
}

static int test_zip_bomb(void)
{
	const size_t chunk = (size_t)1 << 20, copies = 1025;
	uint8_t *zeros = xcalloc(1, chunk), *member, *bomb;
	size_t mlen;
	int rc;

	CHECK_INT(gzip_level(zeros, chunk, &member, &mlen, 1), 0);
	bomb = xmalloc(mlen * copies);
	for (size_t i = 0; i < copies; i++)
		memcpy(bomb + i * mlen, member, mlen);
	rc = expect_err(bomb, mlen * copies, "not a pprof profile: ", "1 GiB");
	/* fewer members are read whole (and then refused as not a profile) */
	if (rc == PM_PASS)
		rc = expect_err(bomb, mlen * 3, "not a pprof profile: ", NULL);
	free(bomb);
	free(member);
	free(zeros);
	return rc;
}

/* ---- Go ---- */

static bool have_go(void)
{
	return access(GO, X_OK) == 0;
}

/* Environment for the go command: caches inside the temp dir unless the fixtures' exists. */
static const char *go_env(void)
{
	static char env[8192];
	char cache[PATH_MAX];
	const char *fx = pm_test_fixture("gocache");

	if (!realpath(fx, cache))
		snprintf(cache, sizeof(cache), "%s", tmp_path("gocache"));
	snprintf(env, sizeof(env),
		 "HOME=%s GOCACHE=%s GOPATH=%s/gopath GO111MODULE=off GOFLAGS= GOTOOLCHAIN=local "
		 "PPROF_TMPDIR=%s PPROF_BINARY_PATH=%s",
		 tmpdir, cache, tmpdir, tmpdir, tmpdir);
	return env;
}

/* The function name on the first row of `go tool pprof -top` output, or NULL. */
static char *go_top_name(const char *text)
{
	const char *l = strstr(text, "flat%");
	char name[512];

	if (!l || !(l = strchr(l, '\n')))
		return NULL;
	if (sscanf(l + 1, "%*s %*s %*s %*s %*s %511s", name) != 1)
		return NULL;
	return xstrdup(name);
}

/* The function name on the first row of our table. */
static char *our_top_name(const struct pm_profile *p, long vi)
{
	struct pm_report_opts o = { 0, PM_SORT_SELF, vi, NULL };
	char *buf = NULL, name[512];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const char *l;
	char *r = NULL;

	if (!f)
		return NULL;
	if (pm_report_text(p, f, &o) == 0 && fflush(f) == 0 && (l = strstr(buf, "Self%")) &&
	    (l = strchr(l, '\n')) && sscanf(l + 1, "%*s %*s %*s %511s", name) == 1)
		r = xstrdup(name);
	fclose(f);
	free(buf);
	return r;
}

/* go tool pprof accepts what we write: -raw lists it, -top agrees on the hottest function. */
static int test_go_reads_ours(void)
{
	struct pm_profile *p = rich_profile();
	char path[300], cmd[16384], out[300];
	char *text, *name, *ours;

	if (!have_go())
		SKIP("%s not found", GO);
	snprintf(path, sizeof(path), "%s", tmp_path("ours.pb.gz"));
	CHECK_INT(pm_pprof_write(p, path, NULL), 0);

	snprintf(out, sizeof(out), "%s", tmp_path("raw.txt"));
	snprintf(cmd, sizeof(cmd), "%s %s tool pprof -raw -symbolize=none %s >%s 2>&1", go_env(),
		 GO, path, out);
	text = NULL;
	if (sh(cmd) != 0) {
		text = slurp(out);
		fprintf(stderr, "  go tool pprof -raw failed:\n%s\n", text ? text : "");
		free(text);
		return PM_FAIL;
	}
	text = slurp(out);
	CHECK(text != NULL);
	CHECK(strstr(text, "main.leaf") != NULL);
	CHECK(strstr(text, "main.work") != NULL);
	CHECK(strstr(text, "runtime.main") != NULL);
	CHECK(strstr(text, "samples/count") != NULL);
	CHECK(strstr(text, "0123abcd") != NULL);
	free(text);

	snprintf(out, sizeof(out), "%s", tmp_path("top.txt"));
	snprintf(cmd, sizeof(cmd), "%s %s tool pprof -top -symbolize=none %s >%s 2>&1", go_env(),
		 GO, path, out);
	CHECK_INT(sh(cmd), 0);
	text = slurp(out);
	CHECK(text != NULL);
	name = go_top_name(text);
	ours = our_top_name(p, -1);
	if (!name || !ours || strcmp(name, ours) != 0) {
		fprintf(stderr, "  top: go says %s, we say %s\n%s\n", name ? name : "?",
			ours ? ours : "?", text);
		return PM_FAIL;
	}
	CHECK_STR(ours, "main.leaf");
	free(name);
	free(ours);
	free(text);
	pm_prof_free(p);
	return PM_PASS;
}

static const char go_prog[] =
	"package main\n"
	"\n"
	"import (\n"
	"\t\"os\"\n"
	"\t\"runtime/pprof\"\n"
	"\t\"syscall\"\n"
	"\t\"time\"\n"
	")\n"
	"\n"
	"// the CPU time this process has used (a loaded host gives it less than the wall time)\n"
	"func cpu() time.Duration {\n"
	"\tvar ru syscall.Rusage\n"
	"\tsyscall.Getrusage(syscall.RUSAGE_SELF, &ru)\n"
	"\treturn time.Duration(ru.Utime.Nano() + ru.Stime.Nano())\n"
	"}\n"
	"\n"
	"//go:noinline\n"
	"func burn(n int) int {\n"
	"\ts := 0\n"
	"\tfor i := 0; i < n; i++ {\n"
	"\t\ts += i*i ^ (s >> 3)\n"
	"\t}\n"
	"\treturn s\n"
	"}\n"
	"\n"
	"func main() {\n"
	"\tf, err := os.Create(os.Args[1])\n"
	"\tif err != nil {\n"
	"\t\tpanic(err)\n"
	"\t}\n"
	"\tif err := pprof.StartCPUProfile(f); err != nil {\n"
	"\t\tpanic(err)\n"
	"\t}\n"
	"\tx, t, c := 0, time.Now(), cpu()\n"
	"\tfor cpu()-c < 700*time.Millisecond && time.Since(t) < 30*time.Second {\n"
	"\t\tx += burn(2000000)\n"
	"\t}\n"
	"\tpprof.StopCPUProfile()\n"
	"\tf.Close()\n"
	"\tif x == 42 {\n"
	"\t\tprintln(x)\n"
	"\t}\n"
	"}\n";

/* We read what runtime/pprof writes, and agree with go tool pprof on its top function. */
static int test_go_runtime_profile(void)
{
	char dir[300], cmd[16384], prof[400], out[400], err[256] = "";
	struct pm_profile *p = NULL;
	char *text, *name, *ours;
	long cpu;
	bool found = false;
	int64_t total = 0;

	if (!have_go())
		SKIP("%s not found", GO);
	CHECK(tmp_path("go") != NULL);
	snprintf(dir, sizeof(dir), "%s", tmp_path("go"));
	CHECK_INT(mkdir(dir, 0755), 0);
	snprintf(prof, sizeof(prof), "%s/main.go", dir);
	CHECK_INT(write_file(prof, go_prog, sizeof(go_prog) - 1), 0);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && %s %s build -o prog main.go >build.log 2>&1 && ./prog cpu.pprof", dir,
		 go_env(), GO);
	if (sh(cmd) != 0) {
		snprintf(out, sizeof(out), "%s/build.log", dir);
		text = slurp(out);
		fprintf(stderr, "  go build/run failed:\n%s\n", text ? text : "");
		free(text);
		return PM_FAIL;
	}
	snprintf(prof, sizeof(prof), "%s/cpu.pprof", dir);
	if (pm_pprof_read(prof, &p, err, sizeof(err)) != 0) {
		fprintf(stderr, "  pm_pprof_read: %s\n", err);
		return PM_FAIL;
	}
	CHECK_INT(pm_prof_nsample_types(p), 2);
	CHECK_STR(pm_prof_sample_type(p, 0)->type, "samples");
	cpu = pm_prof_find_sample_type(p, "cpu");
	CHECK_INT(cpu, 1);
	CHECK_STR(pm_prof_sample_type(p, 1)->unit, "nanoseconds");
	CHECK(pm_prof_period_type(p) != NULL);
	CHECK(pm_prof_period(p) > 0);
	CHECK(pm_prof_time(p) > 0);
	CHECK(pm_prof_duration(p) > 0);
	CHECK(pm_prof_nsamples(p) > 0);
	CHECK(pm_prof_nmappings(p) > 0);
	for (size_t i = 0; i < pm_prof_nsamples(p); i++)
		total += pm_prof_sample_at(p, i)->values[0];
	/* 700 ms of the program's own CPU time at 100 Hz: some 70 samples */
	printf("  runtime/pprof wrote %lld samples\n", (long long)total);
	CHECK(total >= 10);
	for (size_t i = 0; i < pm_prof_nfuncs(p); i++)
		if (strcmp(pm_prof_func_at(p, i)->name, "main.burn") == 0)
			found = true;
	CHECK(found);

	snprintf(out, sizeof(out), "%s/top.txt", dir);
	snprintf(cmd, sizeof(cmd), "%s %s tool pprof -top %s >%s 2>&1", go_env(), GO, prof, out);
	CHECK_INT(sh(cmd), 0);
	text = slurp(out);
	CHECK(text != NULL);
	name = go_top_name(text);
	ours = our_top_name(p, cpu);
	if (!name || !ours || strcmp(name, ours) != 0) {
		fprintf(stderr, "  top: go says %s, we say %s\n%s\n", name ? name : "?",
			ours ? ours : "?", text);
		return PM_FAIL;
	}
	CHECK_STR(ours, "main.burn");
	free(name);
	free(ours);
	free(text);
	pm_prof_free(p);
	return PM_PASS;
}

/* The JavaScript pprof-format decoder accepts what we write (when fixtures installed it). */
static int test_js_reads_ours(void)
{
	struct pm_profile *p;
	char path[300], cmd[16384], out[300], mod[PATH_MAX];
	char *text;

	if (!realpath(pm_test_fixture("npm/node_modules/pprof-format"), mod))
		SKIP("pprof-format not installed (scripts/fixtures.sh)");
	if (sh("command -v node >/dev/null 2>&1") != 0)
		SKIP("no node");
	p = rich_profile();
	snprintf(path, sizeof(path), "%s", tmp_path("js.pb.gz"));
	CHECK_INT(pm_pprof_write(p, path, NULL), 0);
	pm_prof_free(p);
	snprintf(out, sizeof(out), "%s", tmp_path("js.txt"));
	snprintf(cmd, sizeof(cmd),
		 "node -e 'const {Profile}=require(process.argv[1]);"
		 "const z=require(\"zlib\"),fs=require(\"fs\");"
		 "const p=Profile.decode(z.gunzipSync(fs.readFileSync(process.argv[2])));"
		 "const s=p.stringTable.strings;"
		 "console.log(p.sample.length, p.location.length, p.function.length,"
		 " p.mapping.length, s[0]===\"\","
		 " p.function.map(f=>s[Number(f.name)]).join(\",\"))'"
		 " %s %s >%s 2>&1",
		 mod, path, out);
	if (sh(cmd) != 0) {
		text = slurp(out);
		fprintf(stderr, "  node failed:\n%s\n", text ? text : "");
		free(text);
		return PM_FAIL;
	}
	text = slurp(out);
	CHECK(text != NULL);
	if (strcmp(text, "4 5 4 2 true main.main,main.work,main.leaf,runtime.main\n") != 0) {
		fprintf(stderr, "  node says: %s", text);
		free(text);
		return PM_FAIL;
	}
	free(text);
	return PM_PASS;
}

static void cleanup(void)
{
	char cmd[256];

	if (tmpdir[0] && !getenv("PMUPROF_KEEP_TMP")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		sh(cmd);
	}
}

static const struct pm_test tests[] = {
	{ "roundtrip", test_roundtrip },
	{ "reproducible", test_reproducible },
	{ "raw-protobuf", test_raw_protobuf },
	{ "write", test_write },
	{ "err-files", test_err_files },
	{ "err-gzip", test_err_gzip },
	{ "err-rules", test_err_rules },
	{ "zip-bomb", test_zip_bomb },
	{ "id-flood", test_id_flood },
	{ "go-reads-ours", test_go_reads_ours },
	{ "go-runtime-profile", test_go_runtime_profile },
	{ "js-reads-ours", test_js_reads_ours },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	int rc = pm_test_main(argc, argv, "pprof", tests);

	cleanup();
	return rc;
}
