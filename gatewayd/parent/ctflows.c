/*
 * ctflows.c -- the conntrack entries of the parent's namespace,
 * kept from the kernel's events (parent_ctflows.h).
 *
 * Each entry is its CTA_TUPLE_ORIG attribute, byte for byte as the
 * kernel writes it in a dump, a new-entry event and a destroy event
 * alike, in a hash on those bytes, and whether the flow is live: a TCP
 * connection being set up or established (its state from the entry's
 * protocol information, which the kernel sends again at each change),
 * any other flow while the kernel keeps it.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nf_conntrack_tcp.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ev.h"
#include "log.h"
#include "sysctl.h"
#include "ctflows.h"

#define CTFLOWS_MAX		(1 << 20)	/* entries; more: walk instead */
#define CTFLOWS_RCVBUF		(16 << 20)	/* bytes of events queued */
#define CTFLOWS_RESYNC_S	10
#define CTFLOWS_TUPLE_MAX	256		/* bytes of one tuple */
#define CTFLOWS_DRAIN_MAX	65536		/* reads (events) at a time */

struct flow {
	struct flow	*next;
	uint32_t	 hash;
	uint16_t	 len;		/* of the attribute, header included */
	uint8_t		 family;
	bool		 live;		/* being set up or established */
	uint32_t	 attr[];	/* the attribute, 4-byte aligned */
};

static struct {
	struct mnl_socket *ev;		/* events: new and destroyed */
	struct flow	**b;
	size_t		  nb, n;
	size_t		  nlive;	/* entries live */
	bool		  synced;	/* every entry known, none lost since */
	bool		  walking;	/* a full walk feeds the list */
	bool		  lost;		/* an event was lost during the walk */
	time_t		  tried;	/* the last walk the tick made */
	struct ev	  w;		/* the events' socket on the loop */
	bool		  on_loop;
} C;

static bool	events_on(void);
static bool	drain(void);

/* Events are read as they come when the process runs the loop (the
 * parent); elsewhere, and until then, ctflows_tick() reads them. */
static void
readable(struct ev *e, uint32_t events)
{
	(void)e;
	(void)events;
	(void)drain();
}

static void
close_events(void)
{
	if (C.on_loop)
		ev_del(&C.w);
	C.on_loop = false;
	if (C.ev != NULL)
		mnl_socket_close(C.ev);
	C.ev = NULL;
}

static uint32_t
fnv(const void *p, size_t len)
{
	const unsigned char *s = p;
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ s[i]) * 16777619u;
	return h;
}

/* The tuple's bytes, without the attribute header (whose type may carry
 * the nested flag or not). */
static const void *
key(const struct nlattr *a, size_t *len)
{
	*len = a->nla_len - sizeof(*a);
	return (const char *)a + sizeof(*a);
}

static struct flow **
find(const struct nlattr *a, uint32_t h)
{
	struct flow **f;
	const struct nlattr *fa;
	size_t len;
	const void *k = key(a, &len);

	if (C.nb == 0)
		return NULL;
	for (f = &C.b[h & (C.nb - 1)]; *f != NULL; f = &(*f)->next) {
		fa = (const struct nlattr *)(*f)->attr;
		if ((*f)->hash == h && fa->nla_len == a->nla_len &&
		    memcmp(fa + 1, k, len) == 0)
			return f;
	}
	return NULL;
}

static void
forget_all(void)
{
	struct flow *f, *next;
	size_t i;

	for (i = 0; i < C.nb; i++)
		for (f = C.b[i]; f != NULL; f = next) {
			next = f->next;
			free(f);
		}
	free(C.b);
	C.b = NULL;
	C.nb = C.n = C.nlive = 0;
}

static void
grow(void)
{
	struct flow **b, *f, *next;
	size_t nb = C.nb ? C.nb * 2 : 256, i;

	b = xcalloc(nb, sizeof(*b));
	for (i = 0; i < C.nb; i++)
		for (f = C.b[i]; f != NULL; f = next) {
			next = f->next;
			f->next = b[f->hash & (nb - 1)];
			b[f->hash & (nb - 1)] = f;
		}
	free(C.b);
	C.b = b;
	C.nb = nb;
}

