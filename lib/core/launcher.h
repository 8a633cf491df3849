/*
 * launcher.h - pieces of the launcher search (launcher.c) that tests reach.
 * cc__launcher_find itself is declared in comm.h.
 */
#ifndef CC_CORE_LAUNCHER_H
#define CC_CORE_LAUNCHER_H

#include <stddef.h>

/*
 * The first host of a Slurm node list ("node[01-04,07],gpu3" -> "node01";
 * "r[1-2]-n[5,7]" -> "r1-n5"). Returns 0, or -1 for an empty or malformed
 * list or one whose first host does not fit in outlen.
 */
int cc__slurm_first_host(const char *list, char *out, size_t outlen);

/* 1 if `host` (a name or an IP) is an address of this machine, loopback included. */
int cc__host_is_local(const char *host);

#endif /* CC_CORE_LAUNCHER_H */
