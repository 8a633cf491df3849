/*
 * ifname.c - CCOMM_SOCKET_IFNAME: which interface's address peers use to
 * reach this rank over TCP (see ifname.h for the syntax, NCCL's).
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "transport/ifname.h"
#include "base/log.h"

int cc__ifname_match(const char *spec, const char *name)
{
    if (!spec || !*spec) return 1;
    int exclude = 0, exact = 0;
    if (*spec == '^') exclude = 1, spec++;
    if (*spec == '=') exact = 1, spec++;
    int hit = 0;
    for (const char *p = spec; *p && !hit;) {
        size_t n = strcspn(p, ",");
        if (n > 0) hit = exact ? strlen(name) == n && !strncmp(name, p, n) : !strncmp(name, p, n);
        p += n;
        if (*p == ',') p++;
    }
    return exclude ? !hit : hit;
}

/* An address worth giving peers: IPv4, or IPv6 that is not link-local (those need a scope). */
static int usable(const struct sockaddr *sa, int want_v4)
{
    if (!sa) return 0;
    if (want_v4) return sa->sa_family == AF_INET;
    if (sa->sa_family != AF_INET6) return 0;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    return !IN6_IS_ADDR_LINKLOCAL(a);
}

cc_status_t cc__ifname_pick(const char *spec, char *addr, size_t addrlen, char *ifname,
                            size_t iflen)
{
    struct ifaddrs *all = NULL;
    if (getifaddrs(&all) != 0) {
        cc_log_error(CC_SUBSYS_NET, "net: CCOMM_SOCKET_IFNAME=\"%s\": cannot list the interfaces",
                     spec);
        return CC_ERR_NOT_FOUND;
    }
    /* IPv4 first, as NCCL does: one pass for each family. */
    for (int pass = 0; pass < 2; pass++) {
        for (struct ifaddrs *i = all; i; i = i->ifa_next) {
            if (!(i->ifa_flags & IFF_UP) || !usable(i->ifa_addr, pass == 0) ||
                !cc__ifname_match(spec, i->ifa_name))
                continue;
            const void *in =
                i->ifa_addr->sa_family == AF_INET
                    ? (const void *)&((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr
                    : (const void *)&((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr;
            inet_ntop(i->ifa_addr->sa_family, in, addr, (socklen_t)addrlen);
            snprintf(ifname, iflen, "%s", i->ifa_name);
            freeifaddrs(all);
            return CC_OK;
        }
    }
    char names[256] = "";
    size_t o = 0;
    for (struct ifaddrs *i = all; i && o + 1 < sizeof(names); i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !strstr(names, i->ifa_name))
            o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s", o ? ", " : "", i->ifa_name);
    freeifaddrs(all);
    cc_log_error(CC_SUBSYS_NET,
                 "net: CCOMM_SOCKET_IFNAME=\"%s\" matches no interface that is up "
                 "with an address (interfaces with IPv4 here: %s)",
                 spec, *names ? names : "none");
    return CC_ERR_NOT_FOUND;
}
