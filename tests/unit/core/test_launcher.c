/*
 * test_launcher.c - pieces of the launcher search: Slurm's node lists, local
 * addresses, and which launcher wins when several left their variables.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/comm.h"
#include "base/config.h"
#include "core/launcher.h"

static void first_is(const char *list, const char *want)
{
    char out[64] = "unchanged";
    assert_int_equal(cc__slurm_first_host(list, out, sizeof(out)), 0);
    assert_string_equal(out, want);
}

static void test_slurm_first_host(void **state)
{
    (void)state;
    first_is("node07", "node07");
    first_is("node[01-04,07]", "node01");
    first_is("node[07,01-04]", "node07");
    first_is("gpu3,node[01-02]", "gpu3");
    first_is("r[1-2]-n[5,7]", "r1-n5");
    first_is("n[001-128]-ib", "n001-ib");
    char out[8];
    assert_int_equal(cc__slurm_first_host("", out, sizeof(out)), -1);
    assert_int_equal(cc__slurm_first_host(NULL, out, sizeof(out)), -1);
    assert_int_equal(cc__slurm_first_host("node[01-04", out, sizeof(out)), -1);
    assert_int_equal(cc__slurm_first_host("averyveryverylongname", out, sizeof(out)), -1);
}

static void test_host_is_local(void **state)
{
    (void)state;
    assert_int_equal(cc__host_is_local("127.0.0.1"), 1);
    assert_int_equal(cc__host_is_local("localhost"), 1);
    assert_int_equal(cc__host_is_local("192.0.2.254"), 0); /* TEST-NET-1: nobody's */
    assert_int_equal(cc__host_is_local("no-such-host.invalid"), 0);
}

static void clear_env(void)
{
    static const char *const names[] = {"CCOMM_RANK",
                                        "CCOMM_SIZE",
                                        "CCOMM_STORE_ADDR",
                                        "RANK",
                                        "WORLD_SIZE",
                                        "MASTER_ADDR",
                                        "MASTER_PORT",
                                        "SLURM_PROCID",
                                        "SLURM_NTASKS",
                                        "SLURM_JOB_ID",
                                        "SLURM_STEP_ID",
                                        "SLURM_STEPID",
                                        "SLURM_STEP_NODELIST",
                                        "SLURM_JOB_NODELIST",
                                        "OMPI_COMM_WORLD_RANK",
                                        "OMPI_COMM_WORLD_SIZE",
                                        "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "OMPI_COMM_WORLD_LOCAL_SIZE",
                                        "OMPI_MCA_orte_hnp_uri",
                                        "PMI_RANK",
                                        "PMI_SIZE"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        unsetenv(names[i]);
}

static void find(int want_rc, int want_rank, int want_size, const char *want_who, int want_hosts)
{
    char addr[300] = "";
    int rank = -1, size = -1, hosts = -1;
    const char *who = NULL;
    cc__config_reload();
    assert_int_equal(cc__launcher_find(&rank, &size, addr, sizeof(addr), &hosts, &who), want_rc);
    if (want_rc != CC_OK) return;
    assert_int_equal(rank, want_rank);
    assert_int_equal(size, want_size);
    assert_string_equal(who, want_who);
    assert_int_equal(hosts, want_hosts);
}

/* The innermost launcher wins: mpirun in a batch script, srun's task, torchrun under srun. */
static void test_innermost_launcher(void **state)
{
    (void)state;
    clear_env();
    setenv("SLURM_JOB_ID", "42", 1);
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_NTASKS", "1", 1);
    setenv("SLURM_JOB_NODELIST", "127.0.0.[1-2]", 1);
    find(CC_ERR_NOT_FOUND, 0, 0, NULL, 0); /* a batch script alone: no launcher */
    setenv("OMPI_COMM_WORLD_RANK", "2", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
    find(CC_OK, 2, 4, "open mpi", 0);
    setenv("OMPI_MCA_orte_hnp_uri", "1.0;tcp://127.0.0.1:5", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
    find(CC_OK, 2, 4, "open mpi", 1); /* first rank on mpirun's node hosts */
    clear_env();
    setenv("SLURM_JOB_ID", "42", 1);
    setenv("SLURM_STEP_ID", "3", 1);
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_NTASKS", "8", 1);
    setenv("SLURM_STEP_NODELIST", "127.0.0.[1-2]", 1);
    find(CC_OK, 0, 8, "slurm", 1);
    setenv("RANK", "5", 1);
    setenv("WORLD_SIZE", "16", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", "29500", 1);
    find(CC_OK, 5, 16, "torchrun", 0);
    setenv("PMI_RANK", "1", 1);
    setenv("PMI_SIZE", "2", 1);
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    unsetenv("RANK");
    find(CC_ERR_MISMATCH, 0, 0, NULL, 0); /* two MPI runtimes that disagree */
    clear_env();
    cc__config_reload();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slurm_first_host),
        cmocka_unit_test(test_host_is_local),
        cmocka_unit_test(test_innermost_launcher),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
