/*
 * shim.c - the core's internal names, forwarded through cc_core_t (see
 * shim.h). The log level and mask are copied at init: the core reads them
 * from CCOMM_LOG_LEVEL / CCOMM_LOG_SUBSYS once, before any plugin loads.
 */
#include <stdio.h>
#include <string.h>

#include "base/build_id.h"
#include "base/config.h"
#include "core/door.h"
#include "base/log.h"
#include "cuda/shim.h"

const cc_core_t *cc__core;
_Atomic int cc__log_level = CC_LOG_LEVEL_WARN;
_Atomic uint32_t cc__log_mask = CC_SUBSYS_ALL;

cc_status_t cc__shim_init(const cc_core_t *core)
{
    if (core && cc__core == core) return CC_OK;
    /* Same build or nothing: this code reads the core's structs as its own headers
     * lay them out (plugin.h). */
    if (!core || !core->build_id || strcmp(core->build_id, CC_BUILD_ID)) {
        /* No logger yet: the core's is what we failed to adopt. */
        fprintf(stderr,
                "ccomm: plugin of build %s refuses libccomm of build %s: plugins are "
                "built with the core; rebuild both from the same tree\n",
                CC_BUILD_ID,
                !core            ? "(no core)"
                : core->build_id ? core->build_id
                                 : "(none)");
        return CC_ERR_NOT_SUPPORTED;
    }
    cc__log_level = core->log_level();
    cc__log_mask = core->log_mask();
    cc__core = core;
    return CC_OK;
}

void cc__log_write(int level, uint32_t subsys, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cc__log_vwrite(level, subsys, fmt, ap);
    va_end(ap);
}

void cc__log_vwrite(int level, uint32_t subsys, const char *fmt, va_list ap)
{
    if (cc__core)
        cc__core->log_vwrite(level, subsys, fmt, ap);
    else
        vfprintf(stderr, fmt, ap), fputc('\n', stderr);
}

void cc__log_count_error(void)
{
    if (cc__core) cc__core->log_count_error();
}

/* Through the core, so cc_last_error on this thread says what the plugin said. */
void cc__log_verror(uint32_t subsys, const char *fmt, va_list ap)
{
    if (cc__core) {
        cc__core->log_verror(subsys, fmt, ap);
        return;
    }
    if (cc__log_on(CC_LOG_LEVEL_ERROR, subsys)) cc__log_vwrite(CC_LOG_LEVEL_ERROR, subsys, fmt, ap);
}

void cc__log_error(uint32_t subsys, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cc__log_verror(subsys, fmt, ap);
    va_end(ap);
}

void cc__log_set_comm(const char *name)
{
    if (cc__core) cc__core->log_set_comm(name);
}

const struct cc__config *cc__cfg(void)
{
    return cc__core->cfg();
}

void cc__op_started_at(cc__op_t *op, uint64_t t_ns)
{
    cc__core->op_started(op, t_ns);
}

void cc__op_finished_at(cc__op_t *op, cc_status_t status, uint64_t t_ns)
{
    cc__core->op_finished(op, status, t_ns);
}

void cc__op_started(cc__op_t *op)
{
    cc__core->op_started(op, 0);
}

void cc__op_finished(cc__op_t *op, cc_status_t status)
{
    cc__core->op_finished(op, status, 0);
}

void cc__core_comm_fail(cc_comm_t *comm, cc_status_t status, const char *why)
{
    cc__core->comm_fail(comm, status, why);
}
