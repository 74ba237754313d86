/*
 * discover: the host's Go processes, found from /proc: every process whose
 * executable holds Go's function table (gopclntab), or those the filters
 * name (-p PID, --comm NAME, --exe PATH, --cgroup PREFIX: a process matches
 * when any filter does; no filter: every Go process).  Each process is
 * known by its pid and start time, so that a pid the kernel reuses is a
 * new process.  Binaries are judged once, by device, inode, size and mtime.
 */
#ifndef PM_DISCOVER_H
#define PM_DISCOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/meta.h"

struct pm_disc;

struct pm_disc_filter {
	const pid_t *pids;
	size_t npids;
	char *const *comms;   /* /proc/PID/comm, exactly */
	size_t ncomms;
	char *const *exes;    /* the executable's path, or its base name */
	size_t nexes;
	char *const *cgroups; /* a prefix of the process's cgroup (v2) path */
	size_t ncgroups;
};

struct pm_disc_proc {
	pid_t pid;
	uint64_t start;       /* its start time, clock ticks after boot (/proc/PID/stat) */
	struct pm_agent_meta meta; /* the resource (the interval fields 0) */
};

/* @root: the proc file system to read ("/proc"; a test's copy elsewhere). */
struct pm_disc *pm_disc_new(const char *root);
void pm_disc_free(struct pm_disc *d);
/* Free what @f holds (its arrays and strings, all malloc'd) and zero it. */
void pm_disc_filter_free(struct pm_disc_filter *f);
/* Replace the filters (SIGHUP): copied. */
void pm_disc_set_filter(struct pm_disc *d, const struct pm_disc_filter *f);
/*
 * Scan: the Go processes that match now, into a new array (*@out, free())
 * of *@n, sorted by pid.  Processes of pmuprof itself (@self and its
 * children) are left out.  Returns 0 or -errno (no /proc).
 */
int pm_disc_scan(struct pm_disc *d, pid_t self, struct pm_disc_proc **out, size_t *n);
/*
 * One process judged now, as a scan would (a host-wide recording asks at
 * its first record): 1 a target (its start time and resource in *@p), 0
 * not one (not Go, not matching, @self or a child of it, a kernel thread),
 * -ESRCH gone.
 */
int pm_disc_judge(struct pm_disc *d, pid_t pid, pid_t self, struct pm_disc_proc *p);
/* Binaries judged so far, and of them Go programs (the agent's -v line). */
void pm_disc_counts(const struct pm_disc *d, size_t *binaries, size_t *go);
/*
 * @cgroup_path's container id: the last 64-hex-digit run in it (docker,
 * containerd, cri-o, podman all name their scopes so), "" when none.
 */
void pm_disc_container_id(const char *cgroup_path, char *out, size_t len);

#endif
