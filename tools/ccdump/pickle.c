/*
 * pickle.c - a safe reader of the pickle subset flight recorder dumps use
 * (pickle.h). It runs Python's unpickling machine (a stack of values, marks
 * that delimit the items of a container being built, a memo of values by
 * index) over jansson values, and knows nothing it could import or call.
 *
 * Invariants that keep a hostile file harmless:
 *  - a container is in at most one stack slot; the memo keeps a reference
 *    to it, and a memo fetch (GET) copies the container as it is then, so
 *    no document can contain itself (for data without cycles, the copy is
 *    what Python's shared reference would show: a pickler writes an object
 *    completely before it refers to it again);
 *  - each slot knows the nesting height of its value, and a value is never
 *    put into a container if that would nest deeper than
 *    CCD_PICKLE_MAX_DEPTH, so every walk of the result is bounded;
 *  - every value made or copied is charged to a budget proportional to the
 *    input's size.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"

enum kind { K_SCALAR = 0, K_LIST, K_DICT, K_TUPLE };

typedef struct slot {
    json_t *v;
    uint8_t kind;   /* enum kind */
    uint8_t height; /* 0 scalar; a container: 1 + the tallest value in it */
} slot_t;

typedef struct pk {
    const unsigned char *b;
    size_t len, pos, at; /* at: offset of the opcode being run */
    slot_t *st;          /* the stack */
    size_t sp, stcap;
    size_t *marks; /* stack heights at each MARK */
    size_t nmarks, mcap;
    slot_t *memo; /* by index; v NULL where never set */
    size_t nmemo;
    size_t memo_count; /* indices set (MEMOIZE uses the next) */
    uint64_t budget;   /* values that may still be made */
    char *err;
    size_t errlen;
} pk_t;

