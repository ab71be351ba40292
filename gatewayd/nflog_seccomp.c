/*
 * nflog_seccomp.c -- the nflog reader's seccomp allowlist (its privilege
 * drop is lib/privdrop.c's).
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
#include "seccomp_allow.h"

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

	return seccomp_allow(allowed, sizeof(allowed) / sizeof(allowed[0]));
}
