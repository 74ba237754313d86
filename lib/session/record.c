/*
 * record: the recording loop (record.h) -- a small loop over the profile
 * sources (source.h): check the options and the targets, let each source
 * add its events, open them all on the target (session/attach.h), then poll,
 * drain every ring and feed each record to the session (session.h), which
 * hands each sample to the source of its event; stop on the command's
 * exit, a signal or -d, or (attached) when every target has exited; at
 * the end, the profile (profbuild.h) and, with --raw, the capture
 * (capture.h).
 *
 * Draining: records from the CPU buffers are merged by time within each
 * pass, so an MMAP2 on one CPU is applied before a later sample on another.
 * A sample is unwound at once (its stack copy lives only in the ring) and
 * aggregated as a stack of unsymbolized frames; names are looked up once
 * per distinct frame when the recording ends.
 */
#include "session/record.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/attach.h"
#include "session/capture.h"
#include "capture/datafile.h"
#include "goruntime/goroutine.h"
#include "capture/memlog.h"
#include "base/outfile.h"
#include "profile/pprof.h"
#include "session/profbuild.h"
#include "profile/profile.h"
#include "perf/ring.h"
#include "symbols/maps.h"
#include "session/session.h"
#include "session/source.h"
#include "base/path.h"
#include "perf/target.h"

/*
 * Can @path be created?  Checked before the command starts, by opening
 * (and dropping) the unnamed file that would become it.
 */
static int check_output(const char *path)
{
	struct pm_outfile f;
	struct stat st;
	int rc;

	if (strcmp(path, "-") == 0)
		return isatty(STDOUT_FILENO) ? -ENOTTY : 0;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return -EISDIR;
	rc = pm_outfile_open(&f, path, NULL);
	pm_outfile_abort(&f);
	return rc;
}

/*
 * Where to save the profile when @output cannot be written (a full disk):
 * $TMPDIR (else /tmp)/pmuprof-PID.pb.gz, or -PID-N when that exists; NULL
 * when no free name is found.
 */
static char *rescue_path(const char *output)
{
	const char *dir = getenv("TMPDIR");

	if (!dir || !*dir)
		dir = "/tmp";
	for (int i = 0; i < 100; i++) {
		char *p = i ? xasprintf("%s/pmuprof-%d-%d.pb.gz", dir, (int)getpid(), i)
			    : xasprintf("%s/pmuprof-%d.pb.gz", dir, (int)getpid());

		if (strcmp(p, output) != 0 && access(p, F_OK) < 0 && errno == ENOENT)
			return p;
		free(p);
	}
	return NULL;
}

static uint64_t rec_time(const struct pm_rec *r)
{
	return r->type == PERF_RECORD_SAMPLE ? r->sample.time : r->sid.time;
}

#define HOLD_NS 5000000ULL /* records an ordered source's drain leaves for the next pass */
#define HOLD_MAX_NS 80000000ULL /* ... at most, widened where the machine showed it too short */
/* an interval is cut this long after its end (and the drain's hold): its records all in the rings */
#define CUT_SLACK_NS 20000000ULL

/* The drain: the rings, and each one's next record, merged in time order. */
struct drain {
	struct pm_ring **rings;
	size_t n;
	struct pm_rec *cur;
	const struct perf_event_header **hdr;
	bool *have;
	uint64_t hold;  /* HOLD_NS, doubled each time a creation came late (up to HOLD_MAX_NS) */
	uint64_t late;  /* the late creations seen so far */
};

static void drain_init(struct drain *d, const struct session *s)
{
	size_t n = pm_attach_nrings(s->att);

	/* the rings there are (none with no events: --inuse alone) */
	d->rings = xcalloc(n ? n : 1, sizeof(*d->rings));
	d->n = 0;
	for (size_t i = 0; i < n; i++)
		if (pm_attach_ring(s->att, i))
			d->rings[d->n++] = pm_attach_ring(s->att, i);
	d->cur = xcalloc(d->n ? d->n : 1, sizeof(*d->cur));
	d->hdr = xcalloc(d->n ? d->n : 1, sizeof(*d->hdr));
	d->have = xcalloc(d->n ? d->n : 1, sizeof(*d->have));
}

