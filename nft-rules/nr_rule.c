/*
 * nr_rule.c -- the rule builder: each call appends the nf_tables
 * expressions of one match or statement to a libnftnl rule and the same
 * thing in nft syntax to the rule's text.
 *
 * Protocol checks are added automatically and only once per rule: a
 * field of the IPv4 header is never loaded before the rule has checked
 * that the packet is IPv4 (meta nfproto in inet, the EtherType in
 * bridge), since loading it from an IPv6 or ARP packet would compare
 * unrelated bytes.
 */
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <net/if.h>
#include <netinet/in.h>

#include <stdio.h>

#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nr_int.h"

enum {
	G_IP4 = 0x1, G_IP6 = 0x2, G_ARP = 0x4, G_TCP = 0x8, G_UDP = 0x10,
	G_ICMP = 0x20, G_ICMP6 = 0x40,
};

struct field {
	const char	*text;
	bool		 meta;		/* meta key, else payload */
	uint32_t	 key;		/* meta key or payload base */
	uint32_t	 off, len;
	unsigned	 guard;
};

static const struct field fields[F_NFIELDS] = {
	[F_IIFNAME] = { "iifname", true, NFT_META_IIFNAME, 0, IFNAMSIZ, 0 },
	[F_OIFNAME] = { "oifname", true, NFT_META_OIFNAME, 0, IFNAMSIZ, 0 },
	[F_ETHER_SADDR] = { "ether saddr", false, NFT_PAYLOAD_LL_HEADER,
	    6, 6, 0 },
	[F_IP_SADDR] = { "ip saddr", false, NFT_PAYLOAD_NETWORK_HEADER,
	    12, 4, G_IP4 },
	[F_IP_DADDR] = { "ip daddr", false, NFT_PAYLOAD_NETWORK_HEADER,
	    16, 4, G_IP4 },
	[F_IP6_DADDR] = { "ip6 daddr", false, NFT_PAYLOAD_NETWORK_HEADER,
	    24, 16, G_IP6 },
	[F_IP6_SADDR] = { "ip6 saddr", false, NFT_PAYLOAD_NETWORK_HEADER,
	    8, 16, G_IP6 },
	[F_IP6_HOPLIMIT] = { "ip6 hoplimit", false,
	    NFT_PAYLOAD_NETWORK_HEADER, 7, 1, G_IP6 },
	[F_ARP_SHA] = { "arp saddr ether", false, NFT_PAYLOAD_NETWORK_HEADER,
	    8, 6, G_ARP },
	[F_ARP_SPA] = { "arp saddr ip", false, NFT_PAYLOAD_NETWORK_HEADER,
	    14, 4, G_ARP },
	[F_TCP_DPORT] = { "tcp dport", false, NFT_PAYLOAD_TRANSPORT_HEADER,
	    2, 2, G_TCP },
	[F_UDP_DPORT] = { "udp dport", false, NFT_PAYLOAD_TRANSPORT_HEADER,
	    2, 2, G_UDP },
	[F_UDP_SPORT] = { "udp sport", false, NFT_PAYLOAD_TRANSPORT_HEADER,
	    0, 2, G_UDP },
	[F_TCP_SPORT] = { "tcp sport", false, NFT_PAYLOAD_TRANSPORT_HEADER,
	    0, 2, G_TCP },
	[F_ARP_TPA] = { "arp daddr ip", false, NFT_PAYLOAD_NETWORK_HEADER,
	    24, 4, G_ARP },
	[F_SKUID] = { "meta skuid", true, NFT_META_SKUID, 0, 4, 0 },
	[F_ICMP_TYPE] = { "icmp type", false, NFT_PAYLOAD_TRANSPORT_HEADER,
	    0, 1, G_IP4 | G_ICMP },
	[F_ICMP6_TYPE] = { "icmpv6 type", false, NFT_PAYLOAD_TRANSPORT_HEADER,
	    0, 1, G_IP6 | G_ICMP6 },
	/* For a set keyed by protocol and port together: the key holds the
	 * protocol, so "th dport" needs no check of its own. */
	[F_L4PROTO] = { "meta l4proto", true, NFT_META_L4PROTO, 0, 1, 0 },
	[F_TH_DPORT] = { "th dport", false, NFT_PAYLOAD_TRANSPORT_HEADER,
	    2, 2, 0 },
	/* The target address of a neighbour solicitation or advertisement
	 * (RFC 4861 4.3, 4.4): after type, code, checksum and 4 bytes. */
	[F_ND_TARGET] = { "@th,64,128", false, NFT_PAYLOAD_TRANSPORT_HEADER,
	    8, 16, G_IP6 | G_ICMP6 },
};

