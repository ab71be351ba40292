/*
 * test_cc_spoof.c -- the anti-spoofing probe's pure parts: the forged
 * frames (headers and checksums), the socket filter run over real frames,
 * which received frames count as an answer, the source port and the
 * choice of the address to forge.
 */
#include <arpa/inet.h>
#include <linux/filter.h>
#include <netinet/ip_icmp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "../../containment-check/cc.h"

static const uint8_t own_mac[6] = { 0x52, 0x54, 0, 0, 0, 0x0a };
static const uint8_t gw_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };

static struct cc_spoof
spoof(enum cc_spoof_kind kind, uint8_t proto, const char *src)
{
	struct cc_spoof s;

	memset(&s, 0, sizeof(s));
	s.kind = kind;
	s.proto = proto;
	memcpy(s.own_mac, own_mac, 6);
	memcpy(s.src_mac, own_mac, 6);
	memcpy(s.gw_mac, gw_mac, 6);
	inet_pton(AF_INET, src, &s.src_ip);
	s.sport = 4242;
	s.ipid = 7;
	s.seq = htonl(1000);
	return s;
}

static struct sockaddr_in
sa4(const char *a, uint16_t port)
{
	struct sockaddr_in s = { .sin_family = AF_INET,
	    .sin_port = htons(port) };

	inet_pton(AF_INET, a, &s.sin_addr);
	return s;
}