/* Opcode names for messages; NULL for bytes that are no opcode. */
static const char *op_name(unsigned char op)
{
    static const struct {
        unsigned char op;
        const char *name;
    } t[] = {{'(', "MARK"},
             {'.', "STOP"},
             {'0', "POP"},
             {'1', "POP_MARK"},
             {'2', "DUP"},
             {'F', "FLOAT"},
             {'I', "INT"},
             {'J', "BININT"},
             {'K', "BININT1"},
             {'L', "LONG"},
             {'M', "BININT2"},
             {'N', "NONE"},
             {'P', "PERSID"},
             {'Q', "BINPERSID"},
             {'R', "REDUCE"},
             {'S', "STRING"},
             {'T', "BINSTRING"},
             {'U', "SHORT_BINSTRING"},
             {'V', "UNICODE"},
             {'X', "BINUNICODE"},
             {'a', "APPEND"},
             {'b', "BUILD"},
             {'c', "GLOBAL"},
             {'d', "DICT"},
             {'}', "EMPTY_DICT"},
             {'e', "APPENDS"},
             {'g', "GET"},
             {'h', "BINGET"},
             {'i', "INST"},
             {'j', "LONG_BINGET"},
             {'l', "LIST"},
             {']', "EMPTY_LIST"},
             {'o', "OBJ"},
             {'p', "PUT"},
             {'q', "BINPUT"},
             {'r', "LONG_BINPUT"},
             {'s', "SETITEM"},
             {'t', "TUPLE"},
             {')', "EMPTY_TUPLE"},
             {'u', "SETITEMS"},
             {'G', "BINFLOAT"},
             {0x80, "PROTO"},
             {0x81, "NEWOBJ"},
             {0x82, "EXT1"},
             {0x83, "EXT2"},
             {0x84, "EXT4"},
             {0x85, "TUPLE1"},
             {0x86, "TUPLE2"},
             {0x87, "TUPLE3"},
             {0x88, "NEWTRUE"},
             {0x89, "NEWFALSE"},
             {0x8a, "LONG1"},
             {0x8b, "LONG4"},
             {'B', "BINBYTES"},
             {'C', "SHORT_BINBYTES"},
             {0x8c, "SHORT_BINUNICODE"},
             {0x8d, "BINUNICODE8"},
             {0x8e, "BINBYTES8"},
             {0x8f, "EMPTY_SET"},
             {0x90, "ADDITEMS"},
             {0x91, "FROZENSET"},
             {0x92, "NEWOBJ_EX"},
             {0x93, "STACK_GLOBAL"},
             {0x94, "MEMOIZE"},
             {0x95, "FRAME"},
             {0x96, "BYTEARRAY8"},
             {0x97, "NEXT_BUFFER"},
             {0x98, "READONLY_BUFFER"}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (t[i].op == op) return t[i].name;
    return NULL;
}

static int fail(pk_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(pk_t *p, const char *fmt, ...)
{
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    unsigned char op = p->at < p->len ? p->b[p->at] : 0;
    const char *name = p->at < p->len ? op_name(op) : NULL;
    if (name)
        snprintf(p->err, p->errlen, "pickle: opcode %s (0x%02x) at byte %zu: %s", name, op, p->at,
                 what);
    else
        snprintf(p->err, p->errlen, "pickle: at byte %zu: %s", p->at, what);
    return -1;
}

static int oom(pk_t *p)
{
    return fail(p, "out of memory");
}

/* n bytes of argument, or NULL (error set) when the file ends first. */
static const unsigned char *take(pk_t *p, size_t n)
{
    if (n > p->len - p->pos) {
        fail(p, "needs %zu bytes, %zu left in the file (truncated or a bad length)", n,
             p->len - p->pos);
        return NULL;
    }
    const unsigned char *a = p->b + p->pos;
    p->pos += n;
    return a;
}

static uint64_t le(const unsigned char *a, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;)
        v = v << 8 | a[i];
    return v;
}

/* A length argument of n bytes, checked against the bytes left. */
static int take_len(pk_t *p, size_t n, size_t *out)
{
    const unsigned char *a = take(p, n);
    if (!a) return -1;
    uint64_t v = le(a, n);
    if (v > p->len - p->pos)
        return fail(p, "length %llu is larger than the %zu bytes left in the file",
                    (unsigned long long)v, p->len - p->pos);
    *out = (size_t)v;
    return 0;
}

/* ---- the stack ---- */

static int charge(pk_t *p, uint64_t n)
{
    if (n > p->budget)
        return fail(p,
                    "the document grows beyond %zu bytes' worth of values (memo references "
                    "that multiply it?)",
                    p->len);
    p->budget -= n;
    return 0;
}

/* Pushes v (takes the reference, even on failure). */
static int push(pk_t *p, json_t *v, int kind, int height)
{
    if (!v) return oom(p);
    if (charge(p, 1) || (p->sp == CCD_PICKLE_MAX_STACK &&
                         fail(p, "more than %d values on the stack", CCD_PICKLE_MAX_STACK))) {
        json_decref(v);
        return -1;
    }
    if (p->sp == p->stcap) {
        size_t c = p->stcap ? 2 * p->stcap : 64;
        slot_t *n = realloc(p->st, c * sizeof(*n));
        if (!n) {
            json_decref(v);
            return oom(p);
        }
        p->st = n;
        p->stcap = c;
    }
    p->st[p->sp++] = (slot_t){v, (uint8_t)kind, (uint8_t)height};
    return 0;
}

/* The stack height above which the items of the innermost MARK lie. */
static size_t floor_of(const pk_t *p)
{
    return p->nmarks ? p->marks[p->nmarks - 1] : 0;
}

/* The top n values (above the innermost mark), or -1. */
static int need(pk_t *p, size_t n)
{
    if (p->sp - floor_of(p) < n)
        return fail(p, "needs %zu value(s) on the stack, %zu there", n, p->sp - floor_of(p));
    return 0;
}

static int pop_mark(pk_t *p, size_t *base)
{
    if (!p->nmarks) return fail(p, "no MARK to pop to");
    *base = p->marks[--p->nmarks];
    return 0;
}

/* ---- values ---- */

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static int utf8_ok(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i], k = c < 0x80                ? 0
                               : c >= 0xc2 && c < 0xe0 ? 1
                               : c >= 0xe0 && c < 0xf0 ? 2
                               : c >= 0xf0 && c < 0xf5 ? 3
                                                       : 9;
        if (k == 9 || k > n - i - 1) return 0;
        for (unsigned j = 1; j <= k; j++)
            if ((s[i + j] & 0xc0) != 0x80) return 0;
        if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] >= 0xa0) ||
            (c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] >= 0x90))
            return 0;
        i += k + 1;
    }
    return 1;
}

static int push_str(pk_t *p, size_t n)
{
    const unsigned char *a = take(p, n);
    if (!a) return -1;
    if (!utf8_ok(a, n)) return fail(p, "a string that is not valid UTF-8");
    return push(p, json_stringn_nocheck((const char *)a, n), K_SCALAR, 0);
}

