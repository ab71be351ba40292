/*
 * spoof.c -- the anti-spoofing probe's wire format, as pure functions:
 * the forged frames it sends, the socket filter that picks out what comes
 * back for it, the judgement of each frame received, and the choice of
 * the address to forge.  The engine (engine.c) does the socket work.
 *
 * A guest's port must pass only frames carrying that guest's MAC and IPv4
 * address, ARP included (the gateway's anti-spoofing).  The probe sends
 *   SP_IP   its own MAC and an unused address of its subnet,
 *   SP_MAC  a forged MAC and its own address,
 *   SP_ARP  an ARP who-has for the gateway from the unused address,
 * and waits for anything addressed back to what it forged.  Where the
 * port filters, nothing at all comes back (the frame is dropped before
 * the gateway's IP stack sees it); any answer -- the service's reply, a
 * RST, even an ICMP refusal from a later layer -- shows that the forged
 * frame got past the port.  To receive a reply for the unused address the
 * probe answers the gateway's ARP request for it with its own MAC.
 */
#include <arpa/inet.h>
#include <linux/filter.h>
#include <net/ethernet.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <stdio.h>
#include <string.h>

#include "cc.h"

#define ETH_HLEN	14
#define IP_HLEN		20
#define UDP_HLEN	8
#define TCP_HLEN	20
#define ARP_LEN		28

/* --- building frames ----------------------------------------------------- */

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
sum16(const uint8_t *p, size_t len, uint32_t sum)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t
fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void
eth_header(uint8_t *f, const uint8_t dst[6], const uint8_t src[6],
    uint16_t type)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	put16(f + 12, type);
}

/* An ARP packet in an Ethernet frame; 42 bytes (the NIC pads). */
size_t
spoof_arp(uint8_t *f, size_t len, uint16_t op, const uint8_t eth_dst[6],
    const uint8_t sha[6], struct in_addr spa, const uint8_t tha[6],
    struct in_addr tpa)
{
	uint8_t *a = f + ETH_HLEN;

	if (len < ETH_HLEN + ARP_LEN)
		return 0;
	eth_header(f, eth_dst, sha, ETHERTYPE_ARP);
	put16(a, 1);			/* Ethernet */
	put16(a + 2, ETHERTYPE_IP);
	a[4] = 6;
	a[5] = 4;
	put16(a + 6, op);
	memcpy(a + 8, sha, 6);
	memcpy(a + 14, &spa, 4);
	memcpy(a + 18, tha, 6);
	memcpy(a + 24, &tpa, 4);
	return ETH_HLEN + ARP_LEN;
}

/* The probe's frame: for SP_ARP a who-has for the target, otherwise a UDP
 * datagram with the payload (udp) or a TCP SYN, from the forged source to
 * dst, addressed at layer 2 to the gateway.  0 if it does not fit. */
size_t
spoof_frame(const struct cc_spoof *s, const struct sockaddr_in *dst,
    const uint8_t *payload, size_t plen, uint8_t *f, size_t len)
{
	bool udp = s->proto == IPPROTO_UDP;
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t zero[6];
	uint8_t *ip = f + ETH_HLEN, *l4 = ip + IP_HLEN, pseudo[12];
	size_t l4len;
	uint32_t sum;

	if (s->kind == SP_ARP)
		return spoof_arp(f, len, 1, bcast, s->src_mac, s->src_ip,
		    zero, dst->sin_addr);
	l4len = udp ? UDP_HLEN + plen : TCP_HLEN;
	if (len < ETH_HLEN + IP_HLEN + l4len || l4len > 1400)
		return 0;
	memset(f, 0, ETH_HLEN + IP_HLEN + l4len);
	eth_header(f, s->gw_mac, s->src_mac, ETHERTYPE_IP);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(IP_HLEN + l4len));
	put16(ip + 4, s->ipid);
	put16(ip + 6, 0x4000);		/* DF */
	ip[8] = 64;
	ip[9] = udp ? IPPROTO_UDP : IPPROTO_TCP;
	memcpy(ip + 12, &s->src_ip, 4);
	memcpy(ip + 16, &dst->sin_addr, 4);
	put16(ip + 10, fold(sum16(ip, IP_HLEN, 0)));
	put16(l4, s->sport);
	memcpy(l4 + 2, &dst->sin_port, 2);
	if (udp) {
		put16(l4 + 4, (uint16_t)l4len);
		memcpy(l4 + UDP_HLEN, payload, plen);
	} else {
		memcpy(l4 + 4, &s->seq, 4);
		l4[12] = (TCP_HLEN / 4) << 4;
		l4[13] = 0x02;		/* SYN */
		put16(l4 + 14, 64240);
	}
	memcpy(pseudo, ip + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = ip[9];
	put16(pseudo + 10, (uint16_t)l4len);
	sum = sum16(l4, l4len, sum16(pseudo, sizeof(pseudo), 0));
	put16(l4 + (udp ? 6 : 16), fold(sum) ? fold(sum) : 0xffff);
	return ETH_HLEN + IP_HLEN + l4len;
}

