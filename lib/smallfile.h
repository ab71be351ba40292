/*
 * smallfile.h -- reading small files whole: keys, certificates, secrets,
 * pidfiles, /proc entries.  One read loop for all of them (short reads and
 * EINTR retried), opened without following a final symlink, and only
 * regular files.
 */
#ifndef MOAT_SMALLFILE_H
#define MOAT_SMALLFILE_H

#include <sys/types.h>

/* Read fd into buf until len bytes or end of file: the count, or -1.  A
 * count of len means the file may hold more. */
ssize_t	read_whole_fd(int fd, void *buf, size_t len);
/* At most max bytes of fd, NUL-terminated, malloc'ed (max + 1 bytes); the
 * count in *len when len is not NULL.  NULL on a read error. */
char	*read_small_fd(int fd, size_t max, size_t *len);
/* The same for a path, opened O_NOFOLLOW and O_NONBLOCK: NULL, errno
 * EINVAL, for anything but a regular file (a FIFO, a device, a socket, a
 * folder), so a path someone else can write never makes us wait.  A
 * caller that reads key or secret material wipes the buffer (*len bytes)
 * before freeing it. */
char	*read_small_file(const char *path, size_t max, size_t *len);

#endif
