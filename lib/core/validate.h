/*
 * validate.h - the argument checks the door's validation step
 * (door_validate.h) is made of (internal). Each returns CC_OK or a status
 * after logging the function, the argument and the value. Nothing is
 * enqueued when one fails.
 */
#ifndef CC_CORE_VALIDATE_H
#define CC_CORE_VALIDATE_H

#include <stddef.h>

#include "ccomm/ccomm.h"

cc_status_t cc__v_comm(const cc_comm_t *comm, const char *fn);
cc_status_t cc__v_dtype(cc_dtype_t dtype, const char *fn);
/* dtype valid, op valid, and the pair supported (CC_ERR_NOT_SUPPORTED names it). */
cc_status_t cc__v_redop(cc_dtype_t dtype, cc_redop_t op, const cc_op_opts_t *opts, const char *fn);
/* count * size(dtype) * mult <= INT64_MAX (mult: blocks of count in the largest buffer, 0 = 1);
 * *bytes = count * size (may be NULL). */
cc_status_t cc__v_count(size_t count, cc_dtype_t dtype, size_t mult, size_t *bytes, const char *fn);
/* buf non-NULL when count > 0. */
cc_status_t cc__v_buf(const void *buf, size_t count, const char *what, const char *fn);
/* 0 <= r < comm size. */
cc_status_t cc__v_rank(const cc_comm_t *comm, int r, const char *what, const char *fn);
/* opts NULL or well-formed (struct_size, tag range, timeout >= 0, flags 0). */
cc_status_t cc__v_opts(const cc_op_opts_t *opts, const char *fn);
/* Two ranges may be identical (in place) when allow_same, never partly overlapping. */
cc_status_t cc__v_overlap(const void *a, size_t alen, const void *b, size_t blen, int allow_same,
                          const char *fn);

/*
 * Per-rank arrays. cc__v_counts: counts non-NULL, each count and the total
 * addressable in bytes, each displs[r] + counts[r] too (displs may be NULL:
 * packed); *total = sum, *extent = end of the last block (elements).
 */
cc_status_t cc__v_counts(int n, const size_t *counts, const size_t *displs, cc_dtype_t dt,
                         const char *what, const char *fn, size_t *total, size_t *extent);
/* Non-empty blocks (displs NULL: packed) do not overlap one another. */
cc_status_t cc__v_disjoint(int n, const size_t *counts, const size_t *displs, const char *what,
                           const char *fn);
/* send is exactly `inplace` (pass NULL where in place has no meaning), or does not overlap recv. */
cc_status_t cc__v_inplace(const void *send, size_t sbytes, const void *recv, size_t rbytes,
                          const void *inplace, const char *fn);
/* A rank's own block has the size it sends itself: a (named an) == b (bn[r]). */
cc_status_t cc__v_own(size_t a, const char *an, size_t b, const char *bn, int r, const char *fn);

#endif /* CC_CORE_VALIDATE_H */
