/*
 * test_ipc.c -- typed IPC: well-formed messages round-trip over a real
 * socketpair; every malformed shape is a protocol violation (-2).
 */
#include <sys/socket.h>
#include <netinet/in.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ipc.h"

static int fds[2];
static union { struct ipc_set_add m; char raw[IPC_MAX_PAYLOAD]; } u, in;

static int
setup(void **state)
{
	(void)state;
	return ipc_pair(fds);
}

static int
teardown(void **state)
{
	(void)state;
	close(fds[0]);
	close(fds[1]);
	return 0;
}

static size_t
make_set_add(uint32_t naddr)
{
	uint32_t i;

	memset(&u, 0, sizeof(u));
	strcpy(u.m.sandbox, "web");
	u.m.timeout_ms = 60000;
	u.m.naddr = naddr;
	u.m.plain = 1;
	for (i = 0; i < naddr; i++) {
		addr_parse("203.0.113.10", &u.m.addr[i]);
		u.m.addr[i].a[3] = (uint8_t)(10 + i);
	}
	return sizeof(u.m) + naddr * sizeof(struct moat_addr);
}

static ssize_t
roundtrip_raw(const void *msg, size_t len, struct ipc_hdr *h)
{
	char err[256];

	assert_int_equal(send(fds[0], msg, len, 0), (ssize_t)len);
	return ipc_recv(fds[1], h, &in, sizeof(in), err, sizeof(err));
}

static void
set_add_roundtrip(void **state)
{
	struct ipc_hdr h;
	char err[256];
	size_t len = make_set_add(3);

	(void)state;
	assert_int_equal(ipc_send(fds[0], IPC_SET_ADD, 42, &u, len), 0);
	assert_int_equal(ipc_recv(fds[1], &h, &in, sizeof(in), err,
	    sizeof(err)), (ssize_t)len);
	assert_int_equal(h.type, IPC_SET_ADD);
	assert_int_equal(h.id, 42);
	assert_string_equal(in.m.sandbox, "web");
	assert_int_equal(in.m.naddr, 3);
	assert_int_equal(in.m.addr[2].a[3], 12);
}

static void
malformed_rejected(void **state)
{
	struct { struct ipc_hdr h; char p[IPC_MAX_PAYLOAD]; } raw;
	struct ipc_hdr h;
	size_t len;

	(void)state;
	/* naddr larger than the bytes sent */
	len = make_set_add(2);
	raw.h = (struct ipc_hdr){ IPC_SET_ADD, 0, (uint32_t)len, 1 };
	memcpy(raw.p, &u, len);
	((struct ipc_set_add *)raw.p)->naddr = 3;
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + len, &h), -2);
	/* header length disagrees with the datagram */
	make_set_add(1);
	raw.h.len = 7;
	memcpy(raw.p, &u, sizeof(u.m) + sizeof(struct moat_addr));
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + sizeof(u.m) +
	    sizeof(struct moat_addr), &h), -2);
	/* unterminated sandbox name */
	len = make_set_add(1);
	memset(u.m.sandbox, 'a', sizeof(u.m.sandbox));
	raw.h = (struct ipc_hdr){ IPC_SET_ADD, 0, (uint32_t)len, 1 };
	memcpy(raw.p, &u, len);
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + len, &h), -2);
	/* too many addresses */
	len = make_set_add(IPC_SET_MAX_ADDRS + 1);
	raw.h = (struct ipc_hdr){ IPC_SET_ADD, 0, (uint32_t)len, 1 };
	memcpy(raw.p, &u, len);
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + len, &h), -2);
	/* a timeout above the cap (a compromised dnsd pinning an address) */
	len = make_set_add(1);
	u.m.timeout_ms = IPC_SET_TIMEOUT_MAX_MS + 1;
	raw.h = (struct ipc_hdr){ IPC_SET_ADD, 0, (uint32_t)len, 1 };
	memcpy(raw.p, &u, len);
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + len, &h), -2);
	u.m.timeout_ms = IPC_SET_TIMEOUT_MAX_MS;
	memcpy(raw.p, &u, len);
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + len, &h), (int)len);
	/* ports of its own: nothing asked, too many, not tcp/udp, port 0 */
	len = make_set_add(1);
	raw.h = (struct ipc_hdr){ IPC_SET_ADD, 0, (uint32_t)len, 1 };
	u.m.plain = 0;
	memcpy(raw.p, &u, len);
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + len, &h), -2);
	u.m.nports = IPC_SET_MAX_PORTS + 1;
	memcpy(raw.p, &u, len);
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + len, &h), -2);
	u.m.nports = 1;
	u.m.ports[0] = (struct moat_port){ 132, 22 };	/* sctp */
	memcpy(raw.p, &u, len);
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + len, &h), -2);
	u.m.ports[0] = (struct moat_port){ IPPROTO_TCP, 0 };
	memcpy(raw.p, &u, len);
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + len, &h), -2);
	u.m.ports[0] = (struct moat_port){ IPPROTO_TCP, 22 };
	memcpy(raw.p, &u, len);
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + len, &h), (int)len);
	/* unknown type, and a short message */
	raw.h = (struct ipc_hdr){ 99, 0, 0, 1 };
	assert_int_equal(roundtrip_raw(&raw, sizeof(h), &h), -2);
	assert_int_equal(roundtrip_raw(&raw, 5, &h), -2);
	/* reserved bits set */
	raw.h = (struct ipc_hdr){ IPC_RELOAD, 1, 0, 1 };
	assert_int_equal(roundtrip_raw(&raw, sizeof(h), &h), -2);
	/* reload with a payload */
	raw.h = (struct ipc_hdr){ IPC_RELOAD, 0, 1, 1 };
	raw.p[0] = 'x';
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + 1, &h), -2);
}

