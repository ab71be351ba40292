/*
 * smallfile.c -- see smallfile.h.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"
#include "smallfile.h"

ssize_t
read_whole_fd(int fd, void *buf, size_t len)
{
	size_t n = 0;
	ssize_t r;

	while (n < len && (r = read(fd, (char *)buf + n, len - n)) != 0) {
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return -1;
		n += (size_t)r;
	}
	return (ssize_t)n;
}

char *
read_small_fd(int fd, size_t max, size_t *len)
{
	char *buf = xmalloc(max + 1);
	ssize_t n = read_whole_fd(fd, buf, max);

	if (n == -1) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	if (len != NULL)
		*len = (size_t)n;
	return buf;
}

/* Non-blocking, so that a FIFO or a device put where a file was expected
 * cannot hold the open (a FIFO waits for a writer) or the read; then
 * refused unless it is a regular file.  Regular files ignore O_NONBLOCK. */
char *
read_small_file(const char *path, size_t max, size_t *len)
{
	struct stat st;
	char *buf;
	int fd, e;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK)) == -1)
		return NULL;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	buf = read_small_fd(fd, max, len);
	e = errno;
	close(fd);
	errno = e;
	return buf;
}
