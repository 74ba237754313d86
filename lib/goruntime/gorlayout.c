/*
 * The runtime's layouts: the offsets of runtime.g and runtime.m from the
 * binary's DWARF, or from a table per Go version.  See goroutine.h.
 */
#include "goruntime/gorlayout.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include "base/util.h"
#include "goruntime/gocode.h"
#include "symbols/gopclntab.h"

/* ---- layouts ---- */

/*
 * The bytes of g and m to read: up to the end of the last field.  False
 * when a field lies beyond what one read takes (a layout from hostile
 * DWARF, or a caller's): such a layout is never used.
 */
bool pm_gor_finish_layout(struct pm_gor_layout *l)
{
	uint32_t f[] = { l->g_m, l->g_status, l->g_goid, l->g_parent_goid, l->g_gopc,
			 l->g_startpc, l->g_ancestors, l->g_labels, l->g_sched_sp, l->g_sched_pc,
			 l->g_sched_bp, l->g_waitsince, l->g_waitreason, l->g_trackseq, 8 };
	uint32_t mf[] = { l->m_procid, l->m_gsignal, l->m_curg, 8 };
	size_t i;

	l->g_size = 16;
	for (i = 0; i < PM_ARRAY_SIZE(f); i++) {
		if (f[i] > G_READ_MAX - 8)
			return false;
		if (f[i] + 8 > l->g_size)
			l->g_size = f[i] + 8;
	}
	l->m_size = 8;
	for (i = 0; i < PM_ARRAY_SIZE(mf); i++) {
		if (mf[i] > M_READ_MAX - 8)
			return false;
		if (mf[i] + 8 > l->m_size)
			l->m_size = mf[i] + 8;
	}
	return true;
}

/*
 * g.sched is the gobuf at 56 in every version: sp 0, pc 8, then (ret,) lr,
 * bp; gobuf.ret went away in 1.25, so bp is at 48 before and 40 after.
 */
#define G_SCHED 56

static void sched_layout(struct pm_gor_layout *l, int minor)
{
	l->g_sched_sp = G_SCHED;
	l->g_sched_pc = G_SCHED + 8;
	l->g_sched_bp = G_SCHED + (minor >= 25 ? 40 : 48);
}

static enum pm_gor_labels_kind labels_kind(int minor)
{
	if (minor < 0)
		return PM_GOR_LABELS_NONE;
	return minor <= 23 ? PM_GOR_LABELS_MAP : PM_GOR_LABELS_SLICE;
}

int pm_gor_layout_version(const char *version, struct pm_gor_layout *out)
{
	/*
	 * go-internals.md section 5.  Each row was recomputed from the runtime
	 * sources (go/types, linux/amd64 sizes) at go1.19, go1.20, go1.21.0,
	 * go1.22rc1 and the freeze before each later release; 1.26 and 1.27
	 * also from the stores in runtime.newproc1, execute, minit and gogo of
	 * esbuild (go1.26.5) and lefthook (go1.27.0), which agree: 1.27 kept
	 * 1.26's g and m.
	 */
	static const struct {
		int lo, hi;
		uint32_t status, goid, parent, gopc, startpc, anc, labels, procid, gsignal, curg;
		uint32_t waitsince, waitreason, trackseq; /* go-runtime-probes.md 1.2 */
	} t[] = {
		{ 19, 19, 144, 152, 0, 296, 312, 304, 360, 72, 80, 192, 168, 176, 189 },
		{ 20, 20, 144, 152, 0, 296, 312, 304, 360, 72, 80, 192, 168, 176, 189 },
		{ 21, 21, 144, 152, 272, 280, 296, 288, 344, 72, 80, 192, 168, 176, 188 },
		{ 22, 22, 144, 152, 272, 280, 296, 288, 344, 72, 80, 192, 168, 176, 191 },
		{ 23, 24, 152, 160, 280, 288, 304, 296, 352, 72, 80, 192, 176, 184, 199 },
		{ 25, 25, 144, 152, 272, 280, 296, 288, 344, 64, 72, 184, 168, 176, 191 },
		{ 26, 27, 144, 152, 280, 288, 304, 296, 352, 64, 72, 184, 168, 176, 191 },
	};
	int minor = pm_go_version_minor(version);
	size_t i;

	for (i = 0; i < PM_ARRAY_SIZE(t); i++) {
		if (minor < t[i].lo || minor > t[i].hi)
			continue;
		memset(out, 0, sizeof(*out));
		out->minor = minor;
		out->g_m = 48;
		out->g_status = t[i].status;
		out->g_goid = t[i].goid;
		out->g_parent_goid = t[i].parent;
		out->g_gopc = t[i].gopc;
		out->g_startpc = t[i].startpc;
		out->g_ancestors = t[i].anc;
		out->g_labels = t[i].labels;
		out->m_procid = t[i].procid;
		out->m_gsignal = t[i].gsignal;
		out->m_curg = t[i].curg;
		out->g_waitsince = t[i].waitsince;
		out->g_waitreason = t[i].waitreason;
		out->g_trackseq = t[i].trackseq;
		sched_layout(out, minor);
		out->labels = labels_kind(minor);
		return pm_gor_finish_layout(out) ? 0 : -ENOTSUP;
	}
	return -ENOTSUP;
}

