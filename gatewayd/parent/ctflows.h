/*
 * ctflows.h -- the parent's own list of the conntrack entries in
 * its network namespace, kept from the kernel's conntrack events, so
 * that cutting the flows a commit refuses does not walk the kernel's
 * whole conntrack table.
 *
 * The kernel's table is one hash shared by every namespace on the host
 * (262,144 buckets on a machine of a few GB), and a dump walks all of
 * it, taking a lock per bucket, however few entries belong here: 12 to
 * 30 ms on a 2-core machine with none at all.  Here, the parent listens
 * to new and destroyed entries instead and keeps each one's original
 * tuple (both families).  A commit then judges the entries it knows
 * and deletes those refused, by tuple.  Each entry also says whether
 * its flow is live (a TCP connection being set up or established, any
 * other flow while the kernel keeps it), from the kernel's change
 * events, for the count of each sandbox's live connections.
 *
 * The list is trusted only while no event was lost: when the socket
 * overflowed (ENOBUFS), or before the first full dump, ctflows_ready()
 * is false and the caller walks the kernel's table as before, feeding
 * every entry to ctflows_seen() to start the list afresh.
 */
#ifndef MOAT_PARENT_CTFLOWS_H
#define MOAT_PARENT_CTFLOWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nlattr;
struct nlmsghdr;

/* A CTA_TUPLE_ORIG attribute as the kernel sent it, and its family. */
typedef void (ctflows_fn)(const struct nlattr *tuple, uint8_t family,
    void *arg);

/* Take what the kernel reported since the last call; cheap when nothing
 * waits.  In a process that runs lib/ev's loop the events are also read
 * as they arrive (ctflows_on_loop()), so this is then only the way back
 * after a loss.  Listens first if it does not yet (root, the parent's own
 * namespace); after a loss, at most every CTFLOWS_RESYNC_S it walks the
 * kernel's table again itself to be ready before the next commit. */
void	ctflows_tick(void);

/* Whether the list holds every entry of the namespace (events drained). */
bool	ctflows_ready(void);

/* Call fn on every entry known; on those live. */
void	ctflows_each(ctflows_fn *fn, void *arg);
void	ctflows_each_live(ctflows_fn *fn, void *arg);

/* A full walk of the kernel's table begins (listening first, so nothing
 * created meanwhile is missed): forget the list, then feed it each entry
 * (one ctnetlink message of the dump) with ctflows_seen(), and say
 * ctflows_walked() at the end. */
void	ctflows_walk_begin(void);
void	ctflows_seen(const struct nlmsghdr *nlh);
void	ctflows_walked(bool complete);

/* The entry is gone (deleted, or the kernel did not know it). */
void	ctflows_gone(const struct nlattr *tuple);

/* Apply one netlink message of conntrack events (new, changed, destroyed) to the
 * list: a pure function of the bytes, for the fuzzer too.  Messages of
 * other types and malformed ones are skipped. */
void	ctflows_events(const void *buf, size_t len);

/* How many entries the list holds, and whether it is trusted, for
 * status and tests. */
size_t	ctflows_count(void);
size_t	ctflows_count_live(void);

/* Whether the events are read from the loop as they arrive. */
bool	ctflows_on_loop(void);

/* Forget everything and stop listening. */
void	ctflows_free(void);

#endif