static uint16_t
cksum(const uint8_t *p, size_t len, uint32_t sum)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* A checksum over data including its own checksum field sums to 0xffff. */
static void
l4_checksum_ok(const uint8_t *ip, size_t l4len)
{
	uint8_t pseudo[12];

	memcpy(pseudo, ip + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = ip[9];
	pseudo[10] = (uint8_t)(l4len >> 8);
	pseudo[11] = (uint8_t)l4len;
	assert_int_equal(cksum(ip + 20, l4len, cksum(pseudo, 12, 0)), 0xffff);
}

static void
udp_frame(void **state)
{
	struct cc_spoof s = spoof(SP_IP, IPPROTO_UDP, "10.77.0.254");
	struct sockaddr_in d = sa4("10.77.0.1", 53);
	uint8_t f[SPOOF_FRAME_MAX], q[17] = { 1, 2, 3 };
	size_t n;

	n = spoof_frame(&s, &d, q, sizeof(q), f, sizeof(f));
	assert_int_equal(n, 14 + 20 + 8 + 17);
	assert_memory_equal(f, gw_mac, 6);
	assert_memory_equal(f + 6, own_mac, 6);
	assert_int_equal(f[12] << 8 | f[13], 0x0800);
	assert_int_equal(f[14], 0x45);
	assert_int_equal(f[14 + 9], IPPROTO_UDP);
	assert_memory_equal(f + 14 + 12, &s.src_ip, 4);
	assert_memory_equal(f + 14 + 16, &d.sin_addr, 4);
	assert_int_equal(cksum(f + 14, 20, 0), 0xffff);
	assert_int_equal(f[34] << 8 | f[35], 4242);
	assert_int_equal(f[36] << 8 | f[37], 53);
	assert_int_equal(f[38] << 8 | f[39], 8 + 17);
	assert_memory_equal(f + 42, q, sizeof(q));
	l4_checksum_ok(f + 14, 8 + 17);
	assert_int_equal(spoof_frame(&s, &d, q, sizeof(q), f, 40), 0);
}

static void
tcp_and_arp_frames(void **state)
{
	struct cc_spoof s = spoof(SP_MAC, IPPROTO_TCP, "10.77.0.10");
	struct sockaddr_in d = sa4("203.0.113.10", 80);
	uint8_t f[SPOOF_FRAME_MAX];
	size_t n;

	s.src_mac[0] = 0x02;
	n = spoof_frame(&s, &d, NULL, 0, f, sizeof(f));
	assert_int_equal(n, 14 + 20 + 20);
	assert_int_equal(f[6], 0x02);		/* the forged MAC */
	assert_int_equal(f[14 + 9], IPPROTO_TCP);
	assert_int_equal(f[34 + 13], 0x02);	/* SYN only */
	assert_int_equal(f[34 + 12] >> 4, 5);
	l4_checksum_ok(f + 14, 20);

	s = spoof(SP_ARP, 0, "10.77.0.254");
	d = sa4("10.77.0.1", 0);
	n = spoof_frame(&s, &d, NULL, 0, f, sizeof(f));
	assert_int_equal(n, 42);
	assert_memory_equal(f, "\xff\xff\xff\xff\xff\xff", 6);
	assert_int_equal(f[12] << 8 | f[13], 0x0806);
	assert_int_equal(f[14 + 7], 1);		/* request */
	assert_memory_equal(f + 14 + 8, own_mac, 6);
	assert_memory_equal(f + 14 + 14, &s.src_ip, 4);
	assert_memory_equal(f + 14 + 24, &d.sin_addr, 4);
}

/* --- replies: built by hand as the gateway would send them ---------------- */

static size_t
reply_ip(uint8_t *f, const char *from, const char *to, uint8_t proto,
    uint16_t sport, uint16_t dport, uint8_t flags)
{
	struct in_addr a;

	memset(f, 0, 128);
	f[12] = 0x08;
	f[14] = 0x45;
	f[14 + 2] = 0;
	f[14 + 3] = 40;
	f[14 + 9] = proto;
	inet_pton(AF_INET, from, &a);
	memcpy(f + 14 + 12, &a, 4);
	inet_pton(AF_INET, to, &a);
	memcpy(f + 14 + 16, &a, 4);
	f[34] = (uint8_t)(sport >> 8);
	f[35] = (uint8_t)sport;
	f[36] = (uint8_t)(dport >> 8);
	f[37] = (uint8_t)dport;
	f[34 + 13] = flags;
	return 54;
}

/* An ICMP error from `from` quoting a packet src -> dst:dport from sport. */
static size_t
reply_icmp(uint8_t *f, const char *from, const char *src, const char *dst,
    uint8_t proto, uint16_t sport, uint16_t dport, uint8_t code)
{
	uint8_t *icmp = f + 34, *q = icmp + 8;
	struct in_addr a;

	reply_ip(f, from, src, IPPROTO_ICMP, 0, 0, 0);
	f[14 + 3] = 20 + 8 + 28;
	memset(icmp, 0, 8 + 28);
	icmp[0] = ICMP_DEST_UNREACH;
	icmp[1] = code;
	q[0] = 0x45;
	q[9] = proto;
	inet_pton(AF_INET, src, &a);
	memcpy(q + 12, &a, 4);
	inet_pton(AF_INET, dst, &a);
	memcpy(q + 16, &a, 4);
	q[20] = (uint8_t)(sport >> 8);
	q[21] = (uint8_t)sport;
	q[22] = (uint8_t)(dport >> 8);
	q[23] = (uint8_t)dport;
	return 14 + 20 + 8 + 28;
}

static unsigned
run_prog(const struct sock_filter *prog, const uint8_t *f, size_t len)
{
	uint32_t A = 0, X = 0;
	size_t pc = 0;

	for (;;) {		/* the few classic BPF forms spoof_filter uses */
		const struct sock_filter *i = &prog[pc++];
		size_t k = i->k;

		switch (i->code) {
		case BPF_LD | BPF_H | BPF_ABS:
		case BPF_LD | BPF_H | BPF_IND:
			k += BPF_MODE(i->code) == BPF_IND ? X : 0;
			if (k + 2 > len)
				return 0;
			A = (uint32_t)(f[k] << 8 | f[k + 1]);
			break;
		case BPF_LD | BPF_W | BPF_ABS:
			if (k + 4 > len)
				return 0;
			A = (uint32_t)f[k] << 24 | (uint32_t)f[k + 1] << 16 |
			    (uint32_t)f[k + 2] << 8 | f[k + 3];
			break;
		case BPF_LD | BPF_B | BPF_ABS:
			if (k >= len)
				return 0;
			A = f[k];
			break;
		case BPF_LDX | BPF_B | BPF_MSH:
			if (k >= len)
				return 0;
			X = 4u * (f[k] & 0xf);
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
			pc += A == i->k ? i->jt : i->jf;
			break;
		case BPF_RET | BPF_K:
			return i->k;
		default:
			fail_msg("unexpected BPF op %#x", i->code);
		}
		assert_true(pc < SPOOF_NFILTER);
	}
}

static unsigned
run_filter(const struct cc_spoof *s, const uint8_t *f, size_t len)
{
	struct sock_filter prog[SPOOF_NFILTER];

	spoof_filter(s, prog);
	return run_prog(prog, f, len);
}

static unsigned
run_filter6(const struct cc_spoof *s, const uint8_t *f, size_t len)
{
	struct sock_filter prog[SPOOF_NFILTER];

	spoof_filter6(s, prog);
	return run_prog(prog, f, len);
}

/* An IPv6 frame from src to dst: next header nh, payload l4 of len n. */
static size_t
frame6(uint8_t *f, const char *src, const char *dst, uint8_t nh,
    const uint8_t *l4, size_t n)
{
	memset(f, 0, 14 + 40);
	memcpy(f, own_mac, 6);
	memcpy(f + 6, gw_mac, 6);
	f[12] = 0x86;
	f[13] = 0xdd;
	f[14] = 0x60;
	f[18] = (uint8_t)(n >> 8);
	f[19] = (uint8_t)n;
	f[20] = nh;
	f[21] = 255;
	inet_pton(AF_INET6, src, f + 22);
	inet_pton(AF_INET6, dst, f + 38);
	memcpy(f + 54, l4, n);
	return 14 + 40 + n;
}

/* IPv6: the forged address, the SYN's headers and checksum, and what
 * counts as an answer -- filter and judgement agree. */
static void
ipv6(void **state)
{
	struct cc_spoof s = spoof(SP_IP6, IPPROTO_TCP, "0.0.0.0");
	struct sockaddr_in6 d = { .sin6_family = AF_INET6,
	    .sin6_port = htons(80) };
	struct moat_addr self;
	uint8_t f[256], l4[64], pseudo[40];
	char b[INET6_ADDRSTRLEN], ev[160];
	size_t n;

	(void)state;
	addr_parse("fd77:0:0:1::a", &self);
	spoof_pick6(&self, 0x1234, &s.src6);
	assert_string_equal(inet_ntop(AF_INET6, &s.src6, b, sizeof(b)),
	    "fd77::1:26d:6f61:7400:1234");
	inet_pton(AF_INET6, "2001:db8:cafe::80", &d.sin6_addr);
	n = spoof_frame6(&s, &d, f, sizeof(f));
	assert_int_equal(n, 14 + 40 + 20);
	assert_memory_equal(f, gw_mac, 6);
	assert_memory_equal(f + 6, own_mac, 6);
	assert_int_equal(f[12] << 8 | f[13], 0x86dd);
	assert_int_equal(f[14] >> 4, 6);
	assert_int_equal(f[20], IPPROTO_TCP);
	assert_memory_equal(f + 22, &s.src6, 16);
	assert_memory_equal(f + 38, &d.sin6_addr, 16);
	assert_int_equal(f[54 + 13], 0x02);		/* SYN */
	memset(pseudo, 0, sizeof(pseudo));
	memcpy(pseudo, f + 22, 32);
	pseudo[35] = 20;
	pseudo[39] = IPPROTO_TCP;
	assert_int_equal(cksum(f + 54, 20, cksum(pseudo, 40, 0)), 0xffff);
	assert_int_equal(spoof_frame6(&s, &d, f, 60), 0);

	/* The far end's SYN-ACK to the forged address. */
	memset(l4, 0, sizeof(l4));
	l4[0] = 0;
	l4[1] = 80;
	l4[2] = (uint8_t)(4242 >> 8);
	l4[3] = (uint8_t)4242;
	l4[12] = 0x50;
	l4[13] = 0x12;
	n = frame6(f, "2001:db8:cafe::80", b, IPPROTO_TCP, l4, 20);
	assert_int_equal(run_filter6(&s, f, n), 0xffff);
	assert_int_equal(spoof_classify6(&s, &d, f, n, ev, sizeof(ev)),
	    RX_REPLY);
	assert_string_equal(ev, "SYN-ACK from 2001:db8:cafe::80 to forged "
	    "fd77::1:26d:6f61:7400:1234");
	/* An ICMPv6 refusal to it from a later layer. */
	memset(l4, 0, sizeof(l4));
	l4[0] = 1;
	l4[1] = 1;
	n = frame6(f, "fd77:0:0:1::1", b, 58, l4, 48);
	assert_int_equal(run_filter6(&s, f, n), 0xffff);
	assert_int_equal(spoof_classify6(&s, &d, f, n, ev, sizeof(ev)),
	    RX_REPLY);
	assert_string_equal(ev, "ICMPv6 type 1 code 1 from fd77:0:0:1::1 to "
	    "forged fd77::1:26d:6f61:7400:1234");
	/* The gateway's neighbour solicitation for it. */
	memset(l4, 0, sizeof(l4));
	l4[0] = 135;
	memcpy(l4 + 8, &s.src6, 16);
	n = frame6(f, "fe80::1", "ff02::1:ff00:1234", 58, l4, 24);
	assert_int_equal(run_filter6(&s, f, n), 0xffff);
	assert_int_equal(spoof_classify6(&s, &d, f, n, ev, sizeof(ev)),
	    RX_REPLY);
	assert_string_equal(ev, "neighbour solicitation from fe80::1 for "
	    "forged fd77::1:26d:6f61:7400:1234");
	/* Not for us: a solicitation for another address, a reply to the
	 * guest's own address, IPv4. */
	inet_pton(AF_INET6, "fd77:0:0:1::b", l4 + 8);
	n = frame6(f, "fe80::1", "ff02::1:ff00:b", 58, l4, 24);
	assert_int_equal(run_filter6(&s, f, n), 0);
	assert_int_equal(spoof_classify6(&s, &d, f, n, ev, sizeof(ev)),
	    RX_NONE);
	memset(l4, 0, sizeof(l4));
	n = frame6(f, "2001:db8:cafe::80", "fd77:0:0:1::a", IPPROTO_TCP, l4,
	    20);
	assert_int_equal(run_filter6(&s, f, n), 0);
	assert_int_equal(spoof_classify6(&s, &d, f, n, ev, sizeof(ev)),
	    RX_NONE);
	f[12] = 0x08;
	f[13] = 0x00;
	assert_int_equal(run_filter6(&s, f, n), 0);
	assert_int_equal(spoof_classify6(&s, &d, f, n, ev, sizeof(ev)),
	    RX_NONE);
}

static void
replies(void **state)
{
	struct cc_spoof s = spoof(SP_IP, IPPROTO_UDP, "10.77.0.254");
	struct sockaddr_in d = sa4("10.77.0.1", 53);
	struct spoof_peer peer;
	uint8_t f[128];
	char ev[88];
	size_t n;

	n = reply_ip(f, "10.77.0.1", "10.77.0.254", IPPROTO_UDP, 53, 4242, 0);
	assert_true(run_filter(&s, f, n) > 0);
	assert_int_equal(spoof_classify(&s, &d, f, n, ev, sizeof(ev), &peer),
	    RX_REPLY);
	assert_string_equal(ev, "12-byte UDP reply from 10.77.0.1 to forged "
	    "10.77.0.254");
	/* To another port, or TCP from the same port: not ours. */
	n = reply_ip(f, "10.77.0.1", "10.77.0.254", IPPROTO_UDP, 53, 4243, 0);
	assert_int_equal(run_filter(&s, f, n), 0);
	assert_int_equal(spoof_classify(&s, &d, f, n, ev, sizeof(ev), &peer),
	    RX_NONE);
	n = reply_ip(f, "10.77.0.1", "10.77.0.254", IPPROTO_TCP, 53, 4242,
	    0x12);
	assert_int_equal(spoof_classify(&s, &d, f, n, ev, sizeof(ev), &peer),
	    RX_NONE);
	/* To another address: the filter keeps it out. */
	n = reply_ip(f, "10.77.0.1", "10.77.0.10", IPPROTO_UDP, 53, 4242, 0);
	assert_int_equal(run_filter(&s, f, n), 0);
	assert_int_equal(spoof_classify(&s, &d, f, n, ev, sizeof(ev), &peer),
	    RX_NONE);
}

static void
icmp_replies(void **state)
{
	struct cc_spoof s = spoof(SP_MAC, IPPROTO_TCP, "10.77.0.10");
	struct sockaddr_in d = sa4("203.0.113.10", 80);
	struct spoof_peer peer;
	uint8_t f[128];
	char ev[88];
	size_t n;

	s.src_mac[0] = 0x02;
	s.src_mac[5] = 0x50;
	n = reply_icmp(f, "10.77.0.1", "10.77.0.10", "203.0.113.10",
	    IPPROTO_TCP, 4242, 80, ICMP_PKT_FILTERED);
	assert_true(run_filter(&s, f, n) > 0);
	assert_int_equal(spoof_classify(&s, &d, f, n, ev, sizeof(ev), &peer),
	    RX_REPLY);
	assert_string_equal(ev, "admin-prohibited from 10.77.0.1 (sent from "
	    "forged MAC 02:54:00:00:00:50)");
	/* The scan's own probe from the same port to another port or
	 * another host (the gateway sweep) is not an answer to ours. */
	n = reply_icmp(f, "10.77.0.1", "10.77.0.10", "203.0.113.10",
	    IPPROTO_TCP, 4242, 81, ICMP_PKT_FILTERED);
	assert_int_equal(spoof_classify(&s, &d, f, n, ev, sizeof(ev), &peer),
	    RX_NONE);
	n = reply_icmp(f, "10.77.0.1", "10.77.0.10", "10.77.0.1",
	    IPPROTO_TCP, 4242, 80, ICMP_PKT_FILTERED);
	assert_int_equal(spoof_classify(&s, &d, f, n, ev, sizeof(ev), &peer),
	    RX_NONE);
	n = reply_icmp(f, "10.77.0.1", "10.77.0.10", "203.0.113.10",
	    IPPROTO_UDP, 4242, 80, ICMP_PKT_FILTERED);
	assert_int_equal(spoof_classify(&s, &d, f, n, ev, sizeof(ev), &peer),
	    RX_NONE);
	/* SYN-ACK to our own address from the target. */
	n = reply_ip(f, "203.0.113.10", "10.77.0.10", IPPROTO_TCP, 80, 4242,
	    0x12);
	assert_int_equal(spoof_classify(&s, &d, f, n, ev, sizeof(ev), &peer),
	    RX_REPLY);
	assert_true(strncmp(ev, "SYN-ACK from 203.0.113.10", 25) == 0);
}

static void
arp(void **state)
{
	struct cc_spoof s = spoof(SP_IP, IPPROTO_UDP, "10.77.0.254");
	struct sockaddr_in d = sa4("10.77.0.1", 53), gw = sa4("10.77.0.1", 0);
	struct spoof_peer peer;
	struct in_addr a, b;
	uint8_t f[64];
	char ev[88];
	size_t n;

	inet_pton(AF_INET, "10.77.0.1", &a);
	/* The gateway asks who has the forged address. */
	n = spoof_arp(f, sizeof(f), 1, (const uint8_t *)"\xff\xff\xff\xff\xff"
	    "\xff", gw_mac, a, (const uint8_t *)"\0\0\0\0\0\0", s.src_ip);
	assert_true(run_filter(&s, f, n) > 0);
	assert_int_equal(spoof_classify(&s, &d, f, n, ev, sizeof(ev), &peer),
	    RX_ARP_REQUEST);
	assert_memory_equal(peer.mac, gw_mac, 6);
	assert_int_equal(peer.ip.s_addr, a.s_addr);
	/* Its reply to a forged ARP counts only for the ARP probe. */
	n = spoof_arp(f, sizeof(f), 2, own_mac, gw_mac, a, own_mac, s.src_ip);
	assert_int_equal(spoof_classify(&s, &d, f, n, ev, sizeof(ev), &peer),
	    RX_NONE);
	s.kind = SP_ARP;
	assert_int_equal(spoof_classify(&s, &gw, f, n, ev, sizeof(ev), &peer),
	    RX_REPLY);
	assert_string_equal(ev, "ARP reply from 10.77.0.1 to forged "
	    "10.77.0.254");
	/* ARP about another address passes neither. */
	inet_pton(AF_INET, "10.77.0.10", &b);
	n = spoof_arp(f, sizeof(f), 1, gw_mac, gw_mac, a, own_mac, b);
	assert_int_equal(run_filter(&s, f, n), 0);
	assert_int_equal(spoof_classify(&s, &gw, f, n, ev, sizeof(ev), &peer),
	    RX_NONE);
	assert_int_equal(spoof_classify(&s, &gw, f, 10, ev, sizeof(ev), &peer),
	    RX_NONE);
}

static void
source_port(void **state)
{
	unsigned r;
	uint16_t p;

	for (r = 0; r < 65536; r += 97) {
		p = spoof_sport(32768, 60999, (uint16_t)r);
		assert_true(p >= 1024 && p < 32768);
		p = spoof_sport(1024, 60999, (uint16_t)r);
		assert_true(p > 60999);
		p = spoof_sport(9, 5, (uint16_t)r);	/* nonsense: defaults */
		assert_true(p >= 1024 && p < 32768);
	}
	assert_true(spoof_sport(1024, 65535, 3) > 1023);
}

static void
pick(void **state)
{
	struct moat_addr self, gw, taken[3];
	struct in_addr out;
	char b[INET_ADDRSTRLEN];

	addr_parse("10.77.0.10", &self);
	addr_parse("10.77.0.1", &gw);
	assert_int_equal(spoof_pick(&self, 24, &gw, NULL, 0, &out), 0);
	assert_string_equal(inet_ntop(AF_INET, &out, b, sizeof(b)),
	    "10.77.0.254");
	addr_parse("10.77.0.254", &taken[0]);
	addr_parse("fe80::1", &taken[1]);
	addr_parse("10.77.0.253", &taken[2]);
	assert_int_equal(spoof_pick(&self, 24, &gw, taken, 3, &out), 0);
	assert_string_equal(inet_ntop(AF_INET, &out, b, sizeof(b)),
	    "10.77.0.252");
	/* A /16 is swept as its /24; a /30 has one other host but the
	 * gateway; a /31 has none. */
	assert_int_equal(spoof_pick(&self, 16, &gw, NULL, 0, &out), 0);
	assert_string_equal(inet_ntop(AF_INET, &out, b, sizeof(b)),
	    "10.77.0.254");
	addr_parse("10.77.0.2", &self);
	assert_int_equal(spoof_pick(&self, 30, &gw, NULL, 0, &out), -1);
	assert_int_equal(spoof_pick(&self, 31, &gw, NULL, 0, &out), -1);
	addr_parse("fd00::2", &self);
	assert_int_equal(spoof_pick(&self, 64, &gw, NULL, 0, &out), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(udp_frame),
		cmocka_unit_test(tcp_and_arp_frames),
		cmocka_unit_test(replies),
		cmocka_unit_test(icmp_replies),
		cmocka_unit_test(arp),
		cmocka_unit_test(source_port),
		cmocka_unit_test(pick),
		cmocka_unit_test(ipv6),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
