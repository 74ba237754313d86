/*
 * evfiles: the files behind events: sysfs PMUs, tracefs tracepoints, and
 * uprobes defined in tracefs so that new threads inherit them.
 */
#include "events/evfiles.h"

#include "events/evnames.h"
#include "base/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- files: sysfs PMUs, tracefs ---- */

const char *pm_evt_sysfs(void)
{
	const char *v = getenv("PMUPROF_SYSFS");

	return v && *v ? v : "/sys/bus/event_source/devices";
}

static bool has_events_dir(const char *root)
{
	char p[4200];
	struct stat st;

	snprintf(p, sizeof(p), "%s/events", root);
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *pm_evt_tracefs(void)
{
	const char *v = getenv("PMUPROF_TRACEFS");

	if (v && *v)
		return has_events_dir(v) ? v : NULL;
	if (has_events_dir("/sys/kernel/tracing"))
		return "/sys/kernel/tracing";
	if (has_events_dir("/sys/kernel/debug/tracing"))
		return "/sys/kernel/debug/tracing";
	return NULL;
}

/*
 * tracefs where it is not mounted: pmuprof (root) mounts it where only it
 * sees it, in a mount namespace of its own whose mounts do not propagate
 * back (MS_SLAVE), so nothing is left mounted on the machine when it exits.
 * A command pmuprof starts goes back to the caller's namespace before its
 * exec (pm_target_spawn*(), the fd returned here).
 */
int pm_evt_tracefs_mount(void)
{
	const char *v = getenv("PMUPROF_TRACEFS");
	struct stat st;
	int host, e;

	if (pm_evt_tracefs())
		return -EEXIST;
	/* a root named by the user is used as it is, or not at all */
	if ((v && *v) || geteuid() != 0)
		return -EPERM;
	if (stat("/sys/kernel/tracing", &st) || !S_ISDIR(st.st_mode))
		return -ENOENT;
	host = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (host < 0)
		return -errno;
	if (host < 3) { /* never 0..2 (callers take > 0 as "an fd") */
		int h = fcntl(host, F_DUPFD_CLOEXEC, 3);

		close(host);
		if (h < 0)
			return -errno;
		host = h;
	}
	if (unshare(CLONE_NEWNS) < 0) {
		e = errno;
		close(host);
		return -e;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0 ||
	    mount("nodev", "/sys/kernel/tracing", "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0 ||
	    !pm_evt_tracefs()) {
		e = errno ? errno : ENOENT;
		if (setns(host, CLONE_NEWNS) < 0) {
			/* still in a namespace of our own: harmless, tracefs just absent */
		}
		close(host);
		return -e;
	}
	return host;
}

/* A path component from the user: letters, digits, '_', '-', '.', not "." or "..". */
bool pm_evt_safe_component(const char *s, size_t len)
{
	if (!len || len > 255 || (s[0] == '.' && (len == 1 || (len == 2 && s[1] == '.'))))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
			return false;
	return true;
}

/* A small text file's first line, trailing whitespace removed.  0 or -errno. */
int pm_evt_read_line(const char *path, char *buf, size_t len)
{
	char *data;
	int rc = pm_read_file(path, &data, 4096);
	size_t n;

	if (rc < 0)
		return rc;
	n = strcspn(data, "\n");
	while (n && isspace((unsigned char)data[n - 1]))
		n--;
	if (n >= len)
		n = len - 1;
	memcpy(buf, data, n);
	buf[n] = 0;
	free(data);
	return 0;
}

int pm_evt_read_u64_file(const char *path, uint64_t *v)
{
	char line[64], *end;
	int rc = pm_evt_read_line(path, line, sizeof(line));

	if (rc)
		return rc;
	errno = 0;
	*v = strtoull(line, &end, 0);
	if (end == line || *end || errno)
		return -EINVAL;
	return 0;
}

/* Is @name (len bytes) a PMU directory in sysfs? */
bool pm_evt_is_pmu(const char *name, size_t len)
{
	char path[4400];
	struct stat st;

	if (!pm_evt_safe_component(name, len))
		return false;
	snprintf(path, sizeof(path), "%s/%.*s/type", pm_evt_sysfs(), (int)len, name);
	return stat(path, &st) == 0;
}

/* The uprobe PMU's type from sysfs.  0 or -EINVAL with the message. */
int pm_evt_uprobe_type(const char *text, uint32_t *type, char *err, size_t errlen)
{
	char path[4200];
	uint64_t v;

	snprintf(path, sizeof(path), "%s/uprobe/type", pm_evt_sysfs());
	if (pm_evt_read_u64_file(path, &v) || v > UINT32_MAX) {
		pm_seterr(err, errlen,
		       "cannot probe '%s': this kernel has no uprobe PMU (%s; needs "
		       "CONFIG_UPROBE_EVENTS, Linux 4.17+)",
		       text, path);
		return -EINVAL;
	}
	*type = (uint32_t)v;
	return 0;
}

/* ---- tracepoints ---- */

static void tp_not_mounted(const char *text, char *err, size_t errlen)
{
	pm_seterr(err, errlen,
	       "cannot use tracepoint '%s': tracefs is not mounted; mount it with: "
	       "mount -t tracefs nodev /sys/kernel/tracing",
	       text);
}

/* Nearest tracepoints: names in the subsystem, or subsystems. */
static void tp_unknown(const char *root, const char *sub, const char *name, char *err,
		       size_t errlen)
{
	char dir[4400], sdir[4700], typed[300], list[400], cand[600];
	struct suggest sg;
	struct dirent *de, *de2;
	DIR *d, *d2;
	bool have_sub;

	snprintf(dir, sizeof(dir), "%s/events/%s", root, sub);
	d = opendir(dir);
	have_sub = d != NULL;
	snprintf(typed, sizeof(typed), "%.140s:%.140s", sub, name);
	pm_evt_suggest_init(&sg, typed);
	if (d) {
		for (int n = 0; n < 100000 && (de = readdir(d)); n++)
			if (de->d_name[0] != '.' && strcmp(de->d_name, "enable") &&
			    strcmp(de->d_name, "filter")) {
				snprintf(cand, sizeof(cand), "%s:%s", sub, de->d_name);
				pm_evt_suggest_add(&sg, cand);
			}
		closedir(d);
	} else {
		/* the subsystem is wrong: the same event name in other subsystems, or near ones */
		snprintf(dir, sizeof(dir), "%s/events", root);
		d = opendir(dir);
		for (int n = 0; d && n < 10000 && (de = readdir(d)); n++) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(sdir, sizeof(sdir), "%s/%s", dir, de->d_name);
			d2 = opendir(sdir);
			for (int m = 0; d2 && m < 10000 && (de2 = readdir(d2)); m++) {
				if (de2->d_name[0] == '.')
					continue;
				snprintf(cand, sizeof(cand), "%s:%s", de->d_name, de2->d_name);
				if (!strcmp(de2->d_name, name))
					pm_evt_suggest_add_dist(&sg, cand, 0);
				else
					pm_evt_suggest_add(&sg, cand);
			}
			if (d2)
				closedir(d2);
		}
		if (d)
			closedir(d);
	}
	if (sg.n)
		pm_seterr(err, errlen, "unknown tracepoint '%s' (did you mean %s?)", typed,
		       pm_evt_suggest_list(&sg, list, sizeof(list)));
	else if (!have_sub)
		pm_seterr(err, errlen, "unknown tracepoint '%s': no subsystem '%s' in %s/events", typed,
		       sub, root);
	else
		pm_seterr(err, errlen, "unknown tracepoint '%s': see %s/events/%s/", typed, root, sub);
}

/* @name is "sub:event".  0 with *id, or -EINVAL with the message. */
int pm_evt_parse_tracepoint(const char *name, uint64_t *id, char *err, size_t errlen)
{
	const char *colon = strchr(name, ':'), *root;
	char sub[256], ev[256], path[4700];
	size_t sl, el;

	sl = (size_t)(colon - name);
	el = strlen(colon + 1);
	if (!pm_evt_safe_component(name, sl) || !pm_evt_safe_component(colon + 1, el)) {
		pm_seterr(err, errlen, "bad tracepoint name '%s' (expected subsystem:name)", name);
		return -EINVAL;
	}
	root = pm_evt_tracefs();
	if (!root) {
		tp_not_mounted(name, err, errlen);
		return -EINVAL;
	}
	memcpy(sub, name, sl);
	sub[sl] = 0;
	memcpy(ev, colon + 1, el);
	ev[el] = 0;
	snprintf(path, sizeof(path), "%s/events/%s/%s/id", root, sub, ev);
	if (pm_evt_read_u64_file(path, id) == 0)
		return 0;
	if (access(path, F_OK) == 0 && errno != ENOENT) {
		pm_seterr(err, errlen, "cannot read the id of tracepoint '%s' (%s): run as root", name,
		       path);
		return -EINVAL;
	}
	tp_unknown(root, sub, ev, err, errlen);
	return -EINVAL;
}

/* Is @sub a tracepoint subsystem here? */
bool pm_evt_tp_subsystem(const char *sub, size_t len)
{
	const char *root = pm_evt_tracefs();
	char path[4400];
	struct stat st;

	if (!root || !pm_evt_safe_component(sub, len))
		return false;
	snprintf(path, sizeof(path), "%s/events/%.*s", root, (int)len, sub);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- uprobes through tracefs, inherited by new threads ---- */

static int tracefs_write(const char *root, const char *line)
{
	char path[4200];
	size_t len = strlen(line);
	ssize_t w;
	int fd;

	snprintf(path, sizeof(path), "%s/uprobe_events", root);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	w = write(fd, line, len);
	if (w < 0 || (size_t)w != len) {
		int e = w < 0 ? errno : EIO;
		close(fd);
		return -e;
	}
	return close(fd) < 0 ? -errno : 0;
}

/* Remove the probes of groups pmuprof_PID whose pmuprof is gone (killed). */
static void uprobe_sweep(const char *root)
{
	char path[4200], *data, *line, *save = NULL;

	snprintf(path, sizeof(path), "%s/uprobe_events", root);
	if (pm_read_file(path, &data, 1 << 20) < 0)
		return;
	for (line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char cmd[128], pidbuf[32];
		int pid, ev;

		/* "p:pmuprof_PID/pN /path:0x..." */
		if (sscanf(line, "p:pmuprof_%d/p%d", &pid, &ev) != 2 || pid <= 0 || ev < 0)
			continue;
		snprintf(pidbuf, sizeof(pidbuf), "/proc/%d", pid);
		if (pid == getpid() || access(pidbuf, F_OK) == 0)
			continue;
		snprintf(cmd, sizeof(cmd), "-:pmuprof_%d/p%d\n", pid, ev);
		tracefs_write(root, cmd);
	}
	free(data);
}

int pm_evt_uprobe_define(struct pm_evt_spec *spec, unsigned idx, char *err, size_t errlen)
{
	const char *root;
	char line[4700], path[4400];
	uint64_t id;
	int rc;

	if (spec->kind != PM_EVT_UPROBE || spec->probe[0])
		return 0;
	root = pm_evt_tracefs();
	if (!root) {
		pm_seterr(err, errlen, "tracefs is not mounted (mount -t tracefs nodev "
				       "/sys/kernel/tracing)");
		return -ENOENT;
	}
	if (strpbrk(spec->path, " \t\n:")) {
		pm_seterr(err, errlen, "its path has a blank or ':', which uprobe_events cannot take");
		return -ENOENT;
	}
	uprobe_sweep(root);
	snprintf(spec->probe, sizeof(spec->probe), "pmuprof_%d/p%u", (int)getpid(), idx);
	snprintf(line, sizeof(line), "p:%s %s:0x%llx%s%s\n", spec->probe, spec->path,
		 (unsigned long long)spec->config2, spec->fetchargs[0] ? " " : "", spec->fetchargs);
	rc = tracefs_write(root, line);
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/events/%s/id", root, spec->probe);
		rc = pm_evt_read_u64_file(path, &id);
		if (rc)
			pm_evt_uprobe_undefine(spec);
	}
	if (rc) {
		pm_seterr(err, errlen, "cannot define it in %s/uprobe_events: %s", root,
			  strerror(-rc));
		spec->probe[0] = 0;
		return -ENOENT;
	}
	spec->type = PERF_TYPE_TRACEPOINT;
	spec->config = id;
	spec->config1 = spec->config2 = 0;
	return 0;
}

void pm_evt_uprobe_undefine(struct pm_evt_spec *spec)
{
	const char *root = pm_evt_tracefs();
	char line[128];

	if (!spec->probe[0] || !root)
		return;
	snprintf(line, sizeof(line), "-:%s\n", spec->probe);
	tracefs_write(root, line);
	spec->probe[0] = 0;
}
