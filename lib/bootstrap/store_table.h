/*
 * store_table.h - the store server's key/value table: a chained hash table
 * of byte-string keys and values, owned by the server thread (no locks).
 */
#ifndef CC_BOOTSTRAP_STORE_TABLE_H
#define CC_BOOTSTRAP_STORE_TABLE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct cc__kv_entry {
    struct cc__kv_entry *next; /* bucket chain */
    uint64_t hash;             /* cc__kv_hash(key) */
    uint8_t *val;              /* malloc'd, vlen bytes; NULL when vlen == 0 */
    uint32_t vlen;
    uint32_t klen;
    char key[]; /* klen bytes, NUL-terminated for logs */
};

struct cc__kv {
    struct cc__kv_entry **buckets; /* nbuckets (a power of two) chains */
    size_t nbuckets;
    _Atomic size_t count; /* entries; the table doubles when count > nbuckets (atomic: read by
                           * cc__store_server_keys from other threads) */
};

int cc__kv_init(struct cc__kv *kv);
void cc__kv_free(struct cc__kv *kv);
uint64_t cc__kv_hash(const void *key, size_t klen);
struct cc__kv_entry *cc__kv_find(const struct cc__kv *kv, const void *key, uint32_t klen,
                                 uint64_t hash);
/* Insert or replace; the value is copied. Returns the entry, or NULL when out of memory. */
struct cc__kv_entry *cc__kv_set(struct cc__kv *kv, const void *key, uint32_t klen, uint64_t hash,
                                const void *val, uint32_t vlen);
/* Remove a key. Returns 1 if it existed, 0 if not. */
int cc__kv_delete(struct cc__kv *kv, const void *key, uint32_t klen, uint64_t hash);

#endif /* CC_BOOTSTRAP_STORE_TABLE_H */
