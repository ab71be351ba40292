/*
 * privdrop.c -- see privdrop.h.
 */
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include "log.h"
#include "privdrop.h"

int
privdrop(const char *user)
{
	struct rlimit nocore = { 0, 0 };
	struct passwd *pw;
	uid_t r, e, s;

	if ((pw = getpwnam(user)) == NULL || pw->pw_uid == 0) {
		log_warnx("no unprivileged user %s", user);
		return -1;
	}
	if (setgroups(0, NULL) == -1 ||
	    setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) == -1 ||
	    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) == -1) {
		log_warn("dropping to %s", user);
		return -1;
	}
	/* A process that can become root again is not dropped. */
	if (setuid(0) == 0 || getresuid(&r, &e, &s) == -1 || r == 0 ||
	    e == 0 || s == 0) {
		log_warnx("could regain root after dropping to %s", user);
		return -1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    setrlimit(RLIMIT_CORE, &nocore) == -1 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1) {
		log_warn("narrowing %s", user);
		return -1;
	}
	return 0;
}

int
socket_as(const char *user, int domain, int type)
{
	struct passwd *pw;
	int fd, saved = errno;

	if (geteuid() != 0 || user == NULL || (pw = getpwnam(user)) == NULL) {
		errno = saved;
		return socket(domain, type, 0);
	}
	(void)setfsgid(pw->pw_gid);
	(void)setfsuid(pw->pw_uid);
	fd = socket(domain, type, 0);
	saved = errno;
	(void)setfsuid(geteuid());
	(void)setfsgid(getegid());
	errno = saved;
	return fd;
}
