/*
 * sandbox.c -- every process's system call allowlist, in one place.
 *
 * Read a role's lists as the whole of what that process can ask the
 * kernel once it has started: anything else kills it (SCMP_ACT_KILL_
 * PROCESS, so no thread survives to carry on half-dead).  None of them
 * may open a file, and only dnsd and the proxy may make a socket, of the
 * families named beside them.  Each process opens what it needs, drops
 * to its own user (lib/privdrop.c) and only then narrows itself here.
 *
 * Which process runs as whom (users as gatewayd starts them):
 *   dnsd's resolver   dnsd/resolver.c      moat-dns (-u USER)
 *   moat-proxy        gatewayd/proxy/      moat-proxy (--user USER)
 *   nflog reader      gatewayd/nflog/nflog.c     moat-log, else nobody
 *   signer            gatewayd/signer/signer.c    moat-ca, else nobody
 *   control           gatewayd/control/control.c   moat-ctl
 *   registration      gatewayd/register/register.c  moat-reg
 *   metrics           gatewayd/metrics/metrics.c   moat-mon
 *   ha-arp            gatewayd/ha_arp/ha_arp.c    moat-log, else nobody
 *   web console       gatewayd/web/        moat-web
 * provision's children (provision/proc.c) run QEMU and qemu-img as the
 * guest's user, and read members' files as nobody, with privdrop and no
 * filter here: QEMU installs its own (-sandbox on), and a list that let
 * execve through would add nothing.
 *
 * Every list has what malloc, exit and signal return need (brk, mmap,
 * munmap, futex, exit, exit_group, rt_sigreturn), and fstat and
 * newfstatat, which stdio and glibc's fstat() use.
 */
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <linux/bpf.h>

#include <seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "log.h"
#include "sandbox.h"

/*
 * dnsd's resolver: an event loop over UDP and TCP to guests and upstream
 * servers, ldns, and its log.  Sockets: AF_INET and AF_INET6 for
 * upstream queries only.
 */
static const int dnsd_calls[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(writev), SCMP_SYS(close),
	SCMP_SYS(recvfrom), SCMP_SYS(sendto), SCMP_SYS(recvmsg),
	SCMP_SYS(sendmsg), SCMP_SYS(recvmmsg), SCMP_SYS(sendmmsg),
	SCMP_SYS(connect), SCMP_SYS(accept4), SCMP_SYS(getsockopt),
	SCMP_SYS(setsockopt), SCMP_SYS(getsockname), SCMP_SYS(getpeername),
	SCMP_SYS(shutdown), SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait),
	SCMP_SYS(epoll_ctl), SCMP_SYS(fcntl), SCMP_SYS(clock_gettime),
	SCMP_SYS(gettimeofday), SCMP_SYS(time), SCMP_SYS(getrandom),
	SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(brk), SCMP_SYS(mmap),
	SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(madvise),
	SCMP_SYS(mprotect), SCMP_SYS(futex), SCMP_SYS(rt_sigreturn),
	SCMP_SYS(rt_sigprocmask), SCMP_SYS(restart_syscall), SCMP_SYS(exit),
	SCMP_SYS(exit_group), SCMP_SYS(fstat), SCMP_SYS(newfstatat),
	SCMP_SYS(lseek), SCMP_SYS(tgkill), SCMP_SYS(rt_sigaction),
	SCMP_SYS(sched_yield), SCMP_SYS(clock_nanosleep), SCMP_SYS(uname),
};
/* Standalone dnsd re-reads its configuration on SIGHUP: it alone may
 * open files, and only read them (it runs as its own user). */
static const int dnsd_reread_calls[] = {
	SCMP_SYS(openat), SCMP_SYS(open), SCMP_SYS(stat), SCMP_SYS(lstat),
	SCMP_SYS(statx), SCMP_SYS(getdents64), SCMP_SYS(access),
	SCMP_SYS(faccessat), SCMP_SYS(readlink), SCMP_SYS(getuid),
	SCMP_SYS(geteuid), SCMP_SYS(getgid), SCMP_SYS(getegid),
};

/*
 * moat-proxy: the event loop, TCP to guests and upstreams, splice through
 * pipes, OpenSSL (its trust store is read before the filter, so no file
 * is opened afterwards), the parent's messages.  Sockets: AF_INET and
 * AF_INET6, for upstream connections and DNS lookups.
 */
