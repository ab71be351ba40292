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
 * The connection is made by a child that has become the runtime folder's
 * owner (the QEMU user) for good, never by root, and the parent does not
 * wait for it: the request is answered when the child exits (like a
 * provision job).  That folder is writable by QEMU, so a guest that
 * escaped into its QEMU could replace the socket with a symlink to any
 * socket it may open: root's connection would reach it as root (a 0666
 * system socket sees uid 0), the guest uid's reaches it as the guest uid,
 * which the guest could do itself.  The socket handed on must also have
 * QEMU's user as its server.
 *
 * console_verb() decides (request, caller) -> where, or error, so that it
 * can move with the control protocol; parent/ctl.c runs the child and
 * sends the fd.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gw.h"
#include "console.h"
#include "log.h"

static bool
name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 32 && s[0] != '-' && s[0] != '_' &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-_") == n;
}

int
console_verb(const struct moat_config *cfg, const char *run_dir, int argc,
    char *const argv[], const struct ctl_creds *who, struct console_target *t,
    char *err, size_t len)
{
	const struct moat_sandbox *s;
	struct stat st;
	char dir[4096];
	int n;

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
	n = snprintf(t->path, sizeof(t->path), "%s/console.sock", dir);
	/* The folder is made by provision (root) and given to the QEMU
	 * user: its owner is who may open what is inside. */
	if (n < 0 || (size_t)n >= sizeof(t->path) || lstat(dir, &st) == -1 ||
	    !S_ISDIR(st.st_mode) || st.st_uid == 0 || st.st_gid == 0) {
		console_gone(argv[1], err, len);
		return -1;
	}
	t->uid = st.st_uid;
	t->gid = st.st_gid;
	return 0;
}

void
console_gone(const char *name, char *err, size_t len)
{
	snprintf(err, len, "console: guest \"%s\" is not running", name);
}