/* Bytes as the string of their code points (Latin-1), which is lossless. */
static int push_bytes(pk_t *p, size_t n)
{
    const unsigned char *a = take(p, n);
    if (!a) return -1;
    char *u = malloc(2 * n + 1);
    size_t k = 0;
    if (!u) return oom(p);
    for (size_t i = 0; i < n; i++) {
        if (a[i] < 0x80) {
            u[k++] = (char)a[i];
        } else {
            u[k++] = (char)(0xc0 | a[i] >> 6);
            u[k++] = (char)(0x80 | (a[i] & 0x3f));
        }
    }
    json_t *v = json_stringn_nocheck(u, k);
    free(u);
    return push(p, v, K_SCALAR, 0);
}

/* LONG1 / LONG4: n bytes of little-endian two's complement, within int64. */
static int push_long(pk_t *p, size_t n)
{
    const unsigned char *a = take(p, n);
    if (!a) return -1;
    if (!n) return push(p, json_integer(0), K_SCALAR, 0);
    unsigned char sign = (a[n - 1] & 0x80) ? 0xff : 0;
    for (size_t i = 8; i < n; i++)
        if (a[i] != sign) return fail(p, "an integer of %zu bytes beyond the int64 range", n);
    if (n > 8 && (a[7] & 0x80) != (sign & 0x80))
        return fail(p, "an integer of %zu bytes beyond the int64 range", n);
    uint64_t v = le(a, n < 8 ? n : 8);
    if (n < 8 && sign) v |= ~0ull << (8 * n);
    return push(p, json_integer((json_int_t)v), K_SCALAR, 0);
}

/* A text line argument (INT, LONG, FLOAT), NUL-terminated in line. */
static int take_line(pk_t *p, char *line, size_t cap)
{
    const unsigned char *a = p->b + p->pos, *nl = memchr(a, '\n', p->len - p->pos);
    if (!nl) return fail(p, "a text argument without its end of line (truncated)");
    size_t n = (size_t)(nl - a);
    if (n >= cap) return fail(p, "a text argument of %zu bytes (at most %zu)", n, cap - 1);
    memcpy(line, a, n);
    line[n] = '\0';
    p->pos += n + 1;
    return 0;
}

static int push_text_number(pk_t *p, unsigned char op)
{
    char line[80], *end;
    if (take_line(p, line, sizeof(line))) return -1;
    errno = 0;
    if (op == 'F') {
        double d = strtod(line, &end);
        if (end == line || *end) return fail(p, "\"%s\" is not a float", line);
        return push(p, isfinite(d) ? json_real(d) : json_null(), K_SCALAR, 0);
    }
    if (op == 'I' && (!strcmp(line, "00") || !strcmp(line, "01")))
        return push(p, json_boolean(line[1] == '1'), K_SCALAR, 0);
    long long v = strtoll(line, &end, 10);
    if (op == 'L' && *end == 'L') end++;
    if (end == line || *end) return fail(p, "\"%s\" is not an integer", line);
    if (errno == ERANGE) return fail(p, "%s is beyond the int64 range", line);
    return push(p, json_integer(v), K_SCALAR, 0);
}

static int push_binfloat(pk_t *p)
{
    const unsigned char *a = take(p, 8);
    if (!a) return -1;
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++)
        bits = bits << 8 | a[i]; /* big-endian */
    double d;
    memcpy(&d, &bits, sizeof(d));
    return push(p, isfinite(d) ? json_real(d) : json_null(), K_SCALAR, 0);
}

