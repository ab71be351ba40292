/*
 * nflog.c -- the refusal log.  The parent binds an NFNETLINK_LOG socket to
 * the policy's nflog group (that needs CAP_NET_ADMIN); a forked child that
 * has dropped to its own user, holds no capabilities and runs under a
 * seccomp allowlist reads the kernel's messages, whose payload is the
 * start of a guest's packet, and sends one IPC_AUDIT per refusal.  The
 * parent never looks at packet bytes.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../gatewayd.h"
#include "ipc.h"
#include "log.h"
#include "parent.h"
#include "privdrop.h"
#include "sandbox.h"
#include "nflog.h"

static int
nflog_config(struct mnl_socket *nl, uint16_t group, uint8_t cmd,
    uint8_t pf, bool with_mode)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	struct nfgenmsg *nfg;
	struct nfulnl_msg_config_cmd c = { cmd };
	struct nfulnl_msg_config_mode m = { htonl(NFLOG_COPY_BYTES), NFULNL_COPY_PACKET, 0 };
	uint32_t seq = (uint32_t)time(NULL);

	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = pf;
	nfg->version = NFNETLINK_V0;
	nfg->res_id = htons(group);
	mnl_attr_put(nlh, NFULA_CFG_CMD, sizeof(c), &c);
	if (with_mode) {
		/* Deliver each refusal at once: the kernel's default batches up
		 * to 100 packets or one second, which delays the audit log. */
		mnl_attr_put(nlh, NFULA_CFG_MODE, sizeof(m), &m);
		mnl_attr_put_u32(nlh, NFULA_CFG_QTHRESH, htonl(1));
		mnl_attr_put_u32(nlh, NFULA_CFG_TIMEOUT, htonl(0));
	}
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -1;
	if (mnl_socket_recvfrom(nl, buf, sizeof(buf)) < 0)
		return -1;
	return mnl_cb_run(buf, sizeof(buf), seq, mnl_socket_get_portid(nl),
	    NULL, NULL) < 0 ? -1 : 0;
}

int
nflog_open(uint16_t group)
{
	struct mnl_socket *nl;
	int fd, rcvbuf = 8 << 20;

	if ((nl = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC)) == NULL ||
	    mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		log_warn("nflog: netlink socket");
		if (nl)
			mnl_socket_close(nl);
		return -1;
	}
	if (nflog_config(nl, group, NFULNL_CFG_CMD_BIND, AF_UNSPEC, true) == -1) {
		log_warn("nflog: bind to group %u", group);
		mnl_socket_close(nl);
		return -1;
	}
	/* Keep the fd; the mnl wrapper is only a small struct around it. */
	fd = fcntl(mnl_socket_get_fd(nl), F_DUPFD_CLOEXEC, 0);
	mnl_socket_close(nl);
	/* A burst of refusals (a port scan) must queue, not overrun: room for
	 * tens of thousands of messages while the reader catches up. */
	if (fd != -1 && setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
	    sizeof(rcvbuf)) == -1)
		log_warn("nflog: receive buffer");
	return fd;
}

/* --- parsing: pure functions over bytes, fuzzed by fuzz/fuzz_nflog.c --- */

static int
attr_cb(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	int type = mnl_attr_get_type(a);

	if (mnl_attr_type_valid(a, NFULA_MAX) < 0)
		return MNL_CB_OK;
	tb[type] = a;
	return MNL_CB_OK;
}

