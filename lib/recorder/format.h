/*
 * format.h - the on-disk layout of a flight recorder ring file (.ccfr).
 *
 * Shared by the writer (ring.c, in every process) and the readers (reader.c,
 * ccdump). Every multi-byte field is host-endian and naturally aligned; the
 * file is read on the host that wrote it. The full description, with the
 * seqlock protocol and the versioning rules, is docs/recorder-format.md:
 * change both together.
 *
 *   0        header (cc__fr_header_t, 1 KiB)
 *   comm_off   comm table: comm_capacity records of cc__fr_comm_t
 *   rank_off   rank pool: rank_capacity int32 world ranks
 *   module_off module table: module_capacity records of cc__fr_module_t
 *   header_size  slot 0 .. slot capacity-1, entry_size bytes each
 *
 * Words that change after the file is published (the "live" fields) are
 * 64-bit and written with atomic stores, so a reader may copy them while
 * writers run.
 */
#ifndef CC_RECORDER_FORMAT_H
#define CC_RECORDER_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/types.h"

#define CC__FR_MAGIC         "CCFRING" /* 8 bytes with the NUL */
#define CC__FR_VERSION_MAJOR 1u        /* bumped when a field changes meaning or place */
#define CC__FR_VERSION_MINOR 2u        /* bumped when a field is added in reserved space */
#define CC__FR_HEADER_BYTES  1024      /* sizeof(cc__fr_header_t) */
#define CC__FR_ENTRY_BYTES   256       /* sizeof(cc__fr_entry_t), without frames */
#define CC__FR_COMM_BYTES    256       /* sizeof(cc__fr_comm_t) */
#define CC__FR_MODULE_BYTES  320       /* sizeof(cc__fr_module_t) */
#define CC__FR_MAX_FRAMES    32        /* largest stack_depth a writer uses and a reader accepts */
#define CC__FR_NO_COMM       0xffffu   /* cc__fr_entry_t.comm_slot of an unregistered comm */

/*
 * The entry's dtype byte. Formats 1.0 and 1.1 stored the cc_dtype_t, and "none" as the
 * CC_DTYPE_COUNT of the time: 10. Dtypes appended to the enum since (int16, uint16) would
 * collide with that 10, so the byte is a code: dtypes below 10 as they are, 10 = none,
 * later dtypes one above their enum value (1.2). Old files read the same; an old reader
 * rejects the new codes as an unknown dtype rather than misnaming them.
 */
#define CC__FR_DTYPE_OLD_COUNT 10u
#define CC__FR_DTYPE_NONE      CC__FR_DTYPE_OLD_COUNT
#define CC__FR_DTYPE_CODES     (CC_DTYPE_COUNT + 1u) /* codes 0 .. CC_DTYPE_COUNT */
_Static_assert(CC_FLOAT64 + 1 == CC__FR_DTYPE_OLD_COUNT, "the dtypes of format 1.1 end at f64");

/* Out-of-range values store as none, so readers never reject an entry the door let through. */
static inline uint8_t cc__fr_dtype_code(unsigned dtype)
{
    if (dtype < CC__FR_DTYPE_OLD_COUNT) return (uint8_t)dtype;
    return dtype < CC_DTYPE_COUNT ? (uint8_t)(dtype + 1) : (uint8_t)CC__FR_DTYPE_NONE;
}

/* The cc_dtype_t of a code below CC__FR_DTYPE_CODES; CC_DTYPE_COUNT for none. */
static inline unsigned cc__fr_dtype_of(uint8_t code)
{
    if (code < CC__FR_DTYPE_OLD_COUNT) return code;
    return code == CC__FR_DTYPE_NONE ? (unsigned)CC_DTYPE_COUNT : code - 1u;
}

/* Entry states. FREE is an empty slot; the last three are failed ends. */
enum cc__fr_state {
    CC__FR_FREE = 0,
    CC__FR_SCHEDULED, /* passed the PRE chain */
    CC__FR_STARTED,   /* the engine began moving data */
    CC__FR_COMPLETED, /* finished with CC_OK */
    CC__FR_FAILED,    /* finished with another error */
    CC__FR_TIMED_OUT, /* finished with CC_ERR_TIMEOUT */
    CC__FR_ABORTED,   /* finished with CC_ERR_ABORTED */
    CC__FR_STATE_COUNT
};

/* cc__fr_entry_t.flags */
#define CC__FR_EF_ABORT_SEEN 0x1u /* its comm's ABORT chain ran while the op was unfinished */
#define CC__FR_EF_VETOED     0x2u /* a PRE hook vetoed it (POST came without START) */

