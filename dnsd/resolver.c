/*
 * resolver.c -- dnsd's resolver process: the state every part shares,
 * the loop and its timers, signals, gatewayd's messages, reload and
 * statistics.  The parts are listed in resolver.h.
 */
#include <sys/signalfd.h>
#include <sys/epoll.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admit.h"
#include "ev.h"
#include "log.h"
#include "resolver.h"
#include "sandbox.h"

#define MIRROR_SLOTS	65536	/* (sandbox, address) pairs remembered */

struct resolver R;

static struct ev	 sig_ev, ipc_ev;
static uint64_t		 drop_last;	/* last IPC_DNS_DROPPED round */

/* --- timers ---------------------------------------------------------- */

/* Upstream attempts first, then TCP clients, then set updates. */
static void
expire(void)
{
	uint64_t now = ev_now();

	upstream_expire(now);
	frontend_expire(now);
	query_expire(now);
}

static int
next_timeout(void)
{
	uint64_t min = upstream_next(), now = ev_now(), t;

	if ((t = frontend_next()) < min)
		min = t;
	if ((t = query_next()) < min)
		min = t;
	if (min == UINT64_MAX)
		return 1000;
	return min <= now ? 0 : (int)(min - now > 1000 ? 1000 : min - now);
}

/* --- config, stats, signals, IPC ------------------------------------- */

/* --cache-size, else gateway.dns.cache_size. */
static size_t
cache_bytes(const struct moat_config *cfg)
{
	return R.opts->cache_bytes > 0 ? R.opts->cache_bytes :
	    (size_t)cfg->gw.dns_cache_size;
}

/* Tell gatewayd, once a second, how many queries each sandbox had
 * dropped over its rate, for `gatewayd ctl counters`. */
static void
report_drops(void)
{
	struct ipc_dns_dropped m;
	struct sbpolicy *sb;
	uint64_t now = ev_now();
	size_t i;

	/* Only gatewayd counts them; dnsd's own privileged half does not. */
	if (R.opts->ipc_fd == -1 || R.ipcfd == -1 || now - drop_last < 1000)
		return;
	drop_last = now;
	for (i = 0; i < policy_nsandboxes(R.pol); i++) {
		sb = policy_sandbox_at(R.pol, i);
		if (sb->dropped == 0)
			continue;
		memset(&m, 0, sizeof(m));
		snprintf(m.sandbox, sizeof(m.sandbox), "%s", sb->sb->name);
		m.count = sb->dropped;
		if (ipc_send(R.ipcfd, IPC_DNS_DROPPED, 0, &m, sizeof(m)) == 0)
			sb->dropped = 0;
	}
}

/* Do the two configurations filter and forward answers alike?  Then
 * what the cache holds is still what the new one would store. */
static bool
same_answers(const struct moat_config *a, const struct moat_config *b)
{
	static const int fams[] = { AF_INET, AF_INET6 };
	const struct moat_interval *x, *y;
	size_t i, nx, ny;

	if (a->gw.nupstream != b->gw.nupstream ||
	    cache_bytes(a) != cache_bytes(b))
		return false;
	for (i = 0; i < a->gw.nupstream; i++)
		if (addr_cmp(&a->gw.upstream[i], &b->gw.upstream[i]) != 0)
			return false;
	for (i = 0; i < 2; i++) {
		x = rangeset_intervals(a->private, fams[i], &nx);
		y = rangeset_intervals(b->private, fams[i], &ny);
		if (nx != ny || (nx > 0 && memcmp(x, y, nx * sizeof(*x)) != 0))
			return false;
	}
	return true;
}

static bool
same_allow(const struct moat_sandbox *a, const struct moat_sandbox *b)
{
	size_t i;

	if (a->allow.n != b->allow.n)
		return false;
	for (i = 0; i < a->allow.n; i++)
		if (strcmp(a->allow.v[i], b->allow.v[i]) != 0)
			return false;
	return true;
}

/* What a reload did to each sandbox's set, sorted by name for judge(). */
struct fates {
	struct fate {
		const char	*name;		/* the old config's */
		enum mirror_fate f;
	}		*v;
	size_t		 n;
};

