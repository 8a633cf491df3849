/*
 * store_server_int.h - the store server's internals, shared by its event loop
 * (store_server.c) and its request handlers (store_server_ops.c).
 *
 * One thread owns everything here; nothing is locked. A connection handles
 * one request at a time: while a request is parked (waiting for keys) or a
 * reply is still being written, the server reads nothing more from it, so a
 * client can never make the server buffer more than one frame for it.
 */
#ifndef CC_BOOTSTRAP_STORE_SERVER_INT_H
#define CC_BOOTSTRAP_STORE_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "bootstrap/store_proto.h"
#include "bootstrap/store_table.h"

/* A key a parked request waits for; p points into the connection's input buffer. */
struct srv_keyref {
    const uint8_t *p;
    uint32_t len;
    uint64_t hash;
};

/* A get, multi_get or wait that found keys missing and waits for them. */
struct srv_park {
    uint8_t op;           /* CC__STORE_OP_GET, _MULTI_GET or _WAIT; 0 = not parked */
    uint64_t deadline_ns; /* monotonic; answered with CC_ERR_TIMEOUT then */
    uint32_t nkeys;
    uint32_t next;           /* keys[0..next) were present when last looked at */
    struct srv_keyref *keys; /* malloc'd, nkeys entries */
};

struct srv_conn {
    int fd;
    int dead;   /* closed; freed at the end of the loop iteration */
    int authed; /* the handshake succeeded; requests are accepted */
    int own;    /* an auxiliary connection of this very process (its nonce says so) */
    char addr[64];
    uint8_t nonce[CC__STORE_NONCE]; /* the server's nonce for this connection */
    uint64_t accept_ns, auth_deadline_ns;
    /* input: exactly one frame, read header first, then its payload */
    uint8_t *in;
    uint32_t in_cap, in_len;
    int have_hdr; /* hdr is decoded and checked */
    struct cc__store_hdr hdr;
    /* output: at most one reply, written as the socket accepts it */
    uint8_t *out;
    size_t out_len, out_off;
    uint32_t events; /* epoll interest currently registered */
    struct srv_park park;
    uint8_t *will;       /* "last will": key then value, set when the connection closes
                            (malloc'd; NULL = none; a later will replaces it) */
    uint32_t will_klen, will_vlen;
    struct srv_conn *prev, *next;   /* all live connections */
    struct srv_conn *pprev, *pnext; /* parked connections */
    struct srv_conn *uprev, *unext; /* unauthenticated connections, oldest first */
};

struct cc__store_server {
    int lfd, wakefd, epfd; /* listening socket, stop eventfd, epoll */
    int port;
    char name[300]; /* "host:port" for logs */
    char *key;      /* job key, "" = authentication off */
    pthread_t thread;
    struct cc__kv kv;
    struct srv_conn *conns, *parked, *graveyard;
    struct srv_conn *unauth_head, *unauth_tail; /* oldest and newest not yet authenticated */
    uint64_t warn_window_ns;  /* start of the current window of warnings about refused clients */
    unsigned warn_count;      /* such warnings logged in it */
    uint64_t warn_suppressed; /* and not logged */
    size_t nconns, nunauth, nown;
    _Atomic size_t clients; /* nconns, for other threads (cc__store_server_clients) */
    _Atomic size_t peers;   /* nconns - nown, for other threads (cc__store_server_peers) */
    uint64_t accept_resume_ns; /* accepting is paused (fd limit) until then; 0 = not paused */
    int wills_fired; /* a closed connection's will was written: parked requests look again */
};

/* --- store_server.c, for the handlers --- */

/* Queue the finished frame in `w` as c's reply (takes the buffer) and start writing it. */
int cc__srv_send(struct cc__store_server *s, struct srv_conn *c, struct cc__store_wr *w);
/* The current request is answered: forget its frame and read the next one. */
void cc__srv_frame_done(struct cc__store_server *s, struct srv_conn *c);
/* Count a connection in (+1) or out (-1) of nown, keeping the atomic counts current. */
void cc__srv_count(struct cc__store_server *s, int own_delta);
/* c proved the key: it leaves the unauthenticated connections. */
void cc__srv_authed(struct cc__store_server *s, struct srv_conn *c);
/*
 * May a warning about c be logged? Always for an authenticated client; for
 * the others (wrong key, garbage, too slow) at most a few per window, the
 * rest counted and summed up once the window ends: one client retrying in a
 * loop must not fill the log.
 */
int cc__srv_warn_ok(struct cc__store_server *s, const struct srv_conn *c);
/* Close a connection (deferred free; safe while iterating). */
void cc__srv_kill(struct cc__store_server *s, struct srv_conn *c);

/* --- store_server_ops.c --- */

/* Handle the complete frame in c->in. Returns -1 to close the connection. */
int cc__srv_request(struct cc__store_server *s, struct srv_conn *c);
/* Answer parked requests whose deadline passed. */
void cc__srv_expire(struct cc__store_server *s, uint64_t now_ns);
/* Forget c's parked request (the connection is going away). */
void cc__srv_unpark(struct cc__store_server *s, struct srv_conn *c);
/* c closes: write its will, if it left one (no reply, no wake: see cc__srv_wake_all). */
void cc__srv_will_fire(struct cc__store_server *s, struct srv_conn *c);
/* Wills were written: answer the parked requests whose keys are all present now. */
void cc__srv_wake_all(struct cc__store_server *s);

#endif /* CC_BOOTSTRAP_STORE_SERVER_INT_H */
