/*
 * store_proto.h - the bootstrap store's wire format, shared by the server and
 * the client (docs/bootstrap.md describes it for humans).
 *
 * A frame is a 16-byte header followed by `nfields` fields, each a 32-bit
 * length and that many bytes. Integers are big-endian. Every length read
 * from the wire is checked against the limits below before it is used.
 */
#ifndef CC_BOOTSTRAP_STORE_PROTO_H
#define CC_BOOTSTRAP_STORE_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "bootstrap/store.h"

#define CC__STORE_MAGIC    0x43435354u /* "CCST" */
#define CC__STORE_VERSION  1u
#define CC__STORE_HDR_SIZE 16u
#define CC__STORE_NONCE    32u /* bytes of each side's random nonce */
#define CC__STORE_MAC      32u /* HMAC-SHA256 */

/* Payload limits: before authentication a peer may only send tiny frames. */
#define CC__STORE_MAX_PREAUTH 256u
#define CC__STORE_MAX_REQUEST (36u << 20)  /* CAS with two full values, or MAX_KEYS keys */
#define CC__STORE_MAX_REPLY   (256u << 20) /* a multi_get answer */
#define CC__STORE_MAX_FIELDS  (CC__STORE_MAX_KEYS + 1u)

/*
 * A connection that has not authenticated within this time is dropped: an
 * honest client answers the server's hello at once. At most this many
 * connections may be unauthenticated at a time; beyond it the oldest one
 * (if it had CC__STORE_LOGIN_MIN_MS to answer) makes room for a new one, so
 * idle strangers cannot hold the server's descriptors.
 */
#define CC__STORE_AUTH_TIMEOUT_MS 5000
#define CC__STORE_MAX_UNAUTH      256
#define CC__STORE_LOGIN_MIN_MS    100

/* Requests (client -> server); a reply carries the request's opcode. */
enum cc__store_op {
    CC__STORE_OP_HELLO = 1,     /* server -> client: [nonce, mode] */
    CC__STORE_OP_AUTH = 2,      /* [nonce, mac] -> [server mac] */
    CC__STORE_OP_SET = 3,       /* [key, value] -> [] */
    CC__STORE_OP_GET = 4,       /* [timeout, key] -> [value] */
    CC__STORE_OP_MULTI_GET = 5, /* [timeout, key...] -> [value...] */
    CC__STORE_OP_WAIT = 6,      /* [timeout, key...] -> [] */
    CC__STORE_OP_CHECK = 7,     /* [key] -> [exists u8] */
    CC__STORE_OP_ADD = 8,       /* [key, delta i64] -> [result i64] */
    CC__STORE_OP_CAS = 9,       /* [key, flags u8, expected, desired] -> [swapped u8, (current)] */
    CC__STORE_OP_DELETE = 10,   /* [key] -> [deleted u8] */
    CC__STORE_OP_WILL = 11,     /* [key, value] -> []: set key = value when this connection
                                   closes (its process died or let go of the store) */
    CC__STORE_OP_END
};

#define CC__STORE_MODE_OPEN        0u /* HELLO mode: server has no job key */
#define CC__STORE_MODE_KEYED       1u /* HELLO mode: the client must prove the key */
#define CC__STORE_CAS_HAS_EXPECTED 0x1u

struct cc__store_hdr {
    uint32_t magic;
    uint8_t version;
    uint8_t op;
    int16_t status; /* cc_status_t in replies, 0 in requests */
    uint32_t nfields;
    uint32_t plen; /* payload bytes after the header */
};

/* --- byte order --- */
static inline void cc__put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline uint32_t cc__get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline void cc__put_u64(uint8_t *p, uint64_t v)
{
    cc__put_u32(p, (uint32_t)(v >> 32));
    cc__put_u32(p + 4, (uint32_t)v);
}
static inline uint64_t cc__get_u64(const uint8_t *p)
{
    return (uint64_t)cc__get_u32(p) << 32 | cc__get_u32(p + 4);
}

