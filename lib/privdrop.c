/*
 * privdrop.c -- see privdrop.h.
 */
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "privdrop.h"

int
privdrop(const char *user)
{
	struct passwd *pw;

	if ((pw = getpwnam(user)) == NULL || pw->pw_uid == 0) {
		log_warnx("no unprivileged user %s", user);
		return -1;
	}
	return privdrop_ids(pw->pw_uid, pw->pw_gid, user);
}

int
privdrop_ids(uid_t uid, gid_t gid, const char *who)
{
	return privdrop_groups(uid, gid, NULL, 0, who);
}

int
privdrop_groups(uid_t uid, gid_t gid, const gid_t *groups, size_t ngroups,
    const char *who)
{
	struct rlimit nocore = { 0, 0 };
	uid_t r, e, s;

	if (uid == 0 || gid == 0) {
		log_warnx("dropping to %s: uid or gid 0 is not unprivileged",
		    who);
		return -1;
	}
	if (setgroups(ngroups, groups) == -1 ||
	    setresgid(gid, gid, gid) == -1 || setresuid(uid, uid, uid) == -1) {
		log_warn("dropping to %s", who);
		return -1;
	}
	/* A process that can become root again is not dropped. */
	if (setuid(0) == 0 || getresuid(&r, &e, &s) == -1 || r == 0 ||
	    e == 0 || s == 0) {
		log_warnx("could regain root after dropping to %s", who);
		return -1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    setrlimit(RLIMIT_CORE, &nocore) == -1 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1) {
		log_warn("narrowing %s", who);
		return -1;
	}
	return 0;
}

void
privdrop_daemon(const char *user, const char *fallback)
{
	const char *who = user != NULL ? user : fallback;

	if (geteuid() == 0 && who == NULL)
		log_warnx("running as root: pass -u USER");
	else if (geteuid() == 0) {
		if (getpwnam(who) == NULL)
			fatalx("user \"%s\" does not exist (create it, e.g. "
			    "useradd --system --no-create-home --shell "
			    "/usr/sbin/nologin %s, or name another)", who, who);
		/* Every uid away from 0 clears every capability; privdrop
		 * makes sure there is no way back. */
		if (chdir("/") == -1 || privdrop(who) == -1)
			fatalx("cannot drop privileges to %s", who);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		fatal("no_new_privs");
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

/* The child: nothing of the parent's but back; become uid for good; one
 * non-blocking connect (a full backlog is a refusal, not a wait); the
 * socket back over back with one byte.  The alarm bounds the rest (the
 * path's lookup). */
static void __attribute__((noreturn))
connect_child(const char *path, uid_t uid, gid_t gid, int back)
{
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct iovec iov = { (void *)"c", 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	sigset_t none;
	int fd, fl;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGALRM, SIG_DFL);
	alarm(CONNECT_AS_SECONDS);
	if (dup2(back, 3) == -1 || close_range(4, ~0U, 0) == -1)
		_exit(1);
	back = 3;
	if (privdrop_ids(uid, gid, "the socket's user") == -1)
		_exit(1);
	strcpy(sun.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1 ||
	    connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    (fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1)
		_exit(1);
	memset(&cm, 0, sizeof(cm));
	msg.msg_control = cm.buf;
	msg.msg_controllen = sizeof(cm.buf);
	CMSG_FIRSTHDR(&msg)->cmsg_level = SOL_SOCKET;
	CMSG_FIRSTHDR(&msg)->cmsg_type = SCM_RIGHTS;
	CMSG_FIRSTHDR(&msg)->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(CMSG_FIRSTHDR(&msg)), &fd, sizeof(int));
	_exit(sendmsg(back, &msg, MSG_NOSIGNAL) == 1 ? 0 : 1);
}

pid_t
connect_as_start(const char *path, uid_t uid, gid_t gid, int *back)
{
	int sv[2];
	pid_t pid;

	*back = -1;
	if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path) ||
	    uid == 0 || gid == 0) {
		errno = EINVAL;
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) == -1)
		return -1;
	if ((pid = fork()) == -1) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0)
		connect_child(path, uid, gid, sv[1]);
	close(sv[1]);
	*back = sv[0];
	return pid;
}

int
connect_as_take(int back, uid_t uid)
{
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int))];
	} cm;
	char c;
	struct iovec iov = { &c, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
	    .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
	struct cmsghdr *h;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	int fd = -1, type;
	socklen_t tl = sizeof(type);

	if (recvmsg(back, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != 1 ||
	    (msg.msg_flags & MSG_CTRUNC) || (h = CMSG_FIRSTHDR(&msg)) == NULL ||
	    h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS ||
	    h->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	memcpy(&fd, CMSG_DATA(h), sizeof(int));
	/* A unix stream socket whose server is uid's own process. */
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == -1 ||
	    type != SOCK_STREAM ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == -1 ||
	    cred.uid != uid) {
		close(fd);
		return -1;
	}
	return fd;
}