static void
parse_l3(const uint8_t *p, size_t len, struct nflog_event *ev)
{
	size_t hl;
	uint8_t proto;

	if (len >= 20 && (p[0] >> 4) == 4) {
		hl = (size_t)(p[0] & 0x0f) * 4;
		if (hl < 20 || hl > len)
			return;
		inet_ntop(AF_INET, p + 12, ev->src, sizeof(ev->src));
		inet_ntop(AF_INET, p + 16, ev->dst, sizeof(ev->dst));
		proto = p[9];
	} else if (len >= 40 && (p[0] >> 4) == 6) {
		hl = 40;
		inet_ntop(AF_INET6, p + 8, ev->src, sizeof(ev->src));
		inet_ntop(AF_INET6, p + 24, ev->dst, sizeof(ev->dst));
		proto = p[6];
	} else
		return;
	ev->proto = proto;
	if ((proto == IPPROTO_TCP || proto == IPPROTO_UDP) && len >= hl + 4)
		ev->dport = (uint16_t)(p[hl + 2] << 8 | p[hl + 3]);
}

int
nflog_parse(const void *buf, size_t len, struct nflog_event *ev)
{
	const struct nlmsghdr *nlh = buf;
	const struct nlattr *tb[NFULA_MAX + 1] = { NULL };
	const char *prefix;
	size_t plen;

	memset(ev, 0, sizeof(*ev));
	/* libmnl walks attributes up to the aligned end of the message. */
	if (len > INT32_MAX || !mnl_nlmsg_ok(nlh, (int)len) ||
	    MNL_ALIGN(nlh->nlmsg_len) > len ||
	    nlh->nlmsg_type != ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET) ||
	    nlh->nlmsg_len < MNL_NLMSG_HDRLEN + sizeof(struct nfgenmsg))
		return -1;
	if (mnl_attr_parse(nlh, sizeof(struct nfgenmsg), attr_cb, tb) < 0)
		return -1;
	if (tb[NFULA_PREFIX] == NULL)
		return -1;
	prefix = mnl_attr_get_payload(tb[NFULA_PREFIX]);
	plen = strnlen(prefix, mnl_attr_get_payload_len(tb[NFULA_PREFIX]));
	if (plen < 5 || strncmp(prefix, "moat:", 5) != 0)
		return -1;
	/* "moat:<reason> " -> reason, letters, digits and '-' only */
	for (size_t i = 5, j = 0; i < plen && j + 1 < sizeof(ev->reason); i++) {
		char ch = prefix[i];
		if (ch == ' ')
			break;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		    ch == '-' || ch == '_'))
			return -1;
		ev->reason[j++] = ch;
	}
	if (ev->reason[0] == '\0')
		return -1;
	if (tb[NFULA_HWADDR] != NULL && mnl_attr_get_payload_len(tb[NFULA_HWADDR]) >=
	    sizeof(struct nfulnl_msg_packet_hw)) {
		const struct nfulnl_msg_packet_hw *hw =
		    mnl_attr_get_payload(tb[NFULA_HWADDR]);
		if (ntohs(hw->hw_addrlen) == 6) {
			memcpy(ev->mac, hw->hw_addr, 6);
			ev->has_mac = 1;
		}
	}
	if (tb[NFULA_IFINDEX_INDEV] != NULL &&
	    mnl_attr_get_payload_len(tb[NFULA_IFINDEX_INDEV]) >= 4)
		ev->indev = ntohl(mnl_attr_get_u32(tb[NFULA_IFINDEX_INDEV]));
	if (tb[NFULA_IFINDEX_PHYSINDEV] != NULL &&
	    mnl_attr_get_payload_len(tb[NFULA_IFINDEX_PHYSINDEV]) >= 4)
		ev->physindev =
		    ntohl(mnl_attr_get_u32(tb[NFULA_IFINDEX_PHYSINDEV]));
	if (tb[NFULA_PAYLOAD] != NULL)
		parse_l3(mnl_attr_get_payload(tb[NFULA_PAYLOAD]),
		    mnl_attr_get_payload_len(tb[NFULA_PAYLOAD]), ev);
	return 0;
}