static const int proxy_calls[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev),
	SCMP_SYS(recvfrom), SCMP_SYS(recvmsg), SCMP_SYS(sendto),
	SCMP_SYS(sendmsg), SCMP_SYS(close), SCMP_SYS(epoll_wait),
	SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_ctl), SCMP_SYS(accept4),
	SCMP_SYS(connect), SCMP_SYS(setsockopt), SCMP_SYS(getsockopt),
	SCMP_SYS(getsockname), SCMP_SYS(getpeername), SCMP_SYS(shutdown),
	SCMP_SYS(splice), SCMP_SYS(pipe2), SCMP_SYS(fcntl),
	SCMP_SYS(clock_gettime), SCMP_SYS(gettimeofday), SCMP_SYS(time),
	SCMP_SYS(getrandom), SCMP_SYS(brk), SCMP_SYS(mmap), SCMP_SYS(munmap),
	SCMP_SYS(mremap), SCMP_SYS(madvise), SCMP_SYS(mprotect),
	SCMP_SYS(mlock), SCMP_SYS(munlock), SCMP_SYS(futex), SCMP_SYS(exit),
	SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(rt_sigaction), SCMP_SYS(getpid), SCMP_SYS(newfstatat),
	SCMP_SYS(fstat), SCMP_SYS(lseek),
};

/* The nflog reader: netlink messages in, JSON lines to the parent out. */
static const int nflog_calls[] = {
	SCMP_SYS(read), SCMP_SYS(recvfrom), SCMP_SYS(recvmsg), SCMP_SYS(write),
	SCMP_SYS(sendto), SCMP_SYS(sendmsg), SCMP_SYS(exit),
	SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn), SCMP_SYS(brk),
	SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mremap),
	SCMP_SYS(clock_gettime), SCMP_SYS(futex), SCMP_SYS(close),
	SCMP_SYS(fstat), SCMP_SYS(newfstatat), SCMP_SYS(getpid),
	SCMP_SYS(gettid),
};

/* The signer: a request in, a signed leaf out, on one socket.  It
 * signs one leaf before narrowing, so OpenSSL has loaded what it needs. */
static const int signer_calls[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(recvmsg), SCMP_SYS(sendmsg),
	SCMP_SYS(recvfrom), SCMP_SYS(sendto), SCMP_SYS(close), SCMP_SYS(brk),
	SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(madvise),
	SCMP_SYS(getrandom), SCMP_SYS(futex), SCMP_SYS(clock_gettime),
	SCMP_SYS(gettimeofday), SCMP_SYS(time), SCMP_SYS(getpid),
	SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn),
	SCMP_SYS(newfstatat), SCMP_SYS(fstat),
};

/* The control process: accepts on the control socket, passes clients'
 * descriptors to the parent and back (recvmsg/sendmsg), polls. */
static const int control_calls[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(recvmsg), SCMP_SYS(sendmsg),
	SCMP_SYS(recvfrom), SCMP_SYS(sendto), SCMP_SYS(accept4),
	SCMP_SYS(getsockopt), SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait),
	SCMP_SYS(epoll_ctl),
	SCMP_SYS(close), SCMP_SYS(brk), SCMP_SYS(mmap), SCMP_SYS(munmap),
	SCMP_SYS(mremap), SCMP_SYS(madvise), SCMP_SYS(futex),
	SCMP_SYS(clock_gettime), SCMP_SYS(getpid), SCMP_SYS(exit),
	SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn), SCMP_SYS(restart_syscall),
	SCMP_SYS(fstat), SCMP_SYS(newfstatat),
};

/* The registration endpoint: TLS to hosts over accepted sockets, in an
 * event loop; the parent's answers over its socket. */
static const int register_calls[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(recvmsg), SCMP_SYS(sendmsg),
	SCMP_SYS(recvfrom), SCMP_SYS(sendto), SCMP_SYS(accept4),
	SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_ctl),
	SCMP_SYS(getsockopt), SCMP_SYS(close), SCMP_SYS(shutdown),
	SCMP_SYS(brk), SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mremap),
	SCMP_SYS(madvise), SCMP_SYS(futex), SCMP_SYS(clock_gettime),
	SCMP_SYS(getrandom), SCMP_SYS(getpid), SCMP_SYS(exit),
	SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn), SCMP_SYS(restart_syscall),
	SCMP_SYS(fstat), SCMP_SYS(newfstatat),
};