static void drain_free(struct drain *d)
{
	free(d->rings);
	free(d->cur);
	free(d->hdr);
	free(d->have);
}

/*
 * One pass over every ring: a k-way merge on time of what each holds now.
 * Each ring's current record stays valid until its next pm_ring_next().
 */
static void drain(struct session *s, struct drain *d, bool last, uint64_t limit)
{
	struct pm_rec *cur = d->cur;
	const struct perf_event_header **hdr = d->hdr;
	bool *have = d->have;
	size_t i;
	uint64_t cut = UINT64_MAX;

	/*
	 * A source whose records must come before every younger one (the
	 * creation probe: a goroutine's creation before its samples): the
	 * rings are cut one after the other, so a ring cut later can hold a
	 * sample younger than a record another ring got after its cut.  Only
	 * records older than the first cut by HOLD_NS are processed now (the
	 * clock is the events' own, CLOCK_MONOTONIC): the rest wait for the
	 * next pass.
	 */
	/*
	 * A creation processed after a younger sample (the machine stalled a
	 * writer longer than the window): counted by the inspector, and the
	 * window doubled for the rest of the recording.
	 */
	if (!d->hold)
		d->hold = HOLD_NS;
	if (pm_gor_late_creations(s->gor) > d->late) {
		d->late = pm_gor_late_creations(s->gor);
		d->hold = d->hold * 2 > HOLD_MAX_NS ? HOLD_MAX_NS : d->hold * 2;
	}
	for (i = 0; !last && i < s->nev; i++)
		if (pm_sources[s->src[i]]->ordered)
			cut = pm_now_ns() - d->hold;
	if (limit < cut) /* an interval's end (cut_interval()): what is younger waits */
		cut = limit;

	if (d->n)
		memset(have, 0, d->n * sizeof(*have));

	for (i = 0; i < d->n; i++) /* one cut across the rings: see pm_ring_snapshot() */
		if (d->rings[i])
			pm_ring_snapshot(d->rings[i]);
	pm_gor_pass(s->gor); /* samples after the cut: reads from here on are newer */
	for (i = 0; i < d->n; i++) {
		const struct perf_event_header *h;
		while ((h = pm_ring_next(d->rings[i]))) {
			int rc = pm_rec_decode(h, &s->layout, &cur[i]);
			if (rc == 0) {
				have[i] = true;
				hdr[i] = h;
				break;
			}
			if (rc < 0)
				s->bad_records++;
		}
	}
	for (;;) {
		size_t best = SIZE_MAX;
		const struct perf_event_header *h;

		for (i = 0; i < d->n; i++)
			if (have[i] && (best == SIZE_MAX || rec_time(&cur[i]) < rec_time(&cur[best])))
				best = i;
		if (best == SIZE_MAX)
			break;
		if (rec_time(&cur[best]) > cut) { /* held back: see above, or past the interval */
			for (i = 0; i < d->n; i++)
				if (have[i])
					pm_ring_unread(d->rings[i], hdr[i]);
			break;
		}
		pm_ses_feed(s, hdr[best], &cur[best]);
		have[best] = false;
		/*
		 * its room back now, not at the pass's end: a pass over a full
		 * ring takes milliseconds of CPU, and a loaded machine stretches
		 * them to tens while the target fills the rest (uprobes -c 1)
		 */
		pm_ring_release(d->rings[best]);
		while ((h = pm_ring_next(d->rings[best]))) {
			int rc = pm_rec_decode(h, &s->layout, &cur[best]);
			if (rc == 0) {
				have[best] = true;
				hdr[best] = h;
				break;
			}
			if (rc < 0)
				s->bad_records++;
		}
	}
	for (i = 0; i < d->n; i++)
		pm_ring_consume(d->rings[i]);
}

