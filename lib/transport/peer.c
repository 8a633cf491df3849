/*
 * peer.c - who a peer is and whether it is still alive.
 *
 * Host identity decides shm versus tcp. A host is a hostname plus a boot
 * (boot_id) plus a network namespace: two ranks in different network
 * namespaces count as different hosts, so tests can build "several hosts" on
 * one machine. Shared memory also needs the same pid namespace, since the
 * peer's pid is used for liveness (pidfd) and for process_vm_readv.
 *
 * Liveness uses pidfd_open + poll: a pidfd turns readable when the process
 * exits, even while it is a zombie nobody has reaped, which kill(pid, 0)
 * cannot tell apart from a live process.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/log.h"
#include "transport/transport.h"

#if defined(__SANITIZE_THREAD__)
_Atomic int cc__fence_word;
#endif

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* The inode of a /proc/self/ns link: namespaces are equal iff inodes are. */
static uint64_t ns_inode(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    return (uint64_t)st.st_ino;
}

static void read_boot_id(char *buf, size_t len)
{
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;
    if (fd >= 0) close(fd);
    if (n <= 0) n = 0;
    buf[n] = '\0';
    /* Drop the trailing newline so log lines and comparisons stay clean. */
    char *nl = strchr(buf, '\n');
    if (nl) *nl = '\0';
}

cc_status_t cc__peer_identity(cc__peer_info_t *info)
{
    if (gethostname(info->host, sizeof(info->host) - 1) != 0) {
        cc_log_error(CC_SUBSYS_NET, "net: gethostname failed: %s", strerror(errno));
        return CC_ERR_SYSTEM;
    }
    info->host[sizeof(info->host) - 1] = '\0';
    read_boot_id(info->boot_id, sizeof(info->boot_id));
    info->netns = ns_inode("/proc/self/ns/net");
    info->pidns = ns_inode("/proc/self/ns/pid");
    info->pid = (int32_t)getpid();
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0) {
        for (int c = 0; c < CC__PEER_CPU_WORDS * 64 && c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &cpus)) info->cpus[c / 64] |= 1ull << (c % 64);
    } else {
        info->flags |= CC__INFO_CPUS_UNKNOWN; /* EINVAL: the kernel's mask is wider */
    }
    struct stat st;
    if (stat(cc__cfg()->shm_dir, &st) == 0) {
        info->shm_dev = (uint64_t)st.st_dev;
        info->shm_ino = (uint64_t)st.st_ino;
    }
    if (getrandom(&info->nonce, sizeof(info->nonce), 0) != (ssize_t)sizeof(info->nonce)) {
        /* Not a secret, only a token against strangers: time and pid will do. */
        info->nonce = cc__realtime_ns() ^ ((uint64_t)getpid() << 32);
    }
    return CC_OK;
}

int cc__peer_same_host(const cc__peer_info_t *a, const cc__peer_info_t *b)
{
    /* An unreadable namespace (0) never matches: TCP is the safe choice. */
    return strcmp(a->host, b->host) == 0 && strcmp(a->boot_id, b->boot_id) == 0 && a->netns != 0 &&
           a->netns == b->netns && a->pidns != 0 && a->pidns == b->pidns;
}

/* How many CPUs a mask holds. */
static int cpus_count(const uint64_t *m)
{
    int n = 0;
    for (int w = 0; w < CC__PEER_CPU_WORDS; w++)
        n += __builtin_popcountll(m[w]);
    return n;
}

int cc__peer_cpu_count(const cc__peer_info_t *info)
{
    return info->flags & CC__INFO_CPUS_UNKNOWN ? -1 : cpus_count(info->cpus);
}

static int cpus_within(const uint64_t *a, const uint64_t *b) /* a is a subset of b */
{
    for (int w = 0; w < CC__PEER_CPU_WORDS; w++)
        if (a[w] & ~b[w]) return 0;
    return 1;
}

/*
 * Whether the ranks of this host can each have a CPU of their own, from their affinity
 * masks (cc__peer_info_t.cpus): not when more ranks are confined to this rank's CPUs, or to
 * the union of all of theirs, than those CPUs number. Unbound ranks (one mask for all)
 * compare their count with the mask's; ranks bound one to a CPU (mpirun --bind-to core,
 * ccrun --bind-to core, a cpuset per rank) each have their own, where comparing the host's
 * ranks with one rank's mask (1 CPU) said they share, and no wait spun: an 8-byte allreduce
 * at 2 ranks bound a core each took 1.08-1.32 us, 0.46 after (ccperf -b 8 -e 8, ccrun
 * --bind-to core; 0.46 unbound, 2026-12-06).
 * `extra`: ranks of this host outside the communicator (CCOMM_LOCAL_SIZE says how many),
 * whose masks are unknown: counted against the union only where every known mask is the same.
 */
int cc__peer_shares_cpus(const cc__peer_info_t *info, int n, int self, int extra, int *ncpu_out)
{
    const cc__peer_info_t *me = &info[self];
    uint64_t all[CC__PEER_CPU_WORDS] = {0};
    int local = 0, mine = 0, inside, same = 1;
    for (int i = 0; i < n; i++) {
        const cc__peer_info_t *q = &info[i];
        if (!cc__peer_same_host(me, q)) continue;
        if (q->flags & CC__INFO_CPUS_UNKNOWN || me->flags & CC__INFO_CPUS_UNKNOWN) return -1;
        local++;
        for (int w = 0; w < CC__PEER_CPU_WORDS; w++)
            all[w] |= q->cpus[w];
        mine += cpus_within(q->cpus, me->cpus);
        same &= memcmp(q->cpus, me->cpus, sizeof(q->cpus)) == 0;
    }
    int nall = cpus_count(all), nmine = cpus_count(me->cpus);
    inside = local + (same ? extra : 0); /* every local rank is confined to the union */
    if (same) mine += extra;
    *ncpu_out = nall;
    return mine > nmine || inside > nall;
}

int cc__peer_same_shm(const cc__peer_info_t *a, const cc__peer_info_t *b)
{
    return a->shm_ino != 0 && a->shm_dev == b->shm_dev && a->shm_ino == b->shm_ino;
}

int cc__peer_pidfd(int pid)
{
    long fd = syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (fd < 0) {
        static atomic_int logged;
        if (!atomic_exchange(&logged, 1))
            cc_log_info(CC_SUBSYS_SHM,
                        "shm: pidfd_open(%d) failed: %s; liveness falls back to kill(pid, 0), "
                        "which cannot see zombies",
                        pid, strerror(errno));
        return -1;
    }
    return (int)fd;
}

int cc__peer_dead(int pidfd, int pid)
{
    if (pidfd >= 0) {
        struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
        return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLIN | POLLHUP)) != 0;
    }
    return kill(pid, 0) != 0 && errno == ESRCH;
}

void cc__futex_wait(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000ull),
                          .tv_nsec = (long)(timeout_ns % 1000000000ull)};
    /* Shared futex (no FUTEX_PRIVATE_FLAG): the word lives in a shared mapping. */
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, expected, &ts, NULL, 0);
}

void cc__futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}
