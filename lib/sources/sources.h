/*
 * sources: the table of profile sources, pm_sources[] (declared in
 * source.h, where the loop reads it; defined here, beside the sources, so
 * that the session names none of them).  The CPU source first.
 */
#ifndef PM_SOURCES_H
#define PM_SOURCES_H

#include "session/source.h"

#endif