static void progress(struct session *s, bool final)
{
	double t = (double)(pm_now_ns() - s->t_start) / 1e9;

	if (final) {
		fprintf(stderr, "\r\033[K");
		return;
	}
	fprintf(stderr,
		"\r\033[K[ pmuprof: %.1f s, %" PRIu64 " samples, %" PRIu64 " lost, %" PRId64
		" thread%s ]",
		t, s->res->samples, s->res->lost, pm_attach_threads_live(s->att),
		pm_attach_threads_live(s->att) == 1 ? "" : "s");
}

/* The launched command stopped at the breakpoint a source asked for. */
static void at_cmd_break(pid_t pid, void *arg)
{
	struct session *s = arg;

	s->cmd_break_fn(s->cmd_break_src, pid);
}

/* What pm_record_run() holds across its phases, freed at its end. */
struct run {
	const char *output;        /* the profile's path (-o, else the default) */
	struct pm_target *tgt;     /* the launched command; NULL attached */
	char *path;                /* its resolved path */
	int status;                /* its wait status */
	uint64_t t0_wall;          /* the profile's start time: the events open */
	struct drain dr;
	struct pollfd *pfd;        /* the rings, then the pidfds */
	size_t npfd;
	uint64_t next_timer;       /* the sources' timers: the soonest, 0 none */
	bool forwarded;            /* a stop forwarded (or, attached, asked for) */
	bool killed;               /* the command sent SIGKILL after ignoring it */
	uint64_t stop_at;          /* when the stop was forwarded */
	uint64_t last_prog;        /* the progress line's last update */
	uint64_t last_exit_check;  /* attached: when the targets were last checked for exits */
	/* cut in intervals (cfg->interval): the next cut, on both clocks; the interval's start */
	uint64_t cut_mono, cut_wall, ivl_start;
};

/* Goroutines: ids and labels always, creator frames with --creators. */
static void gor_init(struct session *s)
{
	const struct pm_record_cfg *cfg = s->cfg;
	struct pm_gor_opts go = {
		.creators = cfg->creators > 0 ? (unsigned)cfg->creators : 0u,
	};

	/* --raw: every read of the target logged for the replay (pm_cap_read()) */
	s->mlog_on = cfg->raw != NULL;
	if (s->mlog_on) {
		s->mlog = pm_mlog_new();
		go.read = pm_cap_gor_read;
		go.read_arg = s;
	}
	s->gor = pm_gor_new(&go);
	if (pm_src_creations_logged(s))
		pm_gor_probed(s->gor);
}

/*
 * Before anything starts, so that a mistake costs no run of the command:
 * the targets, the user to run as, the output files writable; then each
 * source's events and the processing they feed.  Nonzero: the error is in
 * s->res.
 */
static int prepare(struct session *s, const char *output)
{
	const struct pm_record_cfg *cfg = s->cfg;
	struct pm_record_result *res = s->res;
	char err[256];
	int rc;

	if (s->attach && !cfg->host && pm_att_check_targets(s))
		return -1;
	/* started through sudo: the command runs as, and the files go to, the user who typed it */
	rc = cfg->keep_privileges ? 0 : pm_target_sudo_user(&s->sudo_user.uid, &s->sudo_user.gid);
	if (rc < 0) {
		pm_ses_err(res, PM_REC_ERR,
			   "SUDO_UID/SUDO_GID are set but not valid ids; unset them, or "
			   "keep root with --no-drop-privileges");
		return -1;
	}
	s->owner = rc > 0 ? &s->sudo_user : NULL;
	rc = cfg->interval > 0 ? 0 : check_output(output); /* intervals: handed over, not written */
	if (rc) {
		pm_ses_err(res, PM_REC_ERR, "cannot write '%s': %s", output,
			   rc == -ENOTTY ? "refusing to write binary pprof to a terminal"
					 : strerror(-rc));
		return -1;
	}
	rc = cfg->raw ? (strcmp(cfg->raw, "-") == 0 ? -EINVAL : check_output(cfg->raw)) : 0;
	if (rc) {
		pm_ses_err(res, PM_REC_ERR, "cannot write '%s': %s", cfg->raw,
			   rc == -EINVAL ? "a capture needs a file" : strerror(-rc));
		return -1;
	}
	if (pm_src_add_events(s)) /* what each source opens */
		return -1;
	/* the user's uprobes (a source defines its own, and says why it cannot) */
	for (size_t i = 0; i < s->nuser; i++)
		if (s->spec[i].kind == PM_EVT_UPROBE &&
		    pm_evt_uprobe_define(&s->spec[i], (unsigned)i, err, sizeof(err)) < 0)
			pm_warn("%s: %s: threads started after the recording starts are not probed",
				s->spec[i].name, err);
	pm_ses_processing(s);
	gor_init(s);
	return 0;
}

