/*
 * coll_api.c - the public point-to-point and collective calls: check the
 * arguments, describe the op, and hand it to the door.
 */
#include "comm.h"
#include "door.h"
#include "log.h"
#include "validate.h"

cc_status_t cc_send(cc_comm_t *comm, const void *buf, size_t count, cc_dtype_t dtype, int peer,
                    const cc_op_opts_t *opts, cc_work_t **work)
{
    static const char fn[] = "cc_send";
    size_t bytes;
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_opts(opts, fn));
    CC_CHECK(cc__v_count(count, dtype, 1, &bytes, fn));
    CC_CHECK(cc__v_buf(buf, count, "buf", fn));
    CC_CHECK(cc__v_rank(comm, peer, "peer", fn));
    cc__op_t op;
    cc__op_prepare(&op, comm, CC_OP_SEND);
    op.info.peer = peer;
    op.info.tag = opts ? opts->tag : 0;
    op.info.dtype = dtype;
    op.info.in_count = count;
    op.info.bytes = bytes;
    op.info.sendbuf = buf;
    return cc__door_issue(&op, opts, work);
}

cc_status_t cc_recv(cc_comm_t *comm, void *buf, size_t count, cc_dtype_t dtype, int peer,
                    const cc_op_opts_t *opts, cc_work_t **work)
{
    static const char fn[] = "cc_recv";
    size_t bytes;
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_opts(opts, fn));
    CC_CHECK(cc__v_count(count, dtype, 1, &bytes, fn));
    CC_CHECK(cc__v_buf(buf, count, "buf", fn));
    CC_CHECK(cc__v_rank(comm, peer, "peer", fn));
    cc__op_t op;
    cc__op_prepare(&op, comm, CC_OP_RECV);
    op.info.peer = peer;
    op.info.tag = opts ? opts->tag : 0;
    op.info.dtype = dtype;
    op.info.out_count = count;
    op.info.bytes = bytes;
    op.info.recvbuf = buf;
    return cc__door_issue(&op, opts, work);
}

cc_status_t cc_barrier(cc_comm_t *comm, const cc_op_opts_t *opts, cc_work_t **work)
{
    static const char fn[] = "cc_barrier";
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_opts(opts, fn));
    cc__op_t op;
    cc__op_prepare(&op, comm, CC_OP_BARRIER);
    return cc__door_issue(&op, opts, work);
}

cc_status_t cc_allreduce(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                         cc_dtype_t dtype, cc_redop_t redop, const cc_op_opts_t *opts,
                         cc_work_t **work)
{
    static const char fn[] = "cc_allreduce";
    size_t bytes;
    CC_CHECK(cc__v_comm(comm, fn));
    CC_CHECK(cc__v_opts(opts, fn));
    CC_CHECK(cc__v_count(count, dtype, 1, &bytes, fn));
    CC_CHECK(cc__v_redop(dtype, redop, opts, fn));
    CC_CHECK(cc__v_buf(sendbuf, count, "sendbuf", fn));
    CC_CHECK(cc__v_buf(recvbuf, count, "recvbuf", fn));
    CC_CHECK(cc__v_overlap(sendbuf, bytes, recvbuf, bytes, 1, fn));
    cc__op_t op;
    cc__op_prepare(&op, comm, CC_OP_ALLREDUCE);
    op.info.dtype = dtype;
    op.info.redop = redop;
    op.info.in_count = op.info.out_count = count;
    op.info.bytes = bytes;
    op.info.sendbuf = sendbuf;
    op.info.recvbuf = recvbuf;
    op.premul_scalar = opts ? opts->premul_scalar : 1.0;
    return cc__door_issue(&op, opts, work);
}