/* cc__fr_comm_t.flags */
#define CC__FR_CF_DESTROYED  0x1u
#define CC__FR_CF_ABORTED    0x2u
#define CC__FR_CF_RANKS_FULL 0x4u /* the rank pool was full: members not recorded */

/*
 * The file header. Identity and geometry are written once at open, before
 * `magic`; a reader that sees the magic sees all of them. The live words
 * start at offset 512 (next_record_id alone on its cache line: every PRE
 * adds to it).
 */
typedef struct cc__fr_header {
    char magic[8];          /* CC__FR_MAGIC, written last at open */
    uint16_t version_major; /* CC__FR_VERSION_MAJOR */
    uint16_t version_minor; /* CC__FR_VERSION_MINOR */
    uint32_t header_size;   /* offset of slot 0; multiple of 4096 */
    uint32_t entry_size;    /* bytes per slot: 256 + frames, multiple of 64 */
    uint32_t capacity;      /* slots in the ring, >= 1 */
    uint32_t stack_depth;   /* frame words after each entry (0 = no stacks) */
    uint32_t flags;         /* reserved, 0 */
    uint64_t file_size;     /* header_size + capacity * entry_size */
    int32_t rank;           /* world rank */
    int32_t world_size;
    int32_t pid;
    uint32_t header_struct;     /* CC__FR_HEADER_BYTES as written */
    uint64_t realtime_base_ns;  /* CLOCK_REALTIME read next to ... */
    uint64_t monotonic_base_ns; /* ... this CLOCK_MONOTONIC reading: realtime = t - mono + real */
    uint64_t comm_off;          /* comm table */
    uint32_t comm_capacity;     /* records */
    uint32_t comm_size;         /* bytes per record, >= CC__FR_COMM_BYTES */
    uint64_t rank_off;          /* rank pool (int32 world ranks) */
    uint32_t rank_capacity;     /* int32 slots */
    uint32_t reserved0;
    uint64_t module_off;      /* module table */
    uint32_t module_capacity; /* records */
    uint32_t module_size;     /* bytes per record, >= CC__FR_MODULE_BYTES */
    char host[64];            /* NUL-terminated */
    char job_id[128];         /* NUL-terminated */
    char lib_version[32];     /* "0.1.0", NUL-terminated */
    uint8_t reserved1[168];   /* zero; new fixed fields go here (minor bump) */

    /* Live words (atomic). */
    uint64_t next_record_id; /* record ids issued; the next PRE takes next_record_id + 1 */
    uint64_t pad_line[7];
    uint64_t comm_count;      /* published comm records */
    uint64_t rank_used;       /* used slots of the rank pool */
    uint64_t module_count;    /* published module records */
    uint64_t fatal_signal;    /* 0, or the fatal signal's number */
    uint64_t fatal_signal_ns; /* monotonic time of the mark */
    uint64_t dump_count;      /* JSON dumps written by the process */
    uint64_t last_dump_ns;    /* monotonic time of the last dump */
    uint64_t skipped;         /* record ids given up because their slot stayed busy */
    uint64_t dropped;         /* START/POST updates dropped (slot reused or busy) */
    uint64_t closed_ns;       /* nonzero: closed, or the process exited normally, at this time */
    uint64_t reserved2[46];   /* zero; new live words go here (minor bump) */
} cc__fr_header_t;

/*
 * A communicator. Written whole before comm_count counts it; afterwards only
 * the words from `flags` on change (atomic).
 */
typedef struct cc__fr_comm {
    uint64_t comm_id;     /* equal on all its ranks */
    uint64_t parent_id;   /* the comm it was split from, or 0 */
    char name[64];        /* NUL-terminated */
    int32_t size;         /* ranks */
    int32_t rank;         /* this process's rank in it */
    uint32_t ranks_off;   /* first member in the rank pool */
    uint32_t ranks_count; /* members recorded: size, or 0 with CC__FR_CF_RANKS_FULL */
    int32_t device;       /* CC_DEVICE_CPU or a CUDA ordinal */
    uint32_t reserved0;
    uint64_t created_ns; /* monotonic */
    uint8_t reserved1[16];
    /* Live words. */
    uint64_t flags;        /* CC__FR_CF_* */
    int64_t abort_reason;  /* cc_status_t of the abort, 0 */
    uint64_t aborted_ns;   /* monotonic */
    uint64_t destroyed_ns; /* monotonic */
    uint64_t reserved2[4];
    uint64_t last_enqueued;  /* coll_seq of the last collective past PRE */
    uint64_t last_started;   /* ... that started */
    uint64_t last_completed; /* ... that completed with CC_OK */
    uint64_t reserved3[5];
} cc__fr_comm_t;

