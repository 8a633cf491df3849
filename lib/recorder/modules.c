/*
 * modules.c - the module table and stack capture.
 *
 * Return addresses mean nothing without the load addresses of the modules
 * they fall in, and a dead process cannot be asked: the table is copied into
 * the ring so that ccdump can map an address to (module path, file offset,
 * build id) and look the symbol up in the file on disk.
 */
#include <elf.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "recorder/modules.h"

/* cc__fr_stack_capture and the recorder's PRE (cc__recorder_do_pre or cc__recorder_do_pre_start) */
#define SKIP_FRAMES 2

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

struct scan {
    cc__fr_ring_t *r;
    unsigned added;
};

/* The GNU build id from the module's PT_NOTE segments, if any. */
static uint32_t build_id(const struct dl_phdr_info *info, uint8_t *out, uint32_t cap)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        const unsigned char *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
            size_t name = (nh->n_namesz + 3) & ~3u, desc = (nh->n_descsz + 3) & ~3u;
            const unsigned char *d = p + sizeof(*nh) + name;
            if (d + desc > end) break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                !memcmp(p + sizeof(*nh), "GNU", 4)) {
                uint32_t n = nh->n_descsz < cap ? nh->n_descsz : cap;
                memcpy(out, d, n);
                return n;
            }
            p = d + desc;
        }
    }
    return 0;
}

/* Is this module (same load address and path) already in the table? */
static int known(const cc__fr_ring_t *r, uint64_t n, uint64_t load, const char *path)
{
    for (uint64_t i = 0; i < n; i++)
        if (r->modules[i].load_addr == load && !strcmp(r->modules[i].path, path)) return 1;
    return 0;
}

static int add_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct scan *sc = arg;
    cc__fr_ring_t *r = sc->r;
    uint64_t n = __atomic_load_n(&r->hdr->module_count, __ATOMIC_RELAXED);
    if (n >= r->hdr->module_capacity) return 1;
    char path[sizeof(r->modules[0].path)] = "";
    if (info->dlpi_name && info->dlpi_name[0]) {
        strncpy(path, info->dlpi_name, sizeof(path) - 1);
    } else if (n == 0) {
        /* The main program has no name here; ask the kernel once. */
        ssize_t len = readlink("/proc/self/exe", path, sizeof(path) - 1);
        path[len > 0 ? len : 0] = '\0';
    }
    if (known(r, n, (uint64_t)info->dlpi_addr, path)) return 0;
    cc__fr_module_t *m = &r->modules[n];
    memset(m, 0, sizeof(*m));
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo) lo = a;
        if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
    }
    m->load_addr = info->dlpi_addr;
    m->start = lo == UINT64_MAX ? 0 : lo;
    m->end = hi;
    m->build_id_len = build_id(info, m->build_id, sizeof(m->build_id));
    memcpy(m->path, path, sizeof(m->path));
    __atomic_store_n(&r->hdr->module_count, n + 1, __ATOMIC_RELEASE);
    sc->added++;
    (void)size;
    return 0;
}

unsigned cc__fr_modules_scan(cc__fr_ring_t *r)
{
    struct scan sc = {r, 0};
    pthread_mutex_lock(&g_lock);
    dl_iterate_phdr(add_one, &sc);
    pthread_mutex_unlock(&g_lock);
    if (sc.added)
        cc_log_debug(CC_SUBSYS_RECORDER, "recorder: %u modules added to the table of %s", sc.added,
                     r->path);
    return sc.added;
}

void cc__fr_modules_after_fork(void)
{
    pthread_mutex_init(&g_lock, NULL);
}

void cc__fr_stack_prepare(void)
{
    void *pc[2];
    backtrace(pc, 2); /* glibc loads libgcc_s on the first call */
}

__attribute__((noinline)) unsigned cc__fr_stack_capture(uint64_t *frames, unsigned depth)
{
    void *pc[CC__FR_MAX_FRAMES + SKIP_FRAMES + 2];
    if (depth > CC__FR_MAX_FRAMES) depth = CC__FR_MAX_FRAMES;
    int n = backtrace(pc, (int)depth + SKIP_FRAMES + 2);
    /* Start after the caller's frame, found near its return address (a
     * sanitizer's backtrace interceptor adds a frame and may report pc - 1). */
    int first = SKIP_FRAMES;
    uintptr_t caller = (uintptr_t)__builtin_return_address(0);
    for (int i = 0; i < n && i < SKIP_FRAMES + 2; i++)
        if ((uintptr_t)pc[i] + 16 >= caller && (uintptr_t)pc[i] <= caller + 16) first = i + 1;
    unsigned out = 0;
    for (int i = first; i < n && out < depth; i++)
        frames[out++] = (uint64_t)(uintptr_t)pc[i];
    return out;
}
