/* The option keys of record and agent past the letters (cmds.h: cmd_record_kind_opt()). */
#ifndef PM_KINDS_H
#define PM_KINDS_H

/* The option keys past the letters: record's, and agent's that say what to record. */
enum { OPT_DURATION = 256, OPT_STACK_SIZE, OPT_KERNEL, OPT_RAW, OPT_STRICT = 300 };

enum { OPT_CREATORS = 320, OPT_NO_CREATORS, OPT_WALL, OPT_CREATORS_MAX_RATE }; /* goroutines */

enum { OPT_NO_DROP_PRIVILEGES = 340 }; /* privileges */

enum { OPT_NO_CALLCHAIN = 360 }; /* performance */

enum { OPT_ALL_FRAMES = 370 }; /* the frames Go's tracebacks hide */

enum { OPT_ALLOC = 380, OPT_MEMPROFILERATE, OPT_INUSE, OPT_ALLOC_MAX_RATE }; /* allocations, the live heap */
enum { OPT_LOCKS = 390, OPT_LOCKS_MAX_RATE };          /* lock contention */
enum { OPT_OFF_CPU = 395 };                            /* off-CPU time */

#define DEFAULT_CREATORS 8 /* --creators without =N */
#define DEFAULT_WALL_HZ 20 /* --wall without =HZ */

#endif
