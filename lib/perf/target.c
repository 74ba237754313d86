#include "perf/target.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <dirent.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"

struct pm_target {
	pid_t pid;
	int go_fd;    /* write end: one byte lets the child exec; close without = exit */
	int err_fd;   /* read end: the child writes errno here if exec fails (CLOEXEC) */
	bool started, exited;
	int status;
	/* pm_target_break(): a breakpoint from exec to its first hit */
	uint64_t brk;
	pm_target_break_fn *brk_fn;
	void *brk_arg;
	const char *brk_what;
};

/* Credentials the child takes before exec; NULL: keep pmuprof's. */
struct cred {
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	int ngroups;
};

/* In the forked child: become @c (groups, then gid, then uid) for good.  0 or errno. */
static int drop_to(const struct cred *c)
{
	if (setgroups((size_t)c->ngroups, c->groups) < 0 || setgid(c->gid) < 0 ||
	    setuid(c->uid) < 0)
		return errno;
	/* must not be able to get root back */
	if (setuid(0) == 0 || getuid() != c->uid || geteuid() != c->uid || getegid() != c->gid)
		return EPERM;
	return 0;
}

/*
 * In the forked child: join the mount namespace @ns (the caller's).  setns
 * resets the working directory to that namespace's root: the command's is
 * kept (a directory fd across the switch; the namespaces see the same
 * mounts).  0 or errno.
 */
static int back_to_ns(int ns)
{
	int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC), e = 0;

	if (cwd < 0)
		return errno;
	if (setns(ns, CLONE_NEWNS) < 0 || fchdir(cwd) < 0)
		e = errno;
	close(cwd);
	return e;
}

static int spawn(struct pm_target **out, const char *path, char *const argv[],
		 const struct cred *cred, int mntns)
{
	int go[2], err[2];
	struct pm_target *t;
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(err, O_CLOEXEC) < 0) {
		int e = errno;
		close(go[0]);
		close(go[1]);
		return -e;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;
		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		return -e;
	}
	if (pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(err[0]);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		e = mntns > 0 ? back_to_ns(mntns) : 0;
		if (!e)
			e = cred ? drop_to(cred) : 0;
		if (!e) {
			execv(path, argv);
			e = errno;
		}
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	t = xcalloc(1, sizeof(*t));
	t->pid = pid;
	t->go_fd = go[1];
	t->err_fd = err[0];
	*out = t;
	return 0;
}

int pm_target_spawn(struct pm_target **out, const char *path, char *const argv[], int mntns)
{
	return spawn(out, path, argv, NULL, mntns);
}

int pm_target_spawn_as(struct pm_target **out, const char *path, char *const argv[], uid_t uid,
		       gid_t gid, int mntns)
{
	struct cred c = { uid, gid, NULL, 0 };
	struct passwd *pw = getpwuid(uid);
	int rc;

	/* Looked up here, not in the child: NSS is not safe after fork. */
	if (pw) {
		int n = 64;

		c.groups = xmalloc((size_t)n * sizeof(*c.groups));
		if (getgrouplist(pw->pw_name, gid, c.groups, &n) < 0 && n > 64 && n < 65536) {
			c.groups = xrealloc(c.groups, (size_t)n * sizeof(*c.groups));
			if (getgrouplist(pw->pw_name, gid, c.groups, &n) < 0)
				n = 0;
		} else if (n > 65536) {
			n = 0;
		}
		c.ngroups = n;
	}
	rc = spawn(out, path, argv, &c, mntns);
	free(c.groups);
	return rc;
}

static int parse_id(const char *v, unsigned long *out)
{
	char *end;

	if (!v || !*v || *v == '-' || *v == '+')
		return -EINVAL;
	errno = 0;
	*out = strtoul(v, &end, 10);
	if (errno || *end || *out >= (unsigned long)UINT32_MAX)
		return -EINVAL;
	return 0;
}

int pm_target_sudo_user(uid_t *uid, gid_t *gid)
{
	const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");
	unsigned long vu, vg;

	if (geteuid() != 0 || !u)
		return 0;
	if (parse_id(u, &vu) < 0 || parse_id(g, &vg) < 0)
		return -EINVAL;
	if (vu == 0)
		return 0;
	*uid = (uid_t)vu;
	*gid = (gid_t)vg;
	return 1;
}

pid_t pm_target_pid(const struct pm_target *t)
{
	return t->pid;
}

void pm_target_break(struct pm_target *t, uint64_t addr, pm_target_break_fn *fn, void *arg,
		     const char *what)
{
	t->brk = addr;
	t->brk_fn = fn;
	t->brk_arg = arg;
	t->brk_what = what;
}

/*
 * The next stop of the traced child, its signal passed on until @want says
 * it is the one: 1 and *@st, 0 when the child ended (recorded), -errno.
 */
