/*
 * output.c - forwarding the ranks' stdout and stderr, line by line.
 *
 * Each complete line goes out in one write(2) with its "[rank] " prefix, so
 * lines of different ranks never mix. A line longer than LINE_MAX_BYTES is
 * written in pieces (the prefix only before the first). A partial last line
 * is flushed, with a newline added, when the rank's pipe ends.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ccrun.h"

#define LINE_MAX_BYTES 65536
#define READ_CHUNK     65536

static int g_dest_broken[3]; /* stdout or stderr of ccrun is gone (EPIPE): discard */

static void write_all(int fd, const char *p, size_t n)
{
    while (n && !g_dest_broken[fd]) {
        ssize_t w = write(fd, p, n);
        if (w > 0)
            p += w, n -= (size_t)w;
        else if (w < 0 && errno != EINTR)
            g_dest_broken[fd] = 1;
    }
}

void ccrun_say(const char *fmt, ...)
{
    char line[1024];
    int n = snprintf(line, sizeof(line), "ccrun: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(line) - 2) len = sizeof(line) - 2;
    line[len++] = '\n';
    write_all(2, line, len);
}

/* Output assembled for one write: prefixes and lines. */
struct obuf {
    char *p;
    size_t len, cap;
};

static void ob_add(struct obuf *b, const char *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) return; /* out of memory: this piece of output is lost */
        b->p = q, b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

/* Append a piece of a line; `end` says whether it ends the line. */
static void emit(struct obuf *b, struct ccrun_out *o, int rank, int prefix, const char *p, size_t n,
                 int end)
{
    if (prefix && !o->midline) {
        char pre[24];
        int k = snprintf(pre, sizeof(pre), "[%d] ", rank);
        ob_add(b, pre, (size_t)k);
    }
    ob_add(b, p, n);
    o->midline = !end;
}

void ccrun_out_feed(struct ccrun_out *o, int rank, int prefix, const char *p, size_t n)
{
    struct obuf b = {0};
    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) + 1 : n;
        if (o->len == 0 && nl) { /* a whole line straight from the read buffer */
            emit(&b, o, rank, prefix, p, take, 1);
        } else {
            if (o->len + take > o->cap) {
                size_t cap = o->len + take > LINE_MAX_BYTES ? o->len + take : LINE_MAX_BYTES;
                char *q = realloc(o->buf, cap);
                if (!q) { /* keep the bytes flowing even without a line buffer */
                    emit(&b, o, rank, prefix, p, take, nl != NULL);
                    p += take, n -= take;
                    continue;
                }
                o->buf = q, o->cap = cap;
            }
            memcpy(o->buf + o->len, p, take);
            o->len += take;
            if (nl || o->len >= LINE_MAX_BYTES) {
                emit(&b, o, rank, prefix, o->buf, o->len, nl != NULL);
                o->len = 0;
            }
        }
        p += take, n -= take;
    }
    write_all(o->dest, b.p, b.len);
    free(b.p);
}

static void out_close(struct ccrun_out *o, int rank, int prefix)
{
    if (o->len) {
        struct obuf b = {0};
        emit(&b, o, rank, prefix, o->buf, o->len, 1);
        if (prefix) ob_add(&b, "\n", 1); /* keep the next rank's prefix at a line start */
        write_all(o->dest, b.p, b.len);
        free(b.p);
    }
    free(o->buf);
    o->buf = NULL;
    o->len = o->cap = 0;
    close(o->fd);
    o->fd = -1;
}

void ccrun_out_drain(struct ccrun_out *o, int rank, int prefix, int final)
{
    static char chunk[READ_CHUNK];
    while (o->fd >= 0) {
        ssize_t n = read(o->fd, chunk, sizeof(chunk));
        if (n > 0) {
            ccrun_out_feed(o, rank, prefix, chunk, (size_t)n);
            if (!final) return; /* one read per wakeup keeps the ranks fair */
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !final) return;
        out_close(o, rank, prefix); /* EOF, error, or the rank is gone and the pipe is empty */
    }
}
