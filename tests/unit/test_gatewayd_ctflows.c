/*
 * test_gatewayd_ctflows.c -- the parent's list of conntrack entries
 * (gatewayd/parent/ctflows.c): built from the kernel's new and destroy
 * events, one entry per original tuple whatever the nested flag says,
 * both families, and nothing from a malformed or foreign message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "../../gatewayd/parent/ctflows.h"

static char buf[8192];
static uint8_t proto = IPPROTO_TCP;	/* of the events made */

/* One event message: type new or delete, a tuple src -> dst:dport. */
static size_t
event(char *at, uint8_t msg, int family, const char *src, const char *dst,
    uint16_t sport, uint16_t dport, bool nested_flag)
{
	struct nlmsghdr *nlh;
	struct nfgenmsg *nfg;
	struct nlattr *t, *ip, *pr;
	uint8_t a[16];

	/* The kernel's padding is zeroes; a reused buffer's would not be. */
	memset(at, 0, 512);
	nlh = mnl_nlmsg_put_header(at);
	nlh->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | msg;
	nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
	nfg->nfgen_family = (uint8_t)family;
	t = mnl_attr_nest_start(nlh, CTA_TUPLE_ORIG);
	ip = mnl_attr_nest_start(nlh, CTA_TUPLE_IP);
	inet_pton(family, src, a);
	mnl_attr_put(nlh, family == AF_INET ? CTA_IP_V4_SRC : CTA_IP_V6_SRC,
	    family == AF_INET ? 4 : 16, a);
	inet_pton(family, dst, a);
	mnl_attr_put(nlh, family == AF_INET ? CTA_IP_V4_DST : CTA_IP_V6_DST,
	    family == AF_INET ? 4 : 16, a);
	mnl_attr_nest_end(nlh, ip);
	pr = mnl_attr_nest_start(nlh, CTA_TUPLE_PROTO);
	mnl_attr_put_u8(nlh, CTA_PROTO_NUM, proto);
	mnl_attr_put_u16(nlh, CTA_PROTO_SRC_PORT, htons(sport));
	mnl_attr_put_u16(nlh, CTA_PROTO_DST_PORT, htons(dport));
	mnl_attr_nest_end(nlh, pr);
	mnl_attr_nest_end(nlh, t);
	if (!nested_flag)
		t->nla_type &= ~NLA_F_NESTED;
	mnl_attr_put_u32(nlh, CTA_STATUS, htonl(8));
	return nlh->nlmsg_len;
}

struct seen {
	int	n, v4, v6;
};

static void
count(const struct nlattr *tuple, uint8_t family, void *arg)
{
	struct seen *s = arg;

	assert_int_equal(mnl_attr_get_type(tuple), CTA_TUPLE_ORIG);
	s->n++;
	if (family == AF_INET)
		s->v4++;
	if (family == AF_INET6)
		s->v6++;
}

static void
test_new_and_destroyed(void **state)
{
	struct seen s = { 0, 0, 0 };
	size_t len;

	(void)state;
	ctflows_free();
	/* Two messages in one read, as the kernel batches them. */
	len = event(buf, IPCTNL_MSG_CT_NEW, AF_INET, "10.77.0.10",
	    "203.0.113.5", 40000, 443, true);
	len += event(buf + len, IPCTNL_MSG_CT_NEW, AF_INET6,
	    "2001:db8:77::10", "2001:db8:1::5", 40001, 443, true);
	ctflows_events(buf, len);
	assert_int_equal(ctflows_count(), 2);
	ctflows_each(count, &s);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.v4, 1);
	assert_int_equal(s.v6, 1);
	/* The same flow again (an event and a dump both saw it): one. */
	len = event(buf, IPCTNL_MSG_CT_NEW, AF_INET, "10.77.0.10",
	    "203.0.113.5", 40000, 443, false);
	ctflows_events(buf, len);
	assert_int_equal(ctflows_count(), 2);
	/* Its end, and the end of one never seen. */
	len = event(buf, IPCTNL_MSG_CT_DELETE, AF_INET, "10.77.0.10",
	    "203.0.113.5", 40000, 443, true);
	len += event(buf + len, IPCTNL_MSG_CT_DELETE, AF_INET, "10.77.0.10",
	    "203.0.113.5", 40002, 443, true);
	ctflows_events(buf, len);
	assert_int_equal(ctflows_count(), 1);
	ctflows_free();
	assert_int_equal(ctflows_count(), 0);
}

/* The TCP state the kernel adds to an event (its protocol information). */
static size_t
with_state(char *at, uint8_t st)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)at;
	struct nlattr *pi, *tcp;

	pi = mnl_attr_nest_start(nlh, CTA_PROTOINFO);
	tcp = mnl_attr_nest_start(nlh, CTA_PROTOINFO_TCP);
	mnl_attr_put_u8(nlh, CTA_PROTOINFO_TCP_STATE, st);
	mnl_attr_nest_end(nlh, tcp);
	mnl_attr_nest_end(nlh, pi);
	return nlh->nlmsg_len;
}

