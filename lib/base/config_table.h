/*
 * config_table.h - every CCOMM_* variable, in one place.
 *
 * X(NAME, field, TYPE, default, help, flags)
 *   NAME    the variable is CCOMM_<NAME>
 *   field   the member of struct cc__config that holds the parsed value
 *   TYPE    INT (int64_t), BOOL (int), SIZE (uint64_t, K/M/G/T suffixes), STR (const char *),
 *           ENUM (const char *: one of CC__CHOICES_<NAME>, as spelt there),
 *           LIST (uint64_t: bit i set when the i-th of CC__CHOICES_<NAME> is listed)
 * ccrun --env and docs/env.md are printed from this table. Add rows freely;
 * keep them grouped by subsystem.
 *
 * Every value is parsed and checked once, in config.c; a bad one is an error
 * at the first communicator's init (cc__config_check), naming the variable,
 * the value and, for ENUM and LIST, the choices. ENUM and LIST match
 * case-insensitively; "OLD=NEW" in a choice list is an accepted spelling of
 * NEW that is not shown. A LIST whose first choice is ALL takes ALL for every
 * other choice.
 */
#ifndef CC_BASE_CONFIG_TABLE_H
#define CC_BASE_CONFIG_TABLE_H

#include "base/log.h" /* CC__SUBSYS_MAP */

/* The choices of each ENUM and LIST row (a row without its macro does not compile). */
#define CC__CHOICES_LOG_LEVEL                                                                      \
    "NONE", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "WARNING=WARN", "VERSION=INFO"
/* Bit i + 1 is log subsystem i (CC__SUBSYS_MAP, base/log.h). */
#define CC__CFG_SUBSYS_CHOICE(name) , #name
#define CC__CHOICES_LOG_SUBSYS      "ALL" CC__SUBSYS_MAP(CC__CFG_SUBSYS_CHOICE)
#define CC__CHOICES_TRANSPORT       "auto", "tcp"
#define CC__CHOICES_CLOCK           "auto", "monotonic"
#define CC__CHOICES_DUMP_SIGNAL                                                                    \
    "NONE", "SIGUSR1", "SIGUSR2", "SIGHUP", "SIGPWR", "SIGURG", "USR1=SIGUSR1", "USR2=SIGUSR2",    \
        "HUP=SIGHUP"
/* Bits 1..5 are CC_CLOG_Q, S, E, W, A (ccomm/clog.h) shifted left by one. */
#define CC__CHOICES_CLOG_EVENTS         "ALL", "Q", "S", "E", "W", "A", "LIFECYCLE=A"
#define CC__CHOICES_GPU_TIMING          "events", "cupti", "nccl-profiler"
#define CC__CHOICES_CUDA_ALLREDUCE_ALGO "auto", "oneshot", "twoshot", "ring"

/*
 * CCOMM_ALGO_<COLL>: "auto", then the names of lib/native/select.c's rows of
 * that collective, in the table's order. base may not include native (the
 * layers), so the names are listed here and the unit test test_config_typed
 * fails when they and select.c's rows differ in either direction; lib/native
 * checks again at engine init (cc__native_check_forced).
 */
#define CC__ALGO_HELP(coll)                                                                        \
    "Algorithm of every " coll "; auto: chosen by size, ranks and transport. A shm_* one fails "   \
    "the op unless the communicator has two or more ranks, all over shared memory."
#define CC__CHOICES_ALGO_ALLREDUCE                                                                 \
    "auto", "shm_flat", "shm_stream", "shm_cma", "recursive_doubling", "halving_doubling", "ring"
#define CC__CHOICES_ALGO_BROADCAST       "auto", "shm_flat", "shm_cma", "shm_stream", "ring", "binomial"
#define CC__CHOICES_ALGO_REDUCE          "auto", "shm_flat", "shm_cma", "binomial", "ring"
#define CC__CHOICES_ALGO_ALLGATHER       "auto", "shm_flat", "shm_cma", "shm_stream", "bruck", "ring"
#define CC__CHOICES_ALGO_ALLGATHERV      "auto", "ring"
#define CC__CHOICES_ALGO_REDUCE_SCATTER  "auto", "shm_flat", "shm_cma", "recursive_doubling", "ring"
#define CC__CHOICES_ALGO_REDUCE_SCATTERV "auto", "ring"
#define CC__CHOICES_ALGO_ALLTOALL        "auto", "shm_flat", "shm_cma", "shm_stream", "bruck", "linear", "pairwise"
#define CC__CHOICES_ALGO_ALLTOALLV       "auto", "pairwise", "linear"
#define CC__CHOICES_ALGO_GATHER          "auto", "shm_flat", "shm_cma", "binomial", "linear"
#define CC__CHOICES_ALGO_GATHERV         "auto", "linear"
#define CC__CHOICES_ALGO_SCATTER         "auto", "shm_flat", "shm_cma", "binomial", "linear"
#define CC__CHOICES_ALGO_SCATTERV        "auto", "linear"
#define CC__CHOICES_ALGO_BARRIER         "auto", "shm", "dissemination"

