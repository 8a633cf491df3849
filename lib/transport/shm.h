/*
 * shm.h - the shared-memory transport's layout and state (docs/transports.md).
 *
 * Every rank owns one mailbox segment, <shm_dir>/ccomm-<job>-<comm>-r<rank>-<pid>,
 * holding one single-producer/single-consumer ring per local peer that
 * sends to it. The owner consumes; each peer produces into its own ring.
 * One mailbox per rank (rather than one segment per pair) gives the owner a
 * single futex word to sleep on, whatever peer it waits for.
 *
 *   mailbox:  [header page: cc__shm_mbox][slot 0][slot 1]...
 *   slot:     [control page: cc__shm_ctl][ring data: ring_size bytes]
 *
 * A ring is a byte stream of records at 64-byte aligned positions. A record
 * is a 32-byte header and a body; the header's seq is written last and
 * equals the record's position + 1 once the record is complete, so the
 * consumer polls one word, in the line that also holds a small message's
 * payload. Before publishing a record the producer zeroes the seq of the
 * next position, so stale bytes from the previous lap never look valid.
 */
#ifndef CC_TRANSPORT_SHM_H
#define CC_TRANSPORT_SHM_H

#include <stdatomic.h>
#include <stdint.h>

#include "transport/transport.h"

#define CC__SHM_MAGIC   0x786f626d63636363ull /* "ccccmbox" */
#define CC__SHM_VERSION 1u
#define CC__SHM_LINE    64u
#define CC__SHM_PAGE    4096u
#define CC__SHM_REC_HDR 32u

/* The head of a mailbox. Static fields are written before any peer maps it. */
struct cc__shm_mbox {
    uint64_t magic;       /* CC__SHM_MAGIC */
    uint32_t version;     /* CC__SHM_VERSION */
    uint32_t nslots;      /* rings: one per other local rank */
    uint64_t ring_size;   /* bytes of ring data per slot, a power of two */
    uint64_t slot_stride; /* bytes from one slot to the next */
    uint64_t comm_id;
    int32_t owner_rank;
    int32_t owner_pid;
    char pad0[CC__SHM_LINE - 48];
    _Atomic uint32_t bell;     /* futex word the owner sleeps on; bumped to wake it */
    _Atomic uint32_t sleeping; /* the owner is (about to be) asleep on bell */
    char pad1[CC__SHM_LINE - 8];
    _Atomic uint32_t closed; /* nonzero once the owner aborted or destroyed its net */
    char pad2[CC__SHM_LINE - 4];
};

/* A ring's control lines; the consumer's and the producer's on separate lines. */
struct cc__shm_ctl {
    _Atomic uint64_t tail; /* consumer: bytes consumed (a position) */
    char pad0[CC__SHM_LINE - 8];
    _Atomic uint32_t tx_wait; /* producer: it waits for tail to move */
    char pad1[CC__SHM_LINE - 4];
};

/* A record header. Body: EAGER and DATA payload; RTS the sender's address. */
struct cc__shm_rec {
    _Atomic uint64_t seq; /* position + 1 once complete (written last, release) */
    uint32_t type;        /* CC__REC_* */
    uint32_t tag;         /* EAGER, RTS: the message's tag; FIN: the verdict */
    uint64_t len;         /* EAGER: payload bytes; RTS: message bytes; DATA: chunk bytes */
    uint64_t cookie;      /* RTS, FIN, DATA: which rendezvous */
};

enum {
    CC__REC_EAGER = 1, /* a whole small message */
    CC__REC_RTS,       /* rendezvous: "len bytes at address, for cookie" */
    CC__REC_FIN,       /* receiver -> sender: verdict on a rendezvous */
    CC__REC_DATA,      /* sender -> receiver: the next chunk of a rendezvous (after CTS) */
};

/* FIN verdicts. */
enum {
    CC__FIN_DONE = 1, /* the receiver read it (CMA): the send is complete */
    CC__FIN_CTS,      /* clear to send: stream it through the ring as DATA */
    CC__FIN_DROP,     /* the receiver does not want it (length mismatch): complete */
};