/* More than the list may hold: it is not trusted until a walk finds
 * fewer. */
static void
overflow(void)
{
	forget_all();
	C.synced = false;
	C.lost = true;
}

static void
set_live(struct flow *f, bool live)
{
	if (f->live != live) {
		if (live)
			C.nlive++;
		else
			C.nlive--;
	}
	f->live = live;
}

/* An entry, new or known: state is what the message says of it (1 live,
 * 0 not, -1 nothing: a known entry keeps its own, a new one is live). */
static void
put(const struct nlattr *a, uint8_t family, int state)
{
	struct flow *f, **known;
	const void *k;
	size_t len;
	uint32_t h;

	if (a->nla_len <= sizeof(*a) || a->nla_len > CTFLOWS_TUPLE_MAX)
		return;
	k = key(a, &len);
	h = fnv(k, len);
	if ((known = find(a, h)) != NULL) {
		if (state != -1)
			set_live(*known, state == 1);
		return;
	}
	if (C.n >= CTFLOWS_MAX) {
		overflow();
		return;
	}
	if (C.n >= C.nb)
		grow();
	f = xmalloc(sizeof(*f) + MNL_ALIGN(a->nla_len));
	f->hash = h;
	f->len = a->nla_len;
	f->family = family;
	f->live = false;
	set_live(f, state != 0);
	memcpy(f->attr, a, a->nla_len);
	f->next = C.b[h & (C.nb - 1)];
	C.b[h & (C.nb - 1)] = f;
	C.n++;
}

void
ctflows_gone(const struct nlattr *a)
{
	struct flow **f, *dead;
	const void *k;
	size_t len;

	if (a->nla_len <= sizeof(*a))
		return;
	k = key(a, &len);
	if ((f = find(a, fnv(k, len))) == NULL)
		return;
	dead = *f;
	*f = dead->next;
	set_live(dead, false);
	free(dead);
	C.n--;
}

/* The CTA_TUPLE_ORIG of one ctnetlink message, or NULL. */
static const struct nlattr *
orig_tuple(const struct nlmsghdr *nlh)
{
	const struct nlattr *a;

	if (nlh->nlmsg_len < MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(struct
	    nfgenmsg)))
		return NULL;
	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg))
		if (mnl_attr_get_type(a) == CTA_TUPLE_ORIG &&
		    mnl_attr_get_payload_len(a) > 0)
			return a;
	return NULL;
}

/* The nested attribute of type type inside a, or NULL. */
static const struct nlattr *
nested(const struct nlattr *a, uint16_t type)
{
	const struct nlattr *b;

	if (mnl_attr_get_payload_len(a) < sizeof(*b))
		return NULL;
	mnl_attr_for_each_nested(b, a)
		if (mnl_attr_get_type(b) == type)
			return b;
	return NULL;
}

/*
 * Whether the entry a message describes is live: 1, 0, or -1 when the
 * message does not say.  A TCP connection is live from its first SYN
 * to its first FIN or RST (SYN_SENT, SYN_RECV, ESTABLISHED, and the
 * SYN_SENT2 of a simultaneous open), as its protocol information says;
 * a flow of any other protocol is live while the kernel keeps it.
 */
static int
msg_state(const struct nlmsghdr *nlh, const struct nlattr *tuple)
{
	const struct nlattr *a, *b;
	uint8_t st;

	if ((b = nested(tuple, CTA_TUPLE_PROTO)) == NULL ||
	    (b = nested(b, CTA_PROTO_NUM)) == NULL ||
	    mnl_attr_get_payload_len(b) < 1)
		return -1;
	if (mnl_attr_get_u8(b) != IPPROTO_TCP)
		return 1;
	mnl_attr_for_each(a, nlh, sizeof(struct nfgenmsg))
		if (mnl_attr_get_type(a) == CTA_PROTOINFO &&
		    (b = nested(a, CTA_PROTOINFO_TCP)) != NULL &&
		    (b = nested(b, CTA_PROTOINFO_TCP_STATE)) != NULL &&
		    mnl_attr_get_payload_len(b) >= 1) {
			st = mnl_attr_get_u8(b);
			return st == TCP_CONNTRACK_SYN_SENT ||
			    st == TCP_CONNTRACK_SYN_RECV ||
			    st == TCP_CONNTRACK_ESTABLISHED ||
			    st == TCP_CONNTRACK_SYN_SENT2;
		}
	return -1;
}