#define CC__CONFIG_TABLE(X)                                                                        \
    /* logging */                                                                                  \
    X(LOG_LEVEL, log_level, ENUM, "WARN",                                                          \
      "Log level; WARNING and VERSION (NCCL_DEBUG's spellings) mean WARN and INFO.", 0)            \
    X(LOG_SUBSYS, log_subsys, LIST, "ALL",                                                         \
      "Subsystems to log, comma-separated; ^NAME excludes one, and a list that starts with an "    \
      "exclusion starts from ALL (^SHM,^TCP: all but those two).",                                 \
      0)                                                                                           \
    X(LOG_FILE, log_file, STR, "",                                                                 \
      "Write the log to this file instead of stderr; %h is replaced by the host name, %p by the "  \
      "pid, %r by the rank.",                                                                      \
      0)                                                                                           \
    /* launcher (set by ccrun) */                                                                  \
    X(RANK, rank, INT, "-1", "This process's rank in the world communicator.", CC_ENV_LAUNCHER)    \
    X(SIZE, size, INT, "-1", "Number of ranks in the world communicator.", CC_ENV_LAUNCHER)        \
    X(LOCAL_RANK, local_rank, INT, "-1", "This process's rank among the ranks on its host.",       \
      CC_ENV_LAUNCHER)                                                                             \
    X(LOCAL_SIZE, local_size, INT, "-1", "Number of ranks on this host.", CC_ENV_LAUNCHER)         \
    X(STORE_ADDR, store_addr, STR, "",                                                             \
      "host:port of the bootstrap store; rank 0 starts it there when the address is one of its "   \
      "host's (ccrun hosts its own). Without it: MASTER_ADDR:MASTER_PORT+1, then what the "        \
      "launcher tells (see Launchers below).",                                                     \
      CC_ENV_LAUNCHER)                                                                             \
    X(JOB_KEY, job_key, STR, "",                                                                   \
      "Secret that every store connection proves with HMAC-SHA256; ccrun makes a random one per "  \
      "job. Without it the store accepts any client of this job and a warning says so.",           \
      CC_ENV_LAUNCHER | CC_ENV_SECRET)                                                             \
    X(JOB_ID, job_id, STR, "",                                                                     \
      "Name of the job in file names (dumps, recorder rings); default: agreed at init from the "   \
      "store address and rank 0's start time.",                                                    \
      CC_ENV_LAUNCHER)                                                                             \
    /* communicators and transports */                                                             \
    X(TRANSPORT, transport, ENUM, "auto",                                                          \
      "auto: shared memory between ranks on one host, TCP between hosts; tcp: TCP everywhere.", 0) \
    X(CLOCK, clock, ENUM, "auto",                                                                  \
      "What op time stamps are read from. auto: the TSC where it is invariant and the kernel "     \
      "keeps time with it (clocksource tsc, or kvm-clock read in user space: a stamp costs half "  \
      "of clock_gettime or less; it stays within microseconds of CLOCK_MONOTONIC), else "          \
      "CLOCK_MONOTONIC; monotonic: always clock_gettime.",                                         \
      0)                                                                                           \
    X(TIMEOUT, timeout, INT, "600",                                                                \
      "Default deadline of every operation, in seconds; a communicator's config or an op's "       \
      "options may set another.",                                                                  \
      0)                                                                                           \
    X(CONNECT_TIMEOUT, connect_timeout, INT, "60",                                                 \
      "Seconds to wait for the store and for peers while a communicator is created.", 0)           \
    X(STORE_LINGER, store_linger, INT, "10",                                                       \
      "Seconds the rank that hosts the store waits, when its last communicator goes, for the "     \
      "other ranks to disconnect (they may still be creating or destroying communicators).",       \
      0)                                                                                           \
    X(SOCKET_ADDR, socket_addr, STR, "",                                                           \
      "IP address that peers use to reach this rank over TCP; default: the local address of the "  \
      "connection to the store.",                                                                  \
      0)                                                                                           \
    X(SOCKET_IFNAME, socket_ifname, STR, "",                                                       \
      "Interface whose address peers use to reach this rank over TCP, in NCCL_SOCKET_IFNAME's "    \
      "syntax: name prefixes (eth,ib), =name for exact names, ^ to exclude (^docker,lo). "         \
      "CCOMM_SOCKET_ADDR, if set, wins.",                                                          \
      0)                                                                                           \
    X(SHM_DIR, shm_dir, STR, "/dev/shm", "Directory of shared-memory segments.", 0)                \
    X(SHM_RING_SIZE, shm_ring_size, SIZE, "1M",                                                    \
      "Bytes of each shared-memory ring between two ranks (one per direction).", 0)                \
    X(SHM_MEMBARRIER, shm_membarrier, BOOL, "1",                                                   \
      "Ranks on one host publish their progress in shared-memory collectives with plain stores, "  \
      "and a rank about to sleep makes the others' CPUs pass a barrier with membarrier(2), when "  \
      "every rank can; 0: every publish is a locked instruction (the sleepers' side is free).",   \
      0)                                                                                           \
    X(SHM_CMA_THRESHOLD, shm_cma_threshold, SIZE, "64K",                                           \
      "Messages of at least this many bytes between ranks on one host are read straight from the " \
      "sender's memory (process_vm_readv, one copy); 0 turns that off: messages copy through "   \
      "the ring, shared-memory collectives through the arena or the transport's algorithms.",     \
      0)                                                                                           \
    X(TCP_CHUNK_SIZE, tcp_chunk_size, SIZE, "512K",                                                \
      "Largest piece of a message written to a TCP socket at once.", 0)                            \
    X(TCP_RNDV_THRESHOLD, tcp_rndv_threshold, STR, "auto",                                        \
      "TCP messages of at least this many bytes wait for their receive before their payload is "   \
      "sent (one round trip, no copy held aside); 0: never; auto: 256K when every rank on the "    \
      "host has a CPU of its own, 1M when they share CPUs.",                                       \
      0)                                                                                           \
    X(WAIT_SPIN_US, wait_spin_us, INT, "50",                                                       \
      "Microseconds a waiting rank polls before it starts yielding the CPU, then sleeping.", 0)    \
    X(TCP_SPIN_US, tcp_spin_us, INT, "50",                                                         \
      "Microseconds a rank whose pending requests are all TCP polls its sockets before it "        \
      "sleeps in epoll (none when the host has more ranks than CPUs); 0: it sleeps at once.",      \
      0)                                                                                           \
    X(TCP_YIELD_US, tcp_yield_us, INT, "1000",                                                     \
      "When the host has more ranks than CPUs: microseconds a rank whose pending requests are all " \
      "TCP polls its sockets and yields the CPU between polls before it sleeps in epoll; 0: it "   \
      "sleeps at once.",                                                                           \
      0)                                                                                           \
    X(PEER_CHECK_MS, peer_check_ms, INT, "100",                                                    \
      "How often a waiting rank checks that the peers it waits for are alive, in milliseconds.",   \
      0)                                                                                           \
    /* collectives (lib/native/select.c, docs/collectives.md) */                                   \
    X(ALGO_ALLREDUCE, algo_allreduce, ENUM, "auto", CC__ALGO_HELP("all_reduce"), 0)                \
    X(ALGO_BROADCAST, algo_broadcast, ENUM, "auto", CC__ALGO_HELP("broadcast"), 0)                 \
    X(ALGO_REDUCE, algo_reduce, ENUM, "auto", CC__ALGO_HELP("reduce"), 0)                          \
    X(ALGO_ALLGATHER, algo_allgather, ENUM, "auto", CC__ALGO_HELP("all_gather"), 0)                \
    X(ALGO_ALLGATHERV, algo_allgatherv, ENUM, "auto", CC__ALGO_HELP("all_gather_v"), 0)            \
    X(ALGO_REDUCE_SCATTER, algo_reduce_scatter, ENUM, "auto", CC__ALGO_HELP("reduce_scatter"), 0)  \
    X(ALGO_REDUCE_SCATTERV, algo_reduce_scatterv, ENUM, "auto", CC__ALGO_HELP("reduce_scatter_v"), \
      0)                                                                                           \
    X(ALGO_ALLTOALL, algo_alltoall, ENUM, "auto", CC__ALGO_HELP("all_to_all"), 0)                  \
    X(ALGO_ALLTOALLV, algo_alltoallv, ENUM, "auto", CC__ALGO_HELP("all_to_all_v"), 0)              \
    X(ALGO_GATHER, algo_gather, ENUM, "auto", CC__ALGO_HELP("gather"), 0)                          \
    X(ALGO_GATHERV, algo_gatherv, ENUM, "auto", CC__ALGO_HELP("gather_v"), 0)                      \
    X(ALGO_SCATTER, algo_scatter, ENUM, "auto", CC__ALGO_HELP("scatter"), 0)                       \
    X(ALGO_SCATTERV, algo_scatterv, ENUM, "auto", CC__ALGO_HELP("scatter_v"), 0)                   \
    X(ALGO_BARRIER, algo_barrier, ENUM, "auto", CC__ALGO_HELP("barrier"), 0)                       \
    X(PIPELINE_CHUNK, pipeline_chunk, STR, "auto",                                                 \
      "Piece size into which ring and chain algorithms cut large blocks, so that sending, "        \
      "receiving and reducing overlap. auto: 256K on 2 ranks, 1M on 3 or more, and the 2-rank "    \
      "ring allgather sends blocks of up to 512 KiB whole; a size (64K, 1M; 0: whole blocks) "     \
      "sets it everywhere.",                                                                       \
      0)                                                                                           \
    /* observability */                                                                            \
    X(RECORDER_DIR, recorder_dir, STR, "/dev/shm/ccomm-%u",                                        \
      "Directory of flight recorder rings: <dir>/<job id>/rank<r>.<pid>.ccfr; %u is the user id. " \
      "It and the job's directory must belong to the user and be closed to others' writes, or "    \
      "the recorder stays off (docs/security.md).",                                                \
      0)                                                                                           \
    X(RECORDER_KEEP, recorder_keep, BOOL, "0",                                                     \
      "Keep this process's ring when it exits normally with no failure recorded (no abort, dump "  \
      "or fatal signal); by default such a ring is removed at exit. ccrun sets it for its ranks "  \
      "and keeps every rank's ring when any of them recorded a failure (--keep-rings: always).",   \
      0)                                                                                           \
    X(RECORDER_ENTRIES, recorder_entries, INT, "4096",                                             \
      "Entries in each process's flight recorder ring; 0 turns the recorder off.", 0)              \
    X(SOLO_WRITER, solo_writer, BOOL, "1",                                                         \
      "While one thread of the process is the only one to issue ops and write the flight "        \
      "recorder and clog, it bumps the op and record ids and takes recorder entries and clog "   \
      "positions with plain stores; a second writing thread switches the process, once, to "     \
      "locked instructions (membarrier(2) makes the switch safe). 0: locked instructions from "   \
      "the start.",                                                                               \
      0)                                                                                           \
    X(RECORDER_STACK, recorder_stack, BOOL, "0",                                                   \
      "Record the caller's return addresses with every op (symbolised by ccdump).", 0)             \
    X(DUMP_DIR, dump_dir, STR, "./ccomm-dumps",                                                    \
      "Directory of JSON dumps: <dir>/<job id>/rank<r>.json. Both must belong to the user and be " \
      "closed to others' writes, or no dump is written.",                                          \
      0)                                                                                           \
    X(DUMP_ON_TIMEOUT, dump_on_timeout, BOOL, "1",                                                 \
      "On a timeout on any rank, every rank of the job writes its flight recorder dump.", 0)       \
    X(DUMP_SIGNAL, dump_signal, ENUM, "SIGUSR2",                                                   \
      "Signal that makes a process write its dump; NONE for none.", 0)                             \
    X(ABORT_ON_TIMEOUT, abort_on_timeout, BOOL, "0",                                               \
      "After a timeout and its dump, end the process (SIGABRT) instead of returning errors.", 0)   \
    X(FATAL_SIGNALS, fatal_signals, BOOL, "1",                                                     \
      "Catch SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT to mark the flight recorder, then pass "  \
      "them on to the previous handler or the default action.",                                    \
      0)                                                                                           \
    X(HEARTBEAT_MS, heartbeat_ms, INT, "1000",                                                     \
      "Interval of the liveness heartbeat between ranks, in milliseconds.", 0)                     \
    X(DESYNC_CHECK, desync_check, BOOL, "0",                                                       \
      "Before each collective, check that all ranks run the same op (type, count, dtype, op, "     \
      "root) at the same sequence number.",                                                        \
      0)                                                                                           \
    X(CLOG, clog, STR, "", "Write a clog event log to this path; %r rank, %p pid, %h host.", 0)    \
    X(CLOG_EVENTS, clog_events, LIST, "ALL",                                                       \
      "clog events to write, comma-separated: Q enqueued, S started, E ended, W waited on, "       \
      "A aborts and communicator lines; LIFECYCLE is A; ^NAME excludes one.",                      \
      0)                                                                                           \
    X(LTTNG, lttng, BOOL, "0", "Load the LTTng-UST tracepoint provider libccomm-lttng.so.", 0)     \
    X(LTTNG_PROVIDER, lttng_provider, STR, "libccomm-lttng.so",                                    \
      "The tracepoint provider that CCOMM_LTTNG=1 loads: a path, or a file name looked for next "  \
      "to libccomm.so, then by the dynamic loader.",                                               \
      0)                                                                                           \
    /* GPUs */                                                                                     \
    X(CUDA_PLUGIN, cuda_plugin, STR, "libccomm-cuda.so",                                           \
      "The CUDA plugin to load for device communicators (path or name).", 0)                       \
    X(NCCL_LIB, nccl_lib, STR, "libnccl.so.2", "The NCCL library the nccl engine opens.", 0)       \
    X(GPU_TIMING, gpu_timing, ENUM, "events",                                                      \
      "Source of GPU op times: events (CUDA events), cupti, or nccl-profiler.", 0)                 \
    X(GPU_POLL_US, gpu_poll_us, INT, "50",                                                         \
      "Microseconds between two looks of the GPU op tracker at the CUDA events of ops in flight.", \
      0)                                                                                           \
    X(CUPTI_LIB, cupti_lib, STR, "libcupti.so",                                                    \
      "The CUPTI library opened for CCOMM_GPU_TIMING=cupti (path or name).", 0)                    \
    X(CUDA_IPC_BYTES, cuda_ipc_bytes, SIZE, "8M",                                                  \
      "Bytes of each data slot the native CUDA engine shares with the ranks on its node through "  \
      "CUDA IPC (three slots per rank); larger ops run in rounds of a slot.",                      \
      0)                                                                                           \
    X(CUDA_ALLREDUCE_ALGO, cuda_allreduce_algo, ENUM, "auto",                                      \
      "Native CUDA all-reduce: auto (one-shot up to 256 KiB, two-shot up to 16 MiB, then ring), "  \
      "oneshot, twoshot or ring.",                                                                 \
      0)                                                                                           \
    X(CUDART_LIB, cudart_lib, STR, "",                                                             \
      "The CUDA runtime the NCCL interposer uses for its events; default: the program's own "      \
      "(libcudart.so.13, .12, ...).",                                                              \
      0)