/* --- the socket filter --------------------------------------------------- */

/*
 * Classic BPF: pass ARP whose target address is the probe's source, and
 * IPv4 to the probe's source whose destination port (or, in an ICMP error,
 * the quoted source port) is the probe's.  Everything else the guest
 * receives during the scan -- tens of thousands of refusals -- stays out
 * of the probe's socket.  The quoted header is ours, so 20 bytes long.
 */
void
spoof_filter(const struct cc_spoof *s, struct sock_filter *f)
{
	uint32_t ip = ntohl(s->src_ip.s_addr);
	const struct sock_filter prog[SPOOF_NFILTER] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETHERTYPE_ARP, 0, 2),
		/* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ETH_HLEN + 24),
		/* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ip, 10, 11),
		/* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETHERTYPE_IP, 0, 10),
		/* 5 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ETH_HLEN + 16),
		/* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ip, 0, 8),
		/* 7 */ BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, ETH_HLEN),
		/* 8 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, ETH_HLEN + 9),
		/* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_ICMP, 2, 0),
		/* 10 */ BPF_STMT(BPF_LD | BPF_H | BPF_IND, ETH_HLEN + 2),
		/* 11 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, s->sport, 2, 3),
		/* 12 */ BPF_STMT(BPF_LD | BPF_H | BPF_IND, ETH_HLEN + 8 + 20),
		/* 13 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, s->sport, 0, 1),
		/* 14 */ BPF_STMT(BPF_RET | BPF_K, 0xffff),
		/* 15 */ BPF_STMT(BPF_RET | BPF_K, 0),
	};

	memcpy(f, prog, sizeof(prog));
}

/* --- what came back ------------------------------------------------------ */

static const char *
icmp_name(uint8_t type, uint8_t code)
{
	if (type == ICMP_DEST_UNREACH)
		switch (code) {
		case ICMP_PKT_FILTERED:	return "admin-prohibited";
		case ICMP_PORT_UNREACH:	return "port-unreachable";
		case ICMP_HOST_UNREACH:	return "host-unreachable";
		default:		return "unreachable";
		}
	return type == ICMP_TIME_EXCEEDED ? "time-exceeded" : "icmp";
}

static enum spoof_rx
rx_arp(const struct cc_spoof *s, const struct sockaddr_in *dst,
    const uint8_t *a, size_t len, char *ev, size_t evlen,
    struct spoof_peer *peer)
{
	char who[INET_ADDRSTRLEN];
	uint16_t op;

	if (len < ARP_LEN || get16(a) != 1 || get16(a + 2) != ETHERTYPE_IP ||
	    a[4] != 6 || a[5] != 4 || memcmp(a + 24, &s->src_ip, 4) != 0)
		return RX_NONE;
	op = get16(a + 6);
	memcpy(peer->mac, a + 8, 6);
	memcpy(&peer->ip, a + 14, 4);
	if (op == 1)
		return RX_ARP_REQUEST;
	if (op != 2 || s->kind != SP_ARP ||
	    memcmp(a + 14, &dst->sin_addr, 4) != 0)
		return RX_NONE;
	inet_ntop(AF_INET, a + 14, who, sizeof(who));
	snprintf(ev, evlen, "ARP reply from %s", who);
	return RX_REPLY;
}

/* An ICMP error quoting our packet: the quoted source, destination and
 * source port are ours. */