/*
 * The profile's start time: when the events are open, or with --raw the
 * capture's (taken as they opened), so that a replay says the same time.
 */
static uint64_t start_time(const struct session *s)
{
	return s->t0_wall ? s->t0_wall : pm_wall_ns();
}

/* Attached: the events opened on every target, and the clock started. */
static int start_attached(struct session *s, struct run *r)
{
	if (pm_att_attach_all(s))
		return -1;
	if (s->cap_err) {
		pm_ses_err(s->res, PM_REC_ERR, "cannot write '%s': %s", s->cfg->raw,
			   strerror(-s->cap_err));
		return -1;
	}
	r->t0_wall = start_time(s);
	s->t_start = pm_now_ns();
	if (!s->cfg->quiet)
		pm_attach_summary(s->att);
	return 0;
}

/* Host-wide: the events opened on every CPU for every process, and the clock started. */
static int start_host(struct session *s, struct run *r)
{
	if (pm_att_open_events(s, -1))
		return -1;
	s->res->events = pm_attach_nevents(s->att);
	r->t0_wall = start_time(s);
	s->t_start = pm_now_ns();
	return 0;
}

/*
 * The command: spawned held at the handshake, its events opened on it,
 * the clock started, then let go to exec.  Nonzero: the error is in
 * s->res (the command, if spawned, is in r->tgt for the cleanup).
 */
static int start_command(struct session *s, struct run *r)
{
	const struct pm_record_cfg *cfg = s->cfg;
	struct pm_record_result *res = s->res;
	int rc;

	r->path = pm_path_resolve(cfg->argv[0]);
	if (!r->path) {
		if (errno == ENOENT)
			pm_ses_err(res, PM_REC_NOTFOUND, "cannot run '%s': command not found",
				   cfg->argv[0]);
		else
			pm_ses_err(res, PM_REC_NOEXEC, "cannot run '%s': %s", cfg->argv[0],
				   strerror(errno));
		return -1;
	}
	rc = s->owner ? pm_target_spawn_as(&r->tgt, r->path, cfg->argv, s->owner->uid,
					   s->owner->gid, cfg->host_mntns)
		      : pm_target_spawn(&r->tgt, r->path, cfg->argv, cfg->host_mntns);
	if (rc) {
		pm_ses_err(res, PM_REC_ERR, "cannot start '%s': %s", cfg->argv[0], strerror(-rc));
		return -1;
	}
	if (s->cmd_break)
		pm_target_break(r->tgt, s->cmd_break, at_cmd_break, s, s->cmd_break_what);
	if (pm_att_open_events(s, pm_target_pid(r->tgt)))
		return -1;
	if (s->cap_err) {
		pm_ses_err(res, PM_REC_ERR, "cannot write '%s': %s", cfg->raw,
			   strerror(-s->cap_err));
		return -1;
	}
	/*
	 * the program's runtime layout read before it runs: at its first
	 * sample it costs ~15 ms of CPU, while a burst fills the rings
	 */
	if (s->gor)
		pm_gor_layout_warm(r->path);
	r->t0_wall = start_time(s);
	s->t_start = pm_now_ns();
	s->cmd_pid = pm_target_pid(r->tgt);
	rc = pm_target_start(r->tgt);
	if (rc) {
		pm_ses_err(res, rc == -ENOENT ? PM_REC_NOTFOUND : PM_REC_NOEXEC,
			   "cannot run '%s': %s", cfg->argv[0], strerror(-rc));
		return -1;
	}
	return 0;
}

