/*
 * sandbox.c -- the resolver parses hostile packets, so it runs as its own
 * user with no capabilities, no_new_privs, and a seccomp allowlist whose
 * default is to kill the process.  Order: everything is
 * opened first, then the user is dropped, then the filter goes on.
 */
#include <sys/prctl.h>
#include <sys/socket.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <seccomp.h>
#include <unistd.h>

#include "dnsd.h"
#include "log.h"
#include "privdrop.h"

void
sandbox_drop(const char *user)
{
	struct passwd *pw;

	if (user != NULL && geteuid() == 0) {
		if ((pw = getpwnam(user)) == NULL)
			fatalx("user \"%s\" does not exist (create it, e.g. "
			    "useradd --system --no-create-home --shell "
			    "/usr/sbin/nologin %s, or pass -u)", user, user);
		/* Changing every uid away from 0 clears every capability;
		 * privdrop makes sure there is no way back. */
		if (chdir("/") == -1 || privdrop(user) == -1)
			fatalx("cannot drop privileges to %s", user);
	} else if (geteuid() == 0)
		log_warnx("running as root: pass -u USER");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		fatal("no_new_privs");
}

/* What the event loop, ldns, malloc, logging and (when allowed) config
 * re-reading need; nothing else. */
static const char *const allowed[] = {
	"read", "write", "writev", "close", "recvfrom", "sendto",
	"recvmsg", "sendmsg", "recvmmsg", "sendmmsg", "connect",
	"accept4", "getsockopt", "setsockopt", "getsockname", "getpeername",
	"shutdown", "epoll_wait", "epoll_pwait", "epoll_ctl", "fcntl",
	"clock_gettime", "gettimeofday", "time", "getrandom", "getpid",
	"gettid", "brk", "mmap", "munmap", "mremap", "madvise", "mprotect",
	"futex", "rt_sigreturn", "rt_sigprocmask", "restart_syscall",
	"exit", "exit_group", "fstat", "newfstatat", "lseek", "tgkill",
	"rt_sigaction", "sched_yield", "clock_nanosleep", "uname",
};
static const char *const reading[] = {
	"openat", "open", "stat", "lstat", "statx", "getdents64", "access",
	"faccessat", "readlink", "getuid", "geteuid", "getgid", "getegid",
};

static void
allow(scmp_filter_ctx ctx, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR)
		return;		/* not on this architecture */
	if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0) < 0)
		fatalx("seccomp: cannot allow %s", name);
}

void
sandbox_narrow(bool allow_open)
{
	static const int families[] = { AF_INET, AF_INET6, AF_UNIX };
	scmp_filter_ctx ctx;
	size_t i;

	if ((ctx = seccomp_init(SCMP_ACT_KILL_PROCESS)) == NULL)
		fatalx("seccomp_init");
	for (i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		allow(ctx, allowed[i]);
	if (allow_open)
		for (i = 0; i < sizeof(reading) / sizeof(reading[0]); i++)
			allow(ctx, reading[i]);
	/* Sockets for upstreams (and syslog): never netlink or raw. */
	for (i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
		    SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[i])) < 0)
			fatalx("seccomp: socket rule");
	if (seccomp_load(ctx) < 0)
		fatalx("seccomp_load failed");
	seccomp_release(ctx);
}
