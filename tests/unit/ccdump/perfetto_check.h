/*
 * perfetto_check.h - checks a Chrome JSON trace against what Perfetto's
 * JSON importer expects (REFERENCE.md; src/trace_processor/importers/json):
 * every event has ph, ts, pid and tid; complete events have dur; slices on
 * one thread nest or are disjoint; B/E balance; flows (bind_id with
 * flow_out / flow_in, and s/t/f) have one start and one end; instants have
 * a valid scope; counters have numeric args; metadata names every pid.
 */
#ifndef CCDUMP_PERFETTO_CHECK_H
#define CCDUMP_PERFETTO_CHECK_H

#include <jansson.h>

typedef struct ccd_trace_facts {
    int processes;      /* process_name metadata events */
    int flows;          /* distinct flows */
    int counters;       /* counter events */
    int overlap_tracks; /* threads named "... (overlap N)" */
    int timeouts;       /* instants named "timeout: ..." */
    int aborts;         /* instants named "abort: ..." */
    int open_slices;    /* slices marked open at the end of the record */
} ccd_trace_facts_t;

/* NULL when the trace is well formed (facts filled in), else what is wrong. */
const char *ccd_check_trace(json_t *trace, ccd_trace_facts_t *facts);

#endif /* CCDUMP_PERFETTO_CHECK_H */