static void
audit_shape(void **state)
{
	struct { struct ipc_hdr h; char p[64]; } raw;
	struct ipc_hdr h;
	char err[128];
	const char *good = "{\"event\":\"refusal\"}";

	(void)state;
	assert_int_equal(ipc_send(fds[0], IPC_AUDIT, 1, good, strlen(good)), 0);
	assert_int_equal(ipc_recv(fds[1], &h, &in, sizeof(in), err,
	    sizeof(err)), (ssize_t)strlen(good));
	raw.h = (struct ipc_hdr){ IPC_AUDIT, 0, 5, 1 };
	memcpy(raw.p, "{\n1}", 5);
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + 5, &h), -2);
	/* several events, a line each: no empty line, none at the end */
	raw.h = (struct ipc_hdr){ IPC_AUDIT, 0, 8, 1 };
	memcpy(raw.p, "{\"a\"}\n{}", 8);
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + 8, &h), 8);
	raw.h = (struct ipc_hdr){ IPC_AUDIT, 0, 9, 1 };
	memcpy(raw.p, "{\"a\"}\n\n{}", 9);
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + 9, &h), -2);
	raw.h = (struct ipc_hdr){ IPC_AUDIT, 0, 6, 1 };
	memcpy(raw.p, "{\"a\"}\n", 6);
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + 6, &h), -2);
	raw.h = (struct ipc_hdr){ IPC_AUDIT, 0, 7, 1 };
	memcpy(raw.p, "{\"a\"}\n}", 7);
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + 7, &h), -2);
	/* EOF is 0, not an error */
	close(fds[0]);
	assert_int_equal(ipc_recv(fds[1], &h, &in, sizeof(in), err,
	    sizeof(err)), 0);
	fds[0] = -1;
}