static enum spoof_rx
rx_icmp(const struct cc_spoof *s, const struct sockaddr_in *dst,
    const uint8_t *ip, const uint8_t *l4, size_t l4len, char *ev,
    size_t evlen)
{
	const uint8_t *q = l4 + 8;
	char who[INET_ADDRSTRLEN];

	if (l4len < 8 + IP_HLEN + 4 || (l4[0] != ICMP_DEST_UNREACH &&
	    l4[0] != ICMP_TIME_EXCEEDED) || (q[0] & 0x0f) != 5 ||
	    memcmp(q + 12, &s->src_ip, 4) != 0 ||
	    memcmp(q + 16, &dst->sin_addr, 4) != 0 || q[9] != s->proto ||
	    get16(q + IP_HLEN) != s->sport ||
	    memcmp(q + IP_HLEN + 2, &dst->sin_port, 2) != 0)
		return RX_NONE;
	inet_ntop(AF_INET, ip + 12, who, sizeof(who));
	snprintf(ev, evlen, "%s from %s", icmp_name(l4[0], l4[1]), who);
	return RX_REPLY;
}

static enum spoof_rx
rx_ip(const struct cc_spoof *s, const struct sockaddr_in *dst,
    const uint8_t *ip, size_t len, char *ev, size_t evlen)
{
	const uint8_t *l4;
	size_t ihl, tot;
	char who[INET_ADDRSTRLEN];

	if (len < IP_HLEN || (ip[0] >> 4) != 4)
		return RX_NONE;
	ihl = (size_t)(ip[0] & 0x0f) * 4;
	tot = get16(ip + 2);
	if (ihl < IP_HLEN || tot < ihl || tot > len ||
	    memcmp(ip + 16, &s->src_ip, 4) != 0 ||
	    (get16(ip + 6) & 0x1fff) != 0)
		return RX_NONE;
	l4 = ip + ihl;
	if (ip[9] == IPPROTO_ICMP)
		return rx_icmp(s, dst, ip, l4, tot - ihl, ev, evlen);
	if (ip[9] != s->proto || tot - ihl < 8 ||
	    memcmp(ip + 12, &dst->sin_addr, 4) != 0 ||
	    memcmp(l4, &dst->sin_port, 2) != 0 || get16(l4 + 2) != s->sport)
		return RX_NONE;
	inet_ntop(AF_INET, ip + 12, who, sizeof(who));
	if (ip[9] == IPPROTO_UDP)
		snprintf(ev, evlen, "%zu-byte UDP reply from %s",
		    tot - ihl - UDP_HLEN, who);
	else if (tot - ihl < TCP_HLEN)
		return RX_NONE;
	else
		snprintf(ev, evlen, "%s from %s", (l4[13] & 0x12) == 0x12 ? "SYN-ACK" : (l4[13] & 0x04) ?
		    "RST" : "TCP segment", who);
	return RX_REPLY;
}

/* Evidence names what was forged: " to 10.77.0.254 (forged)". */
static void
what_forged(const struct cc_spoof *s, char *ev, size_t evlen)
{
	size_t off = strlen(ev);
	char a[INET_ADDRSTRLEN];

	if (off >= evlen)
		return;
	inet_ntop(AF_INET, &s->src_ip, a, sizeof(a));
	if (s->kind == SP_MAC)
		snprintf(ev + off, evlen - off, " (sent from forged MAC "
		    "%02x:%02x:%02x:%02x:%02x:%02x)", s->src_mac[0],
		    s->src_mac[1], s->src_mac[2], s->src_mac[3], s->src_mac[4],
		    s->src_mac[5]);
	else
		snprintf(ev + off, evlen - off, " to forged %s", a);
}

/* One received frame: an answer to the probe (evidence written), an ARP
 * request for the forged address (the requester in *peer), or nothing. */
enum spoof_rx
spoof_classify(const struct cc_spoof *s, const struct sockaddr_in *dst,
    const uint8_t *f, size_t len, char *ev, size_t evlen,
    struct spoof_peer *peer)
{
	enum spoof_rx rx = RX_NONE;

	if (len < ETH_HLEN)
		return RX_NONE;
	if (get16(f + 12) == ETHERTYPE_ARP)
		rx = rx_arp(s, dst, f + ETH_HLEN, len - ETH_HLEN, ev, evlen,
		    peer);
	else if (get16(f + 12) == ETHERTYPE_IP && s->kind != SP_ARP)
		rx = rx_ip(s, dst, f + ETH_HLEN, len - ETH_HLEN, ev, evlen);
	if (rx == RX_REPLY)
		what_forged(s, ev, evlen);
	return rx;
}