void cc__store_hdr_encode(const struct cc__store_hdr *h, uint8_t out[CC__STORE_HDR_SIZE]);
void cc__store_hdr_decode(const uint8_t in[CC__STORE_HDR_SIZE], struct cc__store_hdr *h);
/*
 * Check a decoded header against `max_payload`. Returns 0, or -1 with the
 * reason (naming the offending value) in `why`.
 */
int cc__store_hdr_check(const struct cc__store_hdr *h, uint32_t max_payload, char *why,
                        size_t whylen);

/* --- building a frame: header, then fields appended one by one --- */
struct cc__store_wr {
    uint8_t *buf; /* header + payload; malloc'd, owned by the writer until taken */
    size_t len, cap;
    uint32_t nfields;
    int failed; /* an allocation failed or a limit was passed; the frame is void */
};

void cc__store_wr_begin(struct cc__store_wr *w, uint8_t op, int16_t status);
void cc__store_wr_reserve(struct cc__store_wr *w, size_t payload_bytes);
/* One field made of a then b (b may be NULL): how a view's prefix joins a key. */
void cc__store_wr_field2(struct cc__store_wr *w, const void *a, size_t alen, const void *b,
                         size_t blen);
void cc__store_wr_field(struct cc__store_wr *w, const void *p, size_t len);
void cc__store_wr_u8(struct cc__store_wr *w, uint8_t v);
void cc__store_wr_u32(struct cc__store_wr *w, uint32_t v);
void cc__store_wr_u64(struct cc__store_wr *w, uint64_t v);
/* Write the header's counts; returns 0, or -1 if the frame failed. */
int cc__store_wr_end(struct cc__store_wr *w);
void cc__store_wr_free(struct cc__store_wr *w);

/* --- reading the fields of a received payload --- */
struct cc__store_field {
    const uint8_t *p;
    uint32_t len;
};

/*
 * Split a payload into exactly `nfields` fields (`out` has room for them).
 * Returns 0, or -1 with the reason in `why` if a length runs past the end or
 * bytes are left over.
 */
int cc__store_fields(const uint8_t *payload, uint32_t plen, uint32_t nfields,
                     struct cc__store_field *out, char *why, size_t whylen);

/* --- authentication --- */

/* HMAC-SHA256(key, a || b) for two nonces. Returns 0, or -1 if libcrypto failed. */
int cc__store_mac(const char *key, const uint8_t a[CC__STORE_NONCE],
                  const uint8_t b[CC__STORE_NONCE], uint8_t out[CC__STORE_MAC]);
/* Fill `out` with random bytes from libcrypto. Returns 0 or -1. */
int cc__store_random(uint8_t *out, size_t len);

/*
 * The AUTH nonce of an auxiliary connection (cc__store_connect_aux), tagged
 * so that a store server in this very process knows it (cc__store_server_peers
 * leaves such connections out). Returns 0 or -1 (no randomness).
 */
int cc__store_aux_nonce(uint8_t out[CC__STORE_NONCE]);
/* 1 if `nonce` was made by cc__store_aux_nonce in this process (this pid). */
int cc__store_nonce_is_aux(const uint8_t nonce[CC__STORE_NONCE]);

/* --- addresses and messages --- */

/* "1.2.3.4:5" or "[::1]:5" for a socket address. */
void cc__store_sockaddr_str(const struct sockaddr *sa, char *buf, size_t buflen);
/*
 * Split "host:port" or "[v6]:port" into its parts. Returns 0, or -1 (bad
 * form, empty host, port not in 1..65535).
 */
int cc__store_split_addr(const char *addr, char *host, size_t hostlen, int *port);
/* strerror(err) starting with a lowercase letter, for log messages. */
const char *cc__store_errstr(int err, char *buf, size_t buflen);
/* Opcode name for logs ("get"); "op<n>" in `buf` for unknown ones. */
const char *cc__store_op_name(unsigned op, char *buf, size_t buflen);

#endif /* CC_BOOTSTRAP_STORE_PROTO_H */
