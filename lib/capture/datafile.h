/*
 * datafile: the replayable capture of `pmuprof record --raw FILE`.
 *
 * A capture holds what the live session saw, so that `pmuprof report -i`
 * can run the same processing later: the perf_event_attr the events were
 * opened with (the record layout follows from it), the event and its pprof
 * value type, then the perf records in the order the session processed
 * them (merged in time across the rings), interleaved with pmuprof's own
 * records (the /proc/PID/maps snapshots it loaded, the build ID of every
 * binary it opened, which event id belongs to which attached thread), and
 * a trailer with the totals.  All integers are little-endian (x86_64 and
 * arm64 hosts write their native order; a big-endian host is refused at
 * build time).
 *
 *   0        8        12       16                24               32
 *   +--------+--------+--------+----------------+----------------+
 *   | magic  |version |hdr_size| attr_off       | attr_size      |
 *   +--------+--------+--------+----------------+----------------+
 *   32               40               48               56        64
 *   | meta_off       | meta_size      | stream_off     |stream_sz|
 *   +----------------+----------------+----------------+---------+
 *
 *   attr section:   u32 nattr, u32 0, then per attr: u32 size, u32 0,
 *                   size bytes of struct perf_event_attr, padded to 8
 *   meta section:   struct pm_data_meta (256 bytes)
 *   stream:         records, each a struct perf_event_header (8 bytes:
 *                   u32 type, u16 misc, u16 size) and size - 8 bytes of
 *                   body; size is a multiple of 8.  Kernel records keep
 *                   their PERF_RECORD_* type and bytes, except that a
 *                   sample's user-stack copy may be cut to the bytes the
 *                   unwinder needed (size and dyn_size rewritten).
 *                   pmuprof's records have types from PM_DATA_REC_BASE.
 *   trailer:        struct pm_data_trailer (64 bytes), right after the
 *                   stream
 *
 * The writer patches stream_size and appends the trailer when it
 * finishes; a file whose stream or trailer is cut short is "truncated": the
 * reader hands out every whole record it holds and says so.
 */
#ifndef PM_DATAFILE_H
#define PM_DATAFILE_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PM_DATA_MAGIC "PMUPROF\0"
#define PM_DATA_TRAILER_MAGIC "PMUEND\0\0"
#define PM_DATA_VERSION 1

struct pm_data_header {
	char magic[8];
	uint32_t version, hdr_size;
	uint64_t attr_off, attr_size;
	uint64_t meta_off, meta_size;
	uint64_t stream_off, stream_size;
};
_Static_assert(sizeof(struct pm_data_header) == 64, "capture header changed size");

enum pm_data_meta_flags {
	PM_DATA_ATTACH = 1 << 0,  /* attached (-p/-t): event ids map to threads */
	PM_DATA_KERNEL = 1 << 1,  /* --kernel */
	/*
	 * the target memory each sample's processing read is in MEM records
	 * (unwinding across stack switches, goroutines): replay reads it there
	 */
	PM_DATA_MEMORY = 1 << 2,
	PM_DATA_ALL_FRAMES = 1 << 3, /* --all-frames: the profile keeps what Go's tracebacks hide */
	PM_DATA_INUSE = 1 << 4,      /* --inuse: INUSE records (an older reader ignores them) */
	/*
	 * no events (--inuse alone): the one attr is a placeholder, the
	 * session had none
	 */
	PM_DATA_NO_EVENTS = 1 << 5,
};

/*
 *   0      8      16     24            32       40      48          64
 *   +------+------+------+-------------+--------+-------+-----------+
 *   |flags |t0    |config| type, stack | threads|events |attach_us..|
 *   +------+------+------+-------------+--------+-------+-----------+
 *   64: name[64], 128: value_type[64], 192: value_unit[16], 208: creators,
 *   212: wall_hz, 216: 0[40]
 */
/* meta.nuser: no events of the user, the other sources' alone (record --alloc without -e) */
#define PM_DATA_NUSER_NONE UINT64_MAX

struct pm_data_meta {
	uint64_t flags;          /* enum pm_data_meta_flags */
	uint64_t t0_wall_ns;     /* wall clock when the recording started */
	uint64_t config;         /* the event's perf config */
	uint32_t type;           /* the event's PERF_TYPE_* */
	uint32_t stack_size;     /* --stack-size */
	uint64_t threads;        /* attach: threads attached at the start */
	uint64_t events;         /* attach: events opened */
	uint64_t attach_us;      /* attach: microseconds to attach */
	uint64_t nuser;          /* events of the user (the first); 0 = all; PM_DATA_NUSER_NONE */
	char name[64];           /* the event's canonical name */
	char value_type[64];     /* pprof sample type of the event */
	char value_unit[16];
	uint32_t creators;       /* --creators levels (0 = none) */
	uint32_t wall_hz;        /* --wall snapshots a second: WALL records (0 = none) */
	uint8_t reserved[40];
};
_Static_assert(sizeof(struct pm_data_meta) == 256, "capture meta changed size");

