/*
 * ha_arp.c -- the ha-arp process: the split-brain watch's eyes on the
 * uplink (parent/ha_dup.c decides what they see means).
 *
 * Anyone on the uplink segment can send this box any ARP it likes, so the
 * frames are read here, in a child that holds nothing: the parent opens
 * and binds the packet socket (that needs CAP_NET_RAW), with a kernel
 * filter that takes only ARP replies for the shared uplink address, forks
 * this process and closes its own copy.  The child drops to moat-log,
 * narrows itself (SANDBOX_HA_ARP), sends the parent one typed IPC_HA_ARP
 * per reply ({sender MAC, sender address, whether it was addressed to
 * this box}) and sends the probes the parent asks for (IPC_HA_PROBE).
 * A flood is cut here: at most REPORTS_PER_S reports a second.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if_arp.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ev.h"
#include "ha_arp.h"
#include "ipc.h"
#include "log.h"
#include "parent.h"
#include "privdrop.h"
#include "sandbox.h"

#define REPORTS_PER_S	50

struct arp4 {			/* an Ethernet/IPv4 ARP packet */
	uint16_t	htype, ptype;
	uint8_t		hlen, plen;
	uint16_t	op;
	uint8_t		sha[6], spa[4], tha[6], tpa[4];
} __attribute__((packed));

int
ha_arp_parse(const void *buf, size_t len, const struct ha_arp_watch *w,
    struct ipc_ha_arp *out)
{
	struct arp4 a;

	if (len < sizeof(a))
		return -1;
	memcpy(&a, buf, sizeof(a));
	if (ntohs(a.htype) != ARPHRD_ETHER || ntohs(a.ptype) != ETH_P_IP ||
	    a.hlen != 6 || a.plen != 4 || ntohs(a.op) != ARPOP_REPLY ||
	    memcmp(a.spa, w->addr, 4) != 0)
		return -1;
	/* No box holds an address from a group or an empty address. */
	if ((a.sha[0] & 1) != 0 ||
	    memcmp(a.sha, "\0\0\0\0\0\0", 6) == 0)
		return -1;
	memset(out, 0, sizeof(*out));
	memcpy(out->mac, a.sha, 6);
	memcpy(out->ip, a.spa, 4);
	out->kind = memcmp(a.tha, w->mac, 6) == 0 ? IPC_HA_ARP_REPLY :
	    IPC_HA_ARP_OTHER;
	return 0;
}

/* ARP reply, Ethernet/IPv4, sender protocol address == addr. */
static int
attach_filter(int fd, const uint8_t addr[4])
{
	uint32_t spa;
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, sizeof(struct arp4), 0, 7),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),	/* htype, ptype */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x00010800, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4),	/* hlen plen op */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x06040002, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 14),	/* spa */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, sizeof(struct arp4)),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	memcpy(&spa, addr, 4);
	f[7].k = ntohl(spa);
	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
	    sizeof(prog));
}

int
ha_arp_socket(const struct ha_arp_watch *w)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
	    .sll_protocol = htons(ETH_P_ARP), .sll_ifindex = w->ifindex };
	int fd;

	/* Protocol 0 until the filter is on: nothing queued unfiltered. */
	fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1 || attach_filter(fd, w->addr) == -1 ||
	    bind(fd, (struct sockaddr *)&sll, sizeof(sll)) == -1) {
		log_warn("ha-arp: the uplink's packet socket");
		if (fd != -1)
			close(fd);
		return -1;
	}
	return fd;
}

/* An RFC 5227 probe (from 0.0.0.0: it changes nobody's ARP cache) of the
 * shared address, to dst.  Lost now and then is fine. */
static void
probe(int fd, const struct ha_arp_watch *w, const uint8_t dst[6])
{
	struct sockaddr_ll to = {
		.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ARP),
		.sll_ifindex = w->ifindex, .sll_halen = 6,
	};
	struct arp4 a = {
		.htype = htons(ARPHRD_ETHER), .ptype = htons(ETH_P_IP),
		.hlen = 6, .plen = 4, .op = htons(ARPOP_REQUEST),
	};

	memcpy(to.sll_addr, dst, 6);
	memcpy(a.sha, w->mac, 6);
	memcpy(a.tpa, w->addr, 4);
	(void)sendto(fd, &a, sizeof(a), MSG_DONTWAIT, (struct sockaddr *)&to,
	    sizeof(to));
}

/* The parent's messages: probes only.  Anything else, or its end
 * closed, ends this process. */
static void
from_parent(int fd, int ipc, const struct ha_arp_watch *w)
{
	static union {
		struct ipc_ha_probe m;
		char raw[IPC_MAX_PAYLOAD];
	} buf;
	struct ipc_hdr h;
	char err[128];
	ssize_t n;

	n = ipc_recv(ipc, &h, &buf, sizeof(buf), err, sizeof(err));
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n < 0 || (n == 0 && h.type == 0) || h.type != IPC_HA_PROBE)
		_exit(n == 0 ? 0 : 1);
	probe(fd, w, buf.m.dst);
}

static void
from_uplink(int fd, int ipc, const struct ha_arp_watch *w)
{
	static time_t second;
	static unsigned sent;
	uint8_t frame[64];
	struct ipc_ha_arp m;
	struct timespec ts;
	ssize_t n;

	while ((n = recv(fd, frame, sizeof(frame), 0)) >= 0) {
		if (ha_arp_parse(frame, (size_t)n, w, &m) == -1)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (ts.tv_sec != second) {
			second = ts.tv_sec;
			sent = 0;
		}
		if (sent++ >= REPORTS_PER_S)
			continue;
		/* A parent that is not reading loses reports, and this
		 * process never waits on it (nor it on this one). */
		if (ipc_send(ipc, IPC_HA_ARP, 0, &m, sizeof(m)) == -1 &&
		    errno != EAGAIN && errno != EWOULDBLOCK)
			_exit(1);
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		_exit(1);
}

/* What the loop's callbacks need: the process's own, set once. */
static struct {
	int				 fd, ipc;
	const struct ha_arp_watch	*w;
	struct ev			 fd_ev, ipc_ev;
} A;

static void
parent_ready(struct ev *e, uint32_t events)
{
	(void)e;
	(void)events;
	from_parent(A.fd, A.ipc, A.w);
}

static void
uplink_ready(struct ev *e, uint32_t events)
{
	(void)e;
	if (events & EPOLLIN)
		from_uplink(A.fd, A.ipc, A.w);
	else
		_exit(1);
}

void
ha_arp_child(int fd, int ipc, const struct ha_arp_watch *w, pid_t parent)
{
	A.fd = fd;
	A.ipc = ipc;
	A.w = w;
	/* The loop before the filter, which allows waiting on it but not
	 * making one. */
	if (fcntl(ipc, F_SETFL, O_NONBLOCK) == -1 || ev_init() == -1 ||
	    ev_add(&A.fd_ev, fd, EPOLLIN, uplink_ready, NULL) == -1 ||
	    ev_add(&A.ipc_ev, ipc, EPOLLIN, parent_ready, NULL) == -1 ||
	    (privdrop("moat-log") == -1 && privdrop("nobody") == -1))
		_exit(1);
	die_with_parent(parent);
	if (sandbox_narrow(SANDBOX_HA_ARP) == -1)
		_exit(1);
	for (;;)
		if (ev_run_once(-1) == -1)
			_exit(1);
}
