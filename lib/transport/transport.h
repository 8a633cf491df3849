/*
 * transport.h - what net.c shares with the transports (self, shm, tcp).
 *
 * A net (struct cc__net) is the mesh of one communicator: one struct
 * cc__peer per rank, each reached by exactly one transport. net.c owns the
 * parts every transport needs the same way: the posted receives and the
 * messages held aside (tag matching), request completion, failure of a
 * peer, abort, and the wait loop. A transport is a table of function
 * pointers (NCCL's ncclTransport): it moves the bytes of ordered messages
 * between two ranks and calls back into net.c when a message header arrives
 * (cc__net_match / cc__net_hold) and when a request finishes
 * (cc__req_finish).
 *
 * Everything here runs on the net's owner thread, except the fields marked
 * "any thread" which cc__net_abort touches.
 */
#ifndef CC_TRANSPORT_TRANSPORT_H
#define CC_TRANSPORT_TRANSPORT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h" /* cc__cpu_relax */
#include "transport/net.h"

/* Transports, by index into the net's tables. */
enum { CC__TP_SELF = 0, CC__TP_SHM, CC__TP_TCP, CC__TP_COUNT };

/* Rendezvous verdicts waiting for their turn on the wire, oldest first (shm, tcp). */
struct cc__verdicts {
    struct cc__verdict {
        uint64_t cookie;
        uint32_t verdict;
    } * v;
    int n, cap;
};

/* Request kinds (cc__req_t.kind). */
enum { CC__REQ_NONE = 0, CC__REQ_SEND = 1, CC__REQ_RECV = 2 };

/*
 * The blob every rank publishes through the config's allgather. Fixed size
 * and layout on every rank (same build); validated on arrival.
 */
#define CC__PEER_CPU_WORDS 16 /* 1024 CPUs, as glibc's cpu_set_t */

typedef struct cc__peer_info {
    uint32_t magic;   /* CC__PEER_INFO_MAGIC */
    uint32_t version; /* CC__PEER_INFO_VERSION */
    int32_t rank;
    int32_t size;
    int32_t pid;
    int32_t status; /* this rank's setup status so far (CC_OK or an error) */
    uint64_t comm_id;
    uint64_t nonce;   /* random; a TCP peer proves it saw this blob */
    uint64_t netns;   /* inode of /proc/self/ns/net */
    uint64_t pidns;   /* inode of /proc/self/ns/pid (pids and CMA need the same one) */
    uint32_t flags;   /* CC__INFO_* */
    uint16_t port;    /* TCP listen port, host order; 0 = no listener */
    uint16_t family;  /* AF_INET or AF_INET6 */
    char addr[48];    /* numeric IP of the listener */
    char boot_id[40]; /* /proc/sys/kernel/random/boot_id */
    char host[64];    /* gethostname() */
    /* CCOMM_SHM_DIR's device and inode (0: cannot stat it). Ranks of one host
     * whose directories differ (a private /dev/shm per container) cannot map
     * each other's segments: they talk over TCP. */
    uint64_t shm_dev;
    uint64_t shm_ino;
    /* The CPUs this rank may run on (its affinity when the net was built), CPU c in bit
     * c % 64 of word c / 64; CC__INFO_CPUS_UNKNOWN when it could not be read. Whether the
     * ranks of a host each have a CPU of their own (net.c, pick_spin) follows from these. */
    uint64_t cpus[CC__PEER_CPU_WORDS];
} cc__peer_info_t;

#define CC__PEER_INFO_MAGIC   0x4343504eu /* "CCPN" */
#define CC__PEER_INFO_VERSION 3u
#define CC__INFO_FORCE_TCP    0x1u /* this rank's transport is "tcp" */
#define CC__INFO_CPUS_UNKNOWN 0x2u /* cpus[] could not be read (more than 1024 CPUs) */
#define CC__SPARE_CLASSES     15   /* held-message buffers kept, 64 B to 1 MiB (match.c) */

