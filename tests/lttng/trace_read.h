/*
 * trace_read.h - read the text that `babeltrace2 <trace dir>` prints for
 * ccomm events into a list, and look fields up by name.
 *
 * A line looks like
 *   [09:15:03.867218041] (+0.000000911) host ccomm:op_end: { cpu_id = 0 },
 *   { vpid = 4242 }, { op_id = 7, ..., status = ( "OK" : container = 0 ), ... }
 * (one line in the real output). Lines of other providers are skipped.
 */
#ifndef CC_TEST_TRACE_READ_H
#define CC_TEST_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>

typedef struct tr_event {
    char name[32]; /* event name without "ccomm:" */
    long vpid;     /* from the vpid context, -1 when absent */
    char *text;    /* the rest of the line: contexts and fields */
} tr_event_t;

typedef struct tr_trace {
    tr_event_t *ev;
    size_t n;
} tr_trace_t;

/* Parse a babeltrace2 text file. Returns 0, or -1 (errno set) when it cannot be read. */
int tr_read(const char *path, tr_trace_t *out);
void tr_free(tr_trace_t *t);

/* A field's value as text: a number as printed, a string without its quotes,
 * an enumeration's label. Returns 1 when found, 0 when the event lacks it. */
int tr_field(const tr_event_t *e, const char *key, char *buf, size_t len);
/* A numeric field (decimal or 0x hex); `dflt` when absent or not a number. */
uint64_t tr_u64(const tr_event_t *e, const char *key, uint64_t dflt);
int64_t tr_i64(const tr_event_t *e, const char *key, int64_t dflt);
/* 1 when the field's text equals `want`. */
int tr_is(const tr_event_t *e, const char *key, const char *want);

#endif /* CC_TEST_TRACE_READ_H */