/*
 * Registers are numbered as the kernel reports them back: a 4-byte
 * register that starts a 16-byte one is given by its 16-byte name
 * (NFT_REG_1..4), so verify compares like with like.
 */
static uint32_t
reg32(uint32_t r)
{
	return r % 4 == 0 ? NFT_REG_1 + r / 4 : NFT_REG32_00 + r;
}

#define REG0	NFT_REG_1

static struct nftnl_expr *
expr_new(const char *name)
{
	struct nftnl_expr *e;

	if ((e = nftnl_expr_alloc(name)) == NULL)
		fatalx("out of memory");
	return e;
}

static void
e_add(struct nr_rb *rb, struct nftnl_expr *e)
{
	nftnl_rule_add_expr(rb->r, e);
}

static void
e_meta(struct nr_rb *rb, uint32_t key, uint32_t dreg)
{
	struct nftnl_expr *e = expr_new("meta");

	nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
	nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, dreg);
	e_add(rb, e);
}

static void
e_payload(struct nr_rb *rb, uint32_t base, uint32_t off, uint32_t len,
    uint32_t dreg)
{
	struct nftnl_expr *e = expr_new("payload");

	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, off);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
	nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, dreg);
	e_add(rb, e);
}

static void
e_cmp(struct nr_rb *rb, uint32_t op, const void *data, uint32_t len)
{
	struct nftnl_expr *e = expr_new("cmp");

	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, REG0);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, op);
	nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
	e_add(rb, e);
}

static void
e_mask(struct nr_rb *rb, const void *mask, uint32_t len)
{
	struct nftnl_expr *e = expr_new("bitwise");
	uint8_t zero[16] = { 0 };

	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, REG0);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, REG0);
	nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, len);
	nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, mask, len);
	nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, zero, len);
	e_add(rb, e);
}

static void
load(struct nr_rb *rb, const struct field *f, uint32_t dreg)
{
	if (f->meta)
		e_meta(rb, f->key, dreg);
	else
		e_payload(rb, f->key, f->off, f->len, dreg);
}

/* Match a one-byte meta key (nfproto, l4proto). */
static void
meta_u8(struct nr_rb *rb, uint32_t key, uint8_t v, const char *text)
{
	e_meta(rb, key, REG0);
	e_cmp(rb, NFT_CMP_EQ, &v, 1);
	buf_add(&rb->text, "%s%s", rb->text.len ? " " : "", text);
}

static void
payload_eq(struct nr_rb *rb, uint32_t base, uint32_t off, const void *v,
    uint32_t len)
{
	e_payload(rb, base, off, len, REG0);
	e_cmp(rb, NFT_CMP_EQ, v, len);
}

static void
guard_arp(struct nr_rb *rb)
{
	/* htype 1 and ptype IPv4, then hlen 6 and plen 4, compared two
	 * fields at a time as nft(8) does. */
	static const uint8_t types[4] = { 0, 1, 0x08, 0 }, lens[2] = { 6, 4 };

	payload_eq(rb, NFT_PAYLOAD_NETWORK_HEADER, 0, types, 4);
	payload_eq(rb, NFT_PAYLOAD_NETWORK_HEADER, 4, lens, 2);
	buf_add(&rb->text, " arp htype 1 arp ptype ip arp hlen 6 arp plen 4");
}

