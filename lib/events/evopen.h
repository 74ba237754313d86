/*
 * evopen: opening events: perf_event_attr for a spec (sampling or
 * counting), perf_event_open (PMUPROF_FAIL_OPEN injects an errno for the
 * tests), the kernel's sample-rate limit, and errno turned into one line
 * of cause and remedy.  One of the modules behind events.h, which declares
 * what it offers: pm_evt_attr(), pm_evt_count_attr(), pm_evt_open(),
 * pm_evt_max_sample_rate(), pm_evt_strerror(), pm_evt_err_unsupported().
 */
#ifndef PM_EVOPEN_H
#define PM_EVOPEN_H

#include "events/events.h"

#endif
