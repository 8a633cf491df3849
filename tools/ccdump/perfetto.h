/*
 * perfetto.h - the Chrome JSON trace writer behind `ccdump perfetto`
 * (perfetto_write.c).
 */
#ifndef CCDUMP_PERFETTO_H
#define CCDUMP_PERFETTO_H

#include <stdio.h>

#include "index.h"

/* Which ops go into the trace. */
typedef struct ccd_pf_sel {
    int32_t *ranks; /* sorted world ranks, NULL for all */
    uint32_t nranks;
    uint32_t last; /* each rank's last N ops, 0 for all */
} ccd_pf_sel_t;

/* Write the trace to f. Returns the number of events, UINT64_MAX when out of memory. */
uint64_t ccd_perfetto_write(const ccd_job_t *job, const ccd_index_t *ix, const ccd_pf_sel_t *sel,
                            FILE *f, FILE *err);

#endif /* CCDUMP_PERFETTO_H */