static void
guard(struct nr_rb *rb, unsigned g)
{
	bool br = rb->t->family == NFPROTO_BRIDGE;

	g &= ~rb->guards;
	if (g & G_IP4) {
		if (br)
			rb_ethertype(rb, ETH_P_IP, "ip");
		else
			meta_u8(rb, NFT_META_NFPROTO, NFPROTO_IPV4,
			    "meta nfproto ipv4");
	}
	if (g & G_IP6) {
		if (br)
			rb_ethertype(rb, ETH_P_IPV6, "ip6");
		else
			rb_nfproto_ipv6(rb);
	}
	if (g & G_ARP) {
		rb_ethertype(rb, ETH_P_ARP, "arp");
		guard_arp(rb);
	}
	if (g & G_TCP)
		meta_u8(rb, NFT_META_L4PROTO, IPPROTO_TCP, "meta l4proto tcp");
	if (g & G_UDP)
		meta_u8(rb, NFT_META_L4PROTO, IPPROTO_UDP, "meta l4proto udp");
	if (g & G_ICMP)
		meta_u8(rb, NFT_META_L4PROTO, IPPROTO_ICMP, "meta l4proto icmp");
	if (g & G_ICMP6)
		meta_u8(rb, NFT_META_L4PROTO, IPPROTO_ICMPV6,
		    "meta l4proto ipv6-icmp");
	rb->guards |= g;
}

static void
text_sp(struct nr_rb *rb)
{
	if (rb->text.len)
		buf_add(&rb->text, " ");
}

void
rb_begin(struct nr_rb *rb, struct nr_table *t, struct nr_chain *c)
{
	memset(rb, 0, sizeof(*rb));
	rb->t = t;
	rb->c = c;
	if ((rb->r = nftnl_rule_alloc()) == NULL)
		fatalx("out of memory");
	nftnl_rule_set_u32(rb->r, NFTNL_RULE_FAMILY, (uint32_t)t->family);
	nftnl_rule_set_str(rb->r, NFTNL_RULE_TABLE, NFTR_TABLE);
	nftnl_rule_set_str(rb->r, NFTNL_RULE_CHAIN, c->name);
}

void
rb_end(struct nr_rb *rb)
{
	struct nr_chain *c = rb->c;

	if (c->nrules == c->caprules) {
		c->caprules = c->caprules ? c->caprules * 2 : 8;
		c->rules = xreallocarray(c->rules, c->caprules,
		    sizeof(*c->rules));
	}
	c->rules[c->nrules].nl = rb->r;
	c->rules[c->nrules].text = buf_take(&rb->text);
	c->nrules++;
	rb->r = NULL;
}

void
rb_ethertype(struct nr_rb *rb, uint16_t type, const char *name)
{
	uint16_t v = htons(type);

	payload_eq(rb, NFT_PAYLOAD_LL_HEADER, 12, &v, 2);
	text_sp(rb);
	buf_add(&rb->text, "ether type %s", name);
}

void
rb_l4proto(struct nr_rb *rb, int proto)
{
	static const struct { int proto; unsigned g; } l4[] = {
		{ IPPROTO_TCP, G_TCP }, { IPPROTO_UDP, G_UDP },
		{ IPPROTO_ICMP, G_IP4 | G_ICMP },
		{ IPPROTO_ICMPV6, G_IP6 | G_ICMP6 },
	};
	size_t i;

	for (i = 0; i < sizeof(l4) / sizeof(l4[0]); i++)
		if (l4[i].proto == proto) {
			guard(rb, l4[i].g);
			return;
		}
	fatalx("%s: bad use", __func__);
}

void
rb_nfproto_ipv6(struct nr_rb *rb)
{
	meta_u8(rb, NFT_META_NFPROTO, NFPROTO_IPV6, "meta nfproto ipv6");
	rb->guards |= G_IP6;
}

