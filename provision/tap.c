/*
 * tap.c -- a guest's tap: created with TUNSETIFF (never by running `ip`),
 * owned by the QEMU user, enslaved to the bridge with port isolation on by
 * rtnetlink.  The tap is not persistent: provision passes its descriptor to
 * QEMU, so it disappears when QEMU exits, whatever the way it exits.
 */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <linux/if_bridge.h>
#include <linux/if_link.h>
#include <linux/if_tun.h>
#include <linux/rtnetlink.h>

#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "provision.h"
#include "sysctl.h"

bool
iface_exists(const char *name)
{
	return if_nametoindex(name) != 0;
}

int
tap_open(const char *name, uid_t uid, gid_t gid)
{
	struct ifreq ifr;
	int fd;

	if (iface_exists(name)) {
		log_warnx("tap %s is busy: an interface of that name already "
		    "exists (is the guest running?)", name);
		return -1;
	}
	if ((fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC)) == -1) {
		log_warn("/dev/net/tun");
		return -1;
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	/* TUN_EXCL: fail rather than share a tap someone else made. */
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_TUN_EXCL;
	if (ioctl(fd, TUNSETIFF, &ifr) == -1) {
		if (errno == EBUSY)
			log_warnx("tap %s is busy", name);
		else
			log_warn("TUNSETIFF %s", name);
		close(fd);
		return -1;
	}
	if (ioctl(fd, TUNSETOWNER, (unsigned long)uid) == -1 ||
	    ioctl(fd, TUNSETGROUP, (unsigned long)gid) == -1) {
		log_warn("TUNSETOWNER %s", name);
		close(fd);
		return -1;
	}
	return fd;
}

/* One request, one acknowledgement. */
static int
nl_talk(struct nlmsghdr *nlh, const char *what)
{
	struct mnl_socket *nl;
	char buf[MNL_SOCKET_BUFFER_SIZE];
	unsigned int seq = (unsigned int)time(NULL), portid;
	ssize_t n;
	int rc = -1;

	if ((nl = mnl_socket_open(NETLINK_ROUTE)) == NULL) {
		log_warn("netlink");
		return -1;
	}
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) == -1) {
		log_warn("netlink bind");
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		log_warn("netlink send");
		goto out;
	}
	if ((n = mnl_socket_recvfrom(nl, buf, sizeof(buf))) < 0 ||
	    mnl_cb_run(buf, (size_t)n, seq, portid, NULL, NULL) < 0) {
		log_warn("%s", what);
		goto out;
	}
	rc = 0;
out:
	mnl_socket_close(nl);
	return rc;
}

static struct nlmsghdr *
link_msg(char *buf, int type, int family, unsigned int ifindex)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;

	nlh->nlmsg_type = (uint16_t)type;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = (unsigned char)family;
	ifi->ifi_index = (int)ifindex;
	return nlh;
}

/* IPv6 on a bridge port is never wanted: the gateway must not talk on it. */
static void
no_ipv6(const char *name)
{
	char p[96];

	snprintf(p, sizeof(p), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", name);
	(void)sysctl_write(p, 1);	/* no IPv6 here: nothing to turn off */
}

int
tap_attach(const char *name, const char *bridge)
{
	char buf[MNL_SOCKET_BUFFER_SIZE], what[96];
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	struct nlattr *nest;
	unsigned int tap = if_nametoindex(name), br = if_nametoindex(bridge);

	if (br == 0) {
		log_warnx("bridge %s does not exist in this network "
		    "namespace (is the gateway set up?)", bridge);
		return -1;
	}
	if (tap == 0) {
		log_warnx("tap %s vanished", name);
		return -1;
	}
	no_ipv6(name);
	nlh = link_msg(buf, RTM_NEWLINK, AF_UNSPEC, tap);
	mnl_attr_put_u32(nlh, IFLA_MASTER, br);
	snprintf(what, sizeof(what), "attach %s to bridge %s", name, bridge);
	if (nl_talk(nlh, what) == -1)
		return -1;
	/* Isolation before the port comes up: no frame ever crosses
	 * between guests, not even during start-up. */
	nlh = link_msg(buf, RTM_SETLINK, AF_BRIDGE, tap);
	nest = mnl_attr_nest_start(nlh, IFLA_PROTINFO | NLA_F_NESTED);
	mnl_attr_put_u8(nlh, IFLA_BRPORT_ISOLATED, 1);
	mnl_attr_nest_end(nlh, nest);
	snprintf(what, sizeof(what), "port isolation on %s", name);
	if (nl_talk(nlh, what) == -1)
		return -1;
	nlh = link_msg(buf, RTM_NEWLINK, AF_UNSPEC, tap);
	ifi = mnl_nlmsg_get_payload(nlh);
	ifi->ifi_flags = IFF_UP;
	ifi->ifi_change = IFF_UP;
	snprintf(what, sizeof(what), "set %s up", name);
	return nl_talk(nlh, what);
}

/* A tap of that name left by something else (a persistent one made by
 * hand, say) is deleted only if it really is a tun/tap device. */
int
tap_delete_stale(const char *name)
{
	char buf[MNL_SOCKET_BUFFER_SIZE], p[96];
	struct stat sb;
	unsigned int idx = if_nametoindex(name);

	if (idx == 0)
		return 0;
	snprintf(p, sizeof(p), "/sys/class/net/%s/tun_flags", name);
	if (stat(p, &sb) == -1) {
		log_warnx("%s exists but is not a tap; left alone", name);
		return -1;
	}
	return nl_talk(link_msg(buf, RTM_DELLINK, AF_UNSPEC, idx),
	    "delete tap");
}