/* A message held aside: it arrived before a receive matched it. */
typedef struct cc__msg {
    struct cc__msg *next;
    uint32_t tag;
    int kind;         /* CC__MSG_* */
    size_t len;       /* the message's length */
    size_t got;       /* BUFFERED: bytes arrived so far */
    int complete;     /* BUFFERED: all bytes are in data */
    int discard;      /* nobody wants it any more: free it once complete */
    cc__req_t *bound; /* a receive matched it before it was complete */
    char *data;       /* BUFFERED: the payload (len bytes) */
    size_t cap;       /* BUFFERED: bytes allocated at data */
    uint64_t arg[3];  /* the transport's: rendezvous cookie, address, ... */
    cc__req_t *sreq;  /* SELF_REF: the send that holds the payload */
} cc__msg_t;

enum {
    CC__MSG_BUFFERED = 1, /* payload copied into data as it arrives */
    CC__MSG_RNDV,         /* payload still at the sender (shm rendezvous) */
    CC__MSG_SELF_REF,     /* a send to self, payload still in sreq->buf */
};

/* One rank as seen from this one. */
struct cc__peer {
    int rank;
    int tp;                           /* CC__TP_* that reaches it */
    void *priv;                       /* the transport's per-peer state */
    cc__req_t *rq_head, *rq_tail;     /* posted receives not yet matched, oldest first */
    cc__msg_t *held_head, *held_tail; /* messages not yet matched, oldest first */
    size_t held_bytes;                /* their copies' payload bytes (BUFFERED ones) */
    int pending;                      /* requests to or from it not yet finished */
    cc_status_t lost;                 /* 0, or why every request with it fails */
    int lost_logged;                  /* the loss was logged (once) */
    char lost_cause[96];              /* "died", "closed the connection", ... */
};

struct cc__net;

typedef struct cc__transport {
    const char *name;
    /* Create-time, before the blob exchange: fill this rank's part (listen). */
    cc_status_t (*setup)(struct cc__net *net, cc__peer_info_t *mine);
    /*
     * Create-time, after the exchange, in phases 0, 1, 2 separated by a
     * status allgather (so a phase may rely on every rank having finished the
     * previous one, e.g. "every segment exists" before mapping it).
     */
    cc_status_t (*connect)(struct cc__net *net, int phase);
    /* Queue a send to p (net.c checked the arguments); may finish it at once. */
    cc_status_t (*isend)(struct cc__net *net, struct cc__peer *p, cc__req_t *req);
    /* Receive the held message m (RNDV or SELF_REF kinds) into req. */
    void (*irecv)(struct cc__net *net, struct cc__peer *p, cc__req_t *req, cc__msg_t *m);
    /* Move bytes once, without blocking; returns how many things happened. */
    int (*progress)(struct cc__net *net);
    /* Block until something may have happened or timeout_ns passed. */
    void (*sleep)(struct cc__net *net, uint64_t timeout_ns);
    /* Liveness: mark peers that died or closed their side (cc__net_peer_lost). */
    void (*check)(struct cc__net *net);
    /* Withdraw a send the wire has not seen yet: 1 done, 0 too late. */
    int (*cancel)(struct cc__net *net, struct cc__peer *p, cc__req_t *req, cc_status_t st);
    /* Finish with `st` every request of p that the transport holds. */
    void (*fail)(struct cc__net *net, struct cc__peer *p, cc_status_t st);
    /* Any thread: tell the peers this rank is gone, wake the local waiter. */
    void (*abort)(struct cc__net *net);
    /* Release everything (the net is being destroyed). */
    void (*close)(struct cc__net *net);
    /* "pid 1234" or "10.0.0.4:29500", for log lines. */
    void (*describe)(struct cc__net *net, struct cc__peer *p, char *buf, size_t len);
} cc__transport_t;

extern const cc__transport_t cc__transport_self;
extern const cc__transport_t cc__transport_shm;
extern const cc__transport_t cc__transport_tcp;