/* Interface name equal (or not) to s. */
void
rb_cmp_str(struct nr_rb *rb, enum nr_field fi, bool neq, const char *s)
{
	const struct field *f = &fields[fi];
	char v[IFNAMSIZ] = { 0 };

	if (!f->meta || strlen(s) >= sizeof(v))
		fatalx("%s: bad use", __func__);
	memcpy(v, s, strlen(s));
	guard(rb, f->guard);
	load(rb, f, REG0);
	e_cmp(rb, neq ? NFT_CMP_NEQ : NFT_CMP_EQ, v, sizeof(v));
	text_sp(rb);
	buf_add(&rb->text, "%s %s\"%s\"", f->text, neq ? "!= " : "", s);
}

static void
prefix_mask(int plen, uint8_t *mask, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		int bits = plen - (int)i * 8;

		mask[i] = bits >= 8 ? 0xff : bits <= 0 ? 0 :
		    (uint8_t)(0xff << (8 - bits));
	}
}

/* Like nft(8): load only the bytes the prefix covers, mask the last one
 * if the prefix ends inside it. */
void
rb_cmp_prefix(struct nr_rb *rb, enum nr_field fi, bool neq,
    const struct moat_prefix *p)
{
	const struct field *f = &fields[fi];
	uint32_t len = ((uint32_t)p->plen + 7) / 8;
	uint8_t mask[16];
	char a[64];

	guard(rb, f->guard);
	addr_fmt(&p->addr, a, sizeof(a));
	text_sp(rb);
	if ((uint32_t)p->plen < f->len * 8)
		buf_add(&rb->text, "%s %s%s/%d", f->text, neq ? "!= " : "", a,
		    p->plen);
	else
		buf_add(&rb->text, "%s %s%s", f->text, neq ? "!= " : "", a);
	if (p->plen == 0) {
		if (neq)
			fatalx("%s: \"not /0\" never matches", __func__);
		return;		/* every address */
	}
	if (f->meta || len > f->len)
		fatalx("%s: bad use", __func__);
	e_payload(rb, f->key, f->off, len, REG0);
	if (p->plen % 8) {
		prefix_mask(p->plen, mask, len);
		e_mask(rb, mask, len);
	}
	e_cmp(rb, neq ? NFT_CMP_NEQ : NFT_CMP_EQ, p->addr.a, len);
}

void
rb_cmp_port(struct nr_rb *rb, enum nr_field fi, uint16_t port)
{
	const struct field *f = &fields[fi];
	uint16_t v = htons(port);

	guard(rb, f->guard);
	load(rb, f, REG0);
	e_cmp(rb, NFT_CMP_EQ, &v, 2);
	text_sp(rb);
	buf_add(&rb->text, "%s %u", f->text, port);
}

/* A port field other than port (the protocol still must match). */
void
rb_cmp_port_neq(struct nr_rb *rb, enum nr_field fi, uint16_t port)
{
	const struct field *f = &fields[fi];
	uint16_t v = htons(port);

	guard(rb, f->guard);
	load(rb, f, REG0);
	e_cmp(rb, NFT_CMP_NEQ, &v, 2);
	text_sp(rb);
	buf_add(&rb->text, "%s != %u", f->text, port);
}

/* A one-byte field (an ICMP type or code) equal to v. */
void
rb_cmp_u8(struct nr_rb *rb, enum nr_field fi, uint8_t v)
{
	const struct field *f = &fields[fi];

	if (f->len != 1)
		fatalx("%s: bad use", __func__);
	guard(rb, f->guard);
	load(rb, f, REG0);
	e_cmp(rb, NFT_CMP_EQ, &v, 1);
	text_sp(rb);
	buf_add(&rb->text, "%s %u", f->text, v);
}

/* ICMP type and code together, loaded at once as nft(8) does. */
void
rb_icmp_type_code(struct nr_rb *rb, uint8_t type, uint8_t code)
{
	const uint8_t v[2] = { type, code };

	guard(rb, G_IP4 | G_ICMP);
	payload_eq(rb, NFT_PAYLOAD_TRANSPORT_HEADER, 0, v, 2);
	text_sp(rb);
	buf_add(&rb->text, "icmp type %u icmp code %u", type, code);
}

