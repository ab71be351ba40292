/*
 * parent/ha_dup.c -- split brain: is another box answering for the
 * pair's shared uplink address (gateway.ha.uplink_address) while this
 * one is master?
 *
 * Two masters at once happen when the boxes stop hearing each other
 * (the peer link is cut) and both keep their uplink.  Each then holds
 * the shared addresses; the policy stands on both, so nothing opens,
 * but the guests' flows and the uplink's replies go to either box.
 * While this box is master, every PROBE_MS it asks who has the shared
 * uplink address, as a host checking for a duplicate does (RFC 5227: an
 * ARP request from 0.0.0.0, which changes nobody's ARP cache).  Only a
 * box holding the address answers.
 *
 * Anyone on the uplink segment can also send a reply, so one reply is
 * not yet another master:
 *   - only a reply addressed to this box (an answer to its probe), from
 *     a MAC none of this box's interfaces has, starts an episode, shown
 *     as "unconfirmed";
 *   - FOLLOWUP_MS later this box probes that MAC alone (unicast), and
 *     only a reply from it within CONFIRM_MS of that probe confirms it:
 *     a burst of forged replies sent at once does not;
 *   - only a confirmed episode is "another master" in ctl status and the
 *     metrics, and is audited (ha-split-brain), once per episode;
 *   - an episode ends when the other MAC has not answered for DUP_HOLD
 *     seconds, or when keepalived takes this box out of master;
 *   - NCAND MACs are followed at once, and one that stayed silent when
 *     asked alone gives its place up: a forger that answers every
 *     broadcast probe first does not keep another master's answers out.
 *
 * The ARP itself is read by the unprivileged ha-arp process
 * (gatewayd/ha_arp/ha_arp.c), which sends one IPC_HA_ARP per reply; this file
 * sees only those typed messages, and asks for each probe with an
 * IPC_HA_PROBE.  The root parent holds no packet socket.
 */
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <net/if.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gw.h"
#include "audit.h"
#include "policy.h"
#include "ha.h"
#include "../ha_arp/ha_arp.h"
#include "ipc.h"
#include "log.h"

#define PROBE_MS	1000	/* between two probes while master */
#define FOLLOWUP_MS	400	/* from a first reply to the unicast probe */
#define CONFIRM_MS	400	/* the unicast probe's answer, at most */
#define DUP_HOLD	3	/* s a seen answer counts as current */
#define NCAND		4	/* foreign MACs asked at once */

static const uint8_t broadcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

/* One foreign MAC that answered: an episode, confirmed or not.  Several
 * are followed at once, so that a forger answering first cannot keep
 * another master's answers out. */
struct ha_cand {
	bool		 on;
	uint8_t		 mac[6];
	time_t		 first;		/* its first answer */
	time_t		 seen;		/* its last */
	uint64_t	 followup_at;	/* ms: unicast probe due, or 0 */
	uint64_t	 window_from;	/* ms: an answer in [from, to] */
	uint64_t	 window_to;	/* confirms it */
	bool		 confirmed;
};

struct ha_dup {
	struct ha_arp_watch w;		/* what the ha-arp process is given */
	uint64_t	 next_ms;	/* the next probe, gw_mono_ms() */
	struct ha_cand	 cand[NCAND];
	uint64_t	 answers, own, unsolicited, crowded;
};

static void
fmt_mac(const uint8_t m[6], char *out, size_t len)
{
	snprintf(out, len, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
	    m[3], m[4], m[5]);
}

/* mac is one of this box's interfaces' (read now: interfaces come and
 * go, and a bridge takes its ports' addresses). */
static bool
is_own(const struct ha_dup *d, const uint8_t mac[6])
{
	struct ifaddrs *ifs, *i;
	const struct sockaddr_ll *ll;
	bool own = memcmp(mac, d->w.mac, 6) == 0;

	if (own || getifaddrs(&ifs) == -1)
		return own;
	for (i = ifs; i != NULL && !own; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_PACKET)
			continue;
		ll = (const struct sockaddr_ll *)i->ifa_addr;
		own = ll->sll_halen == 6 && memcmp(ll->sll_addr, mac, 6) == 0;
	}
	freeifaddrs(ifs);
	return own;
}

