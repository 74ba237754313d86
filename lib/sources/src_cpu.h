/*
 * src_cpu: the CPU sampling profile source -- the user's events (-e,
 * "cycles" by default, cpu-clock without a PMU), each sample unwound and
 * aggregated with its count and period, one sample type per event.
 */
#ifndef PM_SRC_CPU_H
#define PM_SRC_CPU_H

#include "session/source.h"

extern const struct pm_source pm_src_cpu;

#endif