/* Numbers, strings, bytes, booleans, None: 1 handled, 0 not this group, -1 error. */
static int op_scalar(pk_t *p, unsigned char op)
{
    size_t n = 0;
    switch (op) {
    case 'N':
        return push(p, json_null(), K_SCALAR, 0) ? -1 : 1;
    case 0x88:
        return push(p, json_true(), K_SCALAR, 0) ? -1 : 1;
    case 0x89:
        return push(p, json_false(), K_SCALAR, 0) ? -1 : 1;
    case 'K':
    case 'M': { /* unsigned, 1 and 2 bytes */
        const unsigned char *a = take(p, op == 'K' ? 1 : 2);
        return !a || push(p, json_integer((json_int_t)le(a, op == 'K' ? 1 : 2)), K_SCALAR, 0) ? -1
                                                                                              : 1;
    }
    case 'J':
        return push_long(p, 4) ? -1 : 1;
    case 0x8a:
        return take_len(p, 1, &n) || push_long(p, n) ? -1 : 1;
    case 0x8b:
        return take_len(p, 4, &n) || push_long(p, n) ? -1 : 1;
    case 'I':
    case 'L':
    case 'F':
        return push_text_number(p, op) ? -1 : 1;
    case 'G':
        return push_binfloat(p) ? -1 : 1;
    case 0x8c:
        return take_len(p, 1, &n) || push_str(p, n) ? -1 : 1;
    case 'X':
        return take_len(p, 4, &n) || push_str(p, n) ? -1 : 1;
    case 0x8d:
        return take_len(p, 8, &n) || push_str(p, n) ? -1 : 1;
    case 'C':
    case 'U':
        return take_len(p, 1, &n) || push_bytes(p, n) ? -1 : 1;
    case 'B':
    case 'T':
        return take_len(p, 4, &n) || push_bytes(p, n) ? -1 : 1;
    case 0x8e:
    case 0x96:
        return take_len(p, 8, &n) || push_bytes(p, n) ? -1 : 1;
    default:
        return 0;
    }
}

/* ---- containers ---- */

/* Puts the slot's value into container c (takes the value's reference). */
static int put_in(pk_t *p, slot_t *c, slot_t v)
{
    if (v.height + 1 > CCD_PICKLE_MAX_DEPTH) {
        json_decref(v.v);
        return fail(p, "containers nested deeper than %d", CCD_PICKLE_MAX_DEPTH);
    }
    if (json_array_append_new(c->v, v.v)) return oom(p);
    if (v.height + 1 > c->height) c->height = (uint8_t)(v.height + 1);
    return 0;
}

static int set_item(pk_t *p, slot_t *d, slot_t k, slot_t v)
{
    char num[24];
    const char *key = num;
    size_t klen;
    if (json_is_string(k.v)) {
        key = json_string_value(k.v);
        klen = json_string_length(k.v);
        if (memchr(key, 0, klen)) { /* readers look keys up as C strings */
            json_decref(k.v);
            json_decref(v.v);
            return fail(p, "a dict key with a NUL character");
        }
    } else if (json_is_integer(k.v)) {
        klen = (size_t)snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(k.v));
    } else {
        json_decref(k.v);
        json_decref(v.v);
        return fail(p, "a dict key that is neither a str nor an int");
    }
    int rc = v.height + 1 > CCD_PICKLE_MAX_DEPTH ? 1 : 0;
    if (!rc)
        rc = json_object_setn_new_nocheck(d->v, key, klen, v.v) ? -1 : 0;
    else
        json_decref(v.v);
    json_decref(k.v);
    if (rc > 0) return fail(p, "containers nested deeper than %d", CCD_PICKLE_MAX_DEPTH);
    if (rc < 0) return oom(p);
    if (v.height + 1 > d->height) d->height = (uint8_t)(v.height + 1);
    return 0;
}

/* The values st[from..sp) go into c: a list's items, or a dict's key/value pairs. */
static int fill(pk_t *p, slot_t *c, size_t from)
{
    size_t n = p->sp - from, i = from;
    int rc = 0;
    if (c->kind == K_DICT && n % 2)
        rc = fail(p, "an odd number of values for a dict's items");
    else if (c->kind == K_TUPLE)
        rc = fail(p, "adding items to a tuple");
    else if (c->kind == K_SCALAR)
        rc = fail(p, "adding items to a value that is no container");
    for (; !rc && i < p->sp; i += c->kind == K_DICT ? 2 : 1)
        rc = c->kind == K_DICT ? set_item(p, c, p->st[i], p->st[i + 1]) : put_in(p, c, p->st[i]);
    if (rc) /* the values not yet given to c */
        for (; i < p->sp; i++)
            json_decref(p->st[i].v);
    p->sp = from;
    return rc;
}

/* A new container of the given kind from st[from..sp). */
static int build(pk_t *p, size_t from, int kind)
{
    slot_t c = {kind == K_DICT ? json_object() : json_array(), (uint8_t)kind, 1};
    if (!c.v) return oom(p);
    if (kind == K_TUPLE) c.kind = K_LIST; /* filled as a list, then frozen */
    int rc = fill(p, &c, from);
    c.kind = (uint8_t)kind;
    if (rc) {
        json_decref(c.v);
        return -1;
    }
    return push(p, c.v, c.kind, c.height);
}

