/*
 * hello.c - the smallest ccomm program: join the job, allreduce, leave.
 *   build/bin/ccrun -n 4 build/examples/hello
 *   CCOMM_TRANSPORT=tcp build/bin/ccrun -n 4 build/examples/hello
 */
#include <ccomm/ccomm.h>
#include <stdio.h>

int main(void)
{
    cc_comm_t *comm;
    cc_status_t st = cc_comm_init_from_env(&comm, NULL);
    if (st != CC_OK) {
        fprintf(stderr, "cc_comm_init_from_env: %s\n", cc_status_str(st));
        return 1;
    }
    int rank = cc_comm_rank(comm), size = cc_comm_size(comm);
    float mine[4] = {(float)rank, 1.0f, (float)rank * rank, 2.0f}, sum[4];
    st = cc_allreduce(comm, mine, sum, 4, CC_FLOAT32, CC_SUM, NULL, NULL);
    if (st != CC_OK) {
        fprintf(stderr, "rank %d: cc_allreduce: %s\n", rank, cc_status_str(st));
        cc_comm_destroy(comm);
        return 1;
    }
    float expect = (float)size * (float)(size - 1) / 2;
    printf("rank %d of %d: sum of ranks = %g (expected %g), sum of ones = %g, over %s\n", rank,
           size, sum[0], expect, sum[1], cc_comm_name(comm));
    cc_comm_destroy(comm);
    return sum[0] == expect && sum[1] == (float)size ? 0 : 1;
}
