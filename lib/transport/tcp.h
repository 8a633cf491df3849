/*
 * tcp.h - the TCP transport's wire format and state (docs/transports.md).
 *
 * One connection per pair, made by the higher rank to the lower one's
 * listener and opened by a handshake: the connector sends a hello naming the
 * communicator, both ranks and the nonce the listener published in the
 * allgather (so a stranger that reaches the port is turned away), and the
 * listener answers with an ack. After that each direction is a stream of
 * frames, a 24-byte header and `len` payload bytes, written in pieces of at
 * most CCOMM_TCP_CHUNK_SIZE from the caller's buffer. Messages of at least
 * CCOMM_TCP_RNDV_THRESHOLD bytes wait for their receive (RTS, CTS, DATA), so
 * they land in place and never need a copy held aside.
 */
#ifndef CC_TRANSPORT_TCP_H
#define CC_TRANSPORT_TCP_H

#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "transport/transport.h"

#define CC__TCP_HELLO_MAGIC 0x6f6c6c6548504354ull /* "TCPHello" */
#define CC__TCP_ACK_MAGIC   0x4b434154u           /* "TACK" */
#define CC__TCP_FRAME_MAGIC 0x4346u               /* "FC" */
#define CC__TCP_VERSION     1u
#define CC__TCP_STAGE       (64u * 1024u) /* receive staging buffer per peer */
#define CC__TCP_DATA_PEEK   (4u * 1024u)  /* a read while a DATA is awaited (tcp_msg.c) */
/* A peer's socket is left unread while this many bytes of its messages wait unmatched
 * (tcp_msg.c, may_read): a sender that runs ahead then waits on its socket. */
#define CC__TCP_HELD_MAX    (4u << 20)

struct cc__tcp_hello {
    uint64_t magic; /* CC__TCP_HELLO_MAGIC */
    uint64_t comm_id;
    uint64_t token;   /* the listener's nonce, from its blob */
    uint32_t version; /* CC__TCP_VERSION */
    int32_t from;     /* connecting rank */
    int32_t to;       /* listening rank */
    int32_t size;     /* communicator size */
};

struct cc__tcp_ack {
    uint32_t magic; /* CC__TCP_ACK_MAGIC */
    int32_t status; /* CC_OK */
};

struct cc__tcp_frame {
    uint16_t magic;  /* CC__TCP_FRAME_MAGIC */
    uint16_t type;   /* CC__TCP_* */
    uint32_t tag;    /* MSG, RTS: the message's tag; CTS: the verdict */
    uint64_t len;    /* MSG, DATA: payload bytes that follow; RTS: the message's length */
    uint64_t cookie; /* RTS, CTS, DATA: which rendezvous */
};

/* Frame types. */
enum {
    CC__TCP_MSG = 1, /* a whole message (eager) */
    CC__TCP_RTS,     /* a large message waits at the sender for its receive */
    CC__TCP_CTS,     /* receiver -> sender: verdict GO (send DATA) or DROP (length mismatch) */
    CC__TCP_DATA,    /* the payload of a rendezvous, after GO */
};
enum { CC__TCP_GO = 1, CC__TCP_DROP };

/* What a send puts on the wire next (its priv[1]). */
enum { CC__TCP_MODE_MSG = 0, CC__TCP_MODE_RTS, CC__TCP_MODE_DATA };