static void
test_live(void **state)
{
	struct seen s = { 0, 0, 0 };
	size_t len, off;

	(void)state;
	ctflows_free();
	/* A SYN, and a connection found established (a dump's view). */
	len = event(buf, IPCTNL_MSG_CT_NEW, AF_INET, "10.77.0.10",
	    "203.0.113.5", 40000, 443, true);
	len = with_state(buf, 1);			/* SYN_SENT */
	off = len;
	(void)event(buf + off, IPCTNL_MSG_CT_NEW, AF_INET6,
	    "2001:db8:77::10", "2001:db8:1::5", 40001, 443, true);
	len = off + with_state(buf + off, 3);		/* ESTABLISHED */
	ctflows_events(buf, len);
	assert_int_equal(ctflows_count(), 2);
	assert_int_equal(ctflows_count_live(), 2);
	/* A change without the TCP state (its status): still live. */
	len = event(buf, IPCTNL_MSG_CT_NEW, AF_INET, "10.77.0.10",
	    "203.0.113.5", 40000, 443, true);
	ctflows_events(buf, len);
	assert_int_equal(ctflows_count_live(), 2);
	/* Established, then closing (FIN_WAIT), then TIME_WAIT. */
	len = with_state(buf, 3);
	ctflows_events(buf, len);
	assert_int_equal(ctflows_count_live(), 2);
	len = event(buf, IPCTNL_MSG_CT_NEW, AF_INET, "10.77.0.10",
	    "203.0.113.5", 40000, 443, true);
	len = with_state(buf, 4);
	ctflows_events(buf, len);
	assert_int_equal(ctflows_count(), 2);
	assert_int_equal(ctflows_count_live(), 1);
	ctflows_each_live(count, &s);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.v6, 1);
	len = event(buf, IPCTNL_MSG_CT_NEW, AF_INET, "10.77.0.10",
	    "203.0.113.5", 40000, 443, true);
	len = with_state(buf, 7);
	ctflows_events(buf, len);
	assert_int_equal(ctflows_count_live(), 1);
	/* A UDP flow is live while tracked; an end takes a live one. */
	proto = IPPROTO_UDP;
	len = event(buf, IPCTNL_MSG_CT_NEW, AF_INET, "10.77.0.10",
	    "203.0.113.5", 40002, 443, true);
	ctflows_events(buf, len);
	assert_int_equal(ctflows_count_live(), 2);
	assert_int_equal(ctflows_count(), 3);
	len = event(buf, IPCTNL_MSG_CT_DELETE, AF_INET, "10.77.0.10",
	    "203.0.113.5", 40002, 443, true);
	ctflows_events(buf, len);
	proto = IPPROTO_TCP;
	assert_int_equal(ctflows_count_live(), 1);
	len = event(buf, IPCTNL_MSG_CT_DELETE, AF_INET6, "2001:db8:77::10",
	    "2001:db8:1::5", 40001, 443, true);
	ctflows_events(buf, len);
	assert_int_equal(ctflows_count(), 1);
	assert_int_equal(ctflows_count_live(), 0);
	ctflows_free();
	assert_int_equal(ctflows_count_live(), 0);
}

static void
test_many_grow(void **state)
{
	char ip[32];
	size_t len;
	int i;

	(void)state;
	ctflows_free();
	for (i = 0; i < 3000; i++) {
		snprintf(ip, sizeof(ip), "10.77.%d.%d", i / 250, i % 250 + 1);
		len = event(buf, IPCTNL_MSG_CT_NEW, AF_INET, ip, "203.0.113.5",
		    (uint16_t)(1024 + i), 80, true);
		ctflows_events(buf, len);
	}
	assert_int_equal(ctflows_count(), 3000);
	for (i = 0; i < 3000; i += 2) {
		snprintf(ip, sizeof(ip), "10.77.%d.%d", i / 250, i % 250 + 1);
		len = event(buf, IPCTNL_MSG_CT_DELETE, AF_INET, ip,
		    "203.0.113.5", (uint16_t)(1024 + i), 80, true);
		ctflows_events(buf, len);
	}
	assert_int_equal(ctflows_count(), 1500);
	ctflows_free();
}

static void
test_malformed_and_foreign(void **state)
{
	struct nlmsghdr *nlh;
	size_t len, cut;

	(void)state;
	ctflows_free();
	len = event(buf, IPCTNL_MSG_CT_NEW, AF_INET, "10.77.0.10",
	    "203.0.113.5", 40000, 443, true);
	/* Every truncation: nothing read past the end, nothing taken. */
	for (cut = 0; cut < len; cut++)
		ctflows_events(buf, cut);
	assert_int_equal(ctflows_count(), 0);
	/* Another subsystem's message. */
	nlh = (struct nlmsghdr *)buf;
	nlh->nlmsg_type = (NFNL_SUBSYS_QUEUE << 8) | IPCTNL_MSG_CT_NEW;
	ctflows_events(buf, len);
	assert_int_equal(ctflows_count(), 0);
	/* A message whose only attribute claims more than it has. */
	len = event(buf, IPCTNL_MSG_CT_NEW, AF_INET, "10.77.0.10",
	    "203.0.113.5", 40000, 443, true);
	((struct nlattr *)((char *)buf + MNL_NLMSG_HDRLEN +
	    MNL_ALIGN(sizeof(struct nfgenmsg))))->nla_len = 4000;
	ctflows_events(buf, len);
	assert_int_equal(ctflows_count(), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_and_destroyed),
		cmocka_unit_test(test_live),
		cmocka_unit_test(test_many_grow),
		cmocka_unit_test(test_malformed_and_foreign),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