static int next_stop(struct pm_target *t, int *st, bool (*want)(pid_t, int))
{
	for (;;) {
		int sig;

		if (waitpid(t->pid, st, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!WIFSTOPPED(*st)) {
			t->exited = true;
			t->status = *st;
			return 0;
		}
		if (want(t->pid, *st))
			return 1;
		/* a group-stop (PTRACE_EVENT_STOP) or an event: nothing to deliver */
		sig = (*st >> 16) ? 0 : WSTOPSIG(*st);
		if (ptrace(PTRACE_CONT, t->pid, 0, (void *)(uintptr_t)sig) < 0)
			return -errno;
	}
}

static bool is_exec(pid_t pid, int st)
{
	(void)pid;
	return st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8));
}

static uint64_t brk_want; /* the breakpoint is_brk waits for (one at a time) */

static bool is_brk(pid_t pid, int st)
{
	struct user_regs_struct r;

	return st >> 8 == SIGTRAP && ptrace(PTRACE_GETREGS, pid, 0, &r) == 0 &&
	       r.rip == brk_want + 1;
}

/* Stopped past the int3 at @addr: the @word it replaced back, the pc back to @addr. */
static int put_back(pid_t pid, uint64_t addr, long word)
{
	struct user_regs_struct r;

	if (ptrace(PTRACE_POKETEXT, pid, (void *)(uintptr_t)addr, (void *)word) < 0 ||
	    ptrace(PTRACE_GETREGS, pid, 0, &r) < 0)
		return -1;
	r.rip = addr;
	return ptrace(PTRACE_SETREGS, pid, 0, &r) < 0 ? -1 : 0;
}

/*
 * The child stopped at its exec: int3 at t->brk, run to it, the word and
 * the pc put back, t->brk_fn called there.  0, or a message in @err.
 */
static int run_to_break(struct pm_target *t, char *err, size_t errlen)
{
	long word, trap;
	int st, rc;

	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, t->pid, (void *)(uintptr_t)t->brk, 0);
	trap = (long)(((unsigned long)word & ~0xffUL) | 0xccUL);
	if (errno || ptrace(PTRACE_POKETEXT, t->pid, (void *)(uintptr_t)t->brk, (void *)trap) < 0) {
		snprintf(err, errlen, "cannot write its code: %s", strerror(errno));
		return -1;
	}
	brk_want = t->brk;
	if (ptrace(PTRACE_CONT, t->pid, 0, 0) < 0 || (rc = next_stop(t, &st, is_brk)) < 0) {
		snprintf(err, errlen, "lost it: %s", strerror(errno));
		return -1;
	}
	if (rc == 0) {
		snprintf(err, errlen, "it ended before its runtime had started");
		return -1;
	}
	if (put_back(t->pid, t->brk, word) < 0) {
		/* past the int3 in code not put back: it would run garbage */
		snprintf(err, errlen, "cannot put its code back (%s): killed", strerror(errno));
		kill(t->pid, SIGKILL);
		return -1;
	}
	t->brk_fn(t->pid, t->brk_arg);
	return 0;
}

/*
 * Traced from its handshake (PTRACE_SEIZE, the exec reported): true when
 * tracing started; a failure is said on stderr and the child runs untraced.
 */
static bool trace_child(struct pm_target *t)
{
	if (!t->brk)
		return false;
	if (ptrace(PTRACE_SEIZE, t->pid, 0, (void *)(uintptr_t)PTRACE_O_TRACEEXEC) == 0)
		return true;
	pm_warn("%s: cannot trace the command (ptrace: %s): not done", t->brk_what,
		strerror(errno));
	return false;
}

/* After a traced exec: the breakpoint, then the child let go (detached). */
static void break_and_detach(struct pm_target *t)
{
	char err[200] = "";
	int st, rc = next_stop(t, &st, is_exec);

	if (rc <= 0) {
		if (rc < 0)
			pm_warn("%s: lost the command at its exec: %s", t->brk_what, strerror(-rc));
		return;
	}
	if (run_to_break(t, err, sizeof(err)) < 0)
		pm_warn("%s: not done in the command: %s", t->brk_what, err);
	if (!t->exited && ptrace(PTRACE_DETACH, t->pid, 0, 0) < 0)
		pm_warn("%s: cannot let the command go: %s", t->brk_what, strerror(errno));
}

