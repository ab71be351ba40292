/*
 * sandbox.c -- narrowing a forked child: drop to its own user (no
 * supplementary groups, no capabilities, no_new_privs) and a seccomp
 * allowlist whose default is to kill the process.
 */
#include <sys/prctl.h>
#include <sys/resource.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <seccomp.h>
#include <stdio.h>
#include <unistd.h>

#include "gatewayd.h"
#include "log.h"

int
drop_to_user(const char *user)
{
	struct passwd *pw;
	struct rlimit nocore = { 0, 0 };

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
	/* Make sure it stuck: a process that can become root again is not
	 * sandboxed. */
	if (setuid(0) == 0 || geteuid() == 0) {
		log_warnx("still able to regain root after dropping to %s", user);
		return -1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		return -1;
	setrlimit(RLIMIT_CORE, &nocore);
	return 0;
}

int
seccomp_nflog(void)
{
	static const int allowed[] = {
		SCMP_SYS(read), SCMP_SYS(recvfrom), SCMP_SYS(recvmsg),
		SCMP_SYS(write), SCMP_SYS(sendto), SCMP_SYS(sendmsg),
		SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn),
		SCMP_SYS(brk), SCMP_SYS(mmap), SCMP_SYS(munmap),
		SCMP_SYS(mremap), SCMP_SYS(clock_gettime), SCMP_SYS(futex),
		SCMP_SYS(close), SCMP_SYS(fstat), SCMP_SYS(newfstatat),
		SCMP_SYS(getpid), SCMP_SYS(gettid),
	};
	scmp_filter_ctx ctx;
	size_t i;
	int rc = -1;

	if ((ctx = seccomp_init(SCMP_ACT_KILL_PROCESS)) == NULL)
		return -1;
	for (i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0) < 0)
			goto out;
	rc = seccomp_load(ctx) < 0 ? -1 : 0;
out:
	seccomp_release(ctx);
	return rc;
}