struct cc__net {
    int rank;
    int size;
    uint64_t comm_id;
    char job[48]; /* job id made safe for file names */
    int64_t connect_timeout_ms;
    char listen_addr[64];   /* numeric IP the TCP listener binds (creation only) */
    uint64_t cma_threshold; /* CCOMM_SHM_CMA_THRESHOLD (0 = off) */
    struct cc__peer *peers; /* size entries, by rank */
    cc__peer_info_t *info;  /* every rank's blob, by rank */
    const cc__transport_t *tps[CC__TP_COUNT];
    void *tp_state[CC__TP_COUNT]; /* each transport's net-wide state */
    int tp_peers[CC__TP_COUNT];   /* peers reached by each transport */
    int tp_pending[CC__TP_COUNT]; /* unfinished requests by transport */
    uint64_t events;              /* grows whenever a request finishes or moves */
    cc__msg_t *spare[CC__SPARE_CLASSES]; /* freed held messages kept for reuse, by size
                                          * class (match.c: 64 B << k) */
    uint64_t spare_used[CC__SPARE_CLASSES]; /* spare_tick when a class was last wanted */
    uint64_t spare_tick;
    size_t spare_bytes;           /* their buffers, in bytes */
    unsigned spare_count;         /* and how many */
    uint64_t next_check_ns;       /* when the wait loop next checks liveness */
    uint64_t spin_ns;             /* spin stage: CCOMM_WAIT_SPIN_US, 0 when oversubscribed */
    uint64_t tcp_spin_ns;         /* the same with only TCP pending: CCOMM_TCP_SPIN_US */
    int shares_cpus;              /* more ranks on this host than CPUs it may run on */
    uint64_t tcp_yield_ns;        /* yield stage with only TCP pending: CCOMM_TCP_YIELD_US, 0
                                   * unless the host's ranks share CPUs */
    _Atomic int abort_reason;     /* any thread: 0, or the reason given to abort */
    int abort_done;               /* owner: requests were failed with the reason */
    int wake_fd;                  /* eventfd: abort wakes a waiter sleeping in poll */
    int first_fail_kind;          /* kind and tag of the first request failed since reset, */
    uint32_t first_fail_tag;      /* so a loss is logged with what this rank waited for */
    int stuck_peer;               /* owner: whom a timed-out or lost wait awaited; -1 none */
};

/* ---- net.c / match.c services for the transports ---------------------------------------- */

/* The oldest posted receive from p with this tag, taken off the queue (or NULL). */
cc__req_t *cc__net_match(struct cc__net *net, struct cc__peer *p, uint32_t tag);
/* Hold a new message aside; BUFFERED allocates len bytes. NULL: out of memory (logged). */
cc__msg_t *cc__net_hold(struct cc__net *net, struct cc__peer *p, uint32_t tag, size_t len,
                        int kind);
/* A BUFFERED message got its last byte: deliver it if a receive is bound to it. */
void cc__net_msg_done(struct cc__net *net, struct cc__peer *p, cc__msg_t *m);
/* Finish a request with st (CC_OK or an error). */
void cc__req_finish(struct cc__net *net, cc__req_t *req, cc_status_t st);
/* A matched message whose length differs from the receive: log both, fail req. */
void cc__net_mismatch(struct cc__net *net, cc__req_t *req, size_t msg_len);
/*
 * p is gone: fail everything with it, `req` (the request that found out, may
 * be NULL and is not queued anywhere) first; logged once with the cause and
 * what this rank waited for.
 */
void cc__net_peer_lost(struct cc__net *net, struct cc__peer *p, const char *cause, cc__req_t *req);
/* Has the owner thread seen an abort? Fails everything on the first sight. */
int cc__net_aborted(struct cc__net *net);
/* Release a held message (its buffer may be kept for the next one). */
void cc__msg_free(struct cc__net *net, cc__msg_t *m);
/* Queue a verdict (allocation: rare, small); -1 when out of memory. */
int cc__verdicts_push(struct cc__verdicts *q, uint64_t cookie, uint32_t verdict);
/* Forget the k oldest (they were sent). */
void cc__verdicts_pop(struct cc__verdicts *q, int k);
/* Unlink the request whose priv[0] is `cookie` from a rendezvous list (or NULL). */
cc__req_t *cc__req_take_cookie(cc__req_t **list, uint64_t cookie);
/* Free the kept buffers (destroy). */
void cc__msg_drop_spares(struct cc__net *net);

/* CCOMM_TCP_RNDV_THRESHOLD: 0 with *bytes the size; 1 for auto (tcp.c picks the size once the
 * ranks per host are known); -1 for a value that is neither. */
int cc__net_rndv_setting(uint64_t *bytes);
/* Take the oldest held message with this tag off p's queue (or NULL). */
cc__msg_t *cc__net_take_held(struct cc__peer *p, uint32_t tag);
/* A request posted to a peer already lost: fail it (logging the loss once). */
cc_status_t cc__net_post_lost(struct cc__net *net, struct cc__peer *p, cc__req_t *req);

/* ---- peer.c ----------------------------------------------------------------------------- */

