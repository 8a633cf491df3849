/*
 * tls.h - thread-local variables that the op path reads.
 *
 * In libccomm.so a thread-local variable is reached through a call to
 * __tls_get_addr (some 20 instructions), unless it lives in the static TLS
 * block ("initial-exec"). The op path reads a few on every op: the hook
 * chains' reader state, the log's current comm, the group depth and the
 * recorder's thread id. Through the calls they cost a program linked with
 * libccomm.so 165 instructions per op more than the static ccperf
 * (bench/obs_instr.sh against an obs_tax linked with the .so). Those few are
 * CC__TLS_HOT.
 *
 * Static TLS is scarce for a library that arrives by dlopen (a Python
 * extension pulls libccomm.so in that way): glibc keeps a surplus of at
 * least 512 bytes for it (the rtld.optional_static_tls tunable). So only
 * small variables take it, 76 bytes in all (24 of them the recorder's last comm, which
 * saves a map probe an op); the 512-byte message buffers stay dynamic.
 */
#ifndef CC_BASE_TLS_H
#define CC_BASE_TLS_H

#define CC__TLS_HOT __attribute__((tls_model("initial-exec")))

#endif /* CC_BASE_TLS_H */
