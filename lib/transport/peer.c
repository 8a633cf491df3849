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
