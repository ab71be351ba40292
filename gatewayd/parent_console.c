/*
 * console.c -- `console NAME`: a guest's serial console for its owner.
 *
 * QEMU's console socket is in the guest's 0700 runtime folder, owned by
 * the guest's QEMU user: a member cannot connect to it.  gatewayd connects
 * for the owner (or an admin) and hands the connected socket back over the
 * control socket (SCM_RIGHTS, with the "ok" line); from then on gatewayd
 * is not in the path.  Anyone else gets the same answer as for a sandbox
 * that does not exist.
 *
 * The connection is made with the file-system identity of the runtime
 * folder's owner (the QEMU user), never as root: that folder is writable
 * by QEMU, so a guest that escaped into its QEMU could replace the socket
 * with a symlink to any socket root may open (another guest's console, the
 * control socket).  As its QEMU user it reaches only what it already could.
 *
 * console_verb() is the whole verb, (request, caller) -> fd or error, so
 * that it can move with the control protocol; control.c only sends the fd.
 */
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gatewayd.h"
#include "log.h"

static bool
name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 32 && s[0] != '-' && s[0] != '_' &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-_") == n;
}

/* connect(path) with fsuid/fsgid uid/gid and no supplementary groups;
 * root's identity is back before this returns. */
static int
connect_as(const char *path, uid_t uid, gid_t gid)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	gid_t saved[256];
	int fd, n, rc, e;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sun.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if ((n = getgroups(256, saved)) == -1 || setgroups(0, NULL) == -1) {
		close(fd);
		return -1;
	}
	setfsgid(gid);
	setfsuid(uid);
	if ((uid_t)setfsuid((uid_t)-1) != uid)
		rc = -1, e = EPERM;
	else
		rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun)), e = errno;
	setfsuid(0);
	setfsgid(0);
	if (setgroups((size_t)n, saved) == -1 ||
	    (uid_t)setfsuid((uid_t)-1) != 0)
		fatalx("console: cannot restore root's file-system identity");
	if (rc == -1) {
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int
console_verb(const struct moat_config *cfg, const char *run_dir, int argc,
    char *const argv[], const struct ctl_creds *who, char *err, size_t len)
{
	const struct moat_sandbox *s;
	struct stat st;
	char dir[4096], path[4200];
	int fd;

	if (argc != 2 || !name_ok(argv[1])) {
		snprintf(err, len, "usage: console NAME");
		return -1;
	}
	s = config_sandbox_by_name(cfg, argv[1]);
	/* The same answer whether it is missing or someone else's. */
	if (s == NULL || !(who->admin || (s->owner != NULL &&
	    strcmp(s->owner, who->user) == 0))) {
		snprintf(err, len, "console: no sandbox \"%s\" owned by %s",
		    argv[1], who->user);
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s/guests/%s", run_dir, argv[1]);
	snprintf(path, sizeof(path), "%s/console.sock", dir);
	/* The folder is made by provision (root) and given to the QEMU
	 * user: its owner is who may open what is inside. */
	if (lstat(dir, &st) == -1 || !S_ISDIR(st.st_mode) || st.st_uid == 0 ||
	    (fd = connect_as(path, st.st_uid, st.st_gid)) == -1) {
		snprintf(err, len, "console: guest \"%s\" is not running",
		    argv[1]);
		return -1;
	}
	return fd;
}