/* The signer's two messages: lengths must add up, names must end. */
static void
sign_shapes(void **state)
{
	static union {
		struct { struct ipc_hdr h; struct ipc_sign_req m; } r;
		struct { struct ipc_hdr h; struct ipc_sign_cert m; } c;
		uint8_t raw[sizeof(struct ipc_hdr) + IPC_MAX_PAYLOAD];
	} x;
	struct ipc_hdr h;
	size_t len;

	(void)state;
	memset(&x, 0, sizeof(x));
	strcpy(x.r.m.host, "api.bound.test");
	x.r.m.keylen = 91;
	len = sizeof(x.r.m) + 91;
	x.r.h = (struct ipc_hdr){ IPC_SIGN_REQ, 0, (uint32_t)len, 7 };
	assert_int_equal(roundtrip_raw(&x, sizeof(h) + len, &h), (ssize_t)len);
	/* a key length the message does not hold */
	x.r.m.keylen = 92;
	assert_int_equal(roundtrip_raw(&x, sizeof(h) + len, &h), -2);
	/* a key longer than any public key */
	x.r.m.keylen = IPC_SIGN_MAX_KEY + 1;
	len = sizeof(x.r.m) + IPC_SIGN_MAX_KEY + 1;
	x.r.h.len = (uint32_t)len;
	assert_int_equal(roundtrip_raw(&x, sizeof(h) + len, &h), -2);
	/* a host name without its NUL */
	x.r.m.keylen = 91;
	len = sizeof(x.r.m) + 91;
	x.r.h.len = (uint32_t)len;
	memset(x.r.m.host, 'a', sizeof(x.r.m.host));
	assert_int_equal(roundtrip_raw(&x, sizeof(h) + len, &h), -2);

	memset(&x, 0, sizeof(x));
	x.c.m.status = 0;
	x.c.m.leaflen = 300;
	x.c.m.calen = 200;
	len = sizeof(x.c.m) + 500;
	x.c.h = (struct ipc_hdr){ IPC_SIGN_CERT, 0, (uint32_t)len, 7 };
	assert_int_equal(roundtrip_raw(&x, sizeof(h) + len, &h), (ssize_t)len);
	/* lengths that do not add up */
	x.c.m.calen = 201;
	assert_int_equal(roundtrip_raw(&x, sizeof(h) + len, &h), -2);
	/* "signed" with no certificate */
	x.c.m.leaflen = x.c.m.calen = 0;
	len = sizeof(x.c.m);
	x.c.h.len = (uint32_t)len;
	assert_int_equal(roundtrip_raw(&x, sizeof(h) + len, &h), -2);
	/* a refusal carries none */
	x.c.m.status = -1;
	assert_int_equal(roundtrip_raw(&x, sizeof(h) + len, &h), (ssize_t)len);
}

/* dnsd's per-sandbox drop counts: exact size, a name, a count. */
static void
dns_dropped_shape(void **state)
{
	struct { struct ipc_hdr h; struct ipc_dns_dropped m; } raw;
	struct ipc_dns_dropped m = { .count = 7 };
	struct ipc_hdr h;
	char err[128];

	(void)state;
	snprintf(m.sandbox, sizeof(m.sandbox), "web");
	assert_int_equal(ipc_send(fds[0], IPC_DNS_DROPPED, 0, &m, sizeof(m)), 0);
	assert_int_equal(ipc_recv(fds[1], &h, &in, sizeof(in), err,
	    sizeof(err)), (ssize_t)sizeof(m));
	raw.h = (struct ipc_hdr){ IPC_DNS_DROPPED, 0, sizeof(m), 1 };
	raw.m = m;
	raw.m.count = 0;
	assert_int_equal(roundtrip_raw(&raw, sizeof(raw), &h), -2);
	raw.m = m;
	memset(raw.m.sandbox, 'a', sizeof(raw.m.sandbox));
	assert_int_equal(roundtrip_raw(&raw, sizeof(raw), &h), -2);
	raw.h.len = sizeof(m) - 8;
	raw.m = m;
	assert_int_equal(roundtrip_raw(&raw, sizeof(h) + sizeof(m) - 8, &h), -2);
}

/* Registration: each field terminated, printable and present exactly
 * when the verb has it; the text one string to the end; a reply's status
 * 0 or 1, a refusal with a reason. */
static int
reg_check(const void *m, size_t len, int type)
{
	struct ipc_hdr h = { (uint16_t)type, 0, (uint32_t)len, 0 };
	char err[128];

	return ipc_check(&h, m, len, err, sizeof(err));
}