struct cc__tcp_peer {
    struct cc__peer *p;
    int fd;
    char where[64]; /* "ip:port" of the peer's listener, for logs */
    /* Sending: verdicts first, then a FIFO of requests; one frame at a time on the wire. */
    cc__req_t *sq_head, *sq_tail;
    struct cc__tcp_frame tx_hdr; /* the header of the frame on the wire */
    size_t tx_off;               /* bytes of that frame (header + payload) written */
    int tx_ctrl;                 /* the frame on the wire is a verdict, not sq_head */
    int want_out;                /* EPOLLOUT is armed */
    int rx_paused;               /* EPOLLIN is not: the socket is left unread (tcp_msg.c) */
    int rx_hup;                  /* epoll said the peer hung up: read to the end */
    struct cc__verdicts cts;     /* verdicts to send, oldest first */
    cc__req_t *rndv_tx;          /* sends whose RTS went out, awaiting CTS (priv[0]: cookie) */
    cc__req_t *rndv_rx;          /* receives that said GO, awaiting DATA (priv[0]: cookie) */
    uint64_t next_cookie;
    /* Receiving: staged bytes, then the frame being filled. */
    char *stage;
    size_t st_beg, st_end; /* valid staged bytes */
    int in_body;           /* a frame's payload is arriving */
    int drained;           /* the last recv() came back short: the socket is empty */
    uint64_t rx_len, rx_left;
    cc__req_t *rx_req; /* target: a matched receive, */
    cc__msg_t *rx_msg; /* or a held message, or neither (discard) */
};

struct cc__tcp_state {
    int lfd; /* listener; closed after creation */
    int epfd;
    uint64_t chunk;            /* CCOMM_TCP_CHUNK_SIZE */
    uint64_t rndv;             /* CCOMM_TCP_RNDV_THRESHOLD (0: never) */
    struct epoll_event ev[64]; /* events a sleep returned, for the next progress */
    int nev;
    unsigned idle_polls; /* direct-read passes that moved nothing (tcp_msg.c) */
    struct cc__tcp_peer *tp;
    int ntp;
};

static inline struct cc__tcp_state *cc__tcp(struct cc__net *net)
{
    return (struct cc__tcp_state *)net->tp_state[CC__TP_TCP];
}

/* tcp.c */
void cc__tcp_sockopts(int fd);
int cc__tcp_sockaddr(const char *ip, int port, struct sockaddr_storage *ss, socklen_t *len);
/* A non-blocking listener on numeric address `ip`, the port chosen by the kernel, with
 * cc__tcp_sockopts (accepted sockets inherit them). Returns its fd and sets *port and
 * *family; -2 when ip is not a numeric IPv4/IPv6 address; -1 with errno on a socket error. */
int cc__tcp_listen(const char *ip, int backlog, uint16_t *port, int *family);
void cc__tcp_drop(struct cc__net *net, struct cc__tcp_peer *tp, const char *cause, cc__req_t *req);
void cc__tcp_want_out(struct cc__net *net, struct cc__tcp_peer *tp, int on);
void cc__tcp_pause_rx(struct cc__net *net, struct cc__tcp_peer *tp, int on);
/* tcp_rndv.c */
void cc__tcp_irecv(struct cc__net *net, struct cc__peer *p, cc__req_t *req, cc__msg_t *m);
int cc__tcp_rndv_frame(struct cc__net *net, struct cc__tcp_peer *tp, const struct cc__tcp_frame *h);
void cc__tcp_verdict(struct cc__net *net, struct cc__tcp_peer *tp, uint64_t cookie,
                     uint32_t verdict);
/* tcp_msg.c */
int cc__tcp_tx(struct cc__net *net, struct cc__tcp_peer *tp);
void cc__tcp_start_body(struct cc__net *net, struct cc__tcp_peer *tp, uint64_t len);
cc_status_t cc__tcp_isend(struct cc__net *net, struct cc__peer *p, cc__req_t *req);
int cc__tcp_progress(struct cc__net *net);
void cc__tcp_sleep(struct cc__net *net, uint64_t timeout_ns);
int cc__tcp_cancel(struct cc__net *net, struct cc__peer *p, cc__req_t *req, cc_status_t st);
void cc__tcp_fail(struct cc__net *net, struct cc__peer *p, cc_status_t st);
/* tcp_connect.c */
cc_status_t cc__tcp_mesh(struct cc__net *net, struct cc__tcp_state *ts);

#endif /* CC_TRANSPORT_TCP_H */