/* What the loop polls: the rings, then (attach) a pidfd per process, so an exit wakes it. */
static void poll_init(struct session *s, struct run *r)
{
	size_t i;

	drain_init(&r->dr, s);
	r->pfd = xcalloc(r->dr.n + pm_att_nprocs(s), sizeof(*r->pfd));
	for (i = 0; i < r->dr.n; i++) {
		r->pfd[i].fd = r->dr.rings[i] ? pm_ring_fd(r->dr.rings[i]) : -1;
		r->pfd[i].events = POLLIN;
	}
	r->npfd = r->dr.n;
	for (i = 0; i < pm_att_nprocs(s); i++)
		if (pm_attach_pidfd(s->att, i) >= 0) {
			r->pfd[r->npfd].fd = pm_attach_pidfd(s->att, i);
			r->pfd[r->npfd++].events = POLLIN;
		}
	r->next_timer = 0;
}

/*
 * Wait for records, a process's exit or the soonest timer, at most
 * cfg->idle_ms (100 ms).
 * True when a pidfd said a process exited.
 */
static bool wait_events(struct session *s, struct run *r)
{
	struct pollfd *pfd = r->pfd;
	uint64_t now = pm_now_ns();
	bool exit_news = false;
	int idle = s->cfg->idle_ms ? (int)s->cfg->idle_ms : 100, wait_ms = idle;
	size_t i;
	uint64_t next = r->next_timer, cut = r->cut_mono + r->dr.hold + CUT_SLACK_NS;

	if (s->cfg->interval > 0 && (!next || cut < next))
		next = cut; /* the interval's cut: see run_loop() */
	if (next && next <= now)
		wait_ms = 0;
	else if (next && (next - now) / 1000000 < (uint64_t)idle)
		wait_ms = (int)((next - now + 999999) / 1000000);
	/*
	 * 10 ms turns in the first 100 ms: the first records processed
	 * soon (the goroutine inspector reads the runtime's list of
	 * goroutines at the first sample: samples before then on a g it
	 * did not know are "[goroutine unknown]")
	 */
	if (now - s->t_start < 100000000ULL && wait_ms > 10)
		wait_ms = 10;
	if (poll(pfd, r->npfd, wait_ms) > 0)
		for (i = 0; i < r->dr.n; i++)
			/* a ring whose event's thread is gone reports HUP for good */
			if (pfd[i].revents & (POLLHUP | POLLERR | POLLNVAL))
				pfd[i].fd = -1;
	for (i = r->dr.n; i < r->npfd; i++)
		if (pfd[i].revents) {
			pfd[i].fd = -1;
			exit_news = true;
		}
	return exit_news;
}

/* Sources with work of their own at their rate (snapshots): the soonest next, 0 none. */
static uint64_t run_timers(struct session *s, uint64_t now)
{
	return pm_src_timers(s, now);
}

/* A stop asked for (a signal, then --duration): forwarded to the command once. */
static void check_stop(struct session *s, struct run *r, uint64_t now)
{
	const struct pm_record_cfg *cfg = s->cfg;

	if (cfg->stop && *cfg->stop && !r->forwarded) {
		if (r->tgt)
			pm_target_signal(r->tgt, *cfg->stop);
		r->forwarded = true;
		r->stop_at = now;
	}
	if (cfg->duration > 0 && !r->forwarded &&
	    (double)(now - s->t_start) / 1e9 >= cfg->duration) {
		if (r->tgt)
			pm_target_signal(r->tgt, SIGTERM);
		r->forwarded = true;
		r->stop_at = now;
		s->res->duration_stop = r->tgt != NULL;
	}
}

/* Is the recording over: the command ended, or (attached) a stop or every target's end? */
static bool is_done(struct session *s, struct run *r, uint64_t now, bool exit_news)
{
	if (r->tgt)
		return pm_target_poll(r->tgt, &r->status) != 0;
	/* attach: a stop or the end of every target; the targets are left alone */
	if (r->forwarded)
		return true;
	if (s->cfg->host) /* host-wide: a stop alone */
		return false;
	/*
	 * checked when a pidfd says so, else every 20 ms (threads of -t have
	 * none): not every wakeup, a poll per process
	 */
	if (exit_news || now - r->last_exit_check >= 20000000ULL) {
		r->last_exit_check = now;
		return pm_attach_all_exited(s->att);
	}
	return false;
}