/* The metrics endpoint: accepts scrapers on lib/ev, reads the text the
 * parent sent as a descriptor (pread64), writes it out. */
static const int metrics_calls[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(pread64), SCMP_SYS(recvmsg),
	SCMP_SYS(accept4), SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait),
	SCMP_SYS(epoll_ctl), SCMP_SYS(fcntl), SCMP_SYS(close), SCMP_SYS(brk),
	SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(madvise),
	SCMP_SYS(clock_gettime),
	SCMP_SYS(getpid), SCMP_SYS(exit), SCMP_SYS(exit_group),
	SCMP_SYS(rt_sigreturn), SCMP_SYS(restart_syscall), SCMP_SYS(fstat),
	SCMP_SYS(newfstatat),
};

/* Replication to the other box of a pair: one TLS connection out (a
 * socket, connect, a deadline on each read and write, waited for with
 * poll), lines from the parent over its socket on the event loop;
 * SIGPIPE held back around writes. */
static const int ha_send_calls[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(recvmsg), SCMP_SYS(sendmsg),
	SCMP_SYS(recvfrom), SCMP_SYS(sendto), SCMP_SYS(connect),
	SCMP_SYS(poll), SCMP_SYS(ppoll), SCMP_SYS(epoll_wait),
	SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_ctl), SCMP_SYS(fcntl),
	SCMP_SYS(setsockopt), SCMP_SYS(getsockopt), SCMP_SYS(close),
	SCMP_SYS(shutdown), SCMP_SYS(brk), SCMP_SYS(mmap), SCMP_SYS(munmap),
	SCMP_SYS(mremap), SCMP_SYS(madvise), SCMP_SYS(futex),
	SCMP_SYS(clock_gettime), SCMP_SYS(getrandom), SCMP_SYS(getpid),
	SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigpending),
	SCMP_SYS(rt_sigtimedwait), SCMP_SYS(exit), SCMP_SYS(exit_group),
	SCMP_SYS(rt_sigreturn), SCMP_SYS(restart_syscall), SCMP_SYS(fstat),
	SCMP_SYS(newfstatat),
};

/* The split-brain watch's ARP reader: the packet socket the parent
 * bound (recvfrom, and sendto for the probes the parent asks for), the
 * parent's messages, the event loop over both.  No socket of its own. */
static const int ha_arp_calls[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(recvfrom), SCMP_SYS(recvmsg),
	SCMP_SYS(sendto), SCMP_SYS(sendmsg), SCMP_SYS(epoll_wait),
	SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_ctl),
	SCMP_SYS(close), SCMP_SYS(brk), SCMP_SYS(mmap), SCMP_SYS(munmap),
	SCMP_SYS(futex), SCMP_SYS(clock_gettime), SCMP_SYS(getpid),
	SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn),
	SCMP_SYS(restart_syscall), SCMP_SYS(fstat), SCMP_SYS(newfstatat),
};

/* The web console: libh2o's event loop (epoll) over the listening socket
 * the parent bound, TLS with OpenSSL (getrandom), the parent's messages
 * (recvmsg, sendmsg).  No socket of its own, no file. */
static const int web_calls[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev),
	SCMP_SYS(recvfrom), SCMP_SYS(sendto), SCMP_SYS(recvmsg),
	SCMP_SYS(sendmsg), SCMP_SYS(accept4), SCMP_SYS(accept),
	SCMP_SYS(getsockopt), SCMP_SYS(setsockopt), SCMP_SYS(getsockname),
	SCMP_SYS(getpeername), SCMP_SYS(shutdown), SCMP_SYS(epoll_wait),
	SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_ctl), SCMP_SYS(fcntl),
	SCMP_SYS(close), SCMP_SYS(brk), SCMP_SYS(mmap),
	SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(madvise),
	SCMP_SYS(mprotect), SCMP_SYS(futex), SCMP_SYS(clock_gettime),
	SCMP_SYS(gettimeofday), SCMP_SYS(time), SCMP_SYS(getrandom),
	SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(rt_sigaction), SCMP_SYS(exit), SCMP_SYS(exit_group),
	SCMP_SYS(rt_sigreturn), SCMP_SYS(restart_syscall), SCMP_SYS(fstat),
	SCMP_SYS(newfstatat), SCMP_SYS(lseek), SCMP_SYS(poll),
};