int pm_target_start(struct pm_target *t)
{
	char c = 1;
	int e = 0;
	ssize_t n;
	bool traced = trace_child(t);

	if (write(t->go_fd, &c, 1) != 1)
		return -errno;
	close(t->go_fd);
	t->go_fd = -1;
	t->started = true;
	/* EOF (CLOEXEC closed it at exec) means the exec succeeded. */
	do
		n = read(t->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(t->err_fd);
	t->err_fd = -1;
	if (n == (ssize_t)sizeof(e)) {
		pm_target_wait(t, &t->status);
		return -e;
	}
	if (traced)
		break_and_detach(t);
	return 0;
}

int pm_target_poll(struct pm_target *t, int *status)
{
	pid_t r;

	if (t->exited) {
		*status = t->status;
		return 1;
	}
	r = waitpid(t->pid, &t->status, WNOHANG);
	if (r < 0)
		return -errno;
	if (r == 0)
		return 0;
	t->exited = true;
	*status = t->status;
	return 1;
}

int pm_target_wait(struct pm_target *t, int *status)
{
	while (!t->exited) {
		if (waitpid(t->pid, &t->status, 0) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		t->exited = true;
	}
	*status = t->status;
	return 0;
}

bool pm_target_exited(const struct pm_target *t)
{
	return t->exited;
}

int pm_target_signal(struct pm_target *t, int sig)
{
	if (t->exited)
		return 0;
	return kill(t->pid, sig) < 0 ? -errno : 0;
}

void pm_target_free(struct pm_target *t)
{
	int st;

	if (!t)
		return;
	if (!t->started && !t->exited) {
		kill(t->pid, SIGKILL);
		pm_target_wait(t, &st);
	}
	if (t->go_fd >= 0)
		close(t->go_fd);
	if (t->err_fd >= 0)
		close(t->err_fd);
	free(t);
}

int pm_target_exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

#define PF_KTHREAD_FLAG 0x00200000u

int pm_target_task_info(pid_t tid, struct pm_task_info *out)
{
	char path[64], *buf, *rp, *p;
	unsigned long flags = 0;
	int rc, field;

	memset(out, 0, sizeof(*out));
	if (tid <= 0)
		return -ENOENT;
	out->tid = tid;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)tid);
	rc = pm_read_file(path, &buf, 4096);
	if (rc < 0)
		return rc == -ESRCH ? -ENOENT : rc;
	/* "pid (comm) S ppid ...": comm may hold spaces and ')'; the last ')' ends it */
	p = strchr(buf, '(');
	rp = strrchr(buf, ')');
	if (!p || !rp || rp < p || rp[1] != ' ' || !rp[2]) {
		free(buf);
		return -EINVAL;
	}
	snprintf(out->comm, sizeof(out->comm), "%.*s", (int)(rp - p - 1), p + 1);
	out->state = rp[2];
	/* field 4 (ppid) and 9 (flags), counting the state as field 3 */
	p = rp + 2;
	for (field = 3; field < 9 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
		if (p && field == 3) {
			long v = strtol(p, NULL, 10);

			out->ppid = v > 0 && v <= INT_MAX ? (pid_t)v : 0;
		}
	}
	if (p)
		flags = strtoul(p, NULL, 10);
	out->kthread = (flags & PF_KTHREAD_FLAG) != 0;
	free(buf);

	out->tgid = tid;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (pm_read_file(path, &buf, 1 << 16) >= 0) {
		p = strstr(buf, "\nTgid:");
		if (p) {
			long v = strtol(p + 6, NULL, 10);
			if (v > 0 && v <= INT_MAX)
				out->tgid = (pid_t)v;
		}
		free(buf);
	}
	return 0;
}

enum pm_target_kin pm_target_kin(pid_t pid)
{
	struct pm_task_info ti;
	pid_t p = getppid();
	int depth;

	if (pm_target_task_info(pid, &ti) == 0)
		pid = ti.tgid;
	if (pid == getpid())
		return PM_KIN_SELF;
	/* up the parents, bounded (a pid namespace's init has parent 0) */
	for (depth = 0; p > 0 && depth < 4096; depth++) {
		/* init, unless it started pmuprof itself: profiling it is its own choice */
		if (p == pid && (pid != 1 || depth == 0))
			return PM_KIN_ANCESTOR;
		if (pm_target_task_info(p, &ti) != 0 || ti.ppid == p)
			break;
		p = ti.ppid;
	}
	return PM_KIN_NONE;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return x < y ? -1 : x > y;
}

long pm_target_threads(pid_t pid, pid_t **out)
{
	char path[64];
	struct dirent *de;
	pid_t *v = NULL;
	size_t n = 0, cap = 0;
	DIR *d;

	*out = NULL;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return errno == ESRCH ? -ENOENT : -errno;
	while ((de = readdir(d))) {
		char *end;
		long t = strtol(de->d_name, &end, 10);

		if (end == de->d_name || *end || t <= 0 || t > INT_MAX)
			continue;
		PM_GROW(v, cap, n + 1);
		v[n++] = (pid_t)t;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_pid);
	*out = v;
	return (long)n;
}

bool pm_target_has_thread(pid_t pid, pid_t tid)
{
	char path[80], *buf, *rp;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (pm_read_file(path, &buf, 4096) < 0)
		return false;
	rp = strrchr(buf, ')');
	ok = rp && rp[1] == ' ' && rp[2] && rp[2] != 'Z' && rp[2] != 'X';
	free(buf);
	return ok;
}

int pm_target_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	long fd = syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0)
		return -errno;
	return (int)fd;
#else
	(void)pid;
	return -ENOSYS;
#endif
}

bool pm_target_pidfd_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}
