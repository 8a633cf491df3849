/*
 * store_proto.c - encoding and checking of store frames, the HMAC of the
 * handshake, and small address helpers shared by the server and the client.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "bootstrap/store_proto.h"

/* The largest request must fit its payload limit: a CAS with two full values... */
_Static_assert(4u * 4u + CC__STORE_MAX_KEY + 1u + 2u * CC__STORE_MAX_VALUE <= CC__STORE_MAX_REQUEST,
               "a CAS request must fit CC__STORE_MAX_REQUEST");
/* ... and a multi_get of the most keys, each with its length word. */
_Static_assert(12u + (uint64_t)CC__STORE_MAX_KEYS * (CC__STORE_MAX_KEY + 4u) <=
                   CC__STORE_MAX_REQUEST,
               "a full multi_get request must fit CC__STORE_MAX_REQUEST");
_Static_assert(CC__STORE_MAX_VALUE + 64u <= CC__STORE_MAX_REPLY, "a value must fit a reply");

void cc__store_hdr_encode(const struct cc__store_hdr *h, uint8_t out[CC__STORE_HDR_SIZE])
{
    cc__put_u32(out, h->magic);
    out[4] = h->version;
    out[5] = h->op;
    out[6] = (uint8_t)((uint16_t)h->status >> 8);
    out[7] = (uint8_t)(uint16_t)h->status;
    cc__put_u32(out + 8, h->nfields);
    cc__put_u32(out + 12, h->plen);
}

void cc__store_hdr_decode(const uint8_t in[CC__STORE_HDR_SIZE], struct cc__store_hdr *h)
{
    h->magic = cc__get_u32(in);
    h->version = in[4];
    h->op = in[5];
    h->status = (int16_t)(uint16_t)((unsigned)in[6] << 8 | in[7]);
    h->nfields = cc__get_u32(in + 8);
    h->plen = cc__get_u32(in + 12);
}

int cc__store_hdr_check(const struct cc__store_hdr *h, uint32_t max_payload, char *why,
                        size_t whylen)
{
    if (h->magic != CC__STORE_MAGIC) {
        snprintf(why, whylen, "bad magic 0x%08x (expected 0x%08x)", h->magic, CC__STORE_MAGIC);
        return -1;
    }
    if (h->version != CC__STORE_VERSION) {
        snprintf(why, whylen, "protocol version %u (expected %u)", h->version, CC__STORE_VERSION);
        return -1;
    }
    if (h->op < CC__STORE_OP_HELLO || h->op >= CC__STORE_OP_END) {
        snprintf(why, whylen, "unknown opcode %u", h->op);
        return -1;
    }
    if (h->plen > max_payload) {
        snprintf(why, whylen, "payload of %u bytes over the limit of %u", h->plen, max_payload);
        return -1;
    }
    if (h->nfields > CC__STORE_MAX_FIELDS) {
        snprintf(why, whylen, "%u fields over the limit of %u", h->nfields, CC__STORE_MAX_FIELDS);
        return -1;
    }
    /* Each field has a 4-byte length, so the count bounds the payload from below. */
    if ((uint64_t)h->nfields * 4u > h->plen) {
        snprintf(why, whylen, "%u fields cannot fit a payload of %u bytes", h->nfields, h->plen);
        return -1;
    }
    return 0;
}

/* Make room for `more` bytes; marks the writer failed past the reply limit or on OOM. */
static int wr_grow(struct cc__store_wr *w, size_t more)
{
    if (w->failed) return -1;
    if (more > CC__STORE_MAX_REPLY || w->len + more > CC__STORE_HDR_SIZE + CC__STORE_MAX_REPLY) {
        w->failed = 1;
        return -1;
    }
    if (w->len + more <= w->cap) return 0;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + more)
        cap *= 2;
    uint8_t *p = realloc(w->buf, cap);
    if (!p) {
        w->failed = 1;
        return -1;
    }
    w->buf = p;
    w->cap = cap;
    return 0;
}

