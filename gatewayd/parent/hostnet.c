/*
 * parent/hostnet.c -- follow the host's IPv6 networks.  With
 * gateway.ipv6, guests never reach a network of the host's own
 * interfaces, nor one it routes to other than by default (the policy's
 * set lan6).  A homelab host's networks change
 * while gatewayd runs: its router delegates a new prefix, an interface
 * comes up, a route is added.  The parent listens to rtnetlink's IPv6
 * address and route notifications; when the networks nftr_lan6_host() finds differ from
 * those the policy holds, the policy is built again and nft-rules sends
 * the kernel only the difference (lan6 emptied and refilled in one
 * transaction, nothing else touched).  Address refreshes that change no
 * network (lifetimes renewed by every advertisement) cost a look at the
 * interfaces and nothing more.
 */
#include <stdlib.h>
#include <string.h>

#include "gw.h"
#include "commit.h"
#include "policy.h"
#include "hostnet.h"
#include "ev.h"
#include "log.h"
#include "nftrules.h"
#include "rtnl.h"

struct hostnet {
	struct ev		 ev;
	struct gw		*gw;
	struct rtnl_watch	*watch;
	struct moat_prefix	*nets;		/* as last read */
	size_t			 n;
	bool			 known;		/* nets read at least once */
};

/* Its module state: the watch, or NULL before it starts. */
static struct hostnet **
hostnet_slot(const struct gw *gw)
{
	return gw_mod(gw, MOD_HOSTNET);
}

static bool
nets_equal(const struct moat_prefix *a, size_t na,
    const struct moat_prefix *b, size_t nb)
{
	size_t i;

	if (na != nb)
		return false;
	for (i = 0; i < na; i++)
		if (a[i].plen != b[i].plen || a[i].addr.family !=
		    b[i].addr.family || memcmp(a[i].addr.a, b[i].addr.a,
		    sizeof(a[i].addr.a)) != 0)
			return false;
	return true;
}

/* Read the networks; true when they differ from the last reading. */
static bool
nets_changed(struct hostnet *h, const char *bridge)
{
	struct moat_prefix *v = NULL;
	size_t n = 0;

	if (nftr_lan6_host(bridge, &v, &n) == -1) {
		log_warn("cannot list this host's IPv6 networks");
		return false;
	}
	/* And its routes: a change to either rebuilds lan6 (which keeps
	 * only the routes the policy wants). */
	if (nftr_routes6(bridge, NULL, &v, &n) == -1)
		log_warn("cannot list this host's IPv6 routes");
	if (h->known && nets_equal(h->nets, h->n, v, n)) {
		free(v);
		return false;
	}
	free(h->nets);
	h->nets = v;
	h->n = n;
	h->known = true;
	return true;
}

static void
on_readable(struct ev *e, uint32_t events)
{
	struct hostnet *h = e->arg;

	(void)events;
	hostnet_readable(h->gw);
}

void
hostnet_start(struct gw *gw)
{
	struct hostnet *h = xcalloc(1, sizeof(*h));

	if ((h->watch = rtnl_watch_open()) == NULL)
		log_warn("rtnetlink: cannot follow the host's IPv6 networks; "
		    "a reload (SIGHUP) picks up new ones");
	(*hostnet_slot(gw)) = h;
	h->gw = gw;
	h->ev.fd = -1;
	if (h->watch != NULL && ev_add(&h->ev, rtnl_watch_fd(h->watch),
	    EPOLLIN, on_readable, h) == -1)
		log_warn("rtnetlink: watching");
	/* What the policy just applied was built from. */
	nets_changed(h, gw->cfg->gw.bridge);
}

void
hostnet_readable(struct gw *gw)
{
	struct hostnet *h = (*hostnet_slot(gw));
	struct gw_commit c = { .why = "the host's IPv6 networks" };
	char err[1024];
	int r;

	if ((r = rtnl_watch_drain(h->watch)) == -1)
		log_warn("rtnetlink");
	/* Read the interfaces even without IPv6 for guests, so that the
	 * reading stays current for a reload that turns it on. */
	if (r != 1 || !nets_changed(h, gw->cfg->gw.bridge) ||
	    !gw->cfg->gw.ipv6)
		return;
	log_info("the host's IPv6 networks changed (%zu now): updating the "
	    "policy", h->n);
	if (gw_commit(gw, NULL, &c, err, sizeof(err)) == -1) {
		log_warnx("updating the policy for the host's IPv6 networks "
		    "failed: %s; guests are still kept from the old ones",
		    err);
		h->known = false;	/* the next notification tries again */
	}
}

void
hostnet_stop(struct gw *gw)
{
	if ((*hostnet_slot(gw)) == NULL)
		return;
	ev_del(&(*hostnet_slot(gw))->ev);
	rtnl_watch_close((*hostnet_slot(gw))->watch);
	free((*hostnet_slot(gw))->nets);
	free((*hostnet_slot(gw)));
	(*hostnet_slot(gw)) = NULL;
}

static int
hostnet_start_mod(struct gw *gw)
{
	hostnet_start(gw);
	return 0;
}

const struct gw_module hostnet_module = {
	.name = "hostnet",
	.size = sizeof(struct hostnet *),
	.start = hostnet_start_mod,
	.stop = hostnet_stop,
};
