/*
 * spool: intervals on disk until every backend has them (spool.h).
 */
#include "agent/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/outfile.h"
#include "base/util.h"

#define KEY_LEN 52	     /* 20 + 1 + 10 + 1 + 20 */
#define META_MAX (64u << 10) /* a meta is < 8 KiB: more is not ours */
#define NAME_MAX_LEN 128
#define PROF_EXT ".pb.gz"
#define META_EXT ".meta"
#define DONE_EXT ".done-"

/* One interval held: its key, which backends have it, its bytes. */
struct entry {
	uint64_t start_ns, seq;
	int32_t pid;
	uint32_t done;
	uint64_t bytes;
};

struct pm_spool {
	pthread_mutex_t lock;
	char *dir;
	int dfd;
	uint64_t max;
	char *names[PM_SPOOL_MAX_BACKENDS];
	unsigned nb;
	uint32_t all;	 /* the done bits of every backend */
	struct entry *e; /* sorted by key, oldest first */
	size_t n, cap;
	struct pm_spool_stats st;
};

const char *pm_spool_default_dir(char *buf, size_t len)
{
	const char *tmp = getenv("TMPDIR");

	if (geteuid() == 0)
		snprintf(buf, len, "%s", PM_SPOOL_ROOT_DIR);
	else
		snprintf(buf, len, "%s/pmuprof-spool-%u", tmp && *tmp == '/' ? tmp : "/tmp",
			 (unsigned)geteuid());
	return buf;
}

static void key_fmt(char *buf, size_t len, uint64_t start, int32_t pid, uint64_t seq)
{
	snprintf(buf, len, "%020" PRIu64 "-%010" PRId32 "-%020" PRIu64, start, pid, seq);
}

static void entry_name(char *buf, size_t len, const struct entry *e, const char *ext)
{
	char key[KEY_LEN + 1];

	key_fmt(key, sizeof(key), e->start_ns, e->pid, e->seq);
	snprintf(buf, len, "%s%s", key, ext);
}

/* @n decimal digits at @s into *@v; -1 unless all are digits and it fits. */
static int digits(const char *s, int n, uint64_t *v)
{
	uint64_t x = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || x > (UINT64_MAX - 9) / 10)
			return -1;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	*v = x;
	return 0;
}

/* The key at the start of @s into @e; -1 when @s does not start with one. */
static int parse_key(const char *s, struct entry *e)
{
	uint64_t pid;

	if (strnlen(s, KEY_LEN) < KEY_LEN || s[20] != '-' || s[31] != '-')
		return -1;
	if (digits(s, 20, &e->start_ns) || digits(s + 21, 10, &pid) || digits(s + 32, 20, &e->seq))
		return -1;
	if (pid == 0 || pid > INT32_MAX)
		return -1;
	e->pid = (int32_t)pid;
	return 0;
}

static int key_cmp(const struct entry *a, const struct entry *b)
{
	if (a->start_ns != b->start_ns)
		return a->start_ns < b->start_ns ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return 0;
}

