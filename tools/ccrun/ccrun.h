/*
 * ccrun.h - the launcher's pieces: options (main.c), launching ranks
 * (launch.c), forwarding their output (output.c), supervising them until
 * they end (supervise.c), and the environment table (envdoc.c).
 */
#ifndef CCRUN_H
#define CCRUN_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#define CCRUN_KEY_BYTES 32 /* random bytes of the job key (64 hex characters) */

/* Exit statuses of ccrun itself (a failing rank's own status is passed through). */
#define CCRUN_EXIT_USAGE     2   /* bad command line */
#define CCRUN_EXIT_SETUP     1   /* the store or the launch failed */
#define CCRUN_EXIT_TIMEOUT   124 /* --timeout expired (as timeout(1)) */
#define CCRUN_EXIT_NOT_FOUND 127 /* the program cannot be found (as the shell) */
#define CCRUN_EXIT_NO_EXEC   126 /* the program cannot be executed */

/* --bind-to: none (the default), core (one CPU per rank, round robin), auto (an equal share
 * of ccrun's CPUs per rank when they are at least as many as the ranks, else none). */
enum { CCRUN_BIND_NONE, CCRUN_BIND_CORE, CCRUN_BIND_AUTO };

struct ccrun_opts {
    int nranks;
    int64_t grace_ms;      /* after a failure, time for the other ranks to end on their own */
    int64_t term_grace_ms; /* between SIGTERM and SIGKILL */
    int64_t timeout_ms;    /* whole job; 0 = none */
    int prefix;            /* prefix output lines with "[rank] " */
    int keep_rings;        /* keep a successful job's flight recorder rings */
    char **netns;          /* rank r runs in netns[r % nnetns]; NULL = ccrun's own */
    int nnetns;
    const char *store_host;  /* bind and advertise; default 127.0.0.1 */
    const char *store_netns; /* host the store inside this namespace; "." = ccrun's own */
    int store_port;          /* 0 = any free port */
    int bind;                /* CCRUN_BIND_*: which CPUs each rank may run on */
    int report_bindings;     /* say each rank's CPUs at launch */
    char **argv;             /* the program and its arguments */
};

/* The pipe of one rank's stdout or stderr and its partial last line. */
struct ccrun_out {
    int fd;    /* read end; -1 once closed */
    int dest;  /* 1 or 2 */
    char *buf; /* bytes of an unfinished line */
    size_t len, cap;
    int midline; /* a long line was emitted in part: the rest gets no prefix */
};

struct ccrun_rank {
    int rank;
    pid_t pid;
    int alive;  /* not yet reaped */
    int status; /* wait status once reaped */
    struct ccrun_out out[2];
};

struct ccrun_job {
    const struct ccrun_opts *opts;
    struct ccrun_rank *ranks;
    int nalive;
    pid_t pgid;           /* the ranks' shared process group */
    char store_addr[300]; /* "host:port" advertised to ranks */
    char master_addr[256];
    int port;
    char key[2 * CCRUN_KEY_BYTES + 1];
    char job_id[256];
};

/* launch.c */
/* Start every rank. Returns 0, or an exit status for ccrun after printing why. */
int ccrun_launch(struct ccrun_job *job, const sigset_t *mask);
/* Start the store (inside --store-netns if asked). Returns 0 or CCRUN_EXIT_SETUP. */
int ccrun_host_store(struct ccrun_job *job, void **server);
/* The variables ccrun sets for each rank, ended by a NULL name (also printed in the docs). */
struct ccrun_var {
    const char *name;
    const char *meaning;
};
extern const struct ccrun_var ccrun_rank_vars[];

/* rings.c */
/* Before the launch: the ranks keep their rings at exit, ccrun decides for the job. */
void ccrun_rings_prepare(void);
/* Every rank exited 0: remove the job's ring directory unless a ring records a
 * failure (rings are for failures; then every rank's stays). */
void ccrun_remove_rings(const struct ccrun_job *job);

/* output.c */
/* Feed bytes read from a rank's pipe; complete lines are written out with the prefix. */
void ccrun_out_feed(struct ccrun_out *o, int rank, int prefix, const char *p, size_t n);
/* Read what the pipe holds now; at EOF (or when `final`) flush and close it. */
void ccrun_out_drain(struct ccrun_out *o, int rank, int prefix, int final);
/* Write to ccrun's own stderr: "ccrun: ..." and a newline. */
void ccrun_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* supervise.c */
/* Wait for the ranks, forwarding signals and output. Returns ccrun's exit status. */
int ccrun_supervise(struct ccrun_job *job, int sigfd);
/* Signal every rank still alive (their process group). */
void ccrun_signal_all(struct ccrun_job *job, int sig);

/* envdoc.c */
void ccrun_print_env(void);
void ccrun_print_env_markdown(void);

#endif /* CCRUN_H */