void
nflog_event_key(const struct nflog_event *ev, uint32_t bridge_ifindex,
    const struct moat_prefix *network, char *out, size_t len)
{
	struct moat_addr a;

	if (ev->physindev != 0)
		snprintf(out, len, "port:%u", ev->physindev);
	else if (ev->indev != 0 && ev->indev == bridge_ifindex &&
	    ev->src[0] && addr_parse(ev->src, &a) == 0 &&
	    prefix_contains(network, &a))
		snprintf(out, len, "addr:%s", ev->src);
	else
		snprintf(out, len, "if:%u", ev->indev);
}

static const char *
proto_name(uint8_t p, char *buf, size_t len)
{
	switch (p) {
	case IPPROTO_TCP: return "tcp";
	case IPPROTO_UDP: return "udp";
	case IPPROTO_ICMP: return "icmp";
	case IPPROTO_ICMPV6: return "icmpv6";
	}
	snprintf(buf, len, "%u", p);
	return buf;
}

int
nflog_event_json(const struct nflog_event *ev, const struct moat_config *cfg,
    char *out, size_t len)
{
	const struct moat_sandbox *sb = NULL;
	struct moat_addr a;
	char pbuf[8];

	/* A spoof refusal's address and MAC are the forgery itself: naming
	 * the sandbox they claim would put the victim in the log.  Every
	 * other refusal comes after the spoof checks, so what it claims is
	 * its sender's. */
	bool forged = strcmp(ev->reason, "spoof") == 0;

	if (!forged && ev->src[0] && addr_parse(ev->src, &a) == 0)
		sb = config_sandbox_by_addr(cfg, &a);
	/* IPv6 and ARP from a guest carry no sandbox address: its MAC does. */
	for (size_t i = 0; !forged && sb == NULL && ev->has_mac &&
	    i < cfg->nsandboxes; i++)
		if (memcmp(cfg->sandboxes[i].mac, ev->mac, 6) == 0)
			sb = &cfg->sandboxes[i];
	return snprintf(out, len, "{\"event\":\"refusal\",\"reason\":\"%s\","
	    "\"sandbox\":\"%s\",\"src\":\"%s\",\"dst\":\"%s\",\"proto\":\"%s\","
	    "\"port\":%u}", ev->reason, sb ? sb->name : "", ev->src, ev->dst,
	    proto_name(ev->proto, pbuf, sizeof(pbuf)), ev->dport);
}

/* --- the child ------------------------------------------------------------ */

/*
 * A guest that scans the gateway's 65,535 ports, or forges a new source
 * address for every packet, must not be able to fill the disk through the
 * audit log.  Each ingress (nflog_event_key: never the claimed source
 * alone) gets NFLOG_RATE lines a second (burst NFLOG_BURST), and all of
 * them together NFLOG_ALL_RATE (burst NFLOG_ALL_BURST); what is
 * suppressed is counted and reported once a second as one
 * "refusals-suppressed" event per ingress.  The kernel's per-reason
 * counters stay exact.
 */
#define NFLOG_RATE	50
#define NFLOG_BURST	200
#define NFLOG_ALL_RATE	150
#define NFLOG_ALL_BURST	400
#define NFLOG_SOURCES	1024

struct bucket {
	char	 key[64];
	double	 tokens;
	time_t	 last;
	unsigned suppressed;
	char	 sandbox[IPC_NAME_LEN];
};

static const struct moat_config *child_cfg;
static int child_ipc;
static uint32_t child_bridge;	/* ifindex of gateway.bridge, 0 if absent */
static struct bucket buckets[NFLOG_SOURCES];
static struct bucket all = { "*", NFLOG_ALL_BURST, 0, 0, "" };

static struct bucket *
bucket_for(const char *key, time_t now)
{
	struct bucket *b, *oldest = &buckets[0];
	size_t i;

	for (i = 0; i < NFLOG_SOURCES; i++) {
		b = &buckets[i];
		if (strcmp(b->key, key) == 0)
			return b;
		if (b->last < oldest->last)
			oldest = b;
	}
	memset(oldest, 0, sizeof(*oldest));
	snprintf(oldest->key, sizeof(oldest->key), "%s", key);
	oldest->tokens = NFLOG_BURST;
	oldest->last = now;
	return oldest;
}