/* Registers are 4 bytes wide; each field of a concatenation starts on
 * its own register. */
static uint32_t
regs(uint32_t len)
{
	return (len + 3) / 4;
}

void
rb_lookup(struct nr_rb *rb, const enum nr_field *fi, size_t n,
    const char *set, bool neq)
{
	struct nftnl_expr *e;
	struct nr_set *s = model_find_set(rb->t, set);
	uint32_t reg = 0;
	size_t i;

	if (s == NULL)
		fatalx("%s: no set %s", __func__, set);
	for (i = 0; i < n; i++)
		guard(rb, fields[fi[i]].guard);
	text_sp(rb);
	for (i = 0; i < n; i++) {
		load(rb, &fields[fi[i]], reg32(reg));
		reg += regs(fields[fi[i]].len);
		buf_add(&rb->text, "%s%s", i ? " . " : "", fields[fi[i]].text);
	}
	e = expr_new("lookup");
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SREG, REG0);
	nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, set);
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SET_ID,
	    nftnl_set_get_u32(s->nl, NFTNL_SET_ID));
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_FLAGS,
	    neq ? NFT_LOOKUP_F_INV : 0);
	e_add(rb, e);
	buf_add(&rb->text, " %s@%s", neq ? "!= " : "", set);
}

void
rb_vmap(struct nr_rb *rb, enum nr_field fi, const char *set)
{
	struct nftnl_expr *e;
	struct nr_set *s = model_find_set(rb->t, set);

	if (s == NULL || !s->map)
		fatalx("%s: no map %s", __func__, set);
	guard(rb, fields[fi].guard);
	load(rb, &fields[fi], REG0);
	e = expr_new("lookup");
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SREG, REG0);
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_DREG, NFT_REG_VERDICT);
	nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, set);
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SET_ID,
	    nftnl_set_get_u32(s->nl, NFTNL_SET_ID));
	nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_FLAGS, 0);
	e_add(rb, e);
	text_sp(rb);
	buf_add(&rb->text, "%s vmap @%s", fields[fi].text, set);
}

/* The socket's owner (output hook: locally generated packets). */
void
rb_skuid(struct nr_rb *rb, uint32_t uid)
{
	e_meta(rb, NFT_META_SKUID, REG0);
	e_cmp(rb, NFT_CMP_EQ, &uid, 4);
	text_sp(rb);
	buf_add(&rb->text, "meta skuid %u", uid);
}

/* The destination is an address of this host, on any interface and in
 * either family, as the kernel knows it at the moment of the packet. */
void
rb_fib_daddr_local(struct nr_rb *rb)
{
	struct nftnl_expr *e = expr_new("fib");
	uint32_t local = 2;	/* RTN_LOCAL */

	nftnl_expr_set_u32(e, NFTNL_EXPR_FIB_FLAGS, NFTA_FIB_F_DADDR);
	nftnl_expr_set_u32(e, NFTNL_EXPR_FIB_RESULT, NFT_FIB_RESULT_ADDRTYPE);
	nftnl_expr_set_u32(e, NFTNL_EXPR_FIB_DREG, REG0);
	e_add(rb, e);
	e_cmp(rb, NFT_CMP_EQ, &local, 4);
	text_sp(rb);
	buf_add(&rb->text, "fib daddr type local");
}

void
rb_ct_state(struct nr_rb *rb, uint32_t mask, const char *text)
{
	struct nftnl_expr *e = expr_new("ct");
	uint32_t zero = 0;

	nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, NFT_CT_STATE);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, REG0);
	e_add(rb, e);
	e_mask(rb, &mask, 4);
	e_cmp(rb, NFT_CMP_NEQ, &zero, 4);
	text_sp(rb);
	buf_add(&rb->text, "ct state %s", text);
}

