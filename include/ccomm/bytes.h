/*
 * ccomm/bytes.h - collectives of byte strings whose length differs by rank:
 * what language bindings need for object collectives (pickled objects,
 * serialized messages). No rank needs to know another's length beforehand.
 *
 * Results come back as a cc_bytes_t: one block that the library allocates,
 * holding a list of byte strings ("blobs") back to back. The caller owns it
 * (new) and frees it with cc_bytes_free; its blobs are borrowed until then.
 * Blobs start at 16-byte aligned addresses; a blob of length 0 has a valid,
 * non-NULL address.
 *
 * Output parameters are set only on success. With work == NULL the call
 * blocks; otherwise *out is written when the op completes successfully
 * (read it after cc_work_wait returned CC_OK; out is borrowed until then)
 * and stays untouched on failure.
 *
 * Each call is one operation through the door (types all_gather_bytes,
 * broadcast_bytes, gather_bytes, scatter_bytes, send_bytes, recv_bytes):
 * lengths travel first, then the payload in one message stream. The hooks
 * see in_count/out_count in bytes and no dtype (dtype CC_DTYPE_COUNT).
 *
 * Errors: as ccomm/coll.h; CC_ERR_NO_MEMORY when the result cannot be
 * allocated (on every rank that cannot; the others may see
 * CC_ERR_PEER_LOST or CC_ERR_TIMEOUT); CC_ERR_MISMATCH when a cc_recv_bytes
 * meets a message that is not from cc_send_bytes.
 * Thread safety: per-communicator serial; the accessors any thread.
 */
#ifndef CCOMM_BYTES_H
#define CCOMM_BYTES_H

#include "ccomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque list of byte strings. */
typedef struct cc_bytes cc_bytes_t;

/* Number of blobs; 0 for NULL. */
CC_API size_t cc_bytes_count(const cc_bytes_t *bytes);

/* Blob i (borrowed until cc_bytes_free) and its length in *len (may be NULL).
 * NULL (and *len = 0) when bytes is NULL or i is out of range. */
CC_API const void *cc_bytes_data(const cc_bytes_t *bytes, size_t i, size_t *len);

/* Sum of the blob lengths; 0 for NULL. */
CC_API size_t cc_bytes_total(const cc_bytes_t *bytes);

/* Free a result. NULL is ignored. */
CC_API void cc_bytes_free(cc_bytes_t *bytes);

/*
 * cc_allgather_bytes - every rank contributes len bytes at buf (len may
 * differ by rank, 0 included); *out on every rank holds size blobs, blob r
 * from rank r.
 */
CC_API cc_status_t cc_allgather_bytes(cc_comm_t *comm, const void *buf, size_t len,
                                      const cc_op_opts_t *opts, cc_bytes_t **out,
                                      cc_work_t **work);

/*
 * cc_broadcast_bytes - the root's len bytes at buf reach every rank: *out
 * holds one blob on every rank, the root included (a copy). buf and len are
 * read on the root only.
 */
CC_API cc_status_t cc_broadcast_bytes(cc_comm_t *comm, const void *buf, size_t len, int root,
                                      const cc_op_opts_t *opts, cc_bytes_t **out,
                                      cc_work_t **work);

/*
 * cc_gather_bytes - every rank's len bytes reach the root: there *out holds
 * size blobs, blob r from rank r. On other ranks out may be NULL and *out
 * (if given) is set to NULL.
 */
CC_API cc_status_t cc_gather_bytes(cc_comm_t *comm, const void *buf, size_t len, int root,
                                   const cc_op_opts_t *opts, cc_bytes_t **out, cc_work_t **work);

/*
 * cc_scatter_bytes - the root sends bufs[r] (lens[r] bytes) to rank r; *out
 * holds that one blob on every rank. bufs and lens (size entries) are read
 * on the root only (copied by the call; the blobs are borrowed until the op
 * completes).
 */
CC_API cc_status_t cc_scatter_bytes(cc_comm_t *comm, const void *const *bufs, const size_t *lens,
                                    int root, const cc_op_opts_t *opts, cc_bytes_t **out,
                                    cc_work_t **work);

/*
 * cc_send_bytes - send len bytes to `peer`, length first; the peer receives
 * them with cc_recv_bytes of the same tag (opts->tag). Matched in order.
 */
CC_API cc_status_t cc_send_bytes(cc_comm_t *comm, const void *buf, size_t len, int peer,
                                 const cc_op_opts_t *opts, cc_work_t **work);

/* cc_recv_bytes - receive what `peer`'s cc_send_bytes sent: *out holds one blob. */
CC_API cc_status_t cc_recv_bytes(cc_comm_t *comm, int peer, const cc_op_opts_t *opts,
                                 cc_bytes_t **out, cc_work_t **work);

#ifdef __cplusplus
}
#endif
#endif /* CCOMM_BYTES_H */