/* A source port no socket of the guest can be using at the same moment:
 * below the kernel's ephemeral range (1024 and up), or above it.  With
 * the guest's own address (SP_MAC) a reply to a real probe of the scan
 * would otherwise be taken for a reply to the forged frame. */
uint16_t
spoof_sport(unsigned lo, unsigned hi, uint16_t rnd)
{
	if (lo > hi || hi > 65535)
		lo = 32768, hi = 60999;
	if (lo >= 1024 + 1024)
		return (uint16_t)(1024 + rnd % (lo - 1024));
	if (hi <= 65535 - 1024)
		return (uint16_t)(hi + 1 + rnd % (65535 - hi));
	return (uint16_t)(65535 - rnd % 512);	/* no room: the top, rarely used */
}

/* --- IPv6: a forged source of the own /64 ------------------------------- */

/*
 * A guest's port must pass only its own IPv6 address too.  The probe
 * sends a TCP SYN from an unused address of its own /64 with its own MAC.
 * It does not answer neighbour discovery for that address: the gateway's
 * neighbour solicitation for it is proof enough that something past the
 * port wants to answer it (a refusal from a later layer included).
 */
#define IP6_HLEN	40
#define ETHERTYPE_IPV6_	0x86dd
#define ICMP6_NS	135

size_t
spoof_frame6(const struct cc_spoof *s, const struct sockaddr_in6 *dst,
    uint8_t *f, size_t len)
{
	uint8_t *ip = f + ETH_HLEN, *l4 = ip + IP6_HLEN, pseudo[40];
	uint32_t sum;

	if (len < ETH_HLEN + IP6_HLEN + TCP_HLEN)
		return 0;
	memset(f, 0, ETH_HLEN + IP6_HLEN + TCP_HLEN);
	eth_header(f, s->gw_mac, s->src_mac, ETHERTYPE_IPV6_);
	ip[0] = 0x60;
	put16(ip + 4, TCP_HLEN);
	ip[6] = IPPROTO_TCP;
	ip[7] = 64;
	memcpy(ip + 8, &s->src6, 16);
	memcpy(ip + 24, &dst->sin6_addr, 16);
	put16(l4, s->sport);
	memcpy(l4 + 2, &dst->sin6_port, 2);
	memcpy(l4 + 4, &s->seq, 4);
	l4[12] = (TCP_HLEN / 4) << 4;
	l4[13] = 0x02;			/* SYN */
	put16(l4 + 14, 64240);
	memset(pseudo, 0, sizeof(pseudo));
	memcpy(pseudo, ip + 8, 32);
	put16(pseudo + 34, TCP_HLEN);
	pseudo[39] = IPPROTO_TCP;
	sum = sum16(l4, TCP_HLEN, sum16(pseudo, sizeof(pseudo), 0));
	put16(l4 + 16, fold(sum) ? fold(sum) : 0xffff);
	return ETH_HLEN + IP6_HLEN + TCP_HLEN;
}

/* Classic BPF: IPv6 whose destination ends in the forged address's last
 * 32 bits, or a neighbour solicitation whose target does. */
static uint32_t
tail32(const struct in6_addr *a)
{
	return (uint32_t)a->s6_addr[12] << 24 | (uint32_t)a->s6_addr[13] << 16 |
	    (uint32_t)a->s6_addr[14] << 8 | a->s6_addr[15];
}

void
spoof_filter6(const struct cc_spoof *s, struct sock_filter *f)
{
	uint32_t tail = tail32(&s->src6);
	size_t i;
	const struct sock_filter prog[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETHERTYPE_IPV6_, 0, 9),
		/* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ETH_HLEN + 36),
		/* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, tail, 6, 0),
		/* 4 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, ETH_HLEN + 6),
		/* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_ICMPV6, 0, 5),
		/* 6 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, ETH_HLEN + IP6_HLEN),
		/* 7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ICMP6_NS, 0, 3),
		/* 8 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ETH_HLEN + IP6_HLEN + 20),
		/* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, tail, 0, 1),
		/* 10 */ BPF_STMT(BPF_RET | BPF_K, 0xffff),
		/* 11 */ BPF_STMT(BPF_RET | BPF_K, 0),
	};

	for (i = 0; i < SPOOF_NFILTER; i++)	/* the rest: unreachable */
		f[i] = i < sizeof(prog) / sizeof(prog[0]) ? prog[i] :
		    (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);
}

