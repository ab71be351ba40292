/*
 * priv.c -- standalone mode's privileged parent.
 *
 * `dnsd -c FILE` as root keeps a small parent that never sees a guest's
 * packet: it holds the nftables netlink socket and reads the config, and
 * forks the resolver, which drops to its own user, installs seccomp and
 * talks to the parent over lib/ipc.h exactly as it does under gatewayd.
 * Keeping the netlink socket in the resolver instead would hand anyone
 * who exploits the packet parser the power to rewrite the whole ruleset
 * (nf_tables checks CAP_NET_ADMIN against the socket's opener).
 *
 * The parent decides every IPC_SET_ADD with the same function as
 * gatewayd's parent (nftr_allow_add): the sandbox must exist and be in
 * allowlist mode, only public IPv4 addresses are added, the timeout is
 * capped and never cuts short what an earlier answer was promised.  SIGHUP: the parent loads the config; if it is valid
 * the resolver is restarted with it (the sockets stay open, queries wait
 * in their buffers), otherwise nothing changes.  A resolver that dies is
 * restarted after a second; the firewall keeps its state meanwhile.
 */
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admit.h"
#include "ev.h"
#include "dnsd.h"
#include "ipc.h"
#include "log.h"
#include "parent.h"
#include "privdrop.h"
#include "msg.h"
#include "nftrules.h"
#include "promise.h"

struct priv {
	const struct dnsd_opts *opts;
	struct moat_config *cfg;
	struct nftr_ctx	*nft;
	int		 udp, tcp, sfd;
	pid_t		 child;
	int		 ipc;
	struct promises	*promises;
	struct nftr_allow_stats st;
};

static void
spawn(struct priv *p)
{
	int fds[2];
	pid_t pid;
	sigset_t none;

	if (ipc_pair(fds) == -1)
		fatal("socketpair");
	pid_t parent = getpid();

	if ((pid = fork()) == -1)
		fatal("fork");
	if (pid == 0) {
		close(fds[0]);
		close(p->sfd);
		nftr_ctx_free(p->nft);	/* the netlink socket stays here */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		privdrop_daemon(p->opts->user, NULL);
		die_with_parent(parent);
		exit(resolver_run(p->opts, p->cfg, p->udp, p->tcp, fds[1]));
	}
	close(fds[1]);
	p->child = pid;
	p->ipc = fds[0];
	log_debug("resolver started, pid %d", (int)pid);
}

static void
stop_child(struct priv *p)
{
	if (p->child > 0) {
		kill(p->child, SIGTERM);
		(void)waitpid(p->child, NULL, 0);
	}
	p->child = -1;
	if (p->ipc != -1)
		close(p->ipc);
	p->ipc = -1;
}

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The resolver asks; the parent decides what actually gets opened, with
 * gatewayd's parent's own function.  Standalone, a reload restarts the
 * resolver with the new allow lists, so no sandbox is ever frozen. */
static int32_t
set_add(struct priv *p, const struct ipc_set_add *m)
{
	return nftr_allow_add(p->nft, p->promises, p->cfg, m->sandbox, m->addr,
	    m->naddr, m->plain, m->ports, m->nports, m->timeout_ms, false,
	    mono_ms(), &p->st);
}

static void
ipc_in(struct priv *p)
{
	static union {
		struct ipc_set_add m;
		uint8_t raw[IPC_MAX_PAYLOAD];
	} u;
	struct ipc_set_ack ack;
	struct ipc_hdr hdr;
	char err[256];
	ssize_t n;

	n = ipc_recv(p->ipc, &hdr, u.raw, sizeof(u.raw), err, sizeof(err));
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n == -2 || (n > 0 && hdr.type != IPC_SET_ADD)) {
		/* A resolver that breaks the protocol is not trusted. */
		log_warnx("resolver: %s; restarting it", n == -2 ? err :
		    "unexpected message");
		stop_child(p);
		sleep(1);
		spawn(p);
		return;
	}
	if (n <= 0) {
		close(p->ipc);
		p->ipc = -1;
		return;		/* it is exiting; SIGCHLD follows */
	}
	ack.status = set_add(p, &u.m);
	if (ipc_send(p->ipc, IPC_SET_ACK, hdr.id, &ack, sizeof(ack)) == -1)
		log_warn("ipc send");
}

static void
reload(struct priv *p)
{
	struct moat_errors errs = { 0 };
	struct moat_config *cfg;
	size_t i;

	if ((cfg = config_load(p->opts->conf, NULL, &errs)) == NULL) {
		log_warnx("reload: %s is not valid; nothing changed",
		    p->opts->conf);
		for (i = 0; i < errs.n; i++)
			log_warnx("%s", errs.msg[i]);
		config_errors_free(&errs);
		return;
	}
	stop_child(p);
	promises_reload(p->promises, p->cfg, cfg);
	config_free(p->cfg);
	p->cfg = cfg;
	spawn(p);
	log_info("reloaded %s", p->opts->conf);
}

/* Returns 1 to go on, 0 to exit. */
static int
on_signal(struct priv *p)
{
	struct signalfd_siginfo si;
	pid_t pid;
	int st;

	if (read(p->sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return 1;
	switch (si.ssi_signo) {
	case SIGHUP:
		reload(p);
		return 1;
	case SIGUSR1:
		if (p->child > 0)
			kill(p->child, SIGUSR1);
		return 1;
	case SIGCHLD:
		while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
			if (pid != p->child)
				continue;
			log_warnx("resolver exited (status %d); restarting "
			    "in 1 s", WIFEXITED(st) ? WEXITSTATUS(st) :
			    128 + WTERMSIG(st));
			p->child = -1;
			if (p->ipc != -1)
				close(p->ipc);
			p->ipc = -1;
			sleep(1);
			spawn(p);
		}
		return 1;
	default:
		return 0;
	}
}

int
priv_run(const struct dnsd_opts *opts, struct moat_config *cfg, int udpfd,
    int tcpfd)
{
	struct priv p = { .opts = opts, .cfg = cfg, .udp = udpfd,
	    .tcp = tcpfd, .child = -1, .ipc = -1 };
	struct pollfd pfd[2];

	if (!opts->no_nft && (p.nft = nftr_ctx_new()) == NULL)
		fatalx("cannot open nftables netlink (needs CAP_NET_ADMIN; "
		    "--no-nft to run without set updates)");
	if ((p.sfd = ev_signals_fd(true, SFD_CLOEXEC)) == -1)
		fatal("signalfd");
	p.promises = promises_new(PROMISE_MAX, PROMISE_PER_SANDBOX);
	spawn(&p);
	for (;;) {
		pfd[0] = (struct pollfd){ .fd = p.sfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = p.ipc, .events = POLLIN };
		if (poll(pfd, 2, -1) == -1 && errno != EINTR)
			fatal("poll");
		if ((pfd[0].revents & POLLIN) && !on_signal(&p))
			break;
		if (p.ipc != -1 && (pfd[1].revents & (POLLIN | POLLHUP)))
			ipc_in(&p);
	}
	stop_child(&p);
	promises_free(p.promises);
	nftr_ctx_free(p.nft);
	config_free(p.cfg);
	log_info("exiting");
	return EXIT_OK;
}
