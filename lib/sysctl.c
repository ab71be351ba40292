/*
 * sysctl.c -- the kernel's one-number settings, read and written whole
 * (sysctl.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sysctl.h"

int
sysctl_read(const char *path, long *v)
{
	char buf[32], *end;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return errno = n == 0 ? EINVAL : errno, -1;
	buf[n] = '\0';
	errno = 0;
	*v = strtol(buf, &end, 10);
	if (errno != 0 || end == buf)
		return errno = EINVAL, -1;
	return 0;
}

int
sysctl_write(const char *path, long v)
{
	char buf[32];
	int fd, n, rc, e;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	n = snprintf(buf, sizeof(buf), "%ld\n", v);
	rc = write(fd, buf, (size_t)n) == n ? 0 : -1;
	e = errno;
	if (close(fd) == -1 && rc == 0)
		return -1;
	errno = e;
	return rc;
}
