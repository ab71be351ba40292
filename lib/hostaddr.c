/*
 * hostaddr.c -- the host's addresses over rtnetlink (see hostaddr.h).
 */
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmnl/libmnl.h>

#include "hostaddr.h"
#include "log.h"

struct hostaddr {
	struct mnl_socket *nl;
	uint32_t	 seq;
};

static int
dump(struct hostaddr *ha)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifaddrmsg *ifa;

	nlh->nlmsg_type = RTM_GETADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	nlh->nlmsg_seq = ++ha->seq;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = AF_UNSPEC;
	return mnl_socket_sendto(ha->nl, nlh, nlh->nlmsg_len) < 0 ? -1 : 0;
}

struct hostaddr *
hostaddr_open(void)
{
	struct hostaddr *ha = xcalloc(1, sizeof(*ha));

	ha->seq = (uint32_t)time(NULL);
	if ((ha->nl = mnl_socket_open2(NETLINK_ROUTE,
	    SOCK_NONBLOCK | SOCK_CLOEXEC)) == NULL ||
	    mnl_socket_bind(ha->nl, RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
	    MNL_SOCKET_AUTOPID) < 0 || dump(ha) < 0) {
		hostaddr_close(ha);
		return NULL;
	}
	return ha;
}

int
hostaddr_fd(const struct hostaddr *ha)
{
	return mnl_socket_get_fd(ha->nl);
}

/* IFA_LOCAL is the address itself on point-to-point links, where
 * IFA_ADDRESS is the peer's; elsewhere the two are the same. */
static int
attr_cb(const struct nlattr *a, void *data)
{
	const struct nlattr **tb = data;
	uint16_t t = mnl_attr_get_type(a);

	if ((t == IFA_ADDRESS || t == IFA_LOCAL) &&
	    (mnl_attr_get_payload_len(a) == 4 ||
	    mnl_attr_get_payload_len(a) == 16))
		tb[t] = a;
	return MNL_CB_OK;
}

static int
msg_cb(const struct nlmsghdr *nlh, void *data)
{
	struct admit_host *h = data;
	const struct nlattr *tb[IFA_MAX + 1] = { NULL };
	const struct ifaddrmsg *ifa;
	const struct nlattr *a;
	struct moat_addr m;
	size_t len;

	if (nlh->nlmsg_type != RTM_NEWADDR && nlh->nlmsg_type != RTM_DELADDR)
		return MNL_CB_OK;
	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*ifa)))
		return MNL_CB_OK;
	ifa = mnl_nlmsg_get_payload(nlh);
	if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6)
		return MNL_CB_OK;
	mnl_attr_parse(nlh, sizeof(*ifa), attr_cb, tb);
	a = tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS];
	if (a == NULL)
		return MNL_CB_OK;
	len = mnl_attr_get_payload_len(a);
	if (len != (ifa->ifa_family == AF_INET ? 4u : 16u))
		return MNL_CB_OK;
	memset(&m, 0, sizeof(m));
	m.family = ifa->ifa_family;
	memcpy(m.a, mnl_attr_get_payload(a), len);
	/* An IPv6 network of the host's (a LAN's global prefix) is no more
	 * the internet than the host is: kept with its length. */
	if (nlh->nlmsg_type == RTM_NEWADDR)
		admit_host_add_net(h, &m, m.family == AF_INET6 ?
		    ifa->ifa_prefixlen : 32);
	else
		admit_host_del(h, &m);
	return MNL_CB_OK;
}

void
hostaddr_msg(const void *buf, size_t len, struct admit_host *h)
{
	/* seq and portid 0: notifications and dump parts alike. */
	(void)mnl_cb_run(buf, len, 0, 0, msg_cb, h);
}

int
hostaddr_read(struct hostaddr *ha, struct admit_host *h)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	ssize_t n;

	for (;;) {
		n = mnl_socket_recvfrom(ha->nl, buf, sizeof(buf));
		if (n > 0) {
			hostaddr_msg(buf, (size_t)n, h);
			continue;
		}
		if (n < 0 && errno == ENOBUFS) {
			/* Notifications were lost: start again from a dump
			 * (additions are idempotent; a lost deletion only
			 * keeps refusing an address). */
			if (dump(ha) < 0)
				return -1;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		return n == 0 ? 0 : -1;
	}
}

void
hostaddr_close(struct hostaddr *ha)
{
	if (ha == NULL)
		return;
	if (ha->nl != NULL)
		mnl_socket_close(ha->nl);
	free(ha);
}
