/*
 * lttng.c - attach the LTTng-UST tracepoint provider (see lttng.h).
 *
 * Only dlopen and dlsym: the core knows no LTTng type and links no LTTng
 * library, so a process without lttng-ust installed runs unchanged. The
 * plugin is opened with RTLD_NODELETE and never closed: LTTng-UST keeps
 * pointers into a provider for as long as the process lives.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/log.h"
#include "base/lttng.h"

_Atomic(const cc__lttng_sites_v1_t *) cc__lttng_sites;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_tried;    /* cc__lttng_load ran; its answer is g_attached */
static int g_attached; /* the plugin's hooks are on the chains */
static cc__lttng_detach_fn g_detach;

static const cc__lttng_core_v1_t g_core = {
    .struct_size = sizeof(cc__lttng_core_v1_t),
    .hook_add_pre = cc_hook_add_pre,
    .hook_add_start = cc_hook_add_start,
    .hook_add_post = cc_hook_add_post,
    .hook_add_abort = cc_hook_add_abort,
    .hook_remove = cc_hook_remove,
};

/* Open one candidate file; say why at debug level when it fails. */
static void *try_open(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) cc_log_debug(CC_SUBSYS_LTTNG, "lttng: cannot load provider %s: %s", path, dlerror());
    return h;
}

/*
 * Open the provider `name`: a path as given; a bare file name first in the
 * directory of the object holding this code (libccomm.so, or the program
 * when linked statically), then through the dynamic loader's search path.
 * `used` receives the name that was opened (or tried last).
 */
static void *open_provider(const char *name, char *used, size_t len)
{
    snprintf(used, len, "%s", name);
    if (strchr(name, '/')) return try_open(name);
    Dl_info info;
    if (dladdr((void *)&cc__lttng_load, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash) {
            int n =
                snprintf(used, len, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname, name);
            if (n > 0 && (size_t)n < len) {
                void *h = try_open(used);
                if (h) return h;
            }
        }
    }
    snprintf(used, len, "%s", name);
    return try_open(name);
}

/* Find the attach/detach entry points: preloaded first, else loaded now.
 * Returns 0 with a debug line when tracing stays off. */
static int find_plugin(void **attach, void **detach, char *from, size_t len)
{
    *attach = dlsym(RTLD_DEFAULT, CC__LTTNG_ATTACH_SYM);
    if (*attach) {
        *detach = dlsym(RTLD_DEFAULT, CC__LTTNG_DETACH_SYM);
        snprintf(from, len, "the preloaded provider");
        return 1;
    }
    if (!cc__cfg()->lttng) {
        cc_log_debug(CC_SUBSYS_LTTNG, "lttng: tracing off: CCOMM_LTTNG is 0 and no provider "
                                      "is preloaded");
        return 0;
    }
    void *h = open_provider(cc__cfg()->lttng_provider, from, len);
    if (!h) {
        cc_log_debug(CC_SUBSYS_LTTNG,
                     "lttng: tracing off: provider %s (CCOMM_LTTNG_PROVIDER) "
                     "could not be loaded, or liblttng-ust is missing (see above)",
                     cc__cfg()->lttng_provider);
        return 0;
    }
    *attach = dlsym(h, CC__LTTNG_ATTACH_SYM);
    *detach = dlsym(h, CC__LTTNG_DETACH_SYM);
    if (!*attach) {
        cc_log_debug(CC_SUBSYS_LTTNG,
                     "lttng: tracing off: %s has no symbol %s: not a ccomm "
                     "tracepoint provider",
                     from, CC__LTTNG_ATTACH_SYM);
        return 0;
    }
    return 1;
}

static int attach(void)
{
    void *attach_sym = NULL, *detach_sym = NULL;
    char from[PATH_MAX];
    if (!find_plugin(&attach_sym, &detach_sym, from, sizeof(from))) return 0;
    /* dlsym returns functions as object pointers; copy the bits across. */
    cc__lttng_attach_fn fn;
    memcpy(&fn, &attach_sym, sizeof(fn));
    const cc__lttng_sites_v1_t *sites = NULL;
    cc_status_t st = fn(&g_core, &sites);
    if (st != CC_OK || !sites || sites->struct_size < sizeof(*sites)) {
        cc_log_debug(CC_SUBSYS_LTTNG, "lttng: tracing off: %s refused to attach (%s, sites %p)",
                     from, cc_status_name(st), (const void *)sites);
        return 0;
    }
    if (detach_sym) memcpy(&g_detach, &detach_sym, sizeof(g_detach));
    atomic_store_explicit(&cc__lttng_sites, sites, memory_order_release);
    cc_log_info(CC_SUBSYS_LTTNG,
                "lttng: tracepoints of %s attached; record them with "
                "`lttng enable-event -u 'ccomm:*'`",
                from);
    return 1;
}

int cc__lttng_load(void)
{
    pthread_mutex_lock(&g_lock);
    if (!g_tried) {
        g_tried = 1;
        g_attached = attach();
    }
    int on = g_attached;
    pthread_mutex_unlock(&g_lock);
    return on;
}

void cc__lttng_unload(void)
{
    pthread_mutex_lock(&g_lock);
    atomic_store_explicit(&cc__lttng_sites, NULL, memory_order_release);
    if (g_attached && g_detach) g_detach();
    g_detach = NULL;
    g_attached = 0;
    g_tried = 0;
    pthread_mutex_unlock(&g_lock);
}
