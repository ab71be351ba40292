/*
 * parent_sockmap.h -- the kernel's half of spliced tunnels, loaded by the
 * root parent (parent_sockmap.c).
 *
 * The parent loads one small BPF program (a stream verdict that sends
 * each chunk a socket receives to the socket paired with it) and attaches
 * it to one socket hash, with `--tunnels auto`; a second one says where
 * each socket's data goes.  Proxy workers get the two maps' descriptors
 * and nothing else: they pair a tunnel's two sockets in them once the
 * policy has decided, and the kernel moves the bytes from then on.  By default (`--tunnels splice`), or where the kernel cannot,
 * tunnels go through splice(2) in the proxy.
 */
#ifndef GATEWAYD_PARENT_SOCKMAP_H
#define GATEWAYD_PARENT_SOCKMAP_H

#include <stdbool.h>
#include <stdio.h>

/* --tunnels: "auto" (the kernel where it can) or "splice" (the
 * default).  0, or -1 for another word. */
int		 sockmap_choose(const char *how);
/* The map's descriptor for a proxy worker, loading the program the first
 * time; -1 when tunnels use splice (the reason is in sockmap_why()). */
int		 sockmap_fd(void);
/* The map of where each socket's data goes (the program's redirect
 * target); -1 as sockmap_fd. */
int		 sockmap_peers_fd(void);
/* "sockmap" or "splice", and why (for sockmap: the program's size as
 * the verifier accepted it), for ctl status and the metrics. */
const char	*sockmap_path(void);
const char	*sockmap_why(void);
void		 sockmap_metrics(FILE *);

#endif