static void
fate_of(const struct moat_sandbox *o, const struct moat_sandbox *n, void *arg)
{
	struct fates *fs = arg;
	enum mirror_fate f = MIRROR_KEEP;

	if (!admit_set_kept(o, n))
		f = MIRROR_GONE;
	else if (!same_allow(o, n))
		f = MIRROR_RECHECK;	/* widened: answers judged anew */
	if (f != MIRROR_KEEP)
		fs->v[fs->n++] = (struct fate){ o->name, f };
}

static int
fate_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fate *)a)->name,
	    ((const struct fate *)b)->name);
}

static enum mirror_fate
judge(const char *sandbox, void *arg)
{
	const struct fates *fs = arg;
	struct fate key = { sandbox, MIRROR_KEEP }, *hit;

	hit = bsearch(&key, fs->v, fs->n, sizeof(key), fate_cmp);
	return hit != NULL ? hit->f : MIRROR_KEEP;
}

/*
 * gatewayd's reload: it has applied the new policy itself, so what
 * became of each set follows from the two configurations
 * (admit_set_kept).  Keep what is still true: the cache if answers are
 * filtered and forwarded alike, and what the mirror knows of every kept
 * set whose sandbox's allow list did not change.  Answers parked for an
 * acknowledgement stay parked: the parent judges their additions by the
 * new policy.
 */
static void
swap_config(struct moat_config *cfg)
{
	struct moat_config *old = R.cfg;
	struct fates fs = { xcalloc(old->nsandboxes + 1, sizeof(*fs.v)), 0 };
	bool keep_cache = same_answers(old, cfg);
	size_t forgot;

	admit_pair_sandboxes(old, cfg, fate_of, &fs);
	qsort(fs.v, fs.n, sizeof(*fs.v), fate_cmp);
	forgot = mirror_forget(R.mirror, judge, &fs);
	free(fs.v);
	policy_free(R.pol);
	R.cfg = cfg;
	R.pol = policy_new(cfg);
	if (!keep_cache) {
		upstreams_set(cfg);
		cache_free(R.cache);
		R.cache = cache_new(cache_bytes(cfg));
	}
	log_info("reconfigured in place: %zu sandboxes; cache %s; %zu set "
	    "element(s) of %zu changed sandbox(es) to add again",
	    cfg->nsandboxes, keep_cache ? "kept" : "flushed", forgot, fs.n);
	config_free(old);
}

/*
 * A grant: one allowlist sandbox's new allow list, nothing else.  The
 * parent emptied its set if the list lost a name (then what the mirror
 * knows of it is gone); a list that only grew has its answers judged
 * anew.  The cache stays: answers do not depend on allow lists.
 */
static void
take_allow(const struct ipc_conf_allow *m)
{
	struct ipc_conf_ack ack = { m->gen, -1 };
	struct moat_strlist l = { NULL, 0 };
	struct moat_sandbox *sb = NULL, next;
	struct fate one;
	struct fates fs = { &one, 0 };
	char why[384] = "";
	size_t i;

	for (i = 0; i < R.cfg->nsandboxes; i++)
		if (strcmp(R.cfg->sandboxes[i].name, m->sandbox) == 0)
			sb = &R.cfg->sandboxes[i];
	if (sb == NULL || sb->egress != EGRESS_ALLOWLIST ||
	    config_allow_unpack(m->names, m->len, &l, why,
	    sizeof(why)) == -1) {
		log_warnx("gatewayd's allow list for %s does not fit the "
		    "configuration%s%s", m->sandbox, *why ? ": " : "", why);
		config_strlist_clear(&l);
	} else {
		next = *sb;
		next.allow = l;
		fate_of(sb, &next, &fs);
		mirror_forget(R.mirror, judge, &fs);
		config_strlist_clear(&sb->allow);
		sb->allow = l;
		policy_update(R.pol, (size_t)(sb - R.cfg->sandboxes));
		R.gen = m->gen;
		log_info("sandbox %s: allow list taken in place (%zu names)",
		    sb->name, sb->allow.n);
		ack.status = 0;
	}
	if (ipc_send(R.ipcfd, IPC_CONF_ACK, 0, &ack, sizeof(ack)) == -1)
		fatal("ipc: dns-config-ack");
}

/* Run with --ipc-fd but without --config-fd (SIGHUP or IPC_RELOAD):
 * re-read our own file.  Nothing tells us what became of the sets, so
 * forget what they hold, and the cache with it. */