/* The packet's conntrack entry is not confirmed yet: the first packet of
 * a connection, before the end of its first pass through the stack.  A
 * retransmission of an admitted first packet, or a UDP flow's next
 * datagrams, find the entry confirmed.  Untracked packets do not match. */
void
rb_ct_unconfirmed(struct nr_rb *rb)
{
	struct nftnl_expr *e = expr_new("ct");
	uint32_t mask = IPS_CONFIRMED, zero = 0;

	nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, NFT_CT_STATUS);
	nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, REG0);
	e_add(rb, e);
	e_mask(rb, &mask, 4);
	e_cmp(rb, NFT_CMP_EQ, &zero, 4);
	text_sp(rb);
	buf_add(&rb->text, "ct status ! confirmed");
}

/* The packet bypasses conntrack (raw priority, before conntrack's own
 * hook): it makes and looks up no entry. */
void
rb_notrack(struct nr_rb *rb)
{
	e_add(rb, expr_new("notrack"));
	text_sp(rb);
	buf_add(&rb->text, "notrack");
}

void
rb_counter(struct nr_rb *rb, const char *name)
{
	struct nftnl_expr *e = expr_new("objref");

	nftnl_expr_set_u32(e, NFTNL_EXPR_OBJREF_IMM_TYPE, NFT_OBJECT_COUNTER);
	nftnl_expr_set_str(e, NFTNL_EXPR_OBJREF_IMM_NAME, name);
	e_add(rb, e);
	text_sp(rb);
	buf_add(&rb->text, "counter name \"%s\"", name);
}

void
rb_log(struct nr_rb *rb, const char *prefix, uint16_t group)
{
	struct nftnl_expr *e = expr_new("log");

	nftnl_expr_set_str(e, NFTNL_EXPR_LOG_PREFIX, prefix);
	nftnl_expr_set_u16(e, NFTNL_EXPR_LOG_GROUP, group);
	e_add(rb, e);
	text_sp(rb);
	buf_add(&rb->text, "log prefix \"%s\" group %u", prefix, group);
}

void
rb_reject(struct nr_rb *rb)
{
	struct nftnl_expr *e = expr_new("reject");

	nftnl_expr_set_u32(e, NFTNL_EXPR_REJECT_TYPE, NFT_REJECT_ICMPX_UNREACH);
	nftnl_expr_set_u8(e, NFTNL_EXPR_REJECT_CODE,
	    NFT_REJECT_ICMPX_ADMIN_PROHIBITED);
	e_add(rb, e);
	text_sp(rb);
	buf_add(&rb->text, "reject with icmpx admin-prohibited");
}

void
rb_verdict(struct nr_rb *rb, int verdict, const char *chain)
{
	static const struct { int v; const char *text; } names[] = {
		{ NF_ACCEPT, "accept" }, { NF_DROP, "drop" },
		{ NFT_JUMP, "jump" }, { NFT_GOTO, "goto" },
		{ NFT_RETURN, "return" },
	};
	struct nftnl_expr *e = expr_new("immediate");
	const char *text = "?";
	size_t i;

	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, (uint32_t)verdict);
	if (chain)
		nftnl_expr_set_str(e, NFTNL_EXPR_IMM_CHAIN, chain);
	e_add(rb, e);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].v == verdict)
			text = names[i].text;
	text_sp(rb);
	buf_add(&rb->text, "%s%s%s", text, chain ? " " : "",
	    chain ? chain : "");
}

void
rb_redirect(struct nr_rb *rb, uint16_t port)
{
	struct nftnl_expr *e = expr_new("immediate");
	uint16_t v = htons(port);

	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, REG0);
	nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, &v, sizeof(v));
	e_add(rb, e);
	e = expr_new("redir");
	nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MIN, REG0);
	nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MAX, REG0);
	nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_FLAGS,
	    0x2 /* NF_NAT_RANGE_PROTO_SPECIFIED */);
	e_add(rb, e);
	text_sp(rb);
	buf_add(&rb->text, "redirect to :%u", port);
}

