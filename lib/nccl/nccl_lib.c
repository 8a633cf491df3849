/*
 * nccl_lib.c - open NCCL with dlopen and translate between ccomm and NCCL
 * (see nccl_lib.h).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "nccl/nccl_lib.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static cc__nccl_lib_t g_lib;
static int g_state;               /* 0 not tried, 1 open, -1 failed */
static cc_status_t g_fail_status; /* why it failed */

struct sym {
    const char *name;
    size_t off;
    int required;
};

#define SYM(field, req)                                                                            \
    {                                                                                              \
        "nccl" #field, offsetof(cc__nccl_lib_t, field), req                                        \
    }
static const struct sym syms[] = {
    SYM(GetVersion, 1),
    SYM(GetErrorString, 1),
    SYM(GetUniqueId, 1),
    SYM(CommInitRank, 1),
    SYM(CommDestroy, 1),
    SYM(CommAbort, 1),
    SYM(CommGetAsyncError, 1),
    SYM(AllReduce, 1),
    SYM(Broadcast, 1),
    SYM(Send, 1),
    SYM(Recv, 1),
    SYM(GroupStart, 1),
    SYM(GroupEnd, 1),
    SYM(GetLastError, 0),
    SYM(CommInitRankConfig, 0),
    SYM(CommInitAll, 0),
    SYM(CommSplit, 0),
    SYM(CommFinalize, 0),
    SYM(CommCount, 0),
    SYM(CommCuDevice, 0),
    SYM(CommUserRank, 0),
    SYM(RedOpCreatePreMulSum, 0),
    SYM(RedOpDestroy, 0),
    SYM(Reduce, 0),
    SYM(Bcast, 0),
    SYM(AllGather, 0),
    SYM(ReduceScatter, 0),
    SYM(AlltoAll, 0),
    SYM(Gather, 0),
    SYM(Scatter, 0),
};
#undef SYM

/* Is `addr` inside the object that holds `self`? (An interposer must not forward to itself.) */
static int same_object(const void *addr, const void *self)
{
    Dl_info a, b;
    if (!self || !dladdr(addr, &a) || !dladdr(self, &b)) return 0;
    return a.dli_fbase == b.dli_fbase;
}

static cc_status_t fill(cc__nccl_lib_t *l, const void *self)
{
    char missing[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        void *p = dlsym(l->handle, syms[i].name);
        if (p && same_object(p, self)) {
            cc_log_error(CC_SUBSYS_NCCL,
                         "nccl library %s resolves %s to ccomm's own interposer: "
                         "CCOMM_NCCL_LIB must name the real NCCL",
                         l->path, syms[i].name);
            return CC_ERR_NOT_SUPPORTED;
        }
        memcpy((char *)l + syms[i].off, &p, sizeof(p));
        if (!p && syms[i].required && used < sizeof(missing) - 1)
            used += (size_t)snprintf(missing + used, sizeof(missing) - used, "%s%s",
                                     used ? ", " : "", syms[i].name);
    }
    if (missing[0]) {
        cc_log_error(CC_SUBSYS_NCCL, "nccl library %s lacks %s: not an NCCL 2.x library", l->path,
                     missing);
        return CC_ERR_NOT_SUPPORTED;
    }
    l->host = dlsym(l->handle, CCOMM_HOST_NCCL_SYMBOL);
    if (l->host && (l->host->version != 1 || !l->host->event_create || !l->host->event_query)) {
        cc_log_error(CC_SUBSYS_NCCL, "nccl library %s has an unusable %s (version %d)", l->path,
                     CCOMM_HOST_NCCL_SYMBOL, l->host->version);
        return CC_ERR_NOT_SUPPORTED;
    }
    if (l->GetVersion(&l->version) != ncclSuccess || l->version < 21000) {
        cc_log_error(CC_SUBSYS_NCCL, "nccl library %s is version %d; ccomm needs 2.10 or newer",
                     l->path, l->version);
        return CC_ERR_NOT_SUPPORTED;
    }
    return CC_OK;
}

cc_status_t cc__nccl_lib_open(const char *path, const void *self, const cc__nccl_lib_t **out)
{
    pthread_mutex_lock(&g_lock);
    if (g_state == 0) {
        snprintf(g_lib.path, sizeof(g_lib.path), "%s", path);
        g_lib.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        cc_status_t st = CC_ERR_NOT_SUPPORTED;
        if (!g_lib.handle) {
            const char *e = dlerror();
            cc_log_error(CC_SUBSYS_NCCL, "cannot open the nccl library %s (CCOMM_NCCL_LIB): %s",
                         path, e ? e : "?");
        } else {
            st = fill(&g_lib, self);
        }
        g_state = st == CC_OK ? 1 : -1;
        g_fail_status = st;
        if (st == CC_OK)
            cc_log_info(CC_SUBSYS_NCCL, "nccl %d from %s%s", g_lib.version, path,
                        g_lib.host ? " (host-memory NCCL: no CUDA)" : "");
    }
    cc_status_t st = g_state == 1 ? CC_OK : g_fail_status;
    pthread_mutex_unlock(&g_lock);
    if (st == CC_OK) *out = &g_lib;
    return st;
}