static void
reload(void)
{
	struct moat_errors errs = { 0 };
	struct moat_config *cfg;

	if (R.opts->config_fd != -1) {
		/* gatewayd sends its new configuration (IPC_CONF). */
		log_warnx("reload: the configuration comes from gatewayd; "
		    "ignored");
		return;
	}
	if ((cfg = config_load(R.opts->conf, NULL, &errs)) == NULL) {
		log_warnx("reload: %s is not valid; keeping the running "
		    "configuration", R.opts->conf);
		for (size_t i = 0; i < errs.n; i++)
			log_warnx("%s", errs.msg[i]);
		config_errors_free(&errs);
		return;
	}
	policy_free(R.pol);
	config_free(R.cfg);
	R.cfg = cfg;
	R.pol = policy_new(cfg);
	upstreams_set(cfg);
	/* The private table may have changed with treat_as_public. */
	cache_free(R.cache);
	R.cache = cache_new(cache_bytes(cfg));
	/* A reload may have emptied or replaced the sets. */
	mirror_clear(R.mirror);
	log_info("reloaded %s: %zu sandboxes", R.opts->conf, cfg->nsandboxes);
}

/* Under gatewayd: its new configuration, checked and normalised, in a
 * sealed memfd.  Any failure leaves the old one running and says so;
 * gatewayd then restarts us. */
static void
reconfigure(int fd, uint32_t gen)
{
	struct moat_errors errs = { 0 };
	struct ipc_conf_ack ack = { gen, -1 };
	struct moat_config *cfg;

	cfg = config_load_normalised(R.opts->conf, fd, &errs);
	close(fd);
	if (cfg == NULL) {
		log_warnx("gatewayd's new configuration is not usable%s%s",
		    errs.n ? ": " : "", errs.n ? errs.msg[0] : "");
		config_errors_free(&errs);
	} else {
		swap_config(cfg);
		R.gen = gen;
		ack.status = 0;
	}
	if (ipc_send(R.ipcfd, IPC_CONF_ACK, 0, &ack, sizeof(ack)) == -1)
		fatal("ipc: dns-config-ack");
}

static void
stats_log(void)
{
	struct cache_stats cs;

	cache_stats(R.cache, &cs);
	log_info("stats: queries %llu (udp %llu tcp %llu) dropped %llu "
	    "formerr %llu notimp %llu refused %llu (unknown source %llu) "
	    "ratelimited %llu aaaa-empty %llu uad %llu",
	    (unsigned long long)R.c.queries, (unsigned long long)R.c.udp,
	    (unsigned long long)R.c.tcp, (unsigned long long)R.c.dropped,
	    (unsigned long long)R.c.formerr, (unsigned long long)R.c.notimp,
	    (unsigned long long)R.c.refused,
	    (unsigned long long)R.c.unknown_src,
	    (unsigned long long)R.c.ratelimited,
	    (unsigned long long)R.c.aaaa_empty, (unsigned long long)R.c.uad);
	log_info("stats: cache hits %llu misses %llu entries %zu bytes %zu "
	    "evictions %llu; forwarded %llu coalesced %llu timeouts %llu "
	    "bad %llu mismatched %llu failed %llu tcp-retries %llu "
	    "servfail %llu rebind-removed %llu set-adds %llu set-fail %llu "
	    "set-covered %llu set-joined %llu set-rejudged %llu "
	    "log-suppressed %llu tcp-refused %llu "
	    "tcp-per-source-refused %llu tcp-expired %llu",
	    (unsigned long long)cs.hits, (unsigned long long)cs.misses,
	    cs.entries, cs.bytes, (unsigned long long)cs.evictions,
	    (unsigned long long)R.c.forwarded,
	    (unsigned long long)R.c.coalesced,
	    (unsigned long long)R.c.up_timeouts,
	    (unsigned long long)R.c.up_bad,
	    (unsigned long long)R.c.up_mismatch,
	    (unsigned long long)R.c.up_fail, (unsigned long long)R.c.up_tcp,
	    (unsigned long long)R.c.servfail,
	    (unsigned long long)R.c.rebind_removed,
	    (unsigned long long)R.c.set_adds,
	    (unsigned long long)R.c.set_fail,
	    (unsigned long long)R.c.set_skipped,
	    (unsigned long long)R.c.set_joined,
	    (unsigned long long)R.c.set_rejudged,
	    (unsigned long long)R.c.log_suppressed,
	    (unsigned long long)R.c.tcp_refused,
	    (unsigned long long)R.c.tcp_per_src_refused,
	    (unsigned long long)R.c.tcp_expired);
}