static struct nftnl_expr *
limit_over(uint32_t rate, uint32_t burst)
{
	struct nftnl_expr *e = expr_new("limit");

	nftnl_expr_set_u64(e, NFTNL_EXPR_LIMIT_RATE, rate);
	nftnl_expr_set_u64(e, NFTNL_EXPR_LIMIT_UNIT, 1);	/* per second */
	nftnl_expr_set_u32(e, NFTNL_EXPR_LIMIT_BURST, burst);
	nftnl_expr_set_u32(e, NFTNL_EXPR_LIMIT_TYPE, NFT_LIMIT_PKTS);
	nftnl_expr_set_u32(e, NFTNL_EXPR_LIMIT_FLAGS, NFT_LIMIT_F_INV);
	return e;
}

/* Matches once packets come faster than rate a second after a burst. */
void
rb_limit_over(struct nr_rb *rb, uint32_t rate, uint32_t burst)
{
	e_add(rb, limit_over(rate, burst));
	text_sp(rb);
	buf_add(&rb->text, "limit rate over %u/second burst %u packets", rate,
	    burst);
}

/* The same, with one bucket per value of a field: an element of the
 * dynamic set, made or refreshed by the packet. */
void
rb_meter_over(struct nr_rb *rb, enum nr_field fi, const char *set,
    uint32_t rate, uint32_t burst)
{
	struct nftnl_expr *e;
	struct nr_set *s = model_find_set(rb->t, set);

	if (s == NULL || !s->dynamic)
		fatalx("%s: no dynamic set %s", __func__, set);
	guard(rb, fields[fi].guard);
	load(rb, &fields[fi], REG0);
	e = expr_new("dynset");
	nftnl_expr_set_u32(e, NFTNL_EXPR_DYNSET_SREG_KEY, REG0);
	nftnl_expr_set_u32(e, NFTNL_EXPR_DYNSET_OP, NFT_DYNSET_OP_UPDATE);
	/* 0: the set's own timeout; said outright as the kernel reports it
	 * back, so that verify compares like with like. */
	nftnl_expr_set_u64(e, NFTNL_EXPR_DYNSET_TIMEOUT, 0);
	nftnl_expr_set_str(e, NFTNL_EXPR_DYNSET_SET_NAME, set);
	nftnl_expr_set_u32(e, NFTNL_EXPR_DYNSET_SET_ID,
	    nftnl_set_get_u32(s->nl, NFTNL_SET_ID));
	nftnl_expr_set(e, NFTNL_EXPR_DYNSET_EXPR, limit_over(rate, burst), 0);
	e_add(rb, e);
	text_sp(rb);
	buf_add(&rb->text, "update @%s { %s limit rate over %u/second burst "
	    "%u packets }", set, fields[fi].text, rate, burst);
}

void
rb_masquerade(struct nr_rb *rb)
{
	e_add(rb, expr_new("masq"));
	text_sp(rb);
	buf_add(&rb->text, "masquerade");
}

/* snat to one IPv4 address (of an inet table). */
void
rb_snat4(struct nr_rb *rb, const struct moat_addr *a)
{
	struct nftnl_expr *e = expr_new("immediate");
	char txt[INET6_ADDRSTRLEN];

	nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, REG0);
	nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, a->a, 4);
	e_add(rb, e);
	e = expr_new("nat");
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_TYPE, NFT_NAT_SNAT);
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_FAMILY, NFPROTO_IPV4);
	/* As the kernel reports the rule back (one address is the range
	 * from it to itself): so that verify finds what it applied. */
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_ADDR_MIN, REG0);
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_REG_ADDR_MAX, REG0);
	nftnl_expr_set_u32(e, NFTNL_EXPR_NAT_FLAGS, NF_NAT_RANGE_MAP_IPS);
	e_add(rb, e);
	text_sp(rb);
	buf_add(&rb->text, "snat ip to %s", addr_fmt(a, txt, sizeof(txt)));
}