static int op_container(pk_t *p, unsigned char op)
{
    size_t base = 0;
    switch (op) {
    case '}':
        return push(p, json_object(), K_DICT, 1) ? -1 : 1;
    case ']':
        return push(p, json_array(), K_LIST, 1) ? -1 : 1;
    case ')':
        return push(p, json_array(), K_TUPLE, 1) ? -1 : 1;
    case 0x85:
    case 0x86:
    case 0x87:
        return need(p, (size_t)(op - 0x84)) || build(p, p->sp - (size_t)(op - 0x84), K_TUPLE) ? -1
                                                                                              : 1;
    case 't':
    case 'l':
    case 'd':
        if (pop_mark(p, &base)) return -1;
        return build(p, base, op == 't' ? K_TUPLE : op == 'l' ? K_LIST : K_DICT) ? -1 : 1;
    case 'a':
        return need(p, 2) || fill(p, &p->st[p->sp - 2], p->sp - 1) ? -1 : 1;
    case 's':
        return need(p, 3) || fill(p, &p->st[p->sp - 3], p->sp - 2) ? -1 : 1;
    case 'e':
    case 'u':
        if (pop_mark(p, &base)) return -1;
        if (base == floor_of(p)) return fail(p, "no container below the MARK");
        return fill(p, &p->st[base - 1], base) ? -1 : 1;
    default:
        return 0;
    }
}

/* ---- the memo ---- */

/*
 * A copy of v charged to the budget (containers copied, scalars shared) and
 * its nesting height; NULL with the error set.
 */
static json_t *copy(pk_t *p, json_t *v, int *height)
{
    json_t *c = NULL, *x, *y;
    int h = 0, hx;
    *height = 0;
    if (charge(p, 1)) return NULL;
    if (!json_is_array(v) && !json_is_object(v)) return json_incref(v);
    if (!(c = json_is_array(v) ? json_array() : json_object())) return oom(p), NULL;
    if (json_is_array(v)) {
        size_t i;
        json_array_foreach(v, i, x)
        {
            if (!(y = copy(p, x, &hx))) goto bad;
            if (json_array_append_new(c, y)) goto nomem;
            h = hx > h ? hx : h;
        }
    } else {
        const char *k;
        size_t klen;
        json_object_keylen_foreach(v, k, klen, x)
        {
            if (!(y = copy(p, x, &hx))) goto bad;
            if (json_object_setn_new_nocheck(c, k, klen, y)) goto nomem;
            h = hx > h ? hx : h;
        }
    }
    *height = h + 1;
    return c;
nomem:
    oom(p);
bad:
    json_decref(c);
    return NULL;
}

static int memo_put(pk_t *p, uint64_t idx)
{
    if (need(p, 1)) return -1;
    /* Picklers number the memo from 0, one index per value: never beyond the file's size. */
    if (idx > p->len) return fail(p, "memo index %llu out of range", (unsigned long long)idx);
    if (idx >= p->nmemo) {
        size_t n = (size_t)idx + 1 > 2 * p->nmemo ? (size_t)idx + 1 : 2 * p->nmemo;
        slot_t *m = realloc(p->memo, n * sizeof(*m));
        if (!m) return oom(p);
        memset(m + p->nmemo, 0, (n - p->nmemo) * sizeof(*m));
        p->memo = m;
        p->nmemo = n;
    }
    if (!p->memo[idx].v) p->memo_count++;
    json_decref(p->memo[idx].v);
    p->memo[idx] = p->st[p->sp - 1];
    json_incref(p->memo[idx].v);
    return 0;
}

static int memo_get(pk_t *p, uint64_t idx)
{
    if (idx >= p->nmemo || !p->memo[idx].v)
        return fail(p, "memo index %llu was never set", (unsigned long long)idx);
    slot_t m = p->memo[idx];
    /* A container is copied (it may still be growing on the stack: no cycles). */
    int height;
    json_t *v = copy(p, m.v, &height);
    if (!v) return -1;
    /* copy() charged the value already; push() charges one more, which is harmless. */
    return push(p, v, m.kind, height);
}

/* A decimal index on a text line (PUT, GET). */
static int text_index(pk_t *p, uint64_t *idx)
{
    char line[24], *end;
    if (take_line(p, line, sizeof(line))) return -1;
    errno = 0;
    unsigned long long v = strtoull(line, &end, 10);
    if (end == line || *end || line[0] == '-' || errno)
        return fail(p, "\"%s\" is not a memo index", line);
    *idx = v;
    return 0;
}

