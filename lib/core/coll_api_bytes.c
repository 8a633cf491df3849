/*
 * coll_api_bytes.c - byte collectives (ccomm/bytes.h): the result type and
 * the calls. A call's argument block (cc__bytes_args_t) holds where the
 * result goes; the engine builds the result in it, and the op's release
 * hands it to the caller on success or frees it on failure, on every path.
 */
#include <stdlib.h>
#include <string.h>

#include "core/coll_api.h"
#include "core/comm.h"
#include "core/door.h"
#include "base/log.h"
#include "core/door_validate.h"

#define ALIGN16(x) (((x) + 15u) & ~(size_t)15u)

cc_bytes_t *cc__bytes_new(size_t count, const size_t *lens)
{
    /* One allocation the caller frees with one call: header, offsets, lengths, then blobs
     * padded to 16 bytes so that each starts aligned for any element type. */
    size_t head = ALIGN16(sizeof(cc_bytes_t) + 2 * count * sizeof(size_t)), data = 0, total = 0;
    for (size_t i = 0; i < count; i++)
        if (lens[i] > (size_t)INT64_MAX - data - 16 ||
            __builtin_add_overflow(total, lens[i], &total)) {
            cc_log_error(CC_SUBSYS_COLL,
                         "byte collective: %zu blobs of up to %zu bytes do not fit "
                         "in memory",
                         count, lens[i]);
            return NULL;
        } else {
            data += ALIGN16(lens[i]);
        }
    cc_bytes_t *b = aligned_alloc(16, ALIGN16(head + data + 1));
    if (!b) {
        cc_log_error(CC_SUBSYS_COLL, "byte collective: out of memory for %zu blobs, %zu bytes",
                     count, total);
        return NULL;
    }
    b->magic = CC__BYTES_MAGIC;
    b->count = count;
    b->total = total;
    b->off = (size_t *)(b + 1);
    b->len = b->off + count;
    b->data = (char *)b + head;
    for (size_t i = 0, o = 0; i < count; o += ALIGN16(lens[i]), i++) {
        b->off[i] = o;
        b->len[i] = lens[i];
    }
    return b;
}

/* The magic catches a stale or foreign pointer before it is read as a list. */
static int valid(const cc_bytes_t *b)
{
    return b && b->magic == CC__BYTES_MAGIC;
}

size_t cc_bytes_count(const cc_bytes_t *bytes)
{
    return valid(bytes) ? bytes->count : 0;
}

size_t cc_bytes_total(const cc_bytes_t *bytes)
{
    return valid(bytes) ? bytes->total : 0;
}

const void *cc_bytes_data(const cc_bytes_t *bytes, size_t i, size_t *len)
{
    if (len) *len = 0;
    if (!valid(bytes) || i >= bytes->count) return NULL;
    if (len) *len = bytes->len[i];
    return bytes->data + bytes->off[i];
}

void cc_bytes_free(cc_bytes_t *bytes)
{
    if (!bytes) return;
    if (!valid(bytes)) {
        cc_log_error(CC_SUBSYS_CORE, "cc_bytes_free: %p is not a cc_bytes_t (freed twice?)",
                     (void *)bytes);
        return;
    }
    bytes->magic = 0;
    free(bytes);
}

/* The op is over: the result goes to the caller, or away. */
static void release(cc__op_t *op, cc_status_t status)
{
    cc__bytes_args_t *a = op->owned;
    if (status == CC_OK && a->out)
        *a->out = a->result;
    else
        cc_bytes_free(a->result);
    free(a);
    op->owned = NULL;
}