static void
reg_shapes(void **state)
{
	static union {
		struct ipc_reg_req m;
		char raw[sizeof(struct ipc_reg_req) + 64];
	} r;
	static union {
		struct ipc_reg_reply m;
		char raw[sizeof(struct ipc_reg_reply) + 64];
	} a;
	const size_t base = sizeof(r.m);

	(void)state;
	memset(&r, 0, sizeof(r));
	r.m.verb = REG_HELLO;
	assert_int_equal(reg_check(&r, base + 1, IPC_REG_REQ), 0);
	assert_int_equal(reg_check(&r, base, IPC_REG_REQ), -1);	/* no text */
	assert_int_equal(reg_check(&r, base + 2, IPC_REG_REQ), -1); /* 2 NULs */
	snprintf(r.m.name, sizeof(r.m.name), "a1");	/* hello has no name */
	assert_int_equal(reg_check(&r, base + 1, IPC_REG_REQ), -1);
	r.m.verb = REG_REMOVE;
	assert_int_equal(reg_check(&r, base + 1, IPC_REG_REQ), 0);
	r.m.verb = REG_REGISTER;			/* needs every field */
	assert_int_equal(reg_check(&r, base + 1, IPC_REG_REQ), -1);
	snprintf(r.m.address, sizeof(r.m.address), "10.77.0.21");
	snprintf(r.m.mac, sizeof(r.m.mac), "52:54:00:00:0a:01");
	snprintf(r.m.egress, sizeof(r.m.egress), "open");
	assert_int_equal(reg_check(&r, base + 1, IPC_REG_REQ), 0);
	snprintf(r.m.text, 32, "example.com");
	assert_int_equal(reg_check(&r, base + 12, IPC_REG_REQ), 0);
	r.m.name[1] = '\n';				/* not printable */
	assert_int_equal(reg_check(&r, base + 12, IPC_REG_REQ), -1);
	r.m.name[1] = '1';
	memset(r.m.mac, 'a', sizeof(r.m.mac));		/* not terminated */
	assert_int_equal(reg_check(&r, base + 12, IPC_REG_REQ), -1);
	snprintf(r.m.mac, sizeof(r.m.mac), "52:54:00:00:0a:01");
	r.m.pad2[1] = 1;
	assert_int_equal(reg_check(&r, base + 12, IPC_REG_REQ), -1);
	r.m.pad2[1] = 0;
	r.m.verb = REG_VERB_MAX;
	assert_int_equal(reg_check(&r, base + 12, IPC_REG_REQ), -1);
	memset(&r, 0, sizeof(r));
	r.m.verb = REG_SYNC;				/* needs its list */
	assert_int_equal(reg_check(&r, base + 1, IPC_REG_REQ), -1);
	snprintf(r.m.text, 32, "a1,a2");
	assert_int_equal(reg_check(&r, base + 6, IPC_REG_REQ), 0);

	memset(&a, 0, sizeof(a));
	assert_int_equal(reg_check(&a, sizeof(a.m), IPC_REG_REPLY), 0);
	a.m.status = 1;					/* a refusal says why */
	assert_int_equal(reg_check(&a, sizeof(a.m), IPC_REG_REPLY), -1);
	memcpy(a.m.text, "no such sandbox", 15);
	assert_int_equal(reg_check(&a, sizeof(a.m) + 15, IPC_REG_REPLY), 0);
	a.m.text[2] = '\0';
	assert_int_equal(reg_check(&a, sizeof(a.m) + 15, IPC_REG_REPLY), -1);
	a.m.status = 2;
	assert_int_equal(reg_check(&a, sizeof(a.m), IPC_REG_REPLY), -1);
}

/* The proxy's budget charge and the parent's answer: fixed sizes,
 * terminated names, a spent budget says which and for how long. */
static void
budget_shapes(void **state)
{
	struct { struct ipc_hdr h; struct ipc_budget_req m; } rq;
	struct { struct ipc_hdr h; struct ipc_budget_ack m; } ak;
	struct ipc_hdr h;

	(void)state;
	memset(&rq, 0, sizeof(rq));
	rq.h = (struct ipc_hdr){ IPC_BUDGET_REQ, 0, sizeof(rq.m), 3 };
	rq.m.nsecret = 2;
	snprintf(rq.m.secret[0], IPC_NAME_LEN, "gh");
	snprintf(rq.m.secret[1], IPC_NAME_LEN, "openai");
	assert_int_equal(roundtrip_raw(&rq, sizeof(rq), &h),
	    (ssize_t)sizeof(rq.m));
	assert_int_equal(h.id, 3);
	rq.m.nsecret = 3;		/* the third name is empty */
	assert_int_equal(roundtrip_raw(&rq, sizeof(rq), &h), -2);
	rq.m.nsecret = 0;
	assert_int_equal(roundtrip_raw(&rq, sizeof(rq), &h), -2);
	rq.m.nsecret = IPC_BUDGET_MAX + 1;
	assert_int_equal(roundtrip_raw(&rq, sizeof(rq), &h), -2);
	rq.m.nsecret = 1;
	memset(rq.m.secret[0], 'a', IPC_NAME_LEN);
	assert_int_equal(roundtrip_raw(&rq, sizeof(rq), &h), -2);

	memset(&ak, 0, sizeof(ak));
	ak.h = (struct ipc_hdr){ IPC_BUDGET_ACK, 0, sizeof(ak.m), 3 };
	assert_int_equal(roundtrip_raw(&ak, sizeof(ak), &h),
	    (ssize_t)sizeof(ak.m));
	ak.m.status = 1;		/* spent, but which? */
	assert_int_equal(roundtrip_raw(&ak, sizeof(ak), &h), -2);
	snprintf(ak.m.secret, sizeof(ak.m.secret), "gh");
	snprintf(ak.m.window, sizeof(ak.m.window), "minute");
	ak.m.retry_after = 12;
	assert_int_equal(roundtrip_raw(&ak, sizeof(ak), &h),
	    (ssize_t)sizeof(ak.m));
	ak.m.retry_after = 0;
	assert_int_equal(roundtrip_raw(&ak, sizeof(ak), &h), -2);
	ak.m.retry_after = 12;
	ak.m.status = 2;
	assert_int_equal(roundtrip_raw(&ak, sizeof(ak), &h), -2);
	ak.m.status = 0;
	ak.h.len = sizeof(ak.m) - 4;
	assert_int_equal(roundtrip_raw(&ak, sizeof(ak) - 4, &h), -2);
}

