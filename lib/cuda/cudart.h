/*
 * cudart.h - the CUDA runtime calls ccomm's plain-C GPU code makes, as a
 * table, so that the same code runs on whichever runtime its object uses:
 * the plugin's statically linked libcudart (cudart_static.c), or in the
 * interposer the program's own runtime found with dlopen (cudart_dl.c).
 * Nothing here links libcuda; the runtime opens the driver itself and
 * reports a machine without one as an error code, never a crash.
 */
#ifndef CC_CUDA_CUDART_H
#define CC_CUDA_CUDART_H

#include <stddef.h>

#include "ccomm/status.h"

#define CC__CUDA_SUCCESS              0
#define CC__CUDA_NOT_READY            600 /* cudaErrorNotReady */
#define CC__CUDA_EVENT_DISABLE_TIMING 0x02u
#define CC__CUDA_STREAM_NON_BLOCKING  0x01u

typedef struct cc__cudart {
    const char *origin; /* "static", or the library it came from */
    int (*GetDeviceCount)(int *count);
    int (*SetDevice)(int device);
    int (*GetDevice)(int *device);
    int (*EventCreateWithFlags)(void **event, unsigned flags);
    int (*EventRecord)(void *event, void *stream);
    int (*EventQuery)(void *event);
    int (*EventSynchronize)(void *event);
    int (*EventElapsedTime)(float *ms, void *start, void *end);
    int (*EventDestroy)(void *event);
    const char *(*GetErrorString)(int err);
    int (*StreamCreateWithFlags)(void **stream, unsigned flags);
    int (*StreamDestroy)(void *stream);
    int (*StreamSynchronize)(void *stream);
    int (*Malloc)(void **ptr, size_t size);
    int (*Free)(void *ptr);
} cc__cudart_t;

/* The runtime of this object; set by cc__cudart_static() or cc__cudart_dl(). NULL: none. */
extern const cc__cudart_t *cc__cudart;

/* The statically linked runtime (plugin only). */
const cc__cudart_t *cc__cudart_static(void);
/* The program's runtime (interposer): already loaded ones first, then libcudart.so.*. NULL
 * (logged at info) when there is none. */
const cc__cudart_t *cc__cudart_dl(void);

/*
 * Check a runtime result: CC_OK for success, else log "what: error text"
 * and return CC_ERR_INTERNAL (CC_ERR_NOT_SUPPORTED for "no device" and
 * "no driver" errors, which are the machine's, not ccomm's).
 */
cc_status_t cc__cuda_check(int err, const char *what);

/* Make `device` current on this thread; *prev is the device to restore (-1: unchanged). */
cc_status_t cc__cuda_use_device(int device, int *prev);
void cc__cuda_restore_device(int prev);

/* 1 when this object's runtime sees at least one device (cached after the first call). */
int cc__cuda_usable(void);

#endif /* CC_CUDA_CUDART_H */
