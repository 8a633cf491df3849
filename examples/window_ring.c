/*
 * window_ring.c - one-sided puts around a ring: each rank registers a
 * buffer as its part of a window, puts a message into the next rank's
 * buffer, signals it, and waits for the previous rank's signal before
 * reading what arrived (ccomm/window.h; ranks of one host).
 *   build/bin/ccrun -n 4 build/examples/window_ring
 */
#include <ccomm/ccomm.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    cc_comm_t *comm;
    cc_status_t st = cc_comm_init_from_env(&comm, NULL);
    if (st != CC_OK) {
        fprintf(stderr, "cc_comm_init_from_env: %s\n", cc_status_str(st));
        return 1;
    }
    int rank = cc_comm_rank(comm), size = cc_comm_size(comm);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    char inbox[64] = "", msg[64];
    cc_window_t *win = NULL;
    st = cc_window_create(comm, inbox, sizeof(inbox), NULL, &win);
    if (st == CC_OK && size > 1) {
        snprintf(msg, sizeof(msg), "hello from rank %d", rank);
        st = cc_window_put(win, msg, strlen(msg) + 1, next, 0, NULL, NULL);
        if (st == CC_OK) st = cc_window_signal(win, next, NULL, NULL);
        if (st == CC_OK) st = cc_window_wait_signal(win, prev, 1, NULL, NULL);
        if (st == CC_OK) printf("rank %d of %d got \"%s\"\n", rank, size, inbox);
    }
    if (win) {
        cc_status_t d = cc_window_destroy(win);
        if (st == CC_OK) st = d;
    }
    if (st != CC_OK) fprintf(stderr, "rank %d: window: %s\n", rank, cc_status_str(st));
    cc_comm_destroy(comm);
    return st == CC_OK ? 0 : 1;
}
