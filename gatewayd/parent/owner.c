/*
 * parent/owner.c -- one gatewayd per network namespace (see owner.h).
 *
 * Runs first at start-up, before a journal is recovered, a set is touched
 * or a pair's gate is shut: a second gatewayd changes nothing at all.
 */
#include <sys/socket.h>
#include <sys/un.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "owner.h"

static int owner_fd = -1;

/* The inode of the abstract socket NAME in /proc/net/unix (this network
 * namespace's), or 0. */
static unsigned long
owner_inode(const char *name)
{
	FILE *f;
	char line[512], path[256];
	unsigned long ino = 0, i;

	if ((f = fopen("/proc/net/unix", "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		/* Num RefCount Protocol Flags Type St Inode Path */
		if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu %255s", &i,
		    path) == 2 && path[0] == '@' && strcmp(path + 1, name) == 0) {
			ino = i;
			break;
		}
	}
	fclose(f);
	return ino;
}

/* The pid of a process holding socket INO open, or 0. */
static pid_t
owner_pid(unsigned long ino)
{
	DIR *proc, *fds;
	struct dirent *p, *d;
	char dir[300], link[600], want[64], got[64];
	ssize_t n;
	pid_t pid = 0;

	if (ino == 0 || (proc = opendir("/proc")) == NULL)
		return 0;
	snprintf(want, sizeof(want), "socket:[%lu]", ino);
	while (pid == 0 && (p = readdir(proc)) != NULL) {
		if (p->d_name[0] < '1' || p->d_name[0] > '9' ||
		    atoi(p->d_name) == getpid())
			continue;
		snprintf(dir, sizeof(dir), "/proc/%s/fd", p->d_name);
		if ((fds = opendir(dir)) == NULL)
			continue;
		while ((d = readdir(fds)) != NULL) {
			snprintf(link, sizeof(link), "%s/%s", dir, d->d_name);
			if ((n = readlink(link, got, sizeof(got) - 1)) <= 0)
				continue;
			got[n] = '\0';
			if (strcmp(got, want) == 0) {
				pid = (pid_t)atoi(p->d_name);
				break;
			}
		}
		closedir(fds);
	}
	closedir(proc);
	return pid;
}

int
owner_claim(char *err, size_t errlen)
{
	struct sockaddr_un sun;
	socklen_t len;
	pid_t pid;
	int fd;

	if (owner_fd != -1)
		return 0;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	/* sun_path[0] stays NUL: an abstract name. */
	memcpy(sun.sun_path + 1, GW_OWNER_NAME, strlen(GW_OWNER_NAME));
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
	    strlen(GW_OWNER_NAME));
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&sun, len) == 0) {
		owner_fd = fd;
		return 0;
	}
	if (errno != EADDRINUSE) {
		snprintf(err, errlen, "cannot claim this network namespace: "
		    "%s", strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	pid = owner_pid(owner_inode(GW_OWNER_NAME));
	if (pid > 0)
		snprintf(err, errlen, "another gatewayd (pid %ld) owns this "
		    "network namespace's moat tables; stop it first "
		    "(systemctl stop moat-gatewayd) or use its control socket",
		    (long)pid);
	else
		snprintf(err, errlen, "another gatewayd owns this network "
		    "namespace's moat tables; stop it first (systemctl stop "
		    "moat-gatewayd) or use its control socket");
	return -1;
}
