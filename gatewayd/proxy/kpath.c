/*
 * kpath.c -- pair a tunnel's sockets in the kernel's socket hash
 * (kpath.h).
 */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <linux/tcp.h>
#include <netinet/in.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "kpath.h"
#include "log.h"

static int mapfd = -1, peersfd = -1;

static int
map_cmd(int map, int cmd, uint64_t key, int fd)
{
	union bpf_attr a;
	uint32_t v = (uint32_t)fd;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)map;
	a.key = (uint64_t)(uintptr_t)&key;
	if (cmd == BPF_MAP_UPDATE_ELEM) {
		a.value = (uint64_t)(uintptr_t)&v;
		a.flags = BPF_NOEXIST;
	}
	return (int)syscall(SYS_bpf, cmd, &a, sizeof(a));
}

int
kpath_init(int fd, int pfd)
{
	/* No key is 0 (socket cookies start at 1): ENOENT says the kernel
	 * lets this process use the map, EPERM that it does not. */
	if (map_cmd(fd, BPF_MAP_DELETE_ELEM, 0, -1) == 0 || errno != ENOENT ||
	    map_cmd(pfd, BPF_MAP_DELETE_ELEM, 0, -1) == 0 || errno != ENOENT) {
		log_warn("tunnels through splice(2): the socket map");
		close(fd);
		close(pfd);
		return -1;
	}
	mapfd = fd;
	peersfd = pfd;
	return 0;
}

bool
kpath_on(void)
{
	return mapfd >= 0;
}

static int
cookie(int fd, uint64_t *c)
{
	socklen_t len = sizeof(*c);

	return getsockopt(fd, SOL_SOCKET, SO_COOKIE, c, &len);
}

static int
tcpinfo(int fd, struct tcp_info *ti)
{
	socklen_t len = sizeof(*ti);

	memset(ti, 0, sizeof(*ti));
	return getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &len);
}

uint64_t
kpath_received(int fd)
{
	struct tcp_info ti;

	return tcpinfo(fd, &ti) == 0 ? ti.tcpi_bytes_received : 0;
}

/* Sent for the first time, plus queued and not sent yet. */
uint64_t
kpath_written(int fd)
{
	struct tcp_info ti;

	if (tcpinfo(fd, &ti) != 0)
		return 0;
	return ti.tcpi_bytes_sent - ti.tcpi_bytes_retrans +
	    ti.tcpi_notsent_bytes;
}

uint64_t
kpath_acked(int fd)
{
	struct tcp_info ti;

	return tcpinfo(fd, &ti) == 0 ? ti.tcpi_bytes_acked : 0;
}

bool
kpath_unacked(int fd)
{
	struct tcp_info ti;

	if (tcpinfo(fd, &ti) != 0)
		return false;
	return ti.tcpi_unacked > 0 || ti.tcpi_notsent_bytes > 0;
}

/* What src received before now and will not go to dst (a request head
 * the proxy answered itself), less what dst was given that did not come
 * from src (the proxy's own answer): both ends' counters, less what
 * src still holds unread, which will go through.  Read until src's
 * counter holds still around the reading of its queue. */
static int
base_of(int src, int dst, struct kpath_dir *d)
{
	uint64_t r0, r1;
	int inq, tries;

	for (tries = 0; tries < 8; tries++) {
		r0 = kpath_received(src);
		if (ioctl(src, FIONREAD, &inq) == -1)
			return -1;
		r1 = kpath_received(src);
		if (r0 == r1) {
			d->w0 = kpath_written(dst);
			d->copied = 0;
			d->base = (int64_t)r0 - inq - (int64_t)d->w0;
			return 0;
		}
	}
	return -1;
}

int
kpath_join(int gfd, int ufd, struct kpath_dir *gu, struct kpath_dir *ug)
{
	uint64_t cg, cu;
	int one = 1;

	gu->fin = ug->fin = false;
	if (mapfd < 0 || cookie(gfd, &cg) == -1 || cookie(ufd, &cu) == -1 ||
	    base_of(gfd, ufd, gu) == -1 || base_of(ufd, gfd, ug) == -1)
		return -1;
	/* First where each socket's data goes: each under its peer's
	 * cookie, in the map the program looks up and no program runs on.
	 * Only then the sockets whose data the program takes, each under
	 * its own cookie: from the moment a socket is there the kernel
	 * hands its data to the peer, which it already knows, so none is
	 * ever left to the worker while newer bytes go through.  Until
	 * then its bytes wait in its own queue, which the worker does not
	 * read meanwhile. */
	if (map_cmd(peersfd, BPF_MAP_UPDATE_ELEM, cg, ufd) == -1)
		goto fail;
	if (map_cmd(peersfd, BPF_MAP_UPDATE_ELEM, cu, gfd) == -1)
		goto fail;
	if (map_cmd(mapfd, BPF_MAP_UPDATE_ELEM, cg, gfd) == -1)
		goto fail;
	if (map_cmd(mapfd, BPF_MAP_UPDATE_ELEM, cu, ufd) == -1)
		goto fail;
	/* Bytes that arrived after the worker's last read and before the
	 * pair are queued where the program has not seen them; setting the
	 * low-water mark makes the kernel offer the queue to the program
	 * now, in order, instead of leaving it for the worker to copy while
	 * newer bytes already go through the kernel. */
	(void)setsockopt(ufd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one));
	(void)setsockopt(gfd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one));
	return 0;
fail:
	/* The maps are as large as each other and a tunnel takes two
	 * entries in each: a full map fails before the program takes any
	 * socket's data, and what was added comes out again untouched. */
	log_debug("socket map: %s", strerror(errno));
	(void)map_cmd(mapfd, BPF_MAP_DELETE_ELEM, cu, -1);
	(void)map_cmd(mapfd, BPF_MAP_DELETE_ELEM, cg, -1);
	(void)map_cmd(peersfd, BPF_MAP_DELETE_ELEM, cu, -1);
	(void)map_cmd(peersfd, BPF_MAP_DELETE_ELEM, cg, -1);
	return -1;
}

int64_t
kpath_pending(const struct kpath_dir *d, int srcfd, int dstfd, bool fin)
{
	int64_t left;

	left = (int64_t)kpath_received(srcfd) - (fin ? 1 : 0) -
	    (int64_t)kpath_written(dstfd) - d->base;
	return left > 0 ? left : 0;
}

bool
kpath_peer_done(int fd)
{
	struct tcp_info ti;

	if (tcpinfo(fd, &ti) != 0)
		return true;
	switch (ti.tcpi_state) {
	case BPF_TCP_ESTABLISHED:
	case BPF_TCP_FIN_WAIT1:
	case BPF_TCP_FIN_WAIT2:
		return false;
	default:
		return true;
	}
}

bool
kpath_overtaken(const struct kpath_dir *d, int dstfd)
{
	return kpath_written(dstfd) > d->w0 + d->copied;
}

void
kpath_copied(struct kpath_dir *d, size_t n)
{
	d->copied += n;
}