/* Describe a byte op and its argument block (bufs/lens copied for scatter). */
static cc_status_t issue(cc_comm_t *comm, cc_op_type_t type, const void *buf, size_t len, int root,
                         int peer, cc_bytes_t **out, const void *const *bufs, const size_t *lens,
                         const cc_op_opts_t *opts, cc_work_t **work)
{
    /* The root's list of blobs is copied: an async scatter outlives the caller's arrays. */
    size_t n = bufs ? (size_t)comm->size : 0;
    cc__bytes_args_t *a = malloc(sizeof(*a) + n * (sizeof(void *) + sizeof(size_t)));
    if (!a) return CC_ERR_NO_MEMORY;
    *a = (cc__bytes_args_t){NULL, NULL, out, NULL};
    if (n) {
        const void **b = (const void **)(a + 1);
        size_t *l = (size_t *)(b + n);
        memcpy(b, bufs, n * sizeof(*b));
        memcpy(l, lens, n * sizeof(*l));
        a->bufs = b;
        a->lens = l;
    }
    cc__op_t op;
    cc__op_prepare(&op, comm, type);
    op.info.root = root;
    op.info.peer = peer;
    op.info.tag = peer >= 0 && opts ? opts->tag : 0;
    op.info.in_count = op.info.bytes = len;
    op.info.sendbuf = buf;
    op.extra = op.owned = a;
    op.release = release;
    return cc__api_issue(&op, opts, work);
}

cc_status_t cc_allgather_bytes(cc_comm_t *comm, const void *buf, size_t len,
                               const cc_op_opts_t *opts, cc_bytes_t **out, cc_work_t **work)
{
    CC_CHECK(cc__validate_allgather_bytes(comm, buf, len, opts, out));
    return issue(comm, CC_OP_ALLGATHER_BYTES, buf, len, -1, -1, out, NULL, NULL, opts, work);
}

cc_status_t cc_broadcast_bytes(cc_comm_t *comm, const void *buf, size_t len, int root,
                               const cc_op_opts_t *opts, cc_bytes_t **out, cc_work_t **work)
{
    CC_CHECK(cc__validate_broadcast_bytes(comm, buf, len, root, opts, out));
    int me = comm->rank == root; /* buf and len mean something on the root only */
    return issue(comm, CC_OP_BROADCAST_BYTES, me ? buf : NULL, me ? len : 0, root, -1, out, NULL,
                 NULL, opts, work);
}

cc_status_t cc_gather_bytes(cc_comm_t *comm, const void *buf, size_t len, int root,
                            const cc_op_opts_t *opts, cc_bytes_t **out, cc_work_t **work)
{
    CC_CHECK(cc__validate_gather_bytes(comm, buf, len, root, opts, out));
    return issue(comm, CC_OP_GATHER_BYTES, buf, len, root, -1, out, NULL, NULL, opts, work);
}

cc_status_t cc_scatter_bytes(cc_comm_t *comm, const void *const *bufs, const size_t *lens, int root,
                             const cc_op_opts_t *opts, cc_bytes_t **out, cc_work_t **work)
{
    size_t total;
    CC_CHECK(cc__validate_scatter_bytes(comm, bufs, lens, root, opts, out, &total));
    int me = comm->rank == root;
    return issue(comm, CC_OP_SCATTER_BYTES, NULL, total, root, -1, out, me ? bufs : NULL,
                 me ? lens : NULL, opts, work);
}

cc_status_t cc_send_bytes(cc_comm_t *comm, const void *buf, size_t len, int peer,
                          const cc_op_opts_t *opts, cc_work_t **work)
{
    CC_CHECK(cc__validate_send_bytes(comm, buf, len, peer, opts));
    return issue(comm, CC_OP_SEND_BYTES, buf, len, -1, peer, NULL, NULL, NULL, opts, work);
}

cc_status_t cc_recv_bytes(cc_comm_t *comm, int peer, const cc_op_opts_t *opts, cc_bytes_t **out,
                          cc_work_t **work)
{
    CC_CHECK(cc__validate_recv_bytes(comm, peer, opts, out));
    return issue(comm, CC_OP_RECV_BYTES, NULL, 0, -1, peer, out, NULL, NULL, opts, work);
}
