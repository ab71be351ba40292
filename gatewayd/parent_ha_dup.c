/*
 * parent_ha_dup.c -- split brain: is another box answering for the
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
 *     seconds, or when keepalived takes this box out of master.
 *
 * The ARP itself is read by the unprivileged ha-arp process
 * (gatewayd/ha_arp.c), which sends one IPC_HA_ARP per reply; this file
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

#include "gatewayd.h"
#include "ha_arp.h"
#include "ipc.h"
#include "log.h"

#define PROBE_MS	1000	/* between two probes while master */
#define FOLLOWUP_MS	400	/* from a first reply to the unicast probe */
#define CONFIRM_MS	400	/* the unicast probe's answer, at most */
#define DUP_HOLD	3	/* s a seen answer counts as current */

static const uint8_t broadcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

struct ha_dup {
	struct ha_arp_watch w;		/* what the ha-arp process is given */
	uint64_t	 next_ms;	/* the next probe, gw_mono_ms() */
	/* The current episode: one foreign MAC that answered. */
	bool		 on;
	uint8_t		 other[6];
	time_t		 first;		/* its first answer */
	time_t		 seen;		/* its last */
	uint64_t	 followup_at;	/* ms: unicast probe due, or 0 */
	uint64_t	 window_from;	/* ms: an answer in [from, to] */
	uint64_t	 window_to;	/* confirms the episode */
	bool		 confirmed;
	uint64_t	 answers, own, unsolicited;
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
episode_end(struct ha_dup *d)
{
	char mac[18];

	if (!d->on)
		return;
	if (d->confirmed) {
		fmt_mac(d->other, mac, sizeof(mac));
		log_info("ha: split brain over: %s no longer answers", mac);
	}
	d->on = d->confirmed = false;
	d->followup_at = d->window_from = d->window_to = 0;
}

static void
confirm(struct gw *gw, struct ha_dup *d)
{
	char mac[18], addr[INET_ADDRSTRLEN];

	d->confirmed = true;
	d->followup_at = 0;
	fmt_mac(d->other, mac, sizeof(mac));
	inet_ntop(AF_INET, d->w.addr, addr, sizeof(addr));
	log_warnx("ha: split brain: %s is also held by %s, another master "
	    "(it answered a second, unicast probe)", addr, mac);
	audit_event(gw, "ha-split-brain", "address", addr, "mac", mac, NULL);
}

/* One reply the ha-arp process saw (IPC_HA_ARP, shape-checked). */
static void
on_reply(struct gw *gw, struct ha_dup *d, const struct ipc_ha_arp *m)
{
	uint64_t ms = gw_mono_ms();
	time_t now = time(NULL);
	char mac[18];

	if (gw->ha_role != HA_MASTER || memcmp(m->ip, d->w.addr, 4) != 0)
		return;
	d->answers++;
	if (m->kind != IPC_HA_ARP_REPLY) {	/* no answer to a probe */
		d->unsolicited++;
		return;
	}
	if (d->on && memcmp(m->mac, d->other, 6) == 0) {
		d->seen = now;
		if (d->confirmed)
			return;
		if (d->window_to != 0 && ms >= d->window_from &&
		    ms <= d->window_to)
			confirm(gw, d);
		else if (d->followup_at == 0 && ms > d->window_to)
			d->followup_at = ms + FOLLOWUP_MS;	/* try again */
		return;
	}
	/* Another MAC while one is being asked, or is confirmed: the
	 * first is dealt with first. */
	if (d->on && (d->confirmed || d->followup_at != 0 ||
	    ms <= d->window_to))
		return;
	if (is_own(d, m->mac)) {
		d->own++;
		return;
	}
	d->on = true;
	d->confirmed = false;
	memcpy(d->other, m->mac, 6);
	d->first = d->seen = now;
	d->followup_at = ms + FOLLOWUP_MS;
	d->window_from = d->window_to = 0;
	fmt_mac(m->mac, mac, sizeof(mac));
	log_info("ha: %s answered for the shared uplink address; asking it "
	    "again before calling it another master", mac);
}

void
ha_arp_dispatch(struct gw *gw, struct gw_proc *p, int fd,
    const struct gw_msg *m)
{
	if (gw->ha_dup != NULL)
		on_reply(gw, gw->ha_dup, m->data);
}

void
ha_dup_tick(struct gw *gw)
{
	struct ha_dup *d = gw->ha_dup;
	uint64_t ms = gw_mono_ms();

	if (d == NULL)
		return;
	if (gw->ha_role != HA_MASTER)
		episode_end(d);
	else if (d->on && time(NULL) - d->seen > DUP_HOLD)
		episode_end(d);
	if (d->on && d->followup_at != 0 && ms >= d->followup_at) {
		send_probe(gw, d->other);
		d->followup_at = 0;
		d->window_from = ms;
		d->window_to = ms + CONFIRM_MS;
	}
	if (ms < d->next_ms)
		return;
	if (gw->ha_role == HA_MASTER)
		send_probe(gw, broadcast);
	d->next_ms = ms + PROBE_MS;
}

int
ha_dup_timeout(const struct gw *gw, int timeout)
{
	const struct ha_dup *d = gw->ha_dup;
	uint64_t now = gw_mono_ms(), due, next;

	if (d == NULL)
		return timeout;
	due = d->followup_at != 0 && d->followup_at < d->next_ms ?
	    d->followup_at : d->next_ms;
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

	if (!gw->ha_on || g->ha_uplink_address.family != AF_INET)
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
	gw->ha_dup = d;
}

const struct ha_arp_watch *
ha_dup_watch(const struct gw *gw)
{
	return gw->ha_dup != NULL ? &gw->ha_dup->w : NULL;
}

void
ha_dup_stop(struct gw *gw)
{
	free(gw->ha_dup);
	gw->ha_dup = NULL;
}

/* The current episode while master: HA_DUP_NONE, or UNCONFIRMED (one
 * foreign MAC answered, not yet a second time when asked alone) or
 * CONFIRMED (another master), with that MAC and since when. */
int
ha_dup_state(const struct gw *gw, char *mac, size_t maclen, time_t *first)
{
	const struct ha_dup *d = gw->ha_dup;

	if (d == NULL || !d->on || time(NULL) - d->seen > DUP_HOLD ||
	    gw->ha_role != HA_MASTER)
		return HA_DUP_NONE;
	fmt_mac(d->other, mac, maclen);
	*first = d->first;
	return d->confirmed ? HA_DUP_CONFIRMED : HA_DUP_UNCONFIRMED;
}