static const int inet[] = { AF_INET, AF_INET6 };

/* The proxy pairs a tunnel's sockets in the socket map gatewayd gave it,
 * and removes them: those two bpf() commands, nothing that loads or
 * creates.  It reads how much a socket holds unread (FIONREAD) as it
 * pairs them. */
static const int proxy_bpf[] = { BPF_MAP_UPDATE_ELEM, BPF_MAP_DELETE_ELEM };
static const unsigned long proxy_ioctl[] = { FIONREAD };

#define LIST(a)	(a), sizeof(a) / sizeof((a)[0])
#define NONE	NULL, 0

static const struct role {
	const int	*calls;
	size_t		 ncalls;
	const int	*more;		/* a second list, or NONE */
	size_t		 nmore;
	const int	*families;	/* socket() for these only */
	size_t		 nfamilies;
	bool		 logs;		/* logs once narrowed */
	const int	*bpf;		/* bpf() with these commands only */
	size_t		 nbpf;
	const unsigned long *ioctls;	/* ioctl() with these requests only */
	size_t		 nioctls;
} roles[SANDBOX_NROLES] = {
	[SANDBOX_DNSD] = { LIST(dnsd_calls), NONE, LIST(inet), true },
	[SANDBOX_DNSD_REREAD] = { LIST(dnsd_calls), LIST(dnsd_reread_calls),
	    LIST(inet), true },
	[SANDBOX_PROXY] = { LIST(proxy_calls), NONE, LIST(inet), true,
	    LIST(proxy_bpf), LIST(proxy_ioctl) },
	[SANDBOX_NFLOG] = { LIST(nflog_calls), NONE, NONE, false },
	[SANDBOX_SIGNER] = { LIST(signer_calls), NONE, NONE, false },
	[SANDBOX_CONTROL] = { LIST(control_calls), NONE, NONE, false },
	[SANDBOX_REGISTER] = { LIST(register_calls), NONE, NONE, false },
	[SANDBOX_METRICS] = { LIST(metrics_calls), NONE, NONE, false },
	[SANDBOX_HA_SEND] = { LIST(ha_send_calls), NONE, LIST(inet), false },
	[SANDBOX_HA_ARP] = { LIST(ha_arp_calls), NONE, NONE, false },
	[SANDBOX_WEB] = { LIST(web_calls), NONE, NONE, false },
};

/* A call this architecture does not have (a negative pseudo number that
 * libseccomp cannot place) is left out, not an error. */
static int
allow_calls(scmp_filter_ctx ctx, const int *calls, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, calls[i], 0) < 0 &&
		    calls[i] >= 0)
			return -1;
	return 0;
}

/* socket() whose first argument is one of families, nothing else. */
static int
allow_family(scmp_filter_ctx ctx, int family)
{
	return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
	    SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)family)) < 0 ? -1 : 0;
}

static int
allow_role(scmp_filter_ctx ctx, const struct role *r)
{
	size_t i;

	if (allow_calls(ctx, r->calls, r->ncalls) == -1 ||
	    allow_calls(ctx, r->more, r->nmore) == -1)
		return -1;
	for (i = 0; i < r->nfamilies; i++)
		if (allow_family(ctx, r->families[i]) == -1)
			return -1;
	/* glibc's syslog(3) makes a new AF_UNIX socket to /dev/log when
	 * the log daemon restarted; logging to stderr needs none. */
	if (r->logs && log_is_syslog() && allow_family(ctx, AF_UNIX) == -1)
		return -1;
	for (i = 0; i < r->nbpf; i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(bpf), 1,
		    SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)r->bpf[i])) < 0)
			return -1;
	for (i = 0; i < r->nioctls; i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
		    SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)r->ioctls[i])) < 0)
			return -1;
	return 0;
}

int
sandbox_narrow(enum sandbox_role role)
{
	scmp_filter_ctx ctx;
	int rc = -1;

	if ((unsigned)role >= SANDBOX_NROLES ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		return -1;
	/* syslog(3) stamps messages in local time: read the zone file now,
	 * while a file can still be opened. */
	if (roles[role].logs)
		tzset();
	if ((ctx = seccomp_init(SCMP_ACT_KILL_PROCESS)) == NULL)
		return -1;
	if (allow_role(ctx, &roles[role]) == 0 && seccomp_load(ctx) == 0)
		rc = 0;
	seccomp_release(ctx);
	return rc;
}