static bool member_offset(Dwarf_Die *member, uint32_t *off)
{
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (!dwarf_attr(member, DW_AT_data_member_location, &a) || dwarf_formudata(&a, &w) != 0 ||
	    w > 65536)
		return false;
	*off = (uint32_t)w;
	return true;
}

/* Fill the fields of struct @die named in @names into @offs; the count found. */
static int struct_members(Dwarf_Die *die, const char *const *names, uint32_t **offs, size_t n)
{
	Dwarf_Die c;
	int found = 0, guard = 0;

	if (dwarf_child(die, &c) != 0)
		return 0;
	do {
		const char *nm = dwarf_diename(&c);
		size_t i;

		if (dwarf_tag(&c) != DW_TAG_member || !nm)
			continue;
		for (i = 0; i < n; i++)
			if (strcmp(nm, names[i]) == 0 && member_offset(&c, offs[i]))
				found++;
	} while (dwarf_siblingof(&c, &c) == 0 && ++guard < PM_GO_DWARF_MAX_MEMBERS);
	return found;
}

/* What the DWARF walk found, before the version's part (pm_gor_layout_dwarf()). */
struct dwarf_found {
	bool have_g, have_m, have_buf;
	uint32_t sched, buf_sp, buf_pc, buf_bp;
	struct pm_gor_layout l;
};

/* One structure of the runtime's unit: the members of g, gobuf and m; true when all found. */
static bool walk_struct(Dwarf_Die *d, const char *nm, void *arg)
{
	struct dwarf_found *f = arg;
	struct pm_gor_layout *l = &f->l;

	if (!f->have_g && strcmp(nm, "runtime.g") == 0) {
		const char *names[] = { "m",	   "goid",	"parentGoid", "gopc",
					"startpc", "ancestors", "labels",     "atomicstatus",
					"sched",   "waitsince", "waitreason", "trackingSeq" };
		uint32_t *offs[] = { &l->g_m,	      &l->g_goid,	&l->g_parent_goid,
				     &l->g_gopc,      &l->g_startpc,	&l->g_ancestors,
				     &l->g_labels,    &l->g_status,	&f->sched,
				     &l->g_waitsince, &l->g_waitreason, &l->g_trackseq };
		f->have_g = struct_members(d, names, offs, 12) >= 7;
	} else if (!f->have_buf && strcmp(nm, "runtime.gobuf") == 0) {
		const char *names[] = { "sp", "pc", "bp" };
		uint32_t *offs[] = { &f->buf_sp, &f->buf_pc, &f->buf_bp };
		f->have_buf = struct_members(d, names, offs, 3) == 3;
	} else if (!f->have_m && strcmp(nm, "runtime.m") == 0) {
		const char *names[] = { "procid", "gsignal", "curg" };
		uint32_t *offs[] = { &l->m_procid, &l->m_gsignal, &l->m_curg };
		f->have_m = struct_members(d, names, offs, 3) == 3;
	}
	return f->have_g && f->have_m && f->have_buf;
}

