/*
 * privdrop.h -- become an unprivileged user for good.
 */
#ifndef MOAT_PRIVDROP_H
#define MOAT_PRIVDROP_H

#include <sys/types.h>

#include <stddef.h>

/*
 * Drop to user: no supplementary groups, every uid and gid the user's,
 * no way back to root, no_new_privs, no core dumps and not dumpable (a
 * process of the same user cannot read our memory).  Refuses a user whose
 * uid is 0.  Returns -1 with a message logged on failure.
 */
int	privdrop(const char *user);
/* The same for a uid and gid that may have no passwd entry; who names
 * them in messages.  Refuses uid or gid 0. */
int	privdrop_ids(uid_t uid, gid_t gid, const char *who);
/* The same, keeping exactly groups[0..ngroups-1] as supplementary groups
 * (a guest's QEMU keeps the kvm group). */
int	privdrop_groups(uid_t uid, gid_t gid, const gid_t *groups,
	    size_t ngroups, const char *who);

/*
 * A daemon's -u USER: as root, chdir to / and privdrop to user (NULL:
 * fallback; both NULL: stay root, with a warning).  As anyone,
 * no_new_privs.  Exits with a message naming the user on failure.
 */
void	privdrop_daemon(const char *user, const char *fallback);

/*
 * socket(2) made as if by user (by root: only its file system uid is
 * user's meanwhile; else an ordinary socket).  A packet's "meta skuid" in
 * nftables is the uid that made its socket, so a socket root binds for
 * a child that later drops to user is then known by the child's uid.
 */
int	socket_as(const char *user, int domain, int type);

/*
 * A unix stream socket connected to path by a child that has become
 * uid/gid for good (privdrop_ids), never by root: path is resolved,
 * symlinks and all, with only that user's rights, and the server sees
 * that user in SO_PEERCRED.  Use it for a path in a folder that user can
 * write.  The connect does not wait for a full backlog, and the child
 * dies after CONNECT_AS_SECONDS whatever it is waiting for, unless it is
 * stopped: any process of uid may stop it (SIGSTOP), and then neither it
 * nor its alarm runs.  A caller that waits for it must watch for that
 * (WUNTRACED) and kill it.
 *
 * connect_as_start forks the child and returns its pid (or -1), with
 * *back the end it answers on.  Once the child has exited (its exit is
 * the caller's to reap, with no need to wait on anything else),
 * connect_as_take returns the connected socket, or -1 if there is none or
 * its server does not run as uid.  It never blocks.  The caller closes
 * back.
 */
#define CONNECT_AS_SECONDS	5
pid_t	connect_as_start(const char *path, uid_t uid, gid_t gid, int *back);
int	connect_as_take(int back, uid_t uid);

#endif