static int op_memo(pk_t *p, unsigned char op)
{
    const unsigned char *a;
    uint64_t idx;
    switch (op) {
    case 'p':
        return text_index(p, &idx) || memo_put(p, idx) ? -1 : 1;
    case 'g':
        return text_index(p, &idx) || memo_get(p, idx) ? -1 : 1;
    case 'q':
    case 'r':
        a = take(p, op == 'q' ? 1 : 4);
        return !a || memo_put(p, le(a, op == 'q' ? 1 : 4)) ? -1 : 1;
    case 'h':
    case 'j':
        a = take(p, op == 'h' ? 1 : 4);
        return !a || memo_get(p, le(a, op == 'h' ? 1 : 4)) ? -1 : 1;
    case 0x94:
        return memo_put(p, p->memo_count) ? -1 : 1; /* MEMOIZE: Python's len(memo) */
    default:
        return 0;
    }
}

/* ---- the machine ---- */

static int op_control(pk_t *p, unsigned char op)
{
    size_t base = 0, n = 0;
    switch (op) {
    case 0x80: {
        const unsigned char *a = take(p, 1);
        if (!a) return -1;
        if (*a < 2 || *a > 5)
            return fail(p, "pickle protocol %u: ccdump reads protocols 2 to 5", *a);
        return 1;
    }
    case 0x95:
        return take_len(p, 8, &n) ? -1 : 1; /* FRAME: a hint for buffered readers */
    case '(':
        if (p->nmarks == CCD_PICKLE_MAX_STACK)
            return fail(p, "more than %d open marks", CCD_PICKLE_MAX_STACK);
        if (p->nmarks == p->mcap) {
            size_t c = p->mcap ? 2 * p->mcap : 32, *m = realloc(p->marks, c * sizeof(*m));
            if (!m) return oom(p);
            p->marks = m;
            p->mcap = c;
        }
        p->marks[p->nmarks++] = p->sp;
        return 1;
    case '0':
        if (p->sp > floor_of(p))
            json_decref(p->st[--p->sp].v);
        else if (pop_mark(p, &base))
            return -1;
        return 1;
    case '1':
        if (pop_mark(p, &base)) return -1;
        while (p->sp > base)
            json_decref(p->st[--p->sp].v);
        return 1;
    default:
        return 0;
    }
}

/* Why an opcode outside the subset is refused. */
static int refuse(pk_t *p, unsigned char op)
{
    static const unsigned char code[] = {'c',  0x93, 'R',  'b', 'i', 'o',  0x81, 0x92,
                                         0x82, 0x83, 0x84, 'P', 'Q', 0x97, 0x98};
    if (memchr(code, op, sizeof(code)))
        return fail(p, "refused: it imports, calls or builds a Python object (it could run "
                       "code); flight recorder dumps hold plain data only");
    if (op_name(op))
        return fail(p, "not in the subset flight recorder dumps use (dicts, lists, tuples, str, "
                       "bytes, int, float, bool, None)");
    return fail(p, "0x%02x is not a pickle opcode", op);
}

static json_t *run(pk_t *p)
{
    if (p->len < 2 || p->b[0] != 0x80)
        return fail(p, "not a pickle of protocol 2 to 5 (no PROTO opcode first)"), NULL;
    while (p->pos < p->len) {
        p->at = p->pos;
        unsigned char op = p->b[p->pos++];
        if (op == '.') {
            if (need(p, 1)) return NULL;
            return json_incref(p->st[p->sp - 1].v);
        }
        int rc = op_control(p, op);
        if (!rc) rc = op_scalar(p, op);
        if (!rc) rc = op_container(p, op);
        if (!rc) rc = op_memo(p, op);
        if (!rc) rc = refuse(p, op);
        if (rc < 0) return NULL;
    }
    p->at = p->len;
    fail(p, "the file ends before the STOP opcode (truncated)");
    return NULL;
}

json_t *ccd_pickle_parse(const unsigned char *buf, size_t len, char *err, size_t errlen)
{
    pk_t p = {.b = buf, .len = len, .err = err, .errlen = errlen};
    /* Each byte makes at most one value; memo copies may add 64 per byte. */
    p.budget = (uint64_t)len * 64 + 4096;
    json_t *doc = run(&p);
    while (p.sp)
        json_decref(p.st[--p.sp].v);
    for (size_t i = 0; i < p.nmemo; i++)
        json_decref(p.memo[i].v);
    free(p.st);
    free(p.marks);
    free(p.memo);
    return doc;
}