void
ctflows_events(const void *buf, size_t len)
{
	const struct nlmsghdr *nlh = buf;
	const struct nfgenmsg *nfg;
	const struct nlattr *a;
	int rest = len > INT32_MAX ? INT32_MAX : (int)len;

	/* mnl_nlmsg_ok compares the length as a signed int: a length of 2^31
	 * or more would pass it.  Checked here as unsigned first. */
	for (; rest >= (int)sizeof(*nlh) && nlh->nlmsg_len <= (unsigned)rest &&
	    mnl_nlmsg_ok(nlh, rest); nlh = mnl_nlmsg_next(nlh, &rest)) {
		if ((nlh->nlmsg_type >> 8) != NFNL_SUBSYS_CTNETLINK ||
		    (a = orig_tuple(nlh)) == NULL)
			continue;
		nfg = mnl_nlmsg_get_payload(nlh);
		switch (nlh->nlmsg_type & 0xff) {
		case IPCTNL_MSG_CT_NEW:		/* new, or changed */
			put(a, nfg->nfgen_family, msg_state(nlh, a));
			break;
		case IPCTNL_MSG_CT_DELETE:
			ctflows_gone(a);
			break;
		}
	}
}

/* Listen to new, changed and destroyed entries of this namespace (the
 * changes: a TCP connection's state, an entry's status). */