void cc__store_wr_begin(struct cc__store_wr *w, uint8_t op, int16_t status)
{
    memset(w, 0, sizeof(*w));
    if (wr_grow(w, CC__STORE_HDR_SIZE) != 0) return;
    struct cc__store_hdr h = {CC__STORE_MAGIC, CC__STORE_VERSION, op, status, 0, 0};
    cc__store_hdr_encode(&h, w->buf);
    w->len = CC__STORE_HDR_SIZE;
}

void cc__store_wr_reserve(struct cc__store_wr *w, size_t payload_bytes)
{
    (void)wr_grow(w, payload_bytes);
}

void cc__store_wr_field2(struct cc__store_wr *w, const void *a, size_t alen, const void *b,
                         size_t blen)
{
    size_t n = alen + blen;
    if (n > UINT32_MAX || wr_grow(w, 4 + n) != 0) {
        w->failed = 1;
        return;
    }
    cc__put_u32(w->buf + w->len, (uint32_t)n);
    if (alen) memcpy(w->buf + w->len + 4, a, alen);
    if (blen) memcpy(w->buf + w->len + 4 + alen, b, blen);
    w->len += 4 + n;
    w->nfields++;
}

void cc__store_wr_field(struct cc__store_wr *w, const void *p, size_t len)
{
    cc__store_wr_field2(w, p, len, NULL, 0);
}

void cc__store_wr_u8(struct cc__store_wr *w, uint8_t v)
{
    cc__store_wr_field(w, &v, 1);
}

void cc__store_wr_u32(struct cc__store_wr *w, uint32_t v)
{
    uint8_t b[4];
    cc__put_u32(b, v);
    cc__store_wr_field(w, b, 4);
}

void cc__store_wr_u64(struct cc__store_wr *w, uint64_t v)
{
    uint8_t b[8];
    cc__put_u64(b, v);
    cc__store_wr_field(w, b, 8);
}

int cc__store_wr_end(struct cc__store_wr *w)
{
    if (w->failed || !w->buf) return -1;
    cc__put_u32(w->buf + 8, w->nfields);
    cc__put_u32(w->buf + 12, (uint32_t)(w->len - CC__STORE_HDR_SIZE));
    return 0;
}

void cc__store_wr_free(struct cc__store_wr *w)
{
    free(w->buf);
    memset(w, 0, sizeof(*w));
}

int cc__store_fields(const uint8_t *payload, uint32_t plen, uint32_t nfields,
                     struct cc__store_field *out, char *why, size_t whylen)
{
    uint32_t off = 0;
    for (uint32_t i = 0; i < nfields; i++) {
        if (plen - off < 4) {
            snprintf(why, whylen, "field %u of %u: length word past the payload end (%u bytes)", i,
                     nfields, plen);
            return -1;
        }
        uint32_t len = cc__get_u32(payload + off);
        off += 4;
        if (len > plen - off) {
            snprintf(why, whylen, "field %u of %u: length %u runs past the payload end (%u bytes)",
                     i, nfields, len, plen);
            return -1;
        }
        out[i].p = payload + off;
        out[i].len = len;
        off += len;
    }
    if (off != plen) {
        snprintf(why, whylen, "%u bytes left over after %u fields", plen - off, nfields);
        return -1;
    }
    return 0;
}

int cc__store_mac(const char *key, const uint8_t a[CC__STORE_NONCE],
                  const uint8_t b[CC__STORE_NONCE], uint8_t out[CC__STORE_MAC])
{
    uint8_t msg[2 * CC__STORE_NONCE];
    unsigned int outlen = 0;
    memcpy(msg, a, CC__STORE_NONCE);
    memcpy(msg + CC__STORE_NONCE, b, CC__STORE_NONCE);
    size_t klen = strlen(key);
    if (klen > INT32_MAX) return -1;
    if (!HMAC(EVP_sha256(), key, (int)klen, msg, sizeof(msg), out, &outlen)) return -1;
    return outlen == CC__STORE_MAC ? 0 : -1;
}