/*
 * The next interval's end: the wall clock's next multiple of the
 * interval, and the same instant on the events' clock.
 */
static void next_cut(const struct session *s, struct run *r)
{
	uint64_t ivl = (uint64_t)(s->cfg->interval * 1e9), wall = pm_wall_ns(), now = pm_now_ns();

	if (ivl < 1000000)
		ivl = 1000000;
	r->cut_wall = (wall / ivl + 1) * ivl;
	r->cut_mono = now + (r->cut_wall - wall);
}

/*
 * The interval from r->ivl_start to @end_wall handed over: its profile,
 * or host-wide one a process with samples in it.
 */
static size_t hand_over(struct session *s, struct run *r, uint64_t end_wall, bool last)
{
	const struct pm_record_cfg *cfg = s->cfg;
	uint64_t dur = end_wall - r->ivl_start;
	pid_t *pids = NULL;
	size_t n = cfg->host ? pm_build_pids(s, &pids) : 1;

	for (size_t i = 0; i < n; i++) {
		pid_t pid = pids ? pids[i] : 0;

		cfg->on_interval(cfg->interval_arg, pm_build_profile(s, pid, r->ivl_start, dur), pid,
				 r->ivl_start, dur, last);
	}
	free(pids);
	return n;
}

/*
 * Host-wide, at a cut: should the processing state be made anew
 * (pm_ses_renew())?  When it knows many more processes than had samples
 * in the interval (those that came and went), or many stacks: an agent
 * on a host that starts a process a second stays bounded.  Each renewal
 * costs the binaries' symbols read again (ms each), so not every cut:
 * PM_RENEW_SLACK processes over twice the active ones
 * (PMUPROF_RENEW_SLACK in the environment, for tests).
 */
#define PM_RENEW_SLACK 128
#define PM_RENEW_STACKS (1u << 18)

static bool renew_due(const struct session *s, size_t active)
{
	const char *env = getenv("PMUPROF_RENEW_SLACK");
	size_t slack = env && *env ? (size_t)strtoul(env, NULL, 10) : PM_RENEW_SLACK;

	return pm_maps_nprocs(s->maps) > 2 * active + slack ||
	       pm_stacks_count(s->stacks) > PM_RENEW_STACKS;
}

/*
 * An interval ends: the records up to its end fed (the rest wait in the
 * rings), its profiles built and handed over, every stack's values back
 * to 0 for the next (or host-wide, now and then, the state made anew).
 */
static void cut_interval(struct session *s, struct run *r)
{
	size_t active;

	drain(s, &r->dr, false, r->cut_mono);
	active = hand_over(s, r, r->cut_wall, false);
	/* the next interval's profiles count from here (profbuild.c) */
	s->ivl0.samples = s->res->samples;
	s->ivl0.lost = s->res->lost;
	s->ivl0.throttled = s->res->throttled;
	s->ivl0.cut = s->res->cut;
	s->ivl0.foreign = s->res->foreign;
	pm_gor_counts_zero(s->gor);
	pm_src_cut(s);
	if (s->cfg->host && renew_due(s, active)) {
		pm_ses_renew(s);
		gor_init(s);
		s->res->renewed++;
	} else {
		pm_stacks_zero(s->stacks);
	}
	r->ivl_start = r->cut_wall;
	next_cut(s, r);
}

