/*
 * sysctl.h -- the kernel's one-number settings under /proc/sys, read and
 * written whole: the one place gatewayd and its library touch them.
 */
#ifndef MOAT_SYSCTL_H
#define MOAT_SYSCTL_H

/* The number in path (a full path under /proc/sys): 0, or -1 with errno
 * (EINVAL: not a number). */
int	sysctl_read(const char *path, long *v);
/* Write v (and a newline) to path: 0, or -1 with errno. */
int	sysctl_write(const char *path, long v);

#endif