/*
 * Variables of other launchers that init reads (never CCOMM_*). Only
 * config.c reads the environment. X(NAME, field)
 */
#define CC__LAUNCHER_TABLE(X)                                                                      \
    X(RANK, t_rank)                                                                                \
    X(WORLD_SIZE, t_world_size)                                                                    \
    X(LOCAL_RANK, t_local_rank)                                                                    \
    X(LOCAL_WORLD_SIZE, t_local_world_size)                                                        \
    X(MASTER_ADDR, t_master_addr)                                                                  \
    X(MASTER_PORT, t_master_port)                                                                  \
    X(TORCHELASTIC_RUN_ID, t_run_id)                                                               \
    X(SLURM_PROCID, slurm_procid)                                                                  \
    X(SLURM_NTASKS, slurm_ntasks)                                                                  \
    X(SLURM_LOCALID, slurm_localid)                                                                \
    X(SLURM_JOB_ID, slurm_job_id)                                                                  \
    X(SLURM_STEP_ID, slurm_step_id)                                                                \
    X(SLURM_STEPID, slurm_stepid)                                                                  \
    X(SLURM_STEP_NUM_TASKS, slurm_step_num_tasks)                                                  \
    X(SLURM_STEP_NODELIST, slurm_step_nodelist)                                                    \
    X(SLURM_JOB_NODELIST, slurm_job_nodelist)                                                      \
    X(SLURM_NODELIST, slurm_nodelist)                                                              \
    X(OMPI_COMM_WORLD_RANK, ompi_rank)                                                             \
    X(OMPI_COMM_WORLD_SIZE, ompi_size)                                                             \
    X(OMPI_COMM_WORLD_LOCAL_RANK, ompi_local_rank)                                                 \
    X(OMPI_COMM_WORLD_LOCAL_SIZE, ompi_local_size)                                                 \
    X(OMPI_MCA_orte_hnp_uri, ompi_hnp_uri)                                                         \
    X(OMPI_MCA_ess_base_jobid, ompi_jobid)                                                         \
    X(PMIX_NAMESPACE, pmix_namespace)                                                              \
    X(PMI_RANK, pmi_rank)                                                                          \
    X(PMI_SIZE, pmi_size)                                                                          \
    X(MPI_LOCALRANKID, mpi_local_rank)                                                             \
    X(MPI_LOCALNRANKS, mpi_local_size)                                                             \
    X(HOME, home)                                                                                  \
    X(XDG_CACHE_HOME, xdg_cache_home)

#endif /* CC_BASE_CONFIG_TABLE_H */