/* gatewayd's new configuration and dnsd's answer: a generation that is
 * never 0, in place or drain, only the flags there are, a status of 0 or
 * -1. */
static void
conf_shapes(void **state)
{
	struct ipc_conf c = { 7, IPC_CONF_KEEP, 0, { 0, 0 } };
	struct ipc_conf_ack a = { 7, 0 };

	(void)state;
	assert_int_equal(reg_check(&c, sizeof(c), IPC_CONF), 0);
	assert_int_equal(reg_check(&c, sizeof(c) - 1, IPC_CONF), -1);
	c.how = IPC_CONF_DRAIN;
	c.flags = IPC_CONF_BASIS | IPC_CONF_SECRETS;
	assert_int_equal(reg_check(&c, sizeof(c), IPC_CONF), 0);
	c.how = IPC_CONF_HOW_MAX;
	assert_int_equal(reg_check(&c, sizeof(c), IPC_CONF), -1);
	c.how = IPC_CONF_KEEP;
	c.flags = 0x04;
	assert_int_equal(reg_check(&c, sizeof(c), IPC_CONF), -1);
	c.flags = 0;
	c.pad[1] = 1;
	assert_int_equal(reg_check(&c, sizeof(c), IPC_CONF), -1);
	c.pad[1] = 0;
	c.gen = 0;
	assert_int_equal(reg_check(&c, sizeof(c), IPC_CONF), -1);
	assert_int_equal(reg_check(&a, sizeof(a), IPC_CONF_ACK), 0);
	a.status = -1;
	assert_int_equal(reg_check(&a, sizeof(a), IPC_CONF_ACK), 0);
	a.status = 1;
	assert_int_equal(reg_check(&a, sizeof(a), IPC_CONF_ACK), -1);
	a.status = 0;
	a.gen = 0;
	assert_int_equal(reg_check(&a, sizeof(a), IPC_CONF_ACK), -1);
}

/* What changed, before a configuration: names of either kind, each
 * printable, terminated, shorter than a sandbox's name may be. */
static void
conf_changed_shapes(void **state)
{
	static union {
		struct ipc_conf_changed m;
		char raw[IPC_MAX_PAYLOAD];
	} cu;
	const char names[] = "dev\0ci-2\0";
	size_t len = sizeof(cu.m) + sizeof(names) - 1;

	(void)state;
	memset(&cu, 0, sizeof(cu));
	cu.m.kind = IPC_CHANGED_SANDBOX;
	cu.m.len = sizeof(names) - 1;
	memcpy(cu.m.names, names, sizeof(names) - 1);
	assert_int_equal(reg_check(&cu, len, IPC_CONF_CHANGED), 0);
	cu.m.kind = IPC_CHANGED_SECRET;
	assert_int_equal(reg_check(&cu, len, IPC_CONF_CHANGED), 0);
	cu.m.kind = IPC_CHANGED_MAX;
	assert_int_equal(reg_check(&cu, len, IPC_CONF_CHANGED), -1);
	cu.m.kind = 0;
	/* the last name not terminated; an empty name; no name at all */
	assert_int_equal(reg_check(&cu, len - 1, IPC_CONF_CHANGED), -1);
	cu.m.names[3] = '\0';
	cu.m.names[0] = '\0';
	assert_int_equal(reg_check(&cu, len, IPC_CONF_CHANGED), -1);
	cu.m.names[0] = 'd';
	cu.m.len = 0;
	assert_int_equal(reg_check(&cu, sizeof(cu.m), IPC_CONF_CHANGED), -1);
	/* a name as long as a field: longer than any sandbox's */
	memset(cu.m.names, 'a', IPC_NAME_LEN);
	cu.m.names[IPC_NAME_LEN] = '\0';
	cu.m.len = IPC_NAME_LEN + 1;
	assert_int_equal(reg_check(&cu, sizeof(cu.m) + IPC_NAME_LEN + 1,
	    IPC_CONF_CHANGED), -1);
	cu.m.names[IPC_NAME_LEN - 1] = '\0';
	cu.m.len = IPC_NAME_LEN;
	assert_int_equal(reg_check(&cu, sizeof(cu.m) + IPC_NAME_LEN,
	    IPC_CONF_CHANGED), 0);
	/* a control byte */
	cu.m.names[2] = '\n';
	assert_int_equal(reg_check(&cu, sizeof(cu.m) + IPC_NAME_LEN,
	    IPC_CONF_CHANGED), -1);
}

