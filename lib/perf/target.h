/*
 * target: the program being profiled.  A launched command is forked and
 * held at a ready-pipe handshake until its events are open, then allowed to
 * exec, so that counters opened with enable_on_exec start exactly at exec.
 */
#ifndef PM_TARGET_H
#define PM_TARGET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct pm_target;

/*
 * Fork a child that will exec @argv (argv[0] already resolved by
 * pm_path_resolve() into @path).  The child waits until pm_target_start().
 * @mntns > 0: before its exec the child joins that mount namespace (the
 * caller's own from before pmuprof mounted tracefs in one of its own,
 * pm_evt_tracefs_mount()); <= 0: none.  0 or -errno.
 */
int pm_target_spawn(struct pm_target **out, const char *path, char *const argv[], int mntns);
/*
 * --- added for issue 8 ---
 * The same, but the child becomes @uid/@gid (with that user's
 * supplementary groups, none when the user is unknown) just before exec;
 * a failed drop fails pm_target_start() with its errno.
 */
int pm_target_spawn_as(struct pm_target **out, const char *path, char *const argv[], uid_t uid,
		       gid_t gid, int mntns);
/*
 * The user who ran pmuprof through sudo: 1 and *uid, *gid when pmuprof runs
 * as root with SUDO_UID and SUDO_GID naming a non-root user, 0 when not
 * (not root, no SUDO_UID, or SUDO_UID=0), -EINVAL when SUDO_UID or
 * SUDO_GID is set but not a valid id.
 */
int pm_target_sudo_user(uid_t *uid, gid_t *gid);
pid_t pm_target_pid(const struct pm_target *t);

/*
 * Before pm_target_start(): the child is traced from its handshake
 * (PTRACE_SEIZE) to its exec, where an int3 is written at @addr (a vaddr
 * of the program, not relocated); the child runs to it, the code and the
 * pc are put back, @fn(pid, @arg) is called with the child stopped there
 * (the thread that hit it; other threads run), and the child is detached.
 * @addr must be code that only the program's first thread runs (another
 * thread is not traced: the int3 would kill it).  A failure is one warning
 * line prefixed @what, and the child runs on, not traced (killed where
 * its code could not be put back once it stopped at the int3).
 */
typedef void pm_target_break_fn(pid_t pid, void *arg);
void pm_target_break(struct pm_target *t, uint64_t addr, pm_target_break_fn *fn, void *arg,
		     const char *what);

/*
 * Let the child exec (with pm_target_break(): and run it to the
 * breakpoint).  0, or -errno when the exec failed (the child is reaped).
 */
int pm_target_start(struct pm_target *t);

/* Non-blocking: 1 and *status (as waitpid) if the child has exited, 0 if not, -errno. */
int pm_target_poll(struct pm_target *t, int *status);
/* Blocking wait; 0 and *status. */
int pm_target_wait(struct pm_target *t, int *status);
bool pm_target_exited(const struct pm_target *t);
int pm_target_signal(struct pm_target *t, int sig);

/* Frees; a child still held at the handshake is killed and reaped. */
void pm_target_free(struct pm_target *t);

/* Shell-style exit code of a waitpid status: the exit code, or 128 + signal. */
int pm_target_exit_code(int status);

/*
 * Attaching: a process that is already running is only looked at through
 * /proc; it is never stopped, traced or signalled.
 */
struct pm_task_info {
	pid_t tid, tgid;         /* tgid == tid for a process's main thread */
	char comm[32];
	char state;              /* /proc stat state letter: R S D Z X ... */
	bool kthread;            /* a kernel thread (PF_KTHREAD): no user space */
	pid_t ppid;              /* its parent process, 0 when none */
};

/* /proc/TID/stat and status of any task (a thread id works too).  0, -ENOENT, -errno. */
int pm_target_task_info(pid_t tid, struct pm_task_info *out);

/*
 * Is @pid (a process or one of its threads) this process, or one of its
 * ancestors (the shell that runs it, say)?  Attaching to either is almost
 * never what was meant: record warns.
 */
enum pm_target_kin { PM_KIN_NONE, PM_KIN_SELF, PM_KIN_ANCESTOR };
enum pm_target_kin pm_target_kin(pid_t pid);

/*
 * The thread ids in /proc/PID/task, ascending, into a heap array.  The
 * count, or -errno (-ENOENT: no such process).
 */
long pm_target_threads(pid_t pid, pid_t **out);

/* Is @tid a thread of process @pid (and not a zombie)? */
bool pm_target_has_thread(pid_t pid, pid_t tid);

/*
 * A pidfd for @pid (readable once the whole process has exited), or
 * -errno (-ENOSYS before Linux 5.3).
 */
int pm_target_pidfd(pid_t pid);

/* Has the process behind @pidfd exited?  Non-blocking. */
bool pm_target_pidfd_exited(int pidfd);

#endif