static void
addr6_fmt(const uint8_t *a, char *buf, size_t len)
{
	if (inet_ntop(AF_INET6, a, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
}

/* An answer to the forged address: the far end's SYN-ACK or RST, an
 * ICMPv6 error quoting our SYN, anything else to it; or the neighbour
 * solicitation a reply to it needs first. */
enum spoof_rx
spoof_classify6(const struct cc_spoof *s, const struct sockaddr_in6 *dst,
    const uint8_t *f, size_t len, char *ev, size_t evlen)
{
	const uint8_t *ip = f + ETH_HLEN, *l4 = ip + IP6_HLEN;
	char who[INET6_ADDRSTRLEN], forged[INET6_ADDRSTRLEN];
	size_t plen;

	if (len < ETH_HLEN + IP6_HLEN || get16(f + 12) != ETHERTYPE_IPV6_ ||
	    (ip[0] >> 4) != 6)
		return RX_NONE;
	plen = get16(ip + 4);
	if (plen > len - ETH_HLEN - IP6_HLEN)
		return RX_NONE;
	addr6_fmt(ip + 8, who, sizeof(who));
	addr6_fmt(s->src6.s6_addr, forged, sizeof(forged));
	if (ip[6] == IPPROTO_ICMPV6 && plen >= 24 && l4[0] == ICMP6_NS &&
	    memcmp(l4 + 8, &s->src6, 16) == 0) {
		snprintf(ev, evlen, "neighbour solicitation from %s for "
		    "forged %s", who, forged);
		return RX_REPLY;
	}
	if (memcmp(ip + 24, &s->src6, 16) != 0)
		return RX_NONE;
	if (ip[6] == IPPROTO_ICMPV6 && plen >= 8 && l4[0] < 128)	/* an error */
		snprintf(ev, evlen, "ICMPv6 type %u code %u from %s to "
		    "forged %s", l4[0], l4[1], who, forged);
	else if (ip[6] == IPPROTO_TCP && plen >= TCP_HLEN &&
	    memcmp(ip + 8, &dst->sin6_addr, 16) == 0 &&
	    get16(l4 + 2) == s->sport)
		snprintf(ev, evlen, "%s from %s to forged %s",
		    (l4[13] & 0x12) == 0x12 ? "SYN-ACK" : (l4[13] & 0x04) ?
		    "RST" : "TCP segment", who, forged);
	else
		snprintf(ev, evlen, "a packet from %s to forged %s", who,
		    forged);
	return RX_REPLY;
}

void
spoof_pick6(const struct moat_addr *self, uint16_t rnd, struct in6_addr *out)
{
	static const uint8_t iid[6] = { 0x02, 0x6d, 0x6f, 0x61, 0x74, 0x00 };

	memcpy(out->s6_addr, self->a, 8);
	memcpy(out->s6_addr + 8, iid, 6);
	out->s6_addr[14] = (uint8_t)(rnd >> 8);
	out->s6_addr[15] = (uint8_t)rnd;
	if (memcmp(out->s6_addr, self->a, 16) == 0)
		out->s6_addr[15] ^= 1;
}

/* --- which address to forge ---------------------------------------------- */

/*
 * The highest host address of the guest's subnet (its /24 at most, as the
 * sweep) that is not the guest's own, not the gateway's and not in the
 * neighbour table: most likely nobody's, so answering ARP for it takes
 * nothing from anyone.  -1 if the subnet has no such address.
 */
int
spoof_pick(const struct moat_addr *self, int plen, const struct moat_addr *gw,
    const struct moat_addr *taken, size_t ntaken, struct in_addr *out)
{
	uint32_t me, mask, h, x;
	size_t i;
	bool used;

	if (self->family != AF_INET || plen < 0 || plen > 30)
		return -1;
	if (plen < 24)
		plen = 24;
	memcpy(&me, self->a, 4);
	me = ntohl(me);
	mask = ~(0xffffffffu >> plen);
	for (h = ~mask - 1; h >= 1; h--) {
		x = (me & mask) | h;
		used = x == me;
		if (gw->family == AF_INET)
			used |= memcmp(gw->a, &(uint32_t){ htonl(x) }, 4) == 0;
		for (i = 0; i < ntaken && !used; i++)
			used = taken[i].family == AF_INET &&
			    memcmp(taken[i].a, &(uint32_t){ htonl(x) }, 4) == 0;
		if (!used) {
			out->s_addr = htonl(x);
			return 0;
		}
	}
	return -1;
}