/* A grant's allow list: a generation, a sandbox, printable names. */
static void
conf_allow_shapes(void **state)
{
	static union {
		struct ipc_conf_allow m;
		char raw[IPC_MAX_PAYLOAD];
	} cu;
	const char names[] = "pypi.org\0*.github.com\0";
	size_t len = sizeof(cu.m) + sizeof(names) - 1;

	(void)state;
	memset(&cu, 0, sizeof(cu));
	cu.m.gen = 3;
	snprintf(cu.m.sandbox, sizeof(cu.m.sandbox), "dev");
	cu.m.len = sizeof(names) - 1;
	memcpy(cu.m.names, names, sizeof(names) - 1);
	assert_int_equal(reg_check(&cu, len, IPC_CONF_ALLOW), 0);
	assert_int_equal(reg_check(&cu, len - 1, IPC_CONF_ALLOW), -1);
	cu.m.gen = 0;
	assert_int_equal(reg_check(&cu, len, IPC_CONF_ALLOW), -1);
	cu.m.gen = 3;
	cu.m.sandbox[0] = '\0';
	assert_int_equal(reg_check(&cu, len, IPC_CONF_ALLOW), -1);
	cu.m.sandbox[0] = 'd';
	cu.m.names[0] = 0x7f;
	assert_int_equal(reg_check(&cu, len, IPC_CONF_ALLOW), -1);
	/* an empty list takes every name away */
	cu.m.len = 0;
	assert_int_equal(reg_check(&cu, sizeof(cu.m), IPC_CONF_ALLOW), 0);
}

/* The split-brain watch: a reply's facts, a probe's destination; exact
 * sizes, a known kind, zero padding. */
static void
ha_arp_shapes(void **state)
{
	struct ipc_ha_arp a = { .mac = { 2, 0, 0, 0, 0, 0x99 },
	    .ip = { 203, 0, 113, 100 }, .kind = IPC_HA_ARP_REPLY };
	struct ipc_ha_probe p = { .dst = { 0xff, 0xff, 0xff, 0xff, 0xff,
	    0xff } };

	(void)state;
	assert_int_equal(reg_check(&a, sizeof(a), IPC_HA_ARP), 0);
	a.kind = IPC_HA_ARP_OTHER;
	assert_int_equal(reg_check(&a, sizeof(a), IPC_HA_ARP), 0);
	assert_int_equal(reg_check(&a, sizeof(a) - 1, IPC_HA_ARP), -1);
	a.kind = 0;
	assert_int_equal(reg_check(&a, sizeof(a), IPC_HA_ARP), -1);
	a.kind = IPC_HA_ARP_KIND_MAX;
	assert_int_equal(reg_check(&a, sizeof(a), IPC_HA_ARP), -1);
	a.kind = IPC_HA_ARP_REPLY;
	a.pad = 1;
	assert_int_equal(reg_check(&a, sizeof(a), IPC_HA_ARP), -1);
	assert_int_equal(reg_check(&p, sizeof(p), IPC_HA_PROBE), 0);
	assert_int_equal(reg_check(&p, sizeof(p) + 0, IPC_HA_ARP), -1);
	assert_int_equal(reg_check(&p, sizeof(p) - 2, IPC_HA_PROBE), -1);
	p.pad[1] = 7;
	assert_int_equal(reg_check(&p, sizeof(p), IPC_HA_PROBE), -1);
}

