/*
 * pickle_write.c - the pickle writer of `ccdump export --torch` (pickle.h):
 * protocol 2, the opcodes Python's own pickler uses for plain data, no
 * memo (a reader needs none), containers built from a MARK.
 */
#include <stdlib.h>
#include <string.h>

#include "pickle.h"

static void put(ccd_pkw_t *w, const void *b, size_t n)
{
    if (w->oom) return;
    if (n > w->cap - w->len) {
        size_t c = w->cap ? w->cap : 4096;
        while (c - w->len < n)
            c *= 2;
        unsigned char *nb = realloc(w->buf, c);
        if (!nb) {
            w->oom = 1;
            return;
        }
        w->buf = nb;
        w->cap = c;
    }
    memcpy(w->buf + w->len, b, n);
    w->len += n;
}

static void op(ccd_pkw_t *w, unsigned char o)
{
    put(w, &o, 1);
}

/* n bytes of v, little-endian. */
static void le(ccd_pkw_t *w, uint64_t v, size_t n)
{
    unsigned char b[8];
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    put(w, b, n);
}

void ccd_pkw_start(ccd_pkw_t *w)
{
    memset(w, 0, sizeof(*w));
    op(w, 0x80); /* PROTO 2 */
    op(w, 2);
}

void ccd_pkw_stop(ccd_pkw_t *w)
{
    op(w, '.');
}

void ccd_pkw_free(ccd_pkw_t *w)
{
    free(w->buf);
    memset(w, 0, sizeof(*w));
}

void ccd_pkw_none(ccd_pkw_t *w)
{
    op(w, 'N');
}

void ccd_pkw_bool(ccd_pkw_t *w, int v)
{
    op(w, v ? 0x88 : 0x89); /* NEWTRUE, NEWFALSE */
}

void ccd_pkw_int(ccd_pkw_t *w, int64_t v)
{
    if (v >= 0 && v < 256) {
        op(w, 'K'); /* BININT1 */
        le(w, (uint64_t)v, 1);
    } else if (v >= 0 && v < 65536) {
        op(w, 'M'); /* BININT2 */
        le(w, (uint64_t)v, 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        op(w, 'J'); /* BININT */
        le(w, (uint64_t)v, 4);
    } else {
        /* LONG1: the fewest bytes of two's complement that keep the sign. */
        size_t n = 8;
        while (n > 1) {
            int64_t top =
                v >> (8 * (n - 1) - 1); /* the bits the shorter form drops, and its sign */
            if (top != 0 && top != -1) break;
            n--;
        }
        op(w, 0x8a);
        op(w, (unsigned char)n);
        le(w, (uint64_t)v, n);
    }
}

void ccd_pkw_float(ccd_pkw_t *w, double v)
{
    uint64_t bits;
    unsigned char b[8];
    memcpy(&bits, &v, sizeof(bits));
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(bits >> (56 - 8 * i)); /* BINFLOAT is big-endian */
    op(w, 'G');
    put(w, b, 8);
}

void ccd_pkw_str(ccd_pkw_t *w, const char *s, size_t len)
{
    if (len > UINT32_MAX) {
        w->oom = 1;
        return;
    }
    op(w, 'X'); /* BINUNICODE */
    le(w, len, 4);
    put(w, s, len);
}

void ccd_pkw_mark(ccd_pkw_t *w)
{
    op(w, '(');
}

void ccd_pkw_dict_end(ccd_pkw_t *w)
{
    op(w, 'd');
}

void ccd_pkw_list_end(ccd_pkw_t *w)
{
    op(w, 'l');
}

void ccd_pkw_tuple_end(ccd_pkw_t *w)
{
    op(w, 't');
}

static int json_value(ccd_pkw_t *w, const json_t *v, int depth)
{
    const char *k;
    size_t i, klen;
    json_t *x;
    if (depth > CCD_PICKLE_MAX_DEPTH) return -1;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        ccd_pkw_mark(w);
        json_object_keylen_foreach((json_t *)v, k, klen, x)
        {
            ccd_pkw_str(w, k, klen);
            if (json_value(w, x, depth + 1)) return -1;
        }
        ccd_pkw_dict_end(w);
        return 0;
    case JSON_ARRAY:
        ccd_pkw_mark(w);
        json_array_foreach(v, i, x) if (json_value(w, x, depth + 1)) return -1;
        ccd_pkw_list_end(w);
        return 0;
    case JSON_STRING:
        ccd_pkw_str(w, json_string_value(v), json_string_length(v));
        return 0;
    case JSON_INTEGER:
        ccd_pkw_int(w, (int64_t)json_integer_value(v));
        return 0;
    case JSON_REAL:
        ccd_pkw_float(w, json_real_value(v));
        return 0;
    case JSON_TRUE:
        ccd_pkw_bool(w, 1);
        return 0;
    case JSON_FALSE:
        ccd_pkw_bool(w, 0);
        return 0;
    default:
        ccd_pkw_none(w);
        return 0;
    }
}

int ccd_pkw_json(ccd_pkw_t *w, const json_t *v)
{
    return json_value(w, v, 0);
}