static void
send_probe(struct gw *gw, const uint8_t dst[6])
{
	struct ipc_ha_probe m = { .pad = { 0, 0 } };
	int ipc = gw->procs[PROC_HA_ARP].ipc;

	memcpy(m.dst, dst, 6);
	if (ipc != -1 && ipc_send(ipc, IPC_HA_PROBE, 0, &m, sizeof(m)) == -1)
		log_warn("ha: asking ha-arp for a probe");
}

static void
cand_end(struct ha_cand *c)
{
	char mac[18];

	if (c->on && c->confirmed) {
		fmt_mac(c->mac, mac, sizeof(mac));
		log_info("ha: split brain over: %s no longer answers", mac);
	}
	memset(c, 0, sizeof(*c));
}

/* Asked alone and silent: its slot may go to another MAC. */
static bool
cand_failed(const struct ha_cand *c, uint64_t ms)
{
	return !c->confirmed && c->followup_at == 0 && ms > c->window_to;
}

static void
confirm(struct gw *gw, struct ha_dup *d, struct ha_cand *c)
{
	char mac[18], addr[INET_ADDRSTRLEN];

	c->confirmed = true;
	c->followup_at = 0;
	fmt_mac(c->mac, mac, sizeof(mac));
	inet_ntop(AF_INET, d->w.addr, addr, sizeof(addr));
	log_warnx("ha: split brain: %s is also held by %s, another master "
	    "(it answered a second, unicast probe)", addr, mac);
	audit_event(gw, "ha-split-brain", "address", addr, "mac", mac, NULL);
}

/* Another answer from a MAC being followed. */
static void
cand_again(struct gw *gw, struct ha_dup *d, struct ha_cand *c, uint64_t ms)
{
	c->seen = time(NULL);
	if (c->confirmed)
		return;
	if (c->window_to != 0 && ms >= c->window_from && ms <= c->window_to)
		confirm(gw, d, c);
	else if (cand_failed(c, ms))
		c->followup_at = ms + FOLLOWUP_MS;	/* ask it again */
}

static struct ha_cand *
cand_find(struct ha_dup *d, const uint8_t mac[6])
{
	size_t i;

	for (i = 0; i < NCAND; i++)
		if (d->cand[i].on && memcmp(d->cand[i].mac, mac, 6) == 0)
			return &d->cand[i];
	return NULL;
}

/* A slot for a new MAC: a free one, else one whose MAC was asked alone
 * and did not answer; NULL if every one is being asked or confirmed. */
static struct ha_cand *
cand_slot(struct ha_dup *d, uint64_t ms)
{
	size_t i;

	for (i = 0; i < NCAND; i++)
		if (!d->cand[i].on)
			return &d->cand[i];
	for (i = 0; i < NCAND; i++)
		if (cand_failed(&d->cand[i], ms))
			return &d->cand[i];
	return NULL;
}

/* One reply the ha-arp process saw (IPC_HA_ARP, shape-checked). */
static void
on_reply(struct gw *gw, struct ha_dup *d, const struct ipc_ha_arp *m)
{
	uint64_t ms = gw_mono_ms();
	struct ha_cand *c;
	char mac[18];

	if (ha_of(gw)->ha_role != HA_MASTER || memcmp(m->ip, d->w.addr, 4) != 0)
		return;
	d->answers++;
	if (m->kind != IPC_HA_ARP_REPLY) {	/* no answer to a probe */
		d->unsolicited++;
		return;
	}
	if ((c = cand_find(d, m->mac)) != NULL) {
		cand_again(gw, d, c, ms);
		return;
	}
	if ((c = cand_slot(d, ms)) == NULL) {
		d->crowded++;
		return;
	}
	if (is_own(d, m->mac)) {
		d->own++;
		return;
	}
	memset(c, 0, sizeof(*c));
	c->on = true;
	memcpy(c->mac, m->mac, 6);
	c->first = c->seen = time(NULL);
	c->followup_at = ms + FOLLOWUP_MS;
	fmt_mac(m->mac, mac, sizeof(mac));
	log_info("ha: %s answered for the shared uplink address; asking it "
	    "again before calling it another master", mac);
}

void
ha_arp_dispatch(struct gw *gw, struct gw_proc *p, int fd,
    const struct gw_msg *m)
{
	if (ha_of(gw)->ha_dup != NULL)
		on_reply(gw, ha_of(gw)->ha_dup, m->data);
}