static void
refill(struct bucket *b, time_t now, double rate, double burst)
{
	b->tokens += (double)(now - b->last) * rate;
	if (b->tokens > burst)
		b->tokens = burst;
	b->last = now;
}

static void
send_json(const char *json, int n)
{
	if (n > 0 && (size_t)n < IPC_MAX_PAYLOAD &&
	    ipc_send(child_ipc, IPC_AUDIT, 0, json, (size_t)n) == -1)
		_exit(1);	/* the parent is gone */
}

static void
flush_suppressed(time_t now)
{
	char json[256];
	size_t i;

	for (i = 0; i < NFLOG_SOURCES; i++) {
		struct bucket *b = &buckets[i];
		if (b->suppressed == 0 || b->last == now)
			continue;
		send_json(json, snprintf(json, sizeof(json), "{\"event\":"
		    "\"refusals-suppressed\",\"sandbox\":\"%s\",\"ingress\":"
		    "\"%s\",\"count\":%u}", b->sandbox, b->key,
		    b->suppressed));
		b->suppressed = 0;
	}
}

static int
packet_cb(const struct nlmsghdr *nlh, void *data)
{
	struct nflog_event ev;
	struct bucket *b;
	time_t now = time(NULL);
	char json[512], key[64], *sb;
	int n;

	if (nflog_parse(nlh, nlh->nlmsg_len, &ev) == -1)
		return MNL_CB_OK;	/* not ours, or malformed: skip */
	n = nflog_event_json(&ev, child_cfg, json, sizeof(json));
	nflog_event_key(&ev, child_bridge, &child_cfg->gw.network, key,
	    sizeof(key));
	b = bucket_for(key, now);
	refill(b, now, NFLOG_RATE, NFLOG_BURST);
	refill(&all, now, NFLOG_ALL_RATE, NFLOG_ALL_BURST);
	if (b->tokens < 1 || all.tokens < 1) {
		if (b->suppressed++ == 0 &&
		    (sb = strstr(json, "\"sandbox\":\"")) != NULL)
			sscanf(sb + 11, "%32[^\"]", b->sandbox);
		return MNL_CB_OK;
	}
	b->tokens -= 1;
	all.tokens -= 1;
	send_json(json, n);
	return MNL_CB_OK;
}

void
nflog_child(int nlfd, int ipc, const struct moat_config *cfg, pid_t parent)
{
	static char buf[65536];
	struct timeval tick = { 1, 0 };
	ssize_t n;

	child_cfg = cfg;
	child_ipc = ipc;
	/* Before the sandbox: naming an interface needs a socket ioctl. */
	child_bridge = if_nametoindex(cfg->gw.bridge);
	all.last = time(NULL);
	/* Wake at least once a second to report what was suppressed. */
	setsockopt(nlfd, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof(tick));
	if (privdrop("moat-log") == -1 && privdrop("nobody") == -1)
		_exit(1);
	/* A reader outliving gatewayd would keep the nflog group bound and
	 * a restarted gatewayd would start a second one.  Asked after the
	 * drop, which clears any earlier request. */
	die_with_parent(parent);
	if (sandbox_narrow(SANDBOX_NFLOG) == -1)
		_exit(1);
	for (;;) {
		n = recv(nlfd, buf, sizeof(buf), 0);
		flush_suppressed(time(NULL));
		if (n == -1 && errno == ENOBUFS) {	/* the kernel dropped some */
			static const char lost[] = "{\"event\":\"refusals-lost\","
			    "\"reason\":\"refusal log overrun; the counters are "
			    "exact\"}";
			send_json(lost, (int)sizeof(lost) - 1);
			continue;
		}
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			_exit(1);
		mnl_cb_run(buf, (size_t)n, 0, 0, packet_cb, NULL);
	}
}
