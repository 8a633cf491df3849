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
#include "core/validate.h"

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

static cc_status_t check(cc_comm_t *comm, const cc_op_opts_t *opts, const void *buf, size_t len,
                         int sends, cc_bytes_t **out, int receives, const char *fn)
{
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_opts(opts, fn));
    if (sends && len > (size_t)INT64_MAX) {
        cc_log_error(CC_SUBSYS_CORE, "%s: len %zu is too large", fn, len);
        return CC_ERR_INVALID_ARG;
    }
    if (sends) CC_CHECK(cc__v_buf(buf, len, "buf", fn));
    if (receives && !out) {
        cc_log_error(CC_SUBSYS_CORE, "%s: out is NULL (it receives the result)", fn);
        return CC_ERR_INVALID_ARG;
    }
    return CC_OK;
}

cc_status_t cc_allgather_bytes(cc_comm_t *comm, const void *buf, size_t len,
                               const cc_op_opts_t *opts, cc_bytes_t **out, cc_work_t **work)
{
    CC_CHECK(check(comm, opts, buf, len, 1, out, 1, "cc_allgather_bytes"));
    return issue(comm, CC_OP_ALLGATHER_BYTES, buf, len, -1, -1, out, NULL, NULL, opts, work);
}

cc_status_t cc_broadcast_bytes(cc_comm_t *comm, const void *buf, size_t len, int root,
                               const cc_op_opts_t *opts, cc_bytes_t **out, cc_work_t **work)
{
    static const char fn[] = "cc_broadcast_bytes";
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    int me = comm->rank == root; /* buf and len mean something on the root only */
    CC_CHECK(check(comm, opts, buf, len, me, out, 1, fn));
    return issue(comm, CC_OP_BROADCAST_BYTES, me ? buf : NULL, me ? len : 0, root, -1, out, NULL,
                 NULL, opts, work);
}

cc_status_t cc_gather_bytes(cc_comm_t *comm, const void *buf, size_t len, int root,
                            const cc_op_opts_t *opts, cc_bytes_t **out, cc_work_t **work)
{
    static const char fn[] = "cc_gather_bytes";
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    CC_CHECK(check(comm, opts, buf, len, 1, out, comm->rank == root, fn));
    return issue(comm, CC_OP_GATHER_BYTES, buf, len, root, -1, out, NULL, NULL, opts, work);
}

cc_status_t cc_scatter_bytes(cc_comm_t *comm, const void *const *bufs, const size_t *lens, int root,
                             const cc_op_opts_t *opts, cc_bytes_t **out, cc_work_t **work)
{
    static const char fn[] = "cc_scatter_bytes";
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_rank(comm, root, "root", fn));
    CC_CHECK(check(comm, opts, NULL, 0, 0, out, 1, fn));
    int me = comm->rank == root;
    size_t total = 0, extent;
    if (me) {
        if (!bufs) {
            cc_log_error(CC_SUBSYS_CORE, "%s: bufs is NULL on the root", fn);
            return CC_ERR_INVALID_ARG;
        }
        CC_CHECK(cc__v_counts(comm->size, lens, NULL, CC_UINT8, "lens", fn, &total, &extent));
        for (int r = 0; r < comm->size; r++)
            if (!bufs[r] && lens[r]) return cc__v_buf(bufs[r], lens[r], "a blob of bufs", fn);
    }
    return issue(comm, CC_OP_SCATTER_BYTES, NULL, total, root, -1, out, me ? bufs : NULL,
                 me ? lens : NULL, opts, work);
}

cc_status_t cc_send_bytes(cc_comm_t *comm, const void *buf, size_t len, int peer,
                          const cc_op_opts_t *opts, cc_work_t **work)
{
    static const char fn[] = "cc_send_bytes";
    CC_CHECK(check(comm, opts, buf, len, 1, NULL, 0, fn));
    CC_CHECK(cc__v_rank(comm, peer, "peer", fn));
    return issue(comm, CC_OP_SEND_BYTES, buf, len, -1, peer, NULL, NULL, NULL, opts, work);
}

cc_status_t cc_recv_bytes(cc_comm_t *comm, int peer, const cc_op_opts_t *opts, cc_bytes_t **out,
                          cc_work_t **work)
{
    static const char fn[] = "cc_recv_bytes";
    CC_CHECK(check(comm, opts, NULL, 0, 0, out, 1, fn));
    CC_CHECK(cc__v_rank(comm, peer, "peer", fn));
    return issue(comm, CC_OP_RECV_BYTES, NULL, 0, -1, peer, out, NULL, NULL, opts, work);
}