static void dwarf_walk(Dwarf *dw, struct dwarf_found *f)
{
	memset(f, 0, sizeof(*f));
	f->buf_sp = f->buf_pc = f->buf_bp = UINT32_MAX;
	pm_gocode_runtime_structs(dw, walk_struct, f);
}

/*
 * The last binary walked, by identity: reading its DWARF (zlib-compressed
 * sections, the runtime's compile unit) costs ~15 ms of CPU, which the
 * first sample paid in the middle of the recording while the target filled
 * the rings (a uprobe -c 1 burst: tests/go/burst).  pm_gor_layout_warm()
 * pays it before the command starts.
 */
static struct {
	bool valid, ok;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim;
	struct dwarf_found f;
} last;

static bool same_file(const struct stat *st)
{
	return last.valid && last.dev == st->st_dev && last.ino == st->st_ino &&
	       last.size == st->st_size && last.mtim.tv_sec == st->st_mtim.tv_sec &&
	       last.mtim.tv_nsec == st->st_mtim.tv_nsec;
}

/* The walk of the file open at @fd, from the cache where it is the last one. */
static bool found_of(int fd, struct dwarf_found *f)
{
	struct stat st;
	Dwarf *dw;
	Elf *elf;

	if (fstat(fd, &st) == 0 && same_file(&st)) {
		*f = last.f;
		return last.ok;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	dw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	memset(f, 0, sizeof(*f));
	if (dw)
		dwarf_walk(dw, f);
	if (dw)
		dwarf_end(dw);
	if (elf)
		elf_end(elf);
	if (fstat(fd, &st) == 0) {
		last.valid = true;
		last.ok = dw != NULL;
		last.dev = st.st_dev;
		last.ino = st.st_ino;
		last.size = st.st_size;
		last.mtim = st.st_mtim;
		last.f = *f;
	}
	return dw != NULL;
}

int pm_gor_layout_dwarf(const char *path, const char *version, struct pm_gor_layout *out)
{
	struct dwarf_found f;
	int fd, rc = -ENOENT;
	bool have_g, have_m, have_buf;
	uint32_t sched, buf_sp, buf_pc, buf_bp;
	struct pm_gor_layout l;

	fd = pm_open_regular(path);
	if (fd < 0)
		return -ENOENT;
	if (!found_of(fd, &f)) {
		close(fd);
		return -ENOENT;
	}
	have_g = f.have_g;
	have_m = f.have_m;
	have_buf = f.have_buf;
	sched = f.sched;
	buf_sp = f.buf_sp;
	buf_pc = f.buf_pc;
	buf_bp = f.buf_bp;
	l = f.l;
	if (have_g && have_m && l.g_m && l.g_goid && l.g_gopc && l.g_status && l.m_procid &&
	    l.m_curg) {
		l.from_dwarf = true;
		l.minor = pm_go_version_minor(version);
		if (l.minor < 0)
			l.minor = 0;
		l.labels = l.g_labels ? labels_kind(pm_go_version_minor(version))
				      : PM_GOR_LABELS_NONE;
		/* g.sched from DWARF when it has it all, else the version's gobuf */
		if (sched && have_buf && buf_sp < 64 && buf_pc < 64 && buf_bp < 64) {
			l.g_sched_sp = sched + buf_sp;
			l.g_sched_pc = sched + buf_pc;
			l.g_sched_bp = sched + buf_bp;
		} else {
			sched_layout(&l, l.minor);
		}
		if (pm_gor_finish_layout(&l)) {
			*out = l;
			rc = 0;
		}
	}
	close(fd);
	return rc;
}

/* A section named @name in the ELF open at @elf. */
static bool has_section(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *nm = gelf_getshdr(scn, &sh) ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;

		if (nm && strcmp(nm, name) == 0)
			return true;
	}
	return false;
}

void pm_gor_layout_warm(const char *path)
{
	struct dwarf_found f;
	bool go = false;
	Elf *elf;
	int fd = pm_open_regular(path);

	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf)
		go = has_section(elf, ".go.buildinfo") || has_section(elf, ".gopclntab");
	if (elf)
		elf_end(elf);
	if (go) /* a C program's DWARF can be large, and has no runtime.g */
		found_of(fd, &f);
	close(fd);
}
