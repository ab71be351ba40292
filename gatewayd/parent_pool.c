/*
 * parent_pool.c -- the proxy's workers share its port, one listening
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

#include "gatewayd.h"
#include "nftrules.h"
#include "privdrop.h"
#include "log.h"

/* The offset of the IPv4 source address from the network header. */
#define IP_SADDR_OFF	12

int
pool_steer(int fd, unsigned n)
{
	struct sock_filter code[] = {
		/* A = the IPv4 source address (host order) */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)SKF_NET_OFF +
		    IP_SADDR_OFF),
		BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, n),
		BPF_STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_fprog prog = { sizeof(code) / sizeof(code[0]), code };

	if (n == 0)
		return -1;
	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog,
	    sizeof(prog));
}

/* One member of the group: bound, steered if it is the first, listening. */
int
pool_socket(const struct moat_addr *a, uint16_t port, unsigned i, unsigned n,
    bool freebind)
{
	struct sockaddr_storage ss;
	socklen_t sl = addr_to_sockaddr(a, port, &ss);
	int fd, one = 1;

	/* Made as the proxy's user: the policy lets only that uid answer
	 * guests from the proxy's port (svcreply). */
	if ((fd = socket_as(NFTR_PROXY_USER, AF_INET, SOCK_STREAM |
	    SOCK_CLOEXEC)) == -1)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == -1 ||
	    (freebind && setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one,
	    sizeof(one)) == -1) ||
	    bind(fd, (struct sockaddr *)&ss, sl) == -1 ||
	    /* the group has its program before it takes a connection */
	    (i == 0 && pool_steer(fd, n) == -1) ||
	    listen(fd, 1024) == -1) {
		log_warn("proxy: socket %u on port %u", i, port);
		close(fd);
		return -1;
	}
	return fd;
}

/* Sockets 0 .. workers-1, made in order, and the group steered over
 * exactly that many. */
int
pool_sockets(struct gw *gw)
{
	unsigned n = gw->nworkers, i;
	int fd;

	for (i = gw->nproxy_fds; i < n; i++) {
		/* In a pair keepalived puts the address on the master
		 * only: the backup's proxy is ready for it. */
		fd = pool_socket(&gw->cfg->gw.address, gw->cfg->gw.proxy_port,
		    i, n, gw->cfg->gw.ha);
		if (fd == -1)
			return -1;
		gw->proxy_fds[i] = fd;
		gw->nproxy_fds = i + 1;
		if (i == 0)
			gw->proxy_steer = n;
	}
	if (gw->proxy_steer != n) {
		if (pool_steer(gw->proxy_fds[0], n) == -1) {
			log_warn("proxy: steering over %u workers", n);
			return -1;
		}
		gw->proxy_steer = n;
	}
	return 0;
}

void
pool_close(struct gw *gw)
{
	unsigned i;

	for (i = 0; i < gw->nproxy_fds; i++)
		close(gw->proxy_fds[i]);
	gw->nproxy_fds = 0;
}
