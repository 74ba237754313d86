/*
 * Unit tests for the attach side of lib/target: /proc task info, thread
 * lists, pidfds; and the launch helpers' exit codes.
 */
#include "perf/target.h"

#include "test.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t thread_tid;
static int thread_go;

static void *thread_main(void *arg)
{
	(void)arg;
	__atomic_store_n(&thread_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&thread_go, __ATOMIC_SEQ_CST))
		usleep(1000);
	return NULL;
}

static int t_task_info_self(void)
{
	struct pm_task_info ti;

	CHECK_INT(pm_target_task_info(getpid(), &ti), 0);
	CHECK_INT(ti.tgid, getpid());
	CHECK_INT(ti.tid, getpid());
	CHECK(!ti.kthread);
	CHECK(ti.state == 'R');
	CHECK_STR(ti.comm, "test-target");
	CHECK_INT(pm_target_task_info(INT_MAX, &ti), -ENOENT);
	CHECK_INT(pm_target_task_info(0, &ti), -ENOENT);
	CHECK_INT(pm_target_task_info(-5, &ti), -ENOENT);
	return PM_PASS;
}

static int t_threads(void)
{
	pthread_t th;
	struct pm_task_info ti;
	pid_t *tids = NULL, tid;
	long n, i;
	bool saw_main = false, saw_thread = false, sorted = true;

	thread_go = 0;
	thread_tid = 0;
	CHECK(pthread_create(&th, NULL, thread_main, NULL) == 0);
	while (!(tid = __atomic_load_n(&thread_tid, __ATOMIC_SEQ_CST)))
		usleep(1000);
	n = pm_target_threads(getpid(), &tids);
	CHECK(n >= 2);
	for (i = 0; i < n; i++) {
		saw_main = saw_main || tids[i] == getpid();
		saw_thread = saw_thread || tids[i] == tid;
		if (i && tids[i - 1] >= tids[i])
			sorted = false;
	}
	free(tids);
	CHECK(saw_main && saw_thread && sorted);
	CHECK(pm_target_has_thread(getpid(), tid));
	CHECK(pm_target_has_thread(getpid(), getpid()));
	CHECK(!pm_target_has_thread(getpid(), INT_MAX));
	/* a thread id names its process through Tgid */
	CHECK_INT(pm_target_task_info(tid, &ti), 0);
	CHECK_INT(ti.tgid, getpid());
	CHECK_INT(ti.tid, tid);
	__atomic_store_n(&thread_go, 1, __ATOMIC_SEQ_CST);
	pthread_join(th, NULL);
	/*
	 * pthread_join() returns when the kernel clears the thread's tid, which
	 * is before its /proc entry goes: wait for that, a bounded while
	 */
	for (i = 0; i < 2000 && pm_target_has_thread(getpid(), tid); i++)
		usleep(1000);
	CHECK(!pm_target_has_thread(getpid(), tid));
	CHECK_INT(pm_target_threads(INT_MAX, &tids), -ENOENT);
	CHECK(tids == NULL);
	return PM_PASS;
}

static int t_kthread(void)
{
	struct pm_task_info ti;

	if (pm_target_task_info(2, &ti) != 0 || strcmp(ti.comm, "kthreadd") != 0)
		SKIP("no kthreadd at PID 2 in this pid namespace");
	CHECK(ti.kthread);
	CHECK_INT(pm_target_task_info(getppid(), &ti), 0);
	CHECK(!ti.kthread);
	return PM_PASS;
}

static int t_pidfd(void)
{
	pid_t pid = fork();
	int fd, st, i;

	CHECK(pid >= 0);
	if (pid == 0) {
		pause();
		_exit(0);
	}
	fd = pm_target_pidfd(pid);
	if (fd == -ENOSYS) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		SKIP("no pidfd_open on this kernel");
	}
	CHECK(fd >= 0);
	CHECK(!pm_target_pidfd_exited(fd));
	kill(pid, SIGKILL);
	/* exited, not yet reaped: a zombie counts as exited */
	for (i = 0; i < 1000 && !pm_target_pidfd_exited(fd); i++)
		usleep(1000);
	CHECK(pm_target_pidfd_exited(fd));
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK_INT(pm_target_exit_code(st), 128 + SIGKILL);
	close(fd);
	CHECK(pm_target_pidfd(INT_MAX) < 0);
	return PM_PASS;
}

static int t_odd_comm(void)
{
	/* a comm with spaces and ')' must not shift the fields */
	pid_t pid;
	int st;
	struct pm_task_info ti;
	int pfd[2];
	char c;

	CHECK(pipe(pfd) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		prctl(PR_SET_NAME, "a) b (c", 0, 0, 0);
		if (write(pfd[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	CHECK(read(pfd[0], &c, 1) == 1);
	close(pfd[0]);
	CHECK_INT(pm_target_task_info(pid, &ti), 0);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	CHECK_STR(ti.comm, "a) b (c");
	CHECK(ti.state == 'S' || ti.state == 'R');
	CHECK(!ti.kthread);
	CHECK_INT(ti.tgid, pid);
	return PM_PASS;
}

static const struct pm_test tests[] = {
	{ "task_info_self", t_task_info_self },
	{ "threads", t_threads },
	{ "kthread", t_kthread },
	{ "pidfd", t_pidfd },
	{ "odd_comm", t_odd_comm },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return pm_test_main(argc, argv, "target", tests);
}
