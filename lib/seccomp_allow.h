/*
 * seccomp_allow.h -- one way to narrow a process to a list of system
 * calls: anything else kills the whole process.
 */
#ifndef MOAT_SECCOMP_ALLOW_H
#define MOAT_SECCOMP_ALLOW_H

#include <stddef.h>

/* Install a filter allowing exactly calls[0..n-1] (SCMP_SYS numbers),
 * unconditionally; no_new_privs must be set.  0, or -1 if libseccomp or
 * the kernel refused. */
int	seccomp_allow(const int *calls, size_t n);

#endif
