/*
 * path: a command found through $PATH as execvp() finds it.  Layer 0:
 * the launched command (target), the uprobes' binaries (evuprobe) and the
 * sources that read the launched binary all resolve argv[0] alike.
 */
#ifndef PM_PATH_H
#define PM_PATH_H

/*
 * Resolve @cmd through $PATH as execvp would (a name with a '/' is taken
 * as it is).  Returns a heap path, or NULL with errno ENOENT (not found)
 * or EACCES (found, not executable).
 */
char *pm_path_resolve(const char *cmd);

#endif