/* A loaded module (executable or shared object), for offline symbolisation. */
typedef struct cc__fr_module {
    uint64_t load_addr;    /* dlpi_addr: file virtual address + load_addr = runtime address */
    uint64_t start;        /* lowest runtime address of its PT_LOAD segments */
    uint64_t end;          /* one past the highest */
    uint32_t build_id_len; /* 0 when the module has no GNU build id */
    uint32_t reserved0;
    uint8_t build_id[40];
    char path[240]; /* NUL-terminated; "" for the main program when unknown */
    uint8_t reserved1[8];
} cc__fr_module_t;

/*
 * One slot. `seq` is the slot's seqlock: odd while a writer holds it; each
 * completed write adds 2. Lines 0-1 are written at PRE; lines 2-3 may change
 * at START, POST and ABORT. Frames (stack_depth words) follow at offset 256.
 */
typedef struct cc__fr_entry {
    /* line 0 */
    uint64_t seq;
    uint64_t record_id; /* from 1; slot = (record_id - 1) % capacity; 0 = empty */
    uint64_t op_id;
    uint64_t comm_id;
    uint64_t coll_seq;
    uint64_t p2p_seq;
    uint64_t in_count; /* elements (sum for v-collectives) */
    uint64_t out_count;
    /* line 1 */
    uint64_t bytes;        /* the larger of input and output */
    uint64_t t_enqueue_ns; /* monotonic */
    int64_t timeout_ms;
    uint32_t tid; /* kernel thread id of the thread that issued it */
    int32_t device;
    int32_t rank; /* caller's rank in the comm */
    int32_t size; /* ranks in the comm */
    int32_t root; /* comm rank, -1 where none */
    int32_t peer; /* comm rank, -1 where none */
    int32_t tag;
    uint16_t comm_slot; /* index in the comm table, CC__FR_NO_COMM where none */
    uint8_t type;       /* cc_op_type_t */
    uint8_t dtype;      /* cc__fr_dtype_code() of the cc_dtype_t; CC__FR_DTYPE_NONE where none */
    uint8_t redop;      /* cc_redop_t; CC_REDOP_COUNT where none */
    uint8_t nframes;    /* valid frame words */
    uint8_t reserved0[6];
    /* line 2 */
    uint32_t state;      /* enum cc__fr_state */
    int32_t status;      /* cc_status_t; CC_INPROGRESS until POST */
    uint64_t t_start_ns; /* monotonic; 0 = not started */
    uint64_t t_end_ns;   /* monotonic; 0 = not finished */
    uint32_t flags;      /* CC__FR_EF_* */
    uint32_t end_tid;    /* thread that reported the end */
    char algorithm[32];  /* NUL-terminated (may be empty) */
    /* line 3 */
    char transport[16]; /* NUL-terminated */
    char engine[16];    /* NUL-terminated */
    /* Since 1.1: the true GPU times of the op's kernels (CUPTI or NCCL's
     * profiler), written when they become known, possibly after the end. */
    uint64_t gpu_start_ns; /* monotonic; 0 = unknown */
    uint64_t gpu_end_ns;   /* monotonic; 0 = unknown */
    char gpu_kernel[16];   /* what ran it: NCCL's "RING/LL128", or "cupti"; NUL-terminated */
} cc__fr_entry_t;

_Static_assert(sizeof(cc__fr_header_t) == CC__FR_HEADER_BYTES, "header size");
_Static_assert(offsetof(cc__fr_header_t, next_record_id) == 512, "live words at 512");
_Static_assert(sizeof(cc__fr_comm_t) == CC__FR_COMM_BYTES, "comm record size");
_Static_assert(offsetof(cc__fr_comm_t, last_enqueued) == 192, "pg status on its own line");
_Static_assert(sizeof(cc__fr_module_t) == CC__FR_MODULE_BYTES, "module record size");
_Static_assert(sizeof(cc__fr_entry_t) == CC__FR_ENTRY_BYTES, "entry size");
_Static_assert(offsetof(cc__fr_entry_t, state) == 128, "mutable part at line 2");
_Static_assert(offsetof(cc__fr_entry_t, transport) == 192, "line 3");
_Static_assert(offsetof(cc__fr_entry_t, gpu_start_ns) == 224, "gpu times in the old reserved bytes");

/* The byte offset of a frame word inside an entry. */
#define CC__FR_FRAME_OFF(i) (CC__FR_ENTRY_BYTES + 8 * (size_t)(i))

#endif /* CC_RECORDER_FORMAT_H */