/* Poll, drain, the sources' timers, until a stop condition holds. */
static void run_loop(struct session *s, struct run *r)
{
	for (;;) {
		bool exit_news = wait_events(s, r);
		uint64_t now;

		drain(s, &r->dr, false, UINT64_MAX);
		now = pm_now_ns();
		if (s->cfg->interval > 0 && now >= r->cut_mono + r->dr.hold + CUT_SLACK_NS)
			cut_interval(s, r);
		r->next_timer = run_timers(s, now);
		check_stop(s, r, now);
		if (is_done(s, r, now, exit_news))
			break;
		if (r->tgt && r->forwarded && !r->killed && now - r->stop_at > 3000000000ULL) {
			/* it ignored the signal: stop it for good, the profile is what matters */
			pm_target_signal(r->tgt, SIGKILL);
			r->killed = true;
		}
		if (s->cfg->progress && now - r->last_prog > 250000000ULL) {
			progress(s, false);
			r->last_prog = now;
		}
	}
}

/*
 * The recording stopped: its last records, the results, and the profile
 * built (cut in intervals: the last one handed over, NULL).
 */
static struct pm_profile *finish(struct session *s, struct run *r)
{
	struct pm_record_result *res = s->res;

	pm_attach_disable(s->att);
	drain(s, &r->dr, true, UINT64_MAX);
	pm_att_lost_end(s);
	if (s->cfg->progress)
		progress(s, true);
	/* the command's status, unless pmuprof itself stopped it at --duration */
	res->cmd_exit = r->tgt ? pm_target_exit_code(r->status) : 0;
	res->exit_code = res->duration_stop ? 0 : res->cmd_exit;
	res->seconds = (double)(pm_now_ns() - s->t_start) / 1e9;

	s->duration_ns = pm_now_ns() - s->t_start; /* the capture's too: a replay's equals */
	if (s->cfg->interval > 0) { /* the last interval: from the last cut to now */
		hand_over(s, r, PM_MAX(pm_wall_ns(), r->ivl_start), true);
		return NULL;
	}
	return pm_build_profile(s, 0, r->t0_wall, s->duration_ns);
}

/* The capture (--raw), then the profile.  Nonzero: the error is in s->res. */
static int write_outputs(struct session *s, const struct pm_profile *prof, const char *output)
{
	struct pm_record_result *res = s->res;
	int rc;

	if (s->cap) {
		rc = pm_cap_finish(s);
		if (rc) {
			pm_ses_err(res, PM_REC_ERR, "cannot write '%s': %s", s->cfg->raw,
				   strerror(-rc));
			return -1;
		}
	}
	rc = pm_pprof_write(prof, output, s->owner);
	if (rc) {
		/* the recording exists only in memory: keep it somewhere if at all possible */
		char *alt = rescue_path(output);

		if (alt && pm_pprof_write(prof, alt, s->owner) == 0)
			pm_ses_err(res, PM_REC_ERR, "cannot write '%s': %s; the profile was saved to '%s'",
				   output, strerror(-rc), alt);
		else
			pm_ses_err(res, PM_REC_ERR, "cannot write '%s': %s", output, strerror(-rc));
		free(alt);
		return -1;
	}
	return 0;
}

/* What went wrong on the way (samples lost, sampling throttled), said once written. */
static void warn_losses(const struct pm_record_result *res)
{
	if (res->lost_end)
		pm_warn("lost %" PRIu64 " samples: the ring buffer overflowed (%" PRIu64
			" of them at the end, counted by the kernel only); lower -F or --stack-size",
			res->lost, res->lost_end);
	else if (res->lost)
		pm_warn("lost %" PRIu64 " samples: the ring buffer overflowed; lower -F or "
			"--stack-size",
			res->lost);
	if (res->throttled)
		pm_warn("the kernel throttled sampling %" PRIu64 " times: effective rate %.0f "
			"samples/s; lower -F (kernel.perf_event_max_sample_rate=%ld)",
			res->throttled, res->seconds > 0 ? (double)res->samples / res->seconds : 0.0,
			pm_evt_max_sample_rate());
}