int cc__store_random(uint8_t *out, size_t len)
{
    return (len <= INT32_MAX && RAND_bytes(out, (int)len) == 1) ? 0 : -1;
}

/*
 * Nonces of auxiliary connections that the server of the same process can
 * recognise: the first
 * half is random, the second an HMAC of it and the pid under a secret that
 * never leaves the process. To anyone else the nonce is 32 random bytes; a
 * forked child (same secret, other pid) is a peer like any other.
 */
static uint8_t g_own_secret[32];
static int g_own_ok;
static pthread_once_t g_own_once = PTHREAD_ONCE_INIT;

static void own_secret_init(void)
{
    g_own_ok = RAND_bytes(g_own_secret, sizeof(g_own_secret)) == 1;
}

static int own_tag(const uint8_t half[CC__STORE_NONCE / 2], uint8_t tag[CC__STORE_MAC])
{
    pthread_once(&g_own_once, own_secret_init);
    uint8_t msg[CC__STORE_NONCE / 2 + 4];
    uint32_t pid = (uint32_t)getpid();
    unsigned int outlen = 0;
    memcpy(msg, half, CC__STORE_NONCE / 2);
    cc__put_u32(msg + CC__STORE_NONCE / 2, pid);
    if (!g_own_ok ||
        !HMAC(EVP_sha256(), g_own_secret, sizeof(g_own_secret), msg, sizeof(msg), tag, &outlen))
        return -1;
    return outlen == CC__STORE_MAC ? 0 : -1;
}

int cc__store_aux_nonce(uint8_t out[CC__STORE_NONCE])
{
    uint8_t tag[CC__STORE_MAC];
    if (cc__store_random(out, CC__STORE_NONCE) != 0) return -1;
    if (own_tag(out, tag) == 0) memcpy(out + CC__STORE_NONCE / 2, tag, CC__STORE_NONCE / 2);
    return 0; /* without a tag the nonce is still a good nonce: the server counts it as a peer */
}

int cc__store_nonce_is_aux(const uint8_t nonce[CC__STORE_NONCE])
{
    uint8_t tag[CC__STORE_MAC];
    return own_tag(nonce, tag) == 0 &&
           CRYPTO_memcmp(tag, nonce + CC__STORE_NONCE / 2, CC__STORE_NONCE / 2) == 0;
}

void cc__store_sockaddr_str(const struct sockaddr *sa, char *buf, size_t buflen)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        snprintf(buf, buflen, "%s:%u", ip, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        snprintf(buf, buflen, "[%s]:%u", ip, ntohs(in6->sin6_port));
    } else {
        snprintf(buf, buflen, "(address family %d)", sa->sa_family);
    }
}

int cc__store_split_addr(const char *addr, char *host, size_t hostlen, int *port)
{
    const char *colon = strrchr(addr, ':');
    if (!colon) return -1;
    const char *h = addr;
    size_t hl = (size_t)(colon - addr);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') h++, hl -= 2; /* "[v6]:port" */
    if (hl == 0 || hl >= hostlen || memchr(h, '[', hl) || memchr(h, ']', hl)) return -1;
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end || p < 1 || p > 65535) return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (int)p;
    return 0;
}

const char *cc__store_errstr(int err, char *buf, size_t buflen)
{
    /* GNU strerror_r may return a static string instead of filling buf. */
    const char *s = strerror_r(err, buf, buflen);
    if (s != buf) snprintf(buf, buflen, "%s", s);
    if (buflen && buf[0]) buf[0] = (char)tolower((unsigned char)buf[0]);
    return buf;
}

const char *cc__store_op_name(unsigned op, char *buf, size_t buflen)
{
    static const char *const names[] = {"",     "hello", "auth", "set", "get",   "multi_get",
                                        "wait", "check", "add",  "cas", "delete", "will"};
    if (op > 0 && op < CC__STORE_OP_END) return names[op];
    snprintf(buf, buflen, "op%u", op);
    return buf;
}
