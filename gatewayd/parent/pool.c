/*
 * parent/pool.c -- the proxy's workers share its port, one listening
 * socket each, and every connection from one guest address reaches the
 * same worker.
 *
 * The parent binds gateway.proxy.workers sockets with SO_REUSEPORT on
 * the gateway's address and proxy port; worker i is always handed
 * socket i, across its restarts and reloads.  A classic BPF program on
 * the group picks the socket: (IPv4 source address) % workers.  So a
 * sandbox's connections all land on one worker, whose per-sandbox limit
 * (gateway.proxy.per_sandbox) is then exact for the whole pool.
 *
 * With gateway.ipv6 a second group listens on the gateway's IPv6 address
 * (freebind: the address may reach the bridge later).  A guest's IPv6
 * address ends in the host part of its IPv4 one, so its program takes
 * the last 32 bits of the IPv6 source, puts the network's bits back and
 * lands each sandbox on the same worker over both families.
 *
 * What the kernel does with it (net/core/sock_reuseport.c): the program
 * runs on the SYN (and on a syncookie's ACK) with the packet's data
 * pulled past the TCP header, so the IP header is reached only through
 * SKF_NET_OFF; its result indexes the group's sockets in the order they
 * started listening, and a result past the last falls back to the
 * kernel's hash.  The parent therefore listens in worker order and never
 * closes a socket while it runs (a closed member would be replaced by the
 * last one, reordering the group); when a reload lowers the number of
 * workers, the sockets past it stay open and unused.  A failed load in
 * the program returns 0: the first worker, never a socket without one.
 *
 * Connections queued on a worker's socket when it dies stay queued: the
 * parent holds the socket, and the worker started in its place accepts
 * them.
 */
#include <sys/socket.h>

#include <linux/filter.h>
#include <netinet/in.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "gw.h"
#include "proxy.h"
#include "nftrules.h"
#include "privdrop.h"
#include "log.h"

/* The offset of the IPv4 source address from the network header, and
 * of the last 32 bits of the IPv6 source address. */
#define IP_SADDR_OFF	12
#define IP6_SADDR_LOW_OFF	20

static int
steer(int fd, unsigned n, uint32_t off, uint32_t net)
{
	struct sock_filter code[] = {
		/* A = the IPv4 source address (host order), or the IPv6
		 * source's last 32 bits with the IPv4 network's put back */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)SKF_NET_OFF + off),
		BPF_STMT(BPF_ALU | BPF_OR | BPF_K, net),
		BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, n),
		BPF_STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_fprog prog = { sizeof(code) / sizeof(code[0]), code };

	if (n == 0)
		return -1;
	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog,
	    sizeof(prog));
}

int
pool_steer(int fd, unsigned n)
{
	return steer(fd, n, IP_SADDR_OFF, 0);
}

int
pool_steer6(int fd, unsigned n, const struct moat_addr *net4)
{
	uint32_t net;

	memcpy(&net, net4->a, 4);
	return steer(fd, n, IP6_SADDR_LOW_OFF, ntohl(net));
}

/* One member of the group: bound, steered if it is the first, listening.
 * net4: for an IPv6 group, the IPv4 network its steering puts back. */
static int
member(const struct moat_addr *a, uint16_t port, unsigned i, unsigned n,
    bool freebind, const struct moat_addr *net4)
{
	struct sockaddr_storage ss;
	socklen_t sl = addr_to_sockaddr(a, port, &ss);
	bool v6 = a->family == AF_INET6;
	int fd, one = 1;

	/* Made as the proxy's user: the policy lets only that uid answer
	 * guests from the proxy's port (svcreply). */
	if ((fd = socket_as(NFTR_PROXY_USER, a->family, SOCK_STREAM |
	    SOCK_CLOEXEC)) == -1)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == -1 ||
	    (v6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
	    sizeof(one)) == -1) ||
	    (v6 && setsockopt(fd, IPPROTO_IPV6, IPV6_FREEBIND, &one,
	    sizeof(one)) == -1) ||
	    (freebind && !v6 && setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one,
	    sizeof(one)) == -1) ||
	    bind(fd, (struct sockaddr *)&ss, sl) == -1 ||
	    /* the group has its program before it takes a connection */
	    (i == 0 && (v6 ? pool_steer6(fd, n, net4) :
	    pool_steer(fd, n)) == -1) ||
	    listen(fd, 1024) == -1) {
		log_warn("proxy: socket %u on port %u", i, port);
		close(fd);
		return -1;
	}
	return fd;
}

int
pool_socket(const struct moat_addr *a, uint16_t port, unsigned i, unsigned n,
    bool freebind)
{
	return member(a, port, i, n, freebind, NULL);
}

/* Sockets 0 .. workers-1 of one group, made in order, and the group
 * steered over exactly that many. */
static int
group(const struct moat_gateway *c, unsigned n, struct pool_group *g,
    const struct moat_addr *a)
{
	const struct moat_addr *net4 = &c->network.addr;
	unsigned i;
	int fd;

	if (g->n == 0)
		g->addr = *a;
	for (i = g->n; i < n; i++) {
		/* In a pair keepalived puts the address on the master
		 * only: the backup's proxy is ready for it. */
		fd = member(a, c->proxy_port, i, n, c->ha,
		    net4);
		if (fd == -1)
			return -1;
		g->fds[i] = fd;
		g->n = i + 1;
		if (i == 0)
			g->steer = n;
	}
	if (g->steer != n) {
		if ((a->family == AF_INET6 ? pool_steer6(g->fds[0], n, net4) :
		    pool_steer(g->fds[0], n)) == -1) {
			log_warn("proxy: steering over %u workers", n);
			return -1;
		}
		g->steer = n;
	}
	return 0;
}

static void
group_close(struct pool_group *g)
{
	unsigned i;

	for (i = 0; i < g->n; i++)
		close(g->fds[i]);
	g->n = g->steer = 0;
}

int
pool_sockets(const struct moat_gateway *c, unsigned n, struct pool_group *v4,
    struct pool_group *v6)
{
	if (group(c, n, v4, &c->address) == -1)
		return -1;
	/* A reload that turns gateway.ipv6 off, or moves its network, ends
	 * the IPv6 group: workers started from now on get the new one, or
	 * none (the draining ones have closed theirs). */
	if (v6->n > 0 && (!c->ipv6 || addr_cmp(&v6->addr, &c->ipv6_address) != 0))
		group_close(v6);
	if (c->ipv6 && group(c, n, v6, &c->ipv6_address) == -1)
		return -1;
	return 0;
}

void
pool_close(struct pool_group *v4, struct pool_group *v6)
{
	group_close(v4);
	group_close(v6);
}