void
ha_dup_tick(struct gw *gw)
{
	struct ha_dup *d = ha_of(gw)->ha_dup;
	uint64_t ms = gw_mono_ms();
	struct ha_cand *c;

	if (d == NULL)
		return;
	for (c = d->cand; c < d->cand + NCAND; c++) {
		if (c->on && (ha_of(gw)->ha_role != HA_MASTER ||
		    time(NULL) - c->seen > DUP_HOLD))
			cand_end(c);
		if (c->on && c->followup_at != 0 && ms >= c->followup_at) {
			send_probe(gw, c->mac);
			c->followup_at = 0;
			c->window_from = ms;
			c->window_to = ms + CONFIRM_MS;
		}
	}
	if (ms < d->next_ms)
		return;
	if (ha_of(gw)->ha_role == HA_MASTER)
		send_probe(gw, broadcast);
	d->next_ms = ms + PROBE_MS;
}

int
ha_dup_timeout(const struct gw *gw, int timeout)
{
	const struct ha_dup *d = ha_of(gw)->ha_dup;
	uint64_t now = gw_mono_ms(), due, next;
	size_t i;

	if (d == NULL)
		return timeout;
	due = d->next_ms;
	for (i = 0; i < NCAND; i++)
		if (d->cand[i].on && d->cand[i].followup_at != 0 &&
		    d->cand[i].followup_at < due)
			due = d->cand[i].followup_at;
	next = due <= now ? 0 : due - now;
	return timeout >= 0 && (uint64_t)timeout < next ? timeout : (int)next;
}

/* With gateway.ha and its uplink_address: what the watch needs, read
 * here (the ha-arp process may not ask).  A failure is logged and leaves
 * the box without the watch (it changes no decision). */
void
ha_dup_start(struct gw *gw)
{
	const struct moat_gateway *g = &gw->cfg->gw;
	struct ha_dup *d;
	struct ifreq ifr;
	int s;

	if (!ha_of(gw)->ha_on || g->ha_uplink_address.family != AF_INET)
		return;
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		fatal("calloc");
	memcpy(d->w.addr, g->ha_uplink_address.a, 4);
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", g->uplink);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s == -1 || (d->w.ifindex = (int)if_nametoindex(g->uplink)) == 0 ||
	    ioctl(s, SIOCGIFHWADDR, &ifr) == -1) {
		log_warn("ha: no split-brain watch on %s", g->uplink);
		if (s != -1)
			close(s);
		free(d);
		return;
	}
	close(s);
	memcpy(d->w.mac, ifr.ifr_hwaddr.sa_data, 6);
	d->next_ms = gw_mono_ms() + PROBE_MS;
	ha_of(gw)->ha_dup = d;
}

const struct ha_arp_watch *
ha_dup_watch(const struct gw *gw)
{
	return ha_of(gw)->ha_dup != NULL ? &ha_of(gw)->ha_dup->w : NULL;
}

void
ha_dup_stop(struct gw *gw)
{
	free(ha_of(gw)->ha_dup);
	ha_of(gw)->ha_dup = NULL;
}

/* The split brain this master sees: HA_DUP_NONE, or UNCONFIRMED (a
 * foreign MAC answered, not yet a second time when asked alone) or
 * CONFIRMED (another master), with that MAC and since when.  A confirmed
 * one first, else the earliest. */
int
ha_dup_state(const struct gw *gw, char *mac, size_t maclen, time_t *first)
{
	const struct ha_dup *d = ha_of(gw)->ha_dup;
	const struct ha_cand *c, *best = NULL;
	time_t now = time(NULL);

	if (d == NULL || ha_of(gw)->ha_role != HA_MASTER)
		return HA_DUP_NONE;
	for (c = d->cand; c < d->cand + NCAND; c++) {
		if (!c->on || now - c->seen > DUP_HOLD)
			continue;
		if (best == NULL || (c->confirmed && !best->confirmed) ||
		    (c->confirmed == best->confirmed && c->first < best->first))
			best = c;
	}
	if (best == NULL)
		return HA_DUP_NONE;
	fmt_mac(best->mac, mac, maclen);
	*first = best->first;
	return best->confirmed ? HA_DUP_CONFIRMED : HA_DUP_UNCONFIRMED;
}
