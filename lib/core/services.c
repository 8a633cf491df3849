/* services.c - start the process-wide services once (see services.h). */
#include <pthread.h>
#include <string.h>

#include "clog/clog_internal.h"
#include "base/clock.h"
#include "base/config.h"
#include "base/log.h"
#include "base/lttng.h"
#include "recorder/recorder.h"
#include "core/services.h"
#include "core/watchdog.h"

void cc__signals_install(void);

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_started;

void cc__services_start(cc__world_t *world, int world_rank, int world_size)
{
    pthread_mutex_lock(&g_lock);
    if (g_started) {
        pthread_mutex_unlock(&g_lock);
        return;
    }
    g_started = 1;
    cc__log_set_rank(world_rank);
    /* Before COMM_INIT is stamped; TSC stamps begin 20 ms later. */
    cc__clock_init(strcmp(cc__cfg()->clock, "monotonic") != 0);
    cc__lttng_load(); /* CCOMM_LTTNG=1 or LD_PRELOAD: tracepoints subscribe before COMM_INIT */
    /* The recorder first: it must see this world's COMM_INIT pass the door. */
    if (cc__recorder_open(world_rank, world_size, world->job_id) != CC_OK)
        cc_log_warn(CC_SUBSYS_RECORDER, "flight recorder is off for this process");
    /* clog likewise (CCOMM_CLOG): its new_comm line for the world comes from COMM_INIT. */
    if (cc__clog_auto_open(world_rank) != CC_OK)
        cc_log_warn(CC_SUBSYS_CLOG, "clog is off for this process");
    cc__watchdog_start(world, world_rank, world_size);
    if (cc__cfg()->fatal_signals) cc__signals_install();
    pthread_mutex_unlock(&g_lock);
}
