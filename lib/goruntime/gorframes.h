/*
 * gorframes: the goroutine inspector's frames in a sample's stack: the
 * creation log (g -> the goroutine created on it last, from the probe on
 * goroutine creation) and the chains of creators (from that log, from
 * tracebackancestors, or the go statements of sampled parents), interned,
 * and the tag frame that carries goid and labels; record's per-sample hook
 * and build_profile's hooks.  One of the modules behind goroutine.h, which
 * declares what it offers: pm_gor_sample(), pm_gor_unw_abi(),
 * pm_gor_created(), pm_gor_creator_counts(), pm_gor_location(),
 * pm_gor_labels().
 */
#ifndef PM_GORFRAMES_H
#define PM_GORFRAMES_H

#include "goruntime/goroutine.h"

#endif