struct pm_data_trailer {
	char magic[8];
	uint64_t records;        /* records in the stream */
	uint64_t samples, lost, throttled;
	uint64_t duration_ns;
	int64_t exit_code;
	uint64_t reserved;
};
_Static_assert(sizeof(struct pm_data_trailer) == 64, "capture trailer changed size");

/* pmuprof's own records in the stream (the kernel's types are below 0x10000) */
#define PM_DATA_REC_BASE 0x10000
enum pm_data_rec_type {
	/*
	 * One executable line of /proc/PID/maps as loaded: u32 pid, u32 0,
	 * u64 start, u64 end, u64 pgoff, path NUL-terminated, padded.
	 */
	PM_DATA_REC_MAP = PM_DATA_REC_BASE + 1,
	/*
	 * A binary the session opened: u32 flags (PM_DATA_BIN_*), u32 0, its
	 * build ID as text (hex for a GNU build ID, Go's own string for a Go
	 * build ID; may be empty) NUL-terminated, the path NUL-terminated,
	 * padded.
	 */
	PM_DATA_REC_BINARY = PM_DATA_REC_BASE + 2,
	/* attach: u64 event id, u32 tid it was opened on, u32 0 */
	PM_DATA_REC_OWNER = PM_DATA_REC_BASE + 3,
	/*
	 * Several events (attr i > 0; the meta describes attr 0): u32 index
	 * of its attr, u32 PERF_TYPE_*, u64 config, then name[64],
	 * value_type[64], value_unit[16] as in the meta.
	 */
	PM_DATA_REC_EVENT = PM_DATA_REC_BASE + 4,
	/* Several events: u64 event id, u32 index of the attr it was opened with, u32 0 */
	PM_DATA_REC_EVID = PM_DATA_REC_BASE + 5,
	/*
	 * Target memory the next sample's processing read (PM_DATA_MEMORY):
	 * entries of u32 pid, u32 len, u64 addr and len bytes padded to 8,
	 * up to the record's end; a sample's reads may take several records.
	 */
	PM_DATA_REC_MEM = PM_DATA_REC_BASE + 6,
	/*
	 * Part of the next snapshot's reads of the target (WALL, INUSE): u32
	 * len, u32 0, len bytes padded to 8; the parts of a snapshot, joined,
	 * are its log encoded against the snapshot before of the same kind
	 * (snaplog.h: only what changed).
	 */
	PM_DATA_REC_SNAPMEM = PM_DATA_REC_BASE + 7,
	/*
	 * A --wall snapshot, its reads in the SNAPMEM records before it:
	 * u64 time (the events' clock), u32 flags (PM_DATA_SNAP_*), u32
	 * npids, then npids u32 process ids (those snapshot, in order),
	 * padded to 8.
	 */
	PM_DATA_REC_WALL = PM_DATA_REC_BASE + 8,
	/* A read of --inuse's heap records: as WALL. */
	PM_DATA_REC_INUSE = PM_DATA_REC_BASE + 9,
};

/* a snapshot record's flags */
enum pm_data_snap_flags {
	PM_DATA_SNAP_FINAL = 1 << 0, /* the read at the end: replayed as the profile is made */
};
#define PM_DATA_SNAP_MAX_PIDS 1024 /* processes of one snapshot at most */
/* bytes of one SNAPMEM record's part at most */
#define PM_DATA_SNAPMEM_MAX (65528u - 16u)

/* At most this many attrs (events) in a capture. */
#define PM_DATA_MAX_ATTRS 16

enum pm_data_bin_flags {
	PM_DATA_BIN_UNOPENED = 1 << 0, /* the session could not open it: no frames from it */
};

struct pm_data_map {
	uint32_t pid;
	uint64_t start, end, pgoff;
	const char *path;        /* points into the record */
};

struct pm_data_binary {
	unsigned flags;
	const char *build_id;    /* "" when none; points into the record */
	const char *path;        /* points into the record */
};

struct pm_data_owner {
	uint64_t id;
	uint32_t tid;
};

struct pm_data_event {
	uint32_t index, type;     /* index < PM_DATA_MAX_ATTRS */
	uint64_t config;
	char name[64], value_type[64], value_unit[16]; /* NUL-terminated */
};

struct pm_data_evid {
	uint64_t id;
	uint32_t index;           /* < PM_DATA_MAX_ATTRS */
};

struct pm_data_snap {
	uint32_t type;            /* PM_DATA_REC_WALL or PM_DATA_REC_INUSE */
	uint32_t flags;           /* PM_DATA_SNAP_* */
	uint64_t time;
	uint32_t npids;           /* <= PM_DATA_SNAP_MAX_PIDS */
	const uint32_t *pids;     /* points into the record (4-byte aligned) */
};

/* Decode pmuprof's records (h->size bytes valid).  0 or -EINVAL. */
int pm_data_decode_map(const struct perf_event_header *h, struct pm_data_map *out);
int pm_data_decode_binary(const struct perf_event_header *h, struct pm_data_binary *out);
int pm_data_decode_owner(const struct perf_event_header *h, struct pm_data_owner *out);
int pm_data_decode_event(const struct perf_event_header *h, struct pm_data_event *out);
int pm_data_decode_evid(const struct perf_event_header *h, struct pm_data_evid *out);
/* SNAPMEM: its part (*len bytes at *p, inside the record). */
int pm_data_decode_snapmem(const struct perf_event_header *h, const uint8_t **p, size_t *len);
/* WALL or INUSE. */
int pm_data_decode_snap(const struct perf_event_header *h, struct pm_data_snap *out);

