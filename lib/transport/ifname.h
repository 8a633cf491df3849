/*
 * ifname.h - choosing the address peers use from CCOMM_SOCKET_IFNAME, in
 * NCCL_SOCKET_IFNAME's syntax: a comma-separated list of interface name
 * prefixes ("eth,ib"), "=" before the list for exact names ("=eth0"), "^"
 * before it to exclude instead of select ("^docker,lo"; "^=docker0").
 */
#ifndef CC_TRANSPORT_IFNAME_H
#define CC_TRANSPORT_IFNAME_H

#include <stddef.h>

#include "ccomm/status.h"

/* Does interface `name` pass `spec`? 1 or 0. An empty spec passes every name. */
int cc__ifname_match(const char *spec, const char *name);

/*
 * The first interface that is up and passes `spec`, and its first IPv4
 * address (IPv6, not link-local, when it has none): the address in `addr`,
 * the interface's name in `ifname`. CC_OK, or CC_ERR_NOT_FOUND after logging
 * the spec and the interfaces there are.
 */
cc_status_t cc__ifname_pick(const char *spec, char *addr, size_t addrlen, char *ifname,
                            size_t iflen);

#endif /* CC_TRANSPORT_IFNAME_H */