/* Where @k is, or would go: the first entry not below it. */
static size_t find_pos(const struct pm_spool *sp, const struct entry *k)
{
	size_t lo = 0, hi = sp->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (key_cmp(&sp->e[mid], k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static long find(const struct pm_spool *sp, const struct entry *k)
{
	size_t i = find_pos(sp, k);

	return i < sp->n && key_cmp(&sp->e[i], k) == 0 ? (long)i : -1;
}

/* Read the regular file @name of the spool (at most @max bytes) into *@out.  Length or -errno. */
static long read_at(int dfd, const char *name, size_t max, uint8_t **out)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	uint8_t *buf;
	size_t got = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		close(fd);
		return -EINVAL;
	}
	buf = xmalloc((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (got != (size_t)st.st_size) {
		free(buf);
		return -EIO;
	}
	buf[got] = 0;
	*out = buf;
	return (long)got;
}

/* Every file of @e: the profile first (the interval is gone), then the rest. */
static void unlink_entry(struct pm_spool *sp, const struct entry *e)
{
	char name[NAME_MAX_LEN];

	entry_name(name, sizeof(name), e, PROF_EXT);
	unlinkat(sp->dfd, name, 0);
	entry_name(name, sizeof(name), e, META_EXT);
	unlinkat(sp->dfd, name, 0);
	for (unsigned b = 0; b < sp->nb; b++) {
		char ext[48];

		snprintf(ext, sizeof(ext), DONE_EXT "%s", sp->names[b]);
		entry_name(name, sizeof(name), e, ext);
		unlinkat(sp->dfd, name, 0);
	}
}

static void remove_at(struct pm_spool *sp, size_t i)
{
	unlink_entry(sp, &sp->e[i]);
	sp->st.bytes -= sp->e[i].bytes;
	memmove(&sp->e[i], &sp->e[i + 1], (sp->n - i - 1) * sizeof(*sp->e));
	sp->n--;
}

static void insert_at(struct pm_spool *sp, size_t i, const struct entry *e)
{
	PM_GROW(sp->e, sp->cap, sp->n + 1);
	memmove(&sp->e[i + 1], &sp->e[i], (sp->n - i) * sizeof(*sp->e));
	sp->e[i] = *e;
	sp->n++;
	sp->st.bytes += e->bytes;
}

/* Drop the oldest intervals until @need more bytes fit. */
static void make_room(struct pm_spool *sp, uint64_t need)
{
	while (sp->n && sp->st.bytes + need > sp->max) {
		sp->st.dropped++;
		sp->st.dropped_bytes += sp->e[0].bytes;
		remove_at(sp, 0);
	}
}

/* The meta of @e read back, as hostile: 0 when it parses and names @e. */
static int load_meta(struct pm_spool *sp, const struct entry *e, struct pm_agent_meta *m)
{
	char name[NAME_MAX_LEN];
	uint8_t *text = NULL;
	long n;
	int rc;

	entry_name(name, sizeof(name), e, META_EXT);
	n = read_at(sp->dfd, name, META_MAX, &text);
	if (n < 0)
		return (int)n;
	rc = pm_meta_parse((const char *)text, (size_t)n, m);
	free(text);
	if (rc)
		return rc;
	if (m->pid != e->pid || m->seq != e->seq || m->start_ns != e->start_ns)
		return -EINVAL;
	return 0;
}

/* A name of the spool's directory, classified. */
enum kind { K_PROF, K_META, K_DONE };
struct found {
	struct entry k;
	enum kind kind;
	int backend; /* K_DONE: its index */
	uint64_t size;
};

static int found_cmp(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	int c = key_cmp(&x->k, &y->k);

	return c ? c : (int)x->kind - (int)y->kind;
}

/*
 * @name as one of the spool's files into @f: 1; 0 when it is none of
 * them (left alone); -1 when it is to go now (a temporary, a marker of a
 * backend not configured).
 */
static int classify(struct pm_spool *sp, const char *name, struct found *f)
{
	const char *rest = name + KEY_LEN;
	struct stat st;

	memset(f, 0, sizeof(*f));
	if (name[0] == '.')
		return parse_key(name + 1, &f->k) == 0 && name[1 + KEY_LEN] == '.' ? -1 : 0;
	if (parse_key(name, &f->k))
		return 0;
	if (!strcmp(rest, PROF_EXT) || !strcmp(rest, META_EXT)) {
		f->kind = rest[1] == 'm' ? K_META : K_PROF;
		if (fstatat(sp->dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return 0;
		f->size = (uint64_t)st.st_size;
		return 1;
	}
	if (strncmp(rest, DONE_EXT, strlen(DONE_EXT)))
		return 0;
	f->kind = K_DONE;
	for (unsigned b = 0; b < sp->nb; b++)
		if (!strcmp(rest + strlen(DONE_EXT), sp->names[b])) {
			f->backend = (int)b;
			return 1;
		}
	return -1;
}

/* The names of the directory that are the spool's, into *@out; torn temporaries removed. */
static int list_dir(struct pm_spool *sp, struct found **out, size_t *n, char *err, size_t errlen)
{
	int fd = openat(sp->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (!d) {
		int rc = -errno;

		if (fd >= 0)
			close(fd);
		pm_seterr(err, errlen, "cannot read spool '%s': %s", sp->dir, strerror(-rc));
		return rc;
	}
	while ((de = readdir(d))) {
		struct found f;
		int c = classify(sp, de->d_name, &f);

		if (c < 0) {
			if (de->d_name[0] == '.')
				sp->st.torn++;
			unlinkat(sp->dfd, de->d_name, 0);
		} else if (c > 0) {
			PM_GROW(*out, cap, *n + 1);
			(*out)[(*n)++] = f;
		}
	}
	closedir(d);
	if (*n)
		qsort(*out, *n, sizeof(**out), found_cmp);
	return 0;
}

/* One interval's names @f[0..@n) (sorted: profile, meta, markers): kept, or removed and counted. */
static void take_group(struct pm_spool *sp, const struct found *f, size_t n)
{
	struct entry e = f[0].k;
	bool prof = false, meta = false;
	struct pm_agent_meta m;

	for (size_t i = 0; i < n; i++) {
		prof |= f[i].kind == K_PROF;
		meta |= f[i].kind == K_META;
		if (f[i].kind != K_DONE)
			e.bytes += f[i].size;
		else
			e.done |= 1u << f[i].backend;
	}
	if (!prof) {
		sp->st.torn += meta; /* put cut before its commit (or a removal cut short) */
		unlink_entry(sp, &e);
	} else if (!meta || load_meta(sp, &e, &m)) {
		sp->st.bad++;
		unlink_entry(sp, &e);
	} else if (sp->nb && (e.done & sp->all) == sp->all) {
		unlink_entry(sp, &e); /* a removal cut short */
	} else {
		insert_at(sp, sp->n, &e);
	}
}

/* Resume: the intervals held, from the directory. */
static int scan(struct pm_spool *sp, char *err, size_t errlen)
{
	struct found *f;
	size_t n, i = 0;
	int rc = list_dir(sp, &f, &n, err, errlen);

	if (rc)
		return rc;
	while (i < n) {
		size_t j = i + 1;

		while (j < n && key_cmp(&f[j].k, &f[i].k) == 0)
			j++;
		take_group(sp, f + i, j - i);
		i = j;
	}
	free(f);
	return 0;
}

/* @path and its missing parents, made 0700. */
static int mkdir_p(const char *path)
{
	char *p = xstrdup(path);
	int rc = 0;

	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s)
			continue;
		char c = *s;

		*s = 0;
		if (mkdir(p, 0700) < 0 && errno != EEXIST) {
			rc = -errno;
			break;
		}
		*s = c;
		if (!c)
			break;
	}
	free(p);
	return rc;
}

/* Make, open, check and lock the directory.  0 or -errno with @err. */
static int open_dir(struct pm_spool *sp, char *err, size_t errlen)
{
	struct stat st;
	int rc = mkdir_p(sp->dir);

	if (rc) {
		pm_seterr(err, errlen, "cannot make spool '%s': %s", sp->dir, strerror(-rc));
		return rc;
	}
	sp->dfd = open(sp->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sp->dfd < 0 || fstat(sp->dfd, &st) < 0) {
		rc = -errno;
		pm_seterr(err, errlen, "cannot open spool '%s': %s", sp->dir, strerror(-rc));
		return rc;
	}
	if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		pm_seterr(err, errlen,
			  "spool '%s' is not this user's or others may write to it: refusing it "
			  "(chmod 700, or another --spool)",
			  sp->dir);
		return -EPERM;
	}
	if (flock(sp->dfd, LOCK_EX | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		pm_seterr(err, errlen, "spool '%s' %s", sp->dir,
			  rc == -EBUSY ? "is in use by another pmuprof" : strerror(-rc));
		return rc;
	}
	return 0;
}

static int check_names(const char *const *backends, unsigned nb, char *err, size_t errlen)
{
	if (nb > PM_SPOOL_MAX_BACKENDS) {
		pm_seterr(err, errlen, "at most %d backends", PM_SPOOL_MAX_BACKENDS);
		return -EINVAL;
	}
	for (unsigned b = 0; b < nb; b++) {
		size_t len = strlen(backends[b]);

		if (!len || len > 32 ||
		    strspn(backends[b], "abcdefghijklmnopqrstuvwxyz0123456789") != len) {
			pm_seterr(err, errlen, "bad backend name '%s'", backends[b]);
			return -EINVAL;
		}
		for (unsigned c = 0; c < b; c++)
			if (!strcmp(backends[b], backends[c])) {
				pm_seterr(err, errlen, "backend '%s' given twice", backends[b]);
				return -EINVAL;
			}
	}
	return 0;
}

int pm_spool_open(struct pm_spool **out, const char *dir, uint64_t max_bytes,
		  const char *const *backends, unsigned nb, char *err, size_t errlen)
{
	struct pm_spool *sp;
	int rc;

	*out = NULL;
	rc = check_names(backends, nb, err, errlen);
	if (rc)
		return rc;
	sp = xcalloc(1, sizeof(*sp));
	pthread_mutex_init(&sp->lock, NULL);
	sp->dir = xstrdup(dir);
	sp->dfd = -1;
	sp->max = max_bytes ? max_bytes : PM_SPOOL_DEFAULT_MAX;
	sp->nb = nb;
	for (unsigned b = 0; b < nb; b++) {
		sp->names[b] = xstrdup(backends[b]);
		sp->all |= 1u << b;
	}
	rc = open_dir(sp, err, errlen);
	if (!rc)
		rc = scan(sp, err, errlen);
	if (rc) {
		pm_spool_close(sp);
		return rc;
	}
	sp->st.resumed = sp->n;
	make_room(sp, 0); /* a smaller --spool-max than last time */
	*out = sp;
	return 0;
}

/* Write @len bytes as the file @ext of @e, whole or not at all. */
static int write_file(struct pm_spool *sp, const struct entry *e, const char *ext, const void *buf,
		      size_t len)
{
	struct pm_outfile f;
	char name[NAME_MAX_LEN], *path;
	int rc;

	entry_name(name, sizeof(name), e, ext);
	path = xasprintf("%s/%s", sp->dir, name);
	rc = pm_outfile_open(&f, path, NULL);
	free(path);
	if (rc)
		return rc;
	rc = pm_write_all(f.fd, buf, len);
	if (rc) {
		pm_outfile_abort(&f);
		return rc;
	}
	return pm_outfile_commit(&f);
}

static int put_locked(struct pm_spool *sp, const struct pm_agent_meta *m, const void *pprof,
		      size_t len, char *err, size_t errlen)
{
	struct entry e = { .start_ns = m->start_ns, .seq = m->seq, .pid = m->pid };
	char *text;
	int rc;

	if (m->pid <= 0) {
		pm_seterr(err, errlen, "spool: bad pid %" PRId32, m->pid);
		return -EINVAL;
	}
	if (find(sp, &e) >= 0) {
		pm_seterr(err, errlen,
			  "spool: interval %" PRIu64 " of pid %" PRId32 " is spooled already",
			  m->seq, m->pid);
		return -EEXIST;
	}
	text = pm_meta_format(m);
	e.bytes = strlen(text) + len;
	if (e.bytes > sp->max) {
		pm_seterr(err, errlen,
			  "spool: interval of %" PRIu64 " bytes over the bound of %" PRIu64
			  " (--spool-max): dropped",
			  e.bytes, sp->max);
		sp->st.dropped++;
		sp->st.dropped_bytes += e.bytes;
		free(text);
		return -EFBIG;
	}
	make_room(sp, e.bytes);
	rc = write_file(sp, &e, META_EXT, text, strlen(text));
	free(text);
	if (!rc)
		rc = write_file(sp, &e, PROF_EXT, pprof, len);
	if (rc) {
		unlink_entry(sp, &e);
		pm_seterr(err, errlen, "spool '%s': cannot write an interval: %s", sp->dir,
			  strerror(-rc));
		return rc;
	}
	insert_at(sp, find_pos(sp, &e), &e);
	sp->st.put++;
	return 0;
}

int pm_spool_put(struct pm_spool *sp, const struct pm_agent_meta *m, const void *pprof, size_t len,
		 char *err, size_t errlen)
{
	int rc;

	pthread_mutex_lock(&sp->lock);
	rc = put_locked(sp, m, pprof, len, err, errlen);
	pthread_mutex_unlock(&sp->lock);
	return rc;
}

/* Entry @i read back into @it: 0, or -errno when it can no longer be read. */
static int load_item(struct pm_spool *sp, size_t i, struct pm_spool_item *it)
{
	char name[NAME_MAX_LEN];
	uint8_t *data = NULL;
	long n;
	int rc = load_meta(sp, &sp->e[i], &it->meta);

	if (rc)
		return rc;
	entry_name(name, sizeof(name), &sp->e[i], PROF_EXT);
	n = read_at(sp->dfd, name, sp->max, &data);
	if (n < 0)
		return (int)n;
	it->data = data;
	it->len = (size_t)n;
	return 0;
}

int pm_spool_next(struct pm_spool *sp, unsigned b, struct pm_spool_item *it)
{
	int found = 0;

	memset(it, 0, sizeof(*it));
	pthread_mutex_lock(&sp->lock);
	for (size_t i = 0; i < sp->n && b < sp->nb;) {
		if (sp->e[i].done & (1u << b)) {
			i++;
			continue;
		}
		if (load_item(sp, i, it) == 0) {
			found = 1;
			break;
		}
		sp->st.bad++; /* removed underneath us, or rewritten: not ours to push */
		remove_at(sp, i);
	}
	pthread_mutex_unlock(&sp->lock);
	return found;
}

void pm_spool_item_release(struct pm_spool_item *it)
{
	free(it->data);
	it->data = NULL;
	it->len = 0;
}

int pm_spool_done(struct pm_spool *sp, unsigned b, const struct pm_agent_meta *m)
{
	struct entry k = { .start_ns = m->start_ns, .seq = m->seq, .pid = m->pid };
	char name[NAME_MAX_LEN], ext[48];
	long i;
	int rc = 0, fd;

	pthread_mutex_lock(&sp->lock);
	i = b < sp->nb ? find(sp, &k) : -1;
	if (i < 0) {
		pthread_mutex_unlock(&sp->lock);
		return -ENOENT;
	}
	sp->e[i].done |= 1u << b;
	if ((sp->e[i].done & sp->all) == sp->all) {
		remove_at(sp, (size_t)i);
	} else {
		snprintf(ext, sizeof(ext), DONE_EXT "%s", sp->names[b]);
		entry_name(name, sizeof(name), &sp->e[i], ext);
		fd = openat(sp->dfd, name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			rc = -errno;
		else
			close(fd);
	}
	pthread_mutex_unlock(&sp->lock);
	return rc;
}

size_t pm_spool_pending(struct pm_spool *sp, int b)
{
	size_t n = 0;

	pthread_mutex_lock(&sp->lock);
	for (size_t i = 0; i < sp->n; i++)
		if (b < 0 || !(sp->e[i].done & (1u << b)))
			n++;
	pthread_mutex_unlock(&sp->lock);
	return n;
}

void pm_spool_get_stats(struct pm_spool *sp, struct pm_spool_stats *st)
{
	pthread_mutex_lock(&sp->lock);
	*st = sp->st;
	st->pending = sp->n;
	pthread_mutex_unlock(&sp->lock);
}

const char *pm_spool_dir(const struct pm_spool *sp)
{
	return sp->dir;
}

void pm_spool_close(struct pm_spool *sp)
{
	if (!sp)
		return;
	if (sp->dfd >= 0)
		close(sp->dfd); /* the flock goes with it */
	for (unsigned b = 0; b < sp->nb; b++)
		free(sp->names[b]);
	pthread_mutex_destroy(&sp->lock);
	free(sp->e);
	free(sp->dir);
	free(sp);
}
