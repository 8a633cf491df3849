/* services.c - start the process-wide services once (see services.h). */
#include <pthread.h>

#include "log.h"
#include "services.h"

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
    (void)world;
    (void)world_size;
    pthread_mutex_unlock(&g_lock);
}
