/* p2p.c - send and receive: one message each, matched by tag in order per peer. */
#include "native/native.h"

cc_status_t cc__send_direct(cc__native_t *nc, cc__op_t *op)
{
    return cc__net_send(nc->net, op->info.peer, (uint32_t)op->info.tag, op->info.sendbuf,
                        op->info.bytes, op->deadline_ns);
}

cc_status_t cc__recv_direct(cc__native_t *nc, cc__op_t *op)
{
    return cc__net_recv(nc->net, op->info.peer, (uint32_t)op->info.tag, op->info.recvbuf,
                        op->info.bytes, op->deadline_ns);
}