/* The web console's requests: a login is the head alone; a control
 * request carries no credentials, descriptors or body (the parent knows
 * the session's user), and its words are the verb's; every string of
 * the head is terminated. */
static void
web_shapes(void **state)
{
	static union {
		struct ipc_web_req m;
		char raw[sizeof(struct ipc_web_req) + 64];
	} w;
	static const char words[] = "allow\0dev\0a.test";
	const size_t head = IPC_WEB_REQ_HEAD, full = sizeof(w.m) + sizeof(words);

	(void)state;
	memset(&w, 0, sizeof(w));
	w.m.kind = IPC_WEB_LOGIN;
	memset(w.m.token, 'a', 64);
	assert_int_equal(reg_check(&w, head, IPC_WEB_REQ), 0);
	assert_int_equal(reg_check(&w, head + 1, IPC_WEB_REQ), -1);
	assert_int_equal(reg_check(&w, head - 1, IPC_WEB_REQ), -1);
	memset(w.m.token, 'a', sizeof(w.m.token));	/* not terminated */
	assert_int_equal(reg_check(&w, head, IPC_WEB_REQ), -1);
	w.m.token[64] = '\0';
	w.m.kind = IPC_WEB_KIND_MAX;
	assert_int_equal(reg_check(&w, head, IPC_WEB_REQ), -1);
	w.m.kind = IPC_WEB_CTL;
	w.m.req.verb = CTL_ALLOW;
	w.m.req.argc = 3;
	memcpy(w.m.req.data, words, sizeof(words));
	assert_int_equal(reg_check(&w, full, IPC_WEB_REQ), 0);
	assert_int_equal(reg_check(&w, head, IPC_WEB_REQ), -1);
	w.m.req.uid = 1000;				/* credentials: no */
	assert_int_equal(reg_check(&w, full, IPC_WEB_REQ), -1);
	w.m.req.uid = 0;
	w.m.req.nfds = 1;				/* descriptors: no */
	assert_int_equal(reg_check(&w, full, IPC_WEB_REQ), -1);
	w.m.req.nfds = 0;
	w.m.req.verb = CTL_UNALLOW;			/* words not the verb's */
	assert_int_equal(reg_check(&w, full, IPC_WEB_REQ), -1);
	w.m.pad2[0] = 1;
	w.m.req.verb = CTL_ALLOW;
	assert_int_equal(reg_check(&w, full, IPC_WEB_REQ), -1);
}

/* A proxy's TLS counters: exactly the struct, a pid, kernel TLS 0 or 1,
 * and no more sides with kernel TLS than sides. */
static void
proxy_tls_shape(void **state)
{
	struct ipc_proxy_tls m;

	(void)state;
	memset(&m, 0, sizeof(m));
	m.resumed = 2;
	m.full = 1;
	m.conns = 6;
	m.ktls_send = m.ktls_recv = 6;
	m.ktls_kernel = 1;
	m.pid = 42;
	assert_int_equal(reg_check(&m, sizeof(m), IPC_PROXY_TLS), 0);
	assert_int_equal(reg_check(&m, sizeof(m) - 1, IPC_PROXY_TLS), -1);
	m.ktls_kernel = 2;
	assert_int_equal(reg_check(&m, sizeof(m), IPC_PROXY_TLS), -1);
	m.ktls_kernel = 0;
	m.ktls_send = 7;
	assert_int_equal(reg_check(&m, sizeof(m), IPC_PROXY_TLS), -1);
	m.ktls_send = 6;
	m.pid = 0;
	assert_int_equal(reg_check(&m, sizeof(m), IPC_PROXY_TLS), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(set_add_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(malformed_rejected, setup, teardown),
		cmocka_unit_test_setup_teardown(audit_shape, setup, teardown),
		cmocka_unit_test_setup_teardown(sign_shapes, setup, teardown),
		cmocka_unit_test_setup_teardown(dns_dropped_shape, setup, teardown),
		cmocka_unit_test_setup_teardown(budget_shapes, setup, teardown),
		cmocka_unit_test(reg_shapes),
		cmocka_unit_test(conf_shapes),
		cmocka_unit_test(conf_changed_shapes),
		cmocka_unit_test(conf_allow_shapes),
		cmocka_unit_test(ha_arp_shapes),
		cmocka_unit_test(web_shapes),
		cmocka_unit_test(proxy_tls_shape),
	};
	return cmocka_run_group_tests_name("ipc", tests, NULL, NULL);
}