const cc__nccl_lib_t *cc__nccl_lib_get(void)
{
    pthread_mutex_lock(&g_lock);
    const cc__nccl_lib_t *l = g_state == 1 ? &g_lib : NULL;
    pthread_mutex_unlock(&g_lock);
    return l;
}

cc_status_t cc__nccl_status(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess:
    case ncclInProgress:
        return CC_OK;
    case ncclInvalidArgument:
        return CC_ERR_INVALID_ARG;
    case ncclInvalidUsage:
        return CC_ERR_INVALID_USAGE;
    case ncclRemoteError:
        return CC_ERR_PEER_LOST;
    case ncclSystemError:
        return CC_ERR_SYSTEM;
    case ncclUnhandledCudaError:
        return CC_ERR_INTERNAL;
    default:
        return CC_ERR_INTERNAL;
    }
}

const char *cc__nccl_errstr(const cc__nccl_lib_t *lib, ncclResult_t r)
{
    const char *s = lib && lib->GetErrorString ? lib->GetErrorString(r) : NULL;
    return s ? s : "unknown nccl result";
}

/*
 * Indexed by cc_dtype_t (CC_DTYPE_MAP order). NCCL has no 16-bit integer: int16 and uint16
 * travel as float16, the same 2-byte element, which NCCL copies without looking at the bits;
 * cc__nccl_redop refuses to reduce them. cc__nccl_dtype_back finds float16 first.
 */
static const ncclDataType_t dtypes[CC_DTYPE_COUNT] = {
    ncclInt8,    ncclUint8,    ncclInt32,   ncclUint32,  ncclInt64,   ncclUint64,
    ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64, ncclFloat16, ncclFloat16,
};
_Static_assert(CC_INT8 == 0 && CC_BFLOAT16 == 7 && CC_FLOAT64 == 9 && CC_UINT16 == 11 &&
                   CC_DTYPE_COUNT == 12,
               "dtype table order");

ncclDataType_t cc__nccl_dtype(cc_dtype_t dtype)
{
    return (unsigned)dtype < CC_DTYPE_COUNT ? dtypes[dtype] : ncclUint8;
}

cc_dtype_t cc__nccl_dtype_back(ncclDataType_t t)
{
    for (int i = 0; i < CC_DTYPE_COUNT; i++)
        if (dtypes[i] == t) return (cc_dtype_t)i;
    return CC_DTYPE_COUNT;
}

cc_status_t cc__nccl_redop(cc_redop_t op, cc_dtype_t dtype, ncclRedOp_t *out)
{
    if (dtype == CC_INT16 || dtype == CC_UINT16) {
        cc_log_error(CC_SUBSYS_NCCL,
                     "nccl has no 16-bit integer type: cannot %s dtype %s; use the native "
                     "engine (config->engine = \"native\") or a wider integer",
                     cc_redop_name(op), cc_dtype_name(dtype));
        return CC_ERR_NOT_SUPPORTED;
    }
    switch (op) {
    case CC_SUM:
        *out = ncclSum;
        return CC_OK;
    case CC_PROD:
        *out = ncclProd;
        return CC_OK;
    case CC_MIN:
        *out = ncclMin;
        return CC_OK;
    case CC_MAX:
        *out = ncclMax;
        return CC_OK;
    case CC_AVG:
        *out = ncclAvg;
        return CC_OK;
    case CC_PREMUL_SUM:
        *out = ncclSum;
        return CC_OK; /* the caller makes the real operator */
    default:
        cc_log_error(CC_SUBSYS_NCCL,
                     "nccl has no %s reduction (on %s): use the native engine "
                     "(config->engine = \"native\")",
                     cc_redop_name(op), cc_dtype_name(dtype));
        return CC_ERR_NOT_SUPPORTED;
    }
}

cc_redop_t cc__nccl_redop_back(ncclRedOp_t op)
{
    switch (op) {
    case ncclSum:
        return CC_SUM;
    case ncclProd:
        return CC_PROD;
    case ncclMin:
        return CC_MIN;
    case ncclMax:
        return CC_MAX;
    case ncclAvg:
        return CC_AVG;
    default:
        return CC_PREMUL_SUM; /* operators made by ncclRedOpCreatePreMulSum */
    }
}
