/* stderr_capture.h - what a call writes on stderr (fd 2), for the tests of this folder. */
#ifndef CC_TEST_STDERR_CAPTURE_H
#define CC_TEST_STDERR_CAPTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Start capturing; returns the saved fd 2 (give it to capture_end). */
static inline int capture_begin(FILE **tmp)
{
    fflush(stderr);
    *tmp = tmpfile();
    int saved = dup(2);
    if (!*tmp || saved < 0 || dup2(fileno(*tmp), 2) < 0) abort();
    return saved;
}

/* Stop capturing; the text written meanwhile (malloc'd, NUL-terminated). */
static inline char *capture_end(FILE *tmp, int saved)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    long n = ftell(tmp);
    char *text = calloc((size_t)(n > 0 ? n : 0) + 1, 1);
    rewind(tmp);
    if (!text || (n > 0 && fread(text, 1, (size_t)n, tmp) != (size_t)n)) abort();
    fclose(tmp);
    fprintf(stderr, "%s", text); /* still in the test's log */
    return text;
}

#endif /* CC_TEST_STDERR_CAPTURE_H */
