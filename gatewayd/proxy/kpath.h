/*
 * kpath.h -- a spliced tunnel carried by the kernel.
 *
 * gatewayd's parent loads a small BPF program and its two socket hashes
 * and gives each worker the maps' descriptors (--sockmap-fd,
 * --sockmap-peers-fd).  Once a tunnel
 * is decided and its first bytes are through, the worker pairs the two
 * sockets in the map; from then on the kernel hands each chunk one
 * socket receives to the other's send side, and the worker sees the
 * tunnel again only at its end.  What the kernel has not taken (bytes
 * that were already queued when the pair was made) the worker still
 * copies, and a direction's end is passed on (shutdown) only once every
 * byte before it has been handed over.
 *
 * The worker may only add sockets to the map and remove them (its system
 * call filter allows no other bpf() command); closing a socket removes
 * it, so a tunnel cut by policy stops with its sockets.
 *
 * The pair is made so that the kernel takes a socket's data only once it
 * knows where to send it (kpath_join): no byte is left to the worker
 * while newer ones go through.  kpath_overtaken still guards the order:
 * should the kernel ever leave bytes after it passed newer ones on, the
 * tunnel ends rather than scramble the stream.
 */
#ifndef MOAT_PROXY_KPATH_H
#define MOAT_PROXY_KPATH_H

#include <stdbool.h>
#include <stdint.h>

/* Take the map's descriptor; -1 (tunnels stay on splice) when the
 * kernel refuses this process the map.  Before the system call filter. */
int	kpath_init(int mapfd, int peersfd);
bool	kpath_on(void);

/* A direction's bookkeeping: what src had received and dst had been
 * given when the pair was made, so the end can tell that everything in
 * between went through. */
struct kpath_dir {
	int64_t		 base;
	bool		 fin;		/* src's end was a FIN */
	uint64_t	 w0;		/* dst's bytes written at the pair */
	uint64_t	 copied;	/* by the worker since */
};

/* Pair guest and upstream sockets.  0, or -1 with nothing left in the
 * map (the tunnel stays with splice). */
int	kpath_join(int gfd, int ufd, struct kpath_dir *gu, struct kpath_dir *ug);
/* The worker read n bytes the kernel left it (kpath_copied counts them);
 * kpath_overtaken, asked first, is true if dst already has bytes the
 * kernel handed over, which are newer. */
bool	kpath_overtaken(const struct kpath_dir *, int dstfd);
void	kpath_copied(struct kpath_dir *, size_t n);
/* Bytes of src's stream (ended by a FIN when fin) not yet given to dst:
 * 0 once the kernel has handed everything over. */
int64_t	kpath_pending(const struct kpath_dir *, int srcfd, int dstfd, bool fin);
/* The socket's peer has ended its stream, or the connection is gone. */
bool	kpath_peer_done(int fd);
/* What the socket has received from its peer and handed to its own
 * send queue: tcp_info's counters, for the tunnel's byte counts. */
uint64_t kpath_received(int fd);
uint64_t kpath_written(int fd);
uint64_t kpath_acked(int fd);
/* The socket holds bytes (or its FIN) not yet acknowledged. */
bool	kpath_unacked(int fd);

#endif
