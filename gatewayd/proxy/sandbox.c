/*
 * sandbox.c -- dropping privileges and narrowing system calls.
 */
#include <sys/prctl.h>
#include <sys/resource.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <seccomp.h>
#include <stddef.h>
#include <unistd.h>

#include "log.h"
#include "privdrop.h"
#include "seccomp_allow.h"
#include "sandbox.h"

void
sandbox_nodump(void)
{
	struct rlimit rl = { 0, 0 };

	/* Secret values must never reach a core file or another process
	 * of the same user through ptrace or /proc/PID/mem. */
	if (setrlimit(RLIMIT_CORE, &rl) < 0 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		fatal("cannot disable core dumps");
}

void
sandbox_drop(const char *user)
{
	if (geteuid() == 0 && privdrop(user ? user : "nobody") == -1)
		fatalx("cannot drop to %s", user ? user : "nobody");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fatal("no_new_privs");
	/* setresuid reset it; say it again */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

static const int allowed[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev),
	SCMP_SYS(recvfrom), SCMP_SYS(recvmsg), SCMP_SYS(sendto),
	SCMP_SYS(sendmsg), SCMP_SYS(close), SCMP_SYS(epoll_wait),
	SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_ctl), SCMP_SYS(accept4),
	SCMP_SYS(socket), SCMP_SYS(connect), SCMP_SYS(setsockopt),
	SCMP_SYS(getsockopt), SCMP_SYS(getsockname), SCMP_SYS(getpeername),
	SCMP_SYS(shutdown), SCMP_SYS(splice), SCMP_SYS(pipe2), SCMP_SYS(fcntl),
	SCMP_SYS(clock_gettime), SCMP_SYS(gettimeofday), SCMP_SYS(time),
	SCMP_SYS(getrandom), SCMP_SYS(brk), SCMP_SYS(mmap), SCMP_SYS(munmap),
	SCMP_SYS(mremap), SCMP_SYS(madvise), SCMP_SYS(mprotect),
	SCMP_SYS(mlock), SCMP_SYS(munlock), SCMP_SYS(futex),
	SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn),
	SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigaction), SCMP_SYS(getpid),
	/* OpenSSL reads hashed CA files lazily while verifying */
	SCMP_SYS(openat), SCMP_SYS(newfstatat), SCMP_SYS(fstat),
	SCMP_SYS(lseek), SCMP_SYS(stat),
};

void
sandbox_seccomp(void)
{
	if (seccomp_allow(allowed, sizeof(allowed) / sizeof(allowed[0])) == -1)
		fatalx("cannot install the seccomp filter");
}

int
sandbox_maxfiles(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	rl.rlim_cur = rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
	(void)setrlimit(RLIMIT_NOFILE, &rl);
	return (int)rl.rlim_cur;
}