static void
sig_cb(struct ev *h, uint32_t events)
{
	struct signalfd_siginfo si;

	while (read(h->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			if (R.opts->ipc_fd != -1)
				reload();
			else
				log_info("SIGHUP: the parent reloads");
			break;
		case SIGUSR1:
			stats_log();
			break;
		default:
			R.stop = 1;
			break;
		}
	}
}

static void
ipc_cb(struct ev *h, uint32_t events)
{
	static union {
		struct ipc_set_ack ack;
		struct ipc_conf cfg;
		struct ipc_conf_allow allow;
		uint8_t raw[IPC_MAX_PAYLOAD];
	} u;
	struct ipc_hdr hdr;
	char err[256];
	int fd = -1;
	size_t nfds;
	ssize_t n;

	n = ipc_recv_fds(h->fd, &hdr, u.raw, sizeof(u.raw), &fd, 1, &nfds,
	    err, sizeof(err));
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == -2)
		fatalx("ipc: %s", err);	/* a malformed message is fatal to us */
	if (n == -1)
		fatal("ipc");
	if (n == 0 && hdr.type == 0) {
		log_info("privileged side went away; exiting");
		R.stop = 1;
		return;
	}
	/* A descriptor comes with a new configuration and nothing else. */
	if ((hdr.type == IPC_CONF) != (nfds == 1))
		fatalx("ipc: %s with %zu descriptor(s)",
		    ipc_type_name(hdr.type), nfds);
	switch (hdr.type) {
	case IPC_SET_ACK:
		setadd_acked(hdr.id, u.ack.status);
		break;
	case IPC_RELOAD:
		reload();
		break;
	case IPC_CONF:
		reconfigure(fd, u.cfg.gen);
		break;
	case IPC_CONF_ALLOW:
		take_allow(&u.allow);
		break;
	default:
		fatalx("ipc: unexpected %s message", ipc_type_name(hdr.type));
	}
}

static void
watch(struct ev *h, int fd, ev_cb cb)
{
	if (ev_add(h, fd, EPOLLIN, cb, NULL) == -1)
		fatal("epoll");
}

static void
resolver_cleanup(void)
{
	query_close_all();
	upstream_close_all();
	frontend_close_all();
	ev_run_once(0);		/* run the deferred frees */
	cache_free(R.cache);
	mirror_free(R.mirror);
	policy_free(R.pol);
	config_free(R.cfg);
}

int
resolver_run(const struct dnsd_opts *opts, struct moat_config *cfg,
    int udpfd, int tcpfd, int ipcfd)
{
	int sfd;

	R.opts = opts;
	R.cfg = cfg;
	R.pol = policy_new(cfg);
	R.cache = cache_new(cache_bytes(cfg));
	R.mirror = mirror_new(MIRROR_SLOTS);
	R.ipcfd = ipcfd;
	upstream_init(cfg);
	if (ev_init() == -1 ||
	    (sfd = ev_signals_fd(false, SFD_NONBLOCK | SFD_CLOEXEC)) == -1)
		fatal("event loop");
	query_init();
	frontend_start(udpfd, tcpfd);
	if (opts->udp6_fd != -1)
		frontend_start6(opts->udp6_fd, opts->tcp6_fd);
	watch(&sig_ev, sfd, sig_cb);
	if (ipcfd != -1) {
		if (fcntl(ipcfd, F_SETFL, O_NONBLOCK) == -1)
			fatal("ipc fd");
		watch(&ipc_ev, ipcfd, ipc_cb);
	}
	/* Everything is open: from here on only the syscalls of the loop. */
	/* Only a dnsd that re-reads its own file may open files. */
	if (sandbox_narrow(opts->ipc_fd != -1 && opts->config_fd == -1 ?
	    SANDBOX_DNSD_REREAD : SANDBOX_DNSD) == -1)
		fatalx("seccomp: cannot install the filter");
	log_info("resolving for %zu sandboxes, %u upstreams%s",
	    cfg->nsandboxes, upstream_count(),
	    ipcfd == -1 ? " (no set updates)" : "");
	while (!R.stop) {
		if (ev_run_once(next_timeout()) == -1)
			fatal("epoll_wait");
		expire();
		report_drops();
	}
	stats_log();
	resolver_cleanup();
	return EXIT_OK;
}