/* ---- writer ---- */

struct pm_data_writer;
struct pm_owner;

/*
 * Start a capture for @path: an unnamed file (outfile.h) that
 * pm_data_finish() names @path, given to @owner (may be NULL) where
 * outfile.h says.  Writes the header, the @nattr (1..PM_DATA_MAX_ATTRS)
 * @attrs and @meta.  0 or -errno.
 */
int pm_data_create(struct pm_data_writer **out, const char *path,
		   const struct perf_event_attr *attrs, size_t nattr,
		   const struct pm_data_meta *meta, const struct pm_owner *owner);
/* Append one record (h->size bytes, a multiple of 8).  0 or -errno (sticky). */
int pm_data_write(struct pm_data_writer *w, const struct perf_event_header *h);
/*
 * Append a sample record @h with its user-stack copy cut to @keep bytes
 * (rounded up to 8; no effect when the copy is shorter).  @stack points
 * at the copy inside @h, as decoded.  0 or -errno.
 */
int pm_data_write_sample_cut(struct pm_data_writer *w, const struct perf_event_header *h,
			     const uint8_t *stack, uint64_t stack_size, uint64_t dyn_size,
			     uint64_t keep);
int pm_data_write_map(struct pm_data_writer *w, uint32_t pid, uint64_t start, uint64_t end,
		      uint64_t pgoff, const char *path);
/* @build_id: as pm_sym_build_id() gives it, at most 255 bytes */
int pm_data_write_binary(struct pm_data_writer *w, const char *path, const char *build_id,
			 unsigned flags);
int pm_data_write_owner(struct pm_data_writer *w, uint64_t id, uint32_t tid);
/* A MEM record of @len bytes of entries (a multiple of 8, at most 65528 - 8). */
int pm_data_write_mem(struct pm_data_writer *w, const uint8_t *entries, size_t len);
int pm_data_write_event(struct pm_data_writer *w, const struct pm_data_event *ev);
int pm_data_write_evid(struct pm_data_writer *w, uint64_t id, uint32_t index);
/* A SNAPMEM record of @len (at most PM_DATA_SNAPMEM_MAX) bytes. */
int pm_data_write_snapmem(struct pm_data_writer *w, const uint8_t *p, size_t len);
/* A WALL or INUSE record (@sn->type). */
int pm_data_write_snap(struct pm_data_writer *w, const struct pm_data_snap *sn);
/* Bytes written so far. */
uint64_t pm_data_bytes(const struct pm_data_writer *w);
/*
 * Write the trailer (its magic and records are filled in here), patch the
 * header, and give it its name (pm_outfile_commit()).  Frees @w.  0 or
 * -errno (then nothing is left at the path; a previous file stays).
 */
int pm_data_finish(struct pm_data_writer *w, struct pm_data_trailer *t);
/* Drop the capture: nothing appears at the path.  NULL is fine. */
void pm_data_abort(struct pm_data_writer *w);

/* ---- reader ---- */

struct pm_data;

/* Does @buf (@len bytes) start like a capture? */
bool pm_data_is_capture(const uint8_t *buf, size_t len);

/*
 * Open a capture (mmap'd) / from memory (copied).  Everything the header
 * and sections say is checked against the file; on failure -errno
 * (-EINVAL: not a capture or corrupt) and one line in @err.
 */
int pm_data_open(struct pm_data **out, const char *path, char *err, size_t errlen);
int pm_data_open_mem(struct pm_data **out, const uint8_t *buf, size_t len, char *err,
		     size_t errlen);
void pm_data_close(struct pm_data *d); /* NULL is fine */

/* The first attr (zero-filled past what the file holds); borrowed. */
const struct perf_event_attr *pm_data_attr(const struct pm_data *d);
/* Attr @i < pm_data_nattrs() (1..PM_DATA_MAX_ATTRS), likewise. */
const struct perf_event_attr *pm_data_attr_at(const struct pm_data *d, size_t i);
size_t pm_data_nattrs(const struct pm_data *d);
const struct pm_data_meta *pm_data_meta(const struct pm_data *d);
/* The trailer, or NULL when the capture is truncated. */
const struct pm_data_trailer *pm_data_trailer(const struct pm_data *d);
/* True when the stream or the trailer is cut short. */
bool pm_data_truncated(const struct pm_data *d);

/*
 * The next record of the stream: 1 and *h (8-byte aligned, h->size bytes
 * valid, borrowed until the next call or pm_data_close()); 0 at the end (also at a record
 * cut short by truncation); -EINVAL on a record whose size is impossible
 * inside the stream, with one line in @err.
 */
int pm_data_next(struct pm_data *d, const struct perf_event_header **h, char *err,
		 size_t errlen);

#endif
