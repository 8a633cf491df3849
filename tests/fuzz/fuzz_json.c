/*
 * fuzz_json.c - bytes as a JSON dump (fuzz.h): ccdump's parser and loader
 * (ccomm's and PyTorch's formats, and merged documents), then ccdump.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "load.h"

const char *const fuzz_dictionary[] = {
    "-1", "0", "1e309", "-1e309", "18446744073709551616", "9223372036854775807", "null", "true",
    "[]", "{}", "\"\"", "\"[0, 1]\"", "\"[-1, 99999999]\"", "\"2.10\"", "\"3.0\"", "\"started\"",
    "\"nccl:send 0->1\"", "\"nccl:recv 1<-0\"", "\"ccomm:all_reduce\"", "\"Float\"", "\"timed_out\"",
    "\"entries\"", "\"pg_config\"", "\"ccdump_merged\"", "\"\\u0000\"", "[[4294967296, 4294967296]]",
    NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    json_t *doc = ccd_json_parse((const char *)data, size, "fuzz", err, sizeof(err));
    if (!doc) return 0;
    ccd_job_t *job = ccd_job_new();
    ccd_rank_t *r = NULL;
    /* The name ends in a rank, as PyTorch names its files. */
    if (job && ccd_load_json_doc(job, doc, "fuzz_rank_3", &r, err, sizeof(err)) == CCD_LOAD_OK) {
        if (ccd_job_add(job, r)) ccd_rank_free(r);
        else fuzz_everything(job);
    }
    ccd_job_free(job);
    json_decref(doc);
    return 0;
}

/* Seeds: the dumps in the directories given on the command line (driver.c) */
int fuzz_make_seeds(uint8_t **bufs, size_t *lens, int max)
{
    static const char seed[] =
        "{\"version\": \"2.10\", \"rank\": 1, \"pg_config\": {\"0\": {\"name\": \"0\", \"desc\": "
        "\"default_pg\", \"ranks\": \"[0, 1]\"}}, \"pg_status\": {\"0\": "
        "{\"last_enqueued_collective\": \"2\", \"last_started_collective\": \"2\", "
        "\"last_completed_collective\": \"1\"}}, \"entries\": [{\"record_id\": 0, \"pg_id\": 0, "
        "\"process_group\": [\"0\", \"default_pg\"], \"collective_seq_id\": 1, \"p2p_seq_id\": 0, "
        "\"op_id\": 1, \"profiling_name\": \"nccl:all_reduce\", \"time_created_ns\": 10, "
        "\"input_sizes\": [[4, 4]], \"input_dtypes\": [\"Float\"], \"output_sizes\": [[4, 4]], "
        "\"output_dtypes\": [\"Float\"], \"state\": \"completed\", \"is_p2p\": false}, "
        "{\"record_id\": 1, \"pg_id\": 0, \"process_group\": [\"0\", \"default_pg\"], "
        "\"collective_seq_id\": 0, \"p2p_seq_id\": 1, \"op_id\": 2, \"profiling_name\": "
        "\"nccl:send 1->0\", \"time_created_ns\": 20, \"input_sizes\": [[8]], \"state\": "
        "\"started\", \"is_p2p\": true, \"ccomm\": {\"state\": \"timed_out\", \"status\": "
        "\"ERR_TIMEOUT\", \"peer\": 0, \"time_ended_ns\": 30}}], \"ccomm\": {\"format_version\": "
        "\"1.1\", \"world_size\": 2, "
        "\"comms\": [{\"pg_id\": 0, \"comm_id\": \"0\", \"name\": \"world\", \"size\": 2, \"rank\": 1}]}}";
    if (max < 3 || !(bufs[0] = malloc(sizeof(seed)))) return 0;
    memcpy(bufs[0], seed, sizeof(seed) - 1);
    lens[0] = sizeof(seed) - 1;
    /* Issue 14, finding 4: communicators that say 2^20 ranks, an entry on each. */
    char *b = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&b, &len);
    if (!f) return 1;
    fputs("{\"version\": \"2.10\", \"rank\": 0, \"pg_config\": {}, \"entries\": [", f);
    for (int i = 0; i < 8; i++)
        fprintf(f, "%s{\"record_id\": %d, \"process_group\": [\"%d\", \"c\"], "
                   "\"collective_seq_id\": 1, \"p2p_seq_id\": 0, \"profiling_name\": "
                   "\"ccomm:all_reduce\", \"input_sizes\": [[4]]}",
                i ? ", " : "", i + 1, 100 + i);
    fputs("], \"ccomm\": {\"format_version\": \"1.1\", \"world_size\": 4, \"comms\": [", f);
    for (int i = 0; i < 8; i++)
        fprintf(f, "%s{\"pg_id\": %d, \"comm_id\": \"%d\", \"size\": 1048576, \"rank\": 0}",
                i ? ", " : "", i, 100 + i);
    fputs("]}}", f);
    fclose(f);
    bufs[1] = (uint8_t *)b, lens[1] = len;
    /* Issue 14, finding 6: many process groups (each rank in each). */
    b = NULL, len = 0;
    if (!(f = open_memstream(&b, &len))) return 2;
    fputs("{\"version\": \"2.10\", \"pg_config\": {", f);
    for (int i = 0; i < 500; i++)
        fprintf(f, "%s\"%d\": {\"name\": \"%d\", \"desc\": \"g\", \"ranks\": \"[0, 1, 2, 3]\"}",
                i ? ", " : "", i, i);
    fputs("}, \"entries\": []}", f);
    fclose(f);
    bufs[2] = (uint8_t *)b, lens[2] = len;
    return 3;
}