/* This rank's view of one local peer. */
struct cc__shm_peer {
    struct cc__peer *p;
    int pid;
    int pidfd;
    struct cc__shm_mbox *their; /* the peer's mailbox (mapped) */
    size_t their_len;
    /* Outbound ring (this rank -> peer), in the peer's mailbox. */
    struct cc__shm_ctl *tx_ctl;
    char *tx_ring;
    uint64_t tx_mask;
    uint64_t head;      /* next position to write */
    uint64_t tail_seen; /* the consumer's tail, last read */
    int tx_waiting;     /* tx_ctl->tx_wait is set */
    int rang;           /* records published since the last doorbell */
    /* Inbound ring (peer -> this rank), in this rank's mailbox. */
    struct cc__shm_ctl *rx_ctl;
    char *rx_ring;
    uint64_t rx_mask;
    uint64_t tail; /* next position to read */
    /* Requests. */
    cc__req_t *sq_head, *sq_tail; /* sends not yet (fully) written, oldest first */
    cc__req_t *rndv_tx;           /* sends whose RTS went out, awaiting FIN (priv[0]: cookie) */
    cc__req_t *rndv_rx;           /* receives fed by DATA records (priv[0]: cookie) */
    uint64_t next_cookie;
    struct cc__verdicts fins; /* verdicts waiting for ring space */
    int cma_refused;          /* process_vm_readv was refused: stream instead */
};

/* The transport's net-wide state. */
struct cc__shm_state {
    struct cc__shm_mbox *mine;
    size_t mine_len;
    char path[512];          /* mailbox file; empty once unlinked */
    int nlocal;              /* ranks on this host, this one included */
    int my_local;            /* this rank's index among them */
    int *local;              /* local index -> rank */
    struct cc__shm_peer *sp; /* nlocal - 1 peers */
    int nsp;
    uint64_t ring_size;
};

/* shm_ring.c: the record protocol. */
cc_status_t cc__shm_isend(struct cc__net *net, struct cc__peer *p, cc__req_t *req);
void cc__shm_irecv(struct cc__net *net, struct cc__peer *p, cc__req_t *req, cc__msg_t *m);
int cc__shm_progress(struct cc__net *net);
int cc__shm_drain(struct cc__net *net, struct cc__shm_peer *sp);
int cc__shm_cancel(struct cc__net *net, struct cc__peer *p, cc__req_t *req, cc_status_t st);
void cc__shm_fail(struct cc__net *net, struct cc__peer *p, cc_status_t st);
/* shm.c: waking a mailbox's owner when it sleeps. */
void cc__shm_ring_bell(struct cc__shm_mbox *mb, int always);
/* Is there anything for a sleeper to do? */
int cc__shm_ready(struct cc__net *net);
/* The shm peer record of `peer`, or NULL when it is not reached over shared memory. */
struct cc__shm_peer *cc__shm_peer_of(struct cc__net *net, int peer);
/* CC_OK while the shm peer lives and keeps its side open (others: CC_OK); else the
 * loss, recorded in the net as the transport's own (what it sent stays deliverable),
 * *cause (may be NULL) a static phrase ("died", "closed its side ..."). */
cc_status_t cc__shm_peer_check(struct cc__net *net, int peer, const char **cause);
/* One single copy between this process's `local` and address `remote` of process `pid`
 * (process_vm_writev when `write`, else process_vm_readv), in as many calls as the kernel
 * needs: each may stop short at a fault. 0, or an errno (EFAULT where a call copied nothing;
 * ESRCH: the process is gone). *done, when not NULL, gets the bytes copied. */
int cc__shm_cma(int pid, int write, void *local, uint64_t remote, size_t len, size_t *done);

/*
 * shm_file.c: the files behind mailboxes and arenas.
 * create: `path` for this user alone (O_CREAT|O_EXCL|O_NOFOLLOW, 0600; a
 * stale file of that name, a crashed earlier run's with this pid, is
 * replaced once, logged as a stale `what`), its len bytes reserved now
 * (ftruncate, posix_fallocate) and mapped shared. CC_OK with *map; else
 * CC_ERR_SYSTEM with *err (errno) and *opened (whether the file was made;
 * if so it is removed again). Callers say what failed: they know the advice.
 */
cc_status_t cc__shm_file_create(const char *path, size_t len, const char *what, void **map,
                                int *err, int *opened);
/*
 * map: a peer's file, only if it is this user's regular file (no symlink)
 * of min..max bytes (fstat's size is untrusted). CC_OK with *map, *len;
 * CC_ERR_PROTOCOL with `why` filled (not this user's, wrong size);
 * CC_ERR_SYSTEM with *err (errno of open, fstat or mmap).
 */
cc_status_t cc__shm_file_map(const char *path, size_t min, size_t max, void **map, size_t *len,
                             int *err, char *why, size_t whylen);

static inline struct cc__shm_state *cc__shm(struct cc__net *net)
{
    return (struct cc__shm_state *)net->tp_state[CC__TP_SHM];
}

#endif /* CC_TRANSPORT_SHM_H */