/* Fill the host identity, pid, namespaces and nonce of a blob. */
cc_status_t cc__peer_identity(cc__peer_info_t *info);
/* Same host as far as shared memory is concerned (hostname, boot, netns, pidns). */
int cc__peer_same_host(const cc__peer_info_t *a, const cc__peer_info_t *b);
/* Whether the ranks of self's host in info[0..n) cannot each have a CPU of their own, from
 * their affinity masks; `extra` more ranks of the host are outside info[] (masks unknown).
 * 1 or 0, *ncpu the CPUs among them; -1 when a mask could not be read. */
int cc__peer_shares_cpus(const cc__peer_info_t *info, int n, int self, int extra, int *ncpu);
/* The CPUs in a rank's mask; -1 when it could not be read. */
int cc__peer_cpu_count(const cc__peer_info_t *info);
/* Same CCOMM_SHM_DIR (device and inode): each can map the other's segments. */
int cc__peer_same_shm(const cc__peer_info_t *a, const cc__peer_info_t *b);
/* pidfd for a peer process (-1 when the kernel has none; logged at info). */
int cc__peer_pidfd(int pid);
/* 1 when the process behind pidfd (or pid, when pidfd < 0) has exited (zombies too). */
int cc__peer_dead(int pidfd, int pid);
/* futex helpers on a shared (not process-private) word. */
void cc__futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns);
void cc__futex_wake(_Atomic uint32_t *word);

/*
 * The full barrier of the sleep/wake handshakes (store; barrier; load on both
 * sides). TSan does not model fences; under it a seq_cst read-modify-write
 * stands in, which is also a full barrier on x86 and ARM. Data itself is
 * always published with release/acquire pairs, which TSan does see.
 */
#if defined(__SANITIZE_THREAD__)
extern _Atomic int cc__fence_word;
static inline void cc__fence(void)
{
    atomic_fetch_add(&cc__fence_word, 0);
}
#else
static inline void cc__fence(void)
{
    atomic_thread_fence(memory_order_seq_cst);
}
#endif

/*
 * The one wait policy of the transport (wait.c's message waits and the
 * arena's counter waits, arena_sync.c): poll while spinning for spin_ns of
 * idleness (cc__cpu_relax between polls; no spin at all when this host has
 * more ranks than CPUs: a spinner would hold the core the awaited rank
 * needs), then poll and sched_yield for yield_ns more, then sleep on a
 * futex (cc__bell_sleep) or epoll.
 */
#define CC__YIELD_NS 1000000ull /* the yield stage: 1 ms */
enum { CC__WAIT_SPIN, CC__WAIT_YIELD, CC__WAIT_SLEEP };
static inline int cc__wait_stage(uint64_t idle_ns, uint64_t spin_ns, uint64_t yield_ns)
{
    if (idle_ns < spin_ns) return CC__WAIT_SPIN;
    return idle_ns - spin_ns < yield_ns ? CC__WAIT_YIELD : CC__WAIT_SLEEP;
}

/*
 * The sleep stage on a bell (a shared futex word bumped by whoever wakes
 * its owner): read the bell, announce the sleep in `sleeping` (which
 * wakers read after publishing, behind a full barrier), fence, and sleep
 * at most timeout_ns only if ready(ctx) still says there is nothing to do.
 * Either the waker sees the flag or the sleeper sees the news: no lost
 * wake-up. wait.c. Returns 1 when it slept and nobody rang the bell meanwhile
 * (the timeout ended the sleep), else 0.
 *
 * global_fence: the fence is membarrier's global barrier (the heavy side of an
 * asymmetric fence) instead of this thread's own. After it, every thread of
 * every process that registered (cc__membarrier_register) passed a full
 * barrier, so wakers may publish with plain release stores and still either
 * see the flag or have their store seen: no locked instruction on their hot
 * side. Only for sleepers whose wakers all registered.
 */
int cc__bell_sleep(_Atomic uint32_t *bell, _Atomic uint32_t *sleeping, int (*ready)(void *),
                   void *ctx, uint64_t timeout_ns, int global_fence);
/* Register this process for the barrier of a global_fence sleep: 1 when it works here (Linux
 * 4.16+, membarrier not filtered out), else 0. Once per process is enough; idempotent. */
int cc__membarrier_register(void);

#endif /* CC_TRANSPORT_TRANSPORT_H */