static int
listen_events(void)
{
	int sz = CTFLOWS_RCVBUF;

	if (C.ev != NULL)
		return 0;
	if ((C.ev = mnl_socket_open2(NETLINK_NETFILTER, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) == NULL ||
	    mnl_socket_bind(C.ev, NF_NETLINK_CONNTRACK_NEW |
	    NF_NETLINK_CONNTRACK_UPDATE | NF_NETLINK_CONNTRACK_DESTROY,
	    MNL_SOCKET_AUTOPID) < 0) {
		log_warn("conntrack events");
		close_events();
		return -1;
	}
	/* Root may go past rmem_max; else what the system allows. */
	if (setsockopt(mnl_socket_get_fd(C.ev), SOL_SOCKET, SO_RCVBUFFORCE,
	    &sz, sizeof(sz)) == -1)
		(void)setsockopt(mnl_socket_get_fd(C.ev), SOL_SOCKET,
		    SO_RCVBUF, &sz, sizeof(sz));
	C.on_loop = ev_add(&C.w, mnl_socket_get_fd(C.ev), EPOLLIN, readable,
	    NULL) == 0;
	C.synced = false;
	return 0;
}

/* What is queued, a bounded number of reads at a time so that a flood
 * of new flows never holds the loop: false if some is left (the list is
 * then not complete yet).  A loss makes the list untrusted until a walk. */
static bool
drain(void)
{
	static uint32_t buf[65536 / 4];
	ssize_t n;
	int reads;

	if (C.ev == NULL)
		return true;
	for (reads = 0; reads < CTFLOWS_DRAIN_MAX; reads++) {
		n = recv(mnl_socket_get_fd(C.ev), buf, sizeof(buf), 0);
		if (n > 0) {
			ctflows_events(buf, (size_t)n);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == ENOBUFS) {
			C.synced = false;
			C.lost = true;
			continue;
		}
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		log_warn("conntrack events");
		close_events();
		C.synced = false;
		return true;
	}
	return false;
}

void
ctflows_walk_begin(void)
{
	(void)listen_events();
	(void)drain();	/* what came before the walk is in it */
	forget_all();
	C.walking = true;
	C.lost = false;
}

void
ctflows_seen(const struct nlmsghdr *nlh)
{
	const struct nlattr *a;

	if (C.walking && (a = orig_tuple(nlh)) != NULL)
		put(a, ((const struct nfgenmsg *)mnl_nlmsg_get_payload(nlh))->
		    nfgen_family, msg_state(nlh, a));
}

void
ctflows_walked(bool complete)
{
	C.walking = false;
	/* Events that came during the walk apply on top of it, in order: a
	 * new entry the walk saw too is one entry, a destroyed one it saw
	 * is gone (what a bounded drain leaves comes at the next). */
	(void)drain();
	C.synced = complete && C.ev != NULL && !C.lost && events_on();
	if (!C.synced)
		forget_all();
}

/* Does the kernel send conntrack events in this namespace?  An
 * administrator can turn them off (0) at any time, and a kernel built
 * without them has no such setting: then the list would miss every new
 * flow, so it is trusted only while the setting says 1 or 2 (2: while
 * someone listens, as this process does). */
static bool
events_on(void)
{
	long v;

	return sysctl_read("/proc/sys/net/netfilter/nf_conntrack_events",
	    &v) == 0 && (v == 1 || v == 2);
}

bool
ctflows_ready(void)
{
	if (!drain())
		return false;	/* a walk, this time */
	if (C.synced && !events_on()) {
		log_warnx("conntrack events are off (net.netfilter."
		    "nf_conntrack_events); cuts walk the whole table");
		forget_all();
		C.synced = false;
	}
	return C.synced;
}

static void
each(ctflows_fn *fn, void *arg, bool live_only)
{
	struct flow *f, *next;
	size_t i;

	for (i = 0; i < C.nb; i++)
		for (f = C.b[i]; f != NULL; f = next) {
			next = f->next;		/* fn may end f */
			if (!live_only || f->live)
				fn((const struct nlattr *)f->attr, f->family,
				    arg);
		}
}

void
ctflows_each(ctflows_fn *fn, void *arg)
{
	each(fn, arg, false);
}

void
ctflows_each_live(ctflows_fn *fn, void *arg)
{
	each(fn, arg, true);
}

/* A walk of the kernel's table only to fill the list. */
static void
walk(void)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl;
	struct nlmsghdr *nlh;
	struct nfgenmsg *nfg;
	uint32_t seq = (uint32_t)time(NULL);
	ssize_t n;
	int rc = -1;

	if ((nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC)) == NULL ||
	    mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		if (nl != NULL)
			mnl_socket_close(nl);
		return;
	}
	ctflows_walk_begin();
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = seq;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = AF_UNSPEC;
	nfg->version = NFNETLINK_V0;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		goto out;
	while ((n = mnl_socket_recvfrom(nl, buf, sizeof(buf))) > 0) {
		int left = (int)n;

		for (nlh = (struct nlmsghdr *)buf; mnl_nlmsg_ok(nlh, left);
		    nlh = mnl_nlmsg_next(nlh, &left)) {
			if (nlh->nlmsg_type == NLMSG_DONE) {
				rc = 0;
				goto out;
			}
			if (nlh->nlmsg_type == NLMSG_ERROR)
				goto out;
			ctflows_seen(nlh);
		}
	}
out:
	ctflows_walked(rc == 0);
	mnl_socket_close(nl);
}

void
ctflows_tick(void)
{
	time_t now;

	if (C.ev != NULL && !C.on_loop)	/* listening before the loop was */
		C.on_loop = ev_add(&C.w, mnl_socket_get_fd(C.ev), EPOLLIN,
		    readable, NULL) == 0;
	(void)drain();
	if (C.synced)
		return;
	/* Not listening (a failure is logged once a try), or events were
	 * lost: try again now and then, not on every turn of the loop. */
	now = time(NULL);
	if (C.tried != 0 && now - C.tried < CTFLOWS_RESYNC_S &&
	    now >= C.tried)
		return;
	C.tried = now;
	if (events_on() && listen_events() == 0)
		walk();
}

size_t
ctflows_count(void)
{
	return C.n;
}

bool
ctflows_on_loop(void)
{
	return C.on_loop;
}

size_t
ctflows_count_live(void)
{
	return C.nlive;
}

void
ctflows_free(void)
{
	forget_all();
	close_events();
	C.synced = C.walking = C.lost = false;
}