/* The summary lines (unless -q): the profile written, and the capture. */
static void summary(const struct session *s, const char *output)
{
	const struct pm_record_cfg *cfg = s->cfg;
	const struct pm_record_result *res = s->res;

	if (!cfg->quiet) {
		char how[96] = "";

		if (res->duration_stop && res->cmd_exit > 128) {
			const char *sig = sigabbrev_np(res->cmd_exit - 128);

			snprintf(how, sizeof(how), "; stopped the command at --duration (it ended on SIG%s)",
				 sig ? sig : "?");
		} else if (res->duration_stop) {
			snprintf(how, sizeof(how), "; stopped the command at --duration (it exited %d)",
				 res->cmd_exit);
		}
		pm_info("wrote %s: %" PRIu64 " samples (%" PRIu64 " lost), %.1f s%s",
			output, res->samples, res->lost, res->seconds, how);
	}
	if (!cfg->quiet && cfg->raw) {
		if (res->raw_snaps)
			pm_info("wrote capture %s: %" PRIu64 " bytes (%" PRIu64 " snapshots: %" PRIu64
				" bytes, %" PRIu64 " a snapshot)",
				cfg->raw, res->raw_bytes, res->raw_snaps, res->raw_snap_bytes,
				res->raw_snap_bytes / res->raw_snaps);
		else
			pm_info("wrote capture %s: %" PRIu64 " bytes", cfg->raw, res->raw_bytes);
	}
}

/* A host-wide recording: no targets of its own, the CPU events alone, cut in intervals. */
static bool host_ok(const struct pm_record_cfg *cfg, struct pm_record_result *res)
{
	if (cfg->argv || cfg->npids || cfg->ntids || !cfg->want || !(cfg->interval > 0))
		pm_ses_err(res, PM_REC_USAGE, "host-wide: no command or pids, a filter, intervals");
	else if (cfg->wall_hz || cfg->off_cpu || cfg->locks || cfg->alloc || cfg->inuse ||
		 cfg->creators > 0 || cfg->memprofilerate || cfg->raw)
		pm_ses_err(res, PM_REC_USAGE, "host-wide: the CPU events alone (-e, -F)");
	return !res->err;
}

int pm_record_run(const struct pm_record_cfg *cfg, struct pm_record_result *res)
{
	struct session s;
	struct run r;
	struct pm_profile *prof = NULL;

	memset(res, 0, sizeof(*res));
	memset(&s, 0, sizeof(s));
	memset(&r, 0, sizeof(r));
	r.output = cfg->output ? cfg->output : PM_RECORD_DEFAULT_OUTPUT;
	s.cfg = cfg;
	s.res = res;
	s.attach = !cfg->argv;

	if (pm_src_configure(&s)) { /* the sources' options: -e, -F */
		pm_src_end(&s); /* (the states configure made) */
		return res->err;
	}
	if (s.attach && !cfg->npids && !cfg->ntids && !cfg->host) {
		pm_ses_err(res, PM_REC_USAGE, "nothing to record: give a command, -p PID or -t TID");
		pm_src_end(&s);
		return res->err;
	}
	if (cfg->host && !host_ok(cfg, res)) {
		pm_src_end(&s);
		return res->err;
	}
	s.att = pm_attach_new(s.attach && !cfg->host);
	if (prepare(&s, r.output))
		goto out;
	if (cfg->host ? start_host(&s, &r)
	    : s.attach ? start_attached(&s, &r)
		       : start_command(&s, &r))
		goto out;
	poll_init(&s, &r);
	r.ivl_start = r.t0_wall;
	if (cfg->interval > 0)
		next_cut(&s, &r);
	run_loop(&s, &r);
	prof = finish(&s, &r);
	if (cfg->interval > 0) {
		warn_losses(res);
		goto out;
	}
	if (write_outputs(&s, prof, r.output))
		goto out;
	warn_losses(res);
	summary(&s, r.output);
out:
	pm_data_abort(s.cap);
	pm_prof_free(prof);
	free(r.pfd);
	drain_free(&r.dr);
	pm_att_close(&s);
	pm_ses_release(&s);
	if (r.tgt && !pm_target_exited(r.tgt) && res->err) {
		pm_target_signal(r.tgt, SIGKILL);
		pm_target_wait(r.tgt, &r.status);
	}
	pm_target_free(r.tgt);
	free(r.path);
	return res->err;
}
