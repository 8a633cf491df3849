/*
 * fuzz_pickle.c - bytes as a pickle dump (fuzz.h): ccdump's pickle reader,
 * then, for what it accepts, the writer (whose output must read back as the
 * same document) and the PyTorch dump loader and everything after it.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "load.h"
#include "pickle.h"

const char *const fuzz_dictionary[] = {"\x80\x02",
                                       "\x80\x04",
                                       "\x80\x05",
                                       "\x95",
                                       "\x94",
                                       "\x8c\x07version",
                                       "\x8c\x04"
                                       "2.10",
                                       "\x8c\x07"
                                       "entries",
                                       "\x8c\x09pg_config",
                                       "}",
                                       "]",
                                       ")",
                                       "(",
                                       "u",
                                       "e",
                                       "s",
                                       "a",
                                       "t",
                                       "h\x00",
                                       "q\x00",
                                       "j\x00\x00\x00\x00",
                                       "r\xff\xff\xff\xff",
                                       "\x8a\x08",
                                       "\x8a\x09",
                                       "\x8b",
                                       "X\xff\xff\xff\x7f",
                                       "\x8d\x00\x00\x00\x00\x00\x00\x00\x80",
                                       "\x88",
                                       "\x89",
                                       "N",
                                       "K\x03",
                                       "J\xff\xff\xff\xff",
                                       "G",
                                       "c",
                                       "\x93",
                                       "R",
                                       NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    json_t *doc = ccd_pickle_parse(data, size, err, sizeof(err));
    if (!doc) {
        if (strncmp(err, "pickle: ", 8)) abort(); /* every refusal explains itself */
        return 0;
    }
    ccd_pkw_t w;
    ccd_pkw_start(&w);
    if (ccd_pkw_json(&w, doc)) abort(); /* the reader bounds nesting below the writer's */
    ccd_pkw_stop(&w);
    json_t *back = w.oom ? NULL : ccd_pickle_parse(w.buf, w.len, err, sizeof(err));
    if (!w.oom && (!back || !json_equal(doc, back))) abort();
    json_decref(back);
    ccd_pkw_free(&w);
    ccd_job_t *job = ccd_job_new();
    ccd_rank_t *r = NULL;
    if (job && ccd_load_json_doc(job, doc, "fuzz_rank_3", &r, err, sizeof(err)) == CCD_LOAD_OK) {
        if (ccd_job_add(job, r))
            ccd_rank_free(r);
        else
            fuzz_everything(job);
    }
    ccd_job_free(job);
    json_decref(doc);
    return 0;
}

/* Seeds: a PyTorch-shaped dump from the writer (protocol 2), and a protocol 4
 * pickle with a frame, memoized strings and memo references. */
int fuzz_make_seeds(uint8_t **bufs, size_t *lens, int max)
{
    static const char doc[] =
        "{\"version\": \"2.10\", \"pg_config\": {\"0\": {\"name\": \"0\", \"desc\": "
        "\"default_pg\", \"ranks\": \"[0, 1]\"}}, \"pg_status\": {\"0\": "
        "{\"last_enqueued_collective\": 2, \"last_started_collective\": 2, "
        "\"last_completed_collective\": 1}}, \"entries\": [{\"record_id\": 0, \"pg_id\": 0, "
        "\"process_group\": [\"0\", \"default_pg\"], \"collective_seq_id\": 1, \"p2p_seq_id\": 0, "
        "\"op_id\": 1, \"profiling_name\": \"nccl:all_reduce\", \"time_created_ns\": "
        "1764500000000000000, \"duration_ms\": 0.25, \"input_sizes\": [[4, 4]], "
        "\"input_dtypes\": [\"Float\"], \"output_sizes\": [[4, 4]], \"output_dtypes\": "
        "[\"Float\"], \"state\": \"completed\", \"time_discovered_started_ns\": null, "
        "\"retired\": true, \"is_p2p\": false, \"frames\": [{\"name\": \"f\", \"filename\": "
        "\"a.py\", \"line\": 3}]}, {\"record_id\": 1, \"pg_id\": 0, \"process_group\": [\"0\", "
        "\"default_pg\"], \"collective_seq_id\": 0, \"p2p_seq_id\": 1, \"op_id\": 2, "
        "\"profiling_name\": \"nccl:send 1->0\", \"time_created_ns\": 20, \"input_sizes\": [[8]], "
        "\"state\": \"started\", \"is_p2p\": true}]}";
    static const unsigned char p4[] = {
        0x80, 4,   0x95, 44,   0,   0,   0,    0,    0,    0,    0,    '}', 0x94, '(',
        0x8c, 7,   'v',  'e',  'r', 's', 'i',  'o',  'n',  0x94, 0x8c, 4,   '2',  '.',
        '1',  '0', 0x94, 0x8c, 1,   'l', 0x94, ']',  0x94, '(',  'K',  1,   0x8a, 8,
        0,    0,   0,    0,    0,   0,   0,    0x40, 'h',  1,    'e',  'u', '.'};
    int n = 0;
    json_t *j = json_loads(doc, 0, NULL);
    ccd_pkw_t w;
    ccd_pkw_start(&w);
    if (j && !ccd_pkw_json(&w, j)) {
        ccd_pkw_stop(&w);
        if (!w.oom && n < max) {
            bufs[n] = w.buf, lens[n++] = w.len;
            w.buf = NULL;
        }
    }
    ccd_pkw_free(&w);
    json_decref(j);
    if (n < max && (bufs[n] = malloc(sizeof(p4)))) {
        memcpy(bufs[n], p4, sizeof(p4));
        lens[n++] = sizeof(p4);
    }
    return n;
}
