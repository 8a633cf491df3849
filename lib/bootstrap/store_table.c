/*
 * store_table.c - the server's key/value table (see store_table.h).
 *
 * FNV-1a hashes, chained buckets, doubling when the load passes one entry per
 * bucket. Keys are at most CC__STORE_MAX_KEY bytes, so hashing is cheap.
 */
#include <stdlib.h>
#include <string.h>

#include "bootstrap/store_table.h"

#define KV_INITIAL_BUCKETS 256

int cc__kv_init(struct cc__kv *kv)
{
    kv->buckets = calloc(KV_INITIAL_BUCKETS, sizeof(*kv->buckets));
    kv->nbuckets = kv->buckets ? KV_INITIAL_BUCKETS : 0;
    kv->count = 0;
    return kv->buckets ? 0 : -1;
}

static void entry_free(struct cc__kv_entry *e)
{
    free(e->val);
    free(e);
}

void cc__kv_free(struct cc__kv *kv)
{
    for (size_t i = 0; i < kv->nbuckets; i++) {
        struct cc__kv_entry *e = kv->buckets[i];
        while (e) {
            struct cc__kv_entry *next = e->next;
            entry_free(e);
            e = next;
        }
    }
    free(kv->buckets);
    memset(kv, 0, sizeof(*kv));
}

uint64_t cc__kv_hash(const void *key, size_t klen)
{
    const uint8_t *p = key;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < klen; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

struct cc__kv_entry *cc__kv_find(const struct cc__kv *kv, const void *key, uint32_t klen,
                                 uint64_t hash)
{
    struct cc__kv_entry *e = kv->buckets[hash & (kv->nbuckets - 1)];
    for (; e; e = e->next)
        if (e->hash == hash && e->klen == klen && memcmp(e->key, key, klen) == 0) return e;
    return NULL;
}

/* Double the bucket array; on failure keep the old one (longer chains, still correct). */
static void grow(struct cc__kv *kv)
{
    size_t n = kv->nbuckets * 2;
    struct cc__kv_entry **b = calloc(n, sizeof(*b));
    if (!b) return;
    for (size_t i = 0; i < kv->nbuckets; i++) {
        struct cc__kv_entry *e = kv->buckets[i];
        while (e) {
            struct cc__kv_entry *next = e->next;
            e->next = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    free(kv->buckets);
    kv->buckets = b;
    kv->nbuckets = n;
}

struct cc__kv_entry *cc__kv_set(struct cc__kv *kv, const void *key, uint32_t klen, uint64_t hash,
                                const void *val, uint32_t vlen)
{
    uint8_t *copy = NULL;
    if (vlen) {
        copy = malloc(vlen);
        if (!copy) return NULL;
        memcpy(copy, val, vlen);
    }
    struct cc__kv_entry *e = cc__kv_find(kv, key, klen, hash);
    if (e) {
        free(e->val);
        e->val = copy;
        e->vlen = vlen;
        return e;
    }
    e = malloc(sizeof(*e) + klen + 1);
    if (!e) {
        free(copy);
        return NULL;
    }
    e->hash = hash;
    e->val = copy;
    e->vlen = vlen;
    e->klen = klen;
    memcpy(e->key, key, klen);
    e->key[klen] = '\0';
    size_t b = hash & (kv->nbuckets - 1);
    e->next = kv->buckets[b];
    kv->buckets[b] = e;
    if (++kv->count > kv->nbuckets) grow(kv);
    return e;
}

int cc__kv_delete(struct cc__kv *kv, const void *key, uint32_t klen, uint64_t hash)
{
    struct cc__kv_entry **pp = &kv->buckets[hash & (kv->nbuckets - 1)];
    for (; *pp; pp = &(*pp)->next) {
        struct cc__kv_entry *e = *pp;
        if (e->hash == hash && e->klen == klen && memcmp(e->key, key, klen) == 0) {
            *pp = e->next;
            entry_free(e);
            kv->count--;
            return 1;
        }
    }
    return 0;
}
