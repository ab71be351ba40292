/*
 * privdrop.h -- become an unprivileged user for good.
 */
#ifndef MOAT_PRIVDROP_H
#define MOAT_PRIVDROP_H

/*
 * Drop to user: no supplementary groups, every uid and gid the user's,
 * no way back to root, no_new_privs, no core dumps and not dumpable (a
 * process of the same user cannot read our memory).  Refuses a user whose
 * uid is 0.  Returns -1 with a message logged on failure.
 */
int	privdrop(const char *user);

/*
 * socket(2) made as if by user (by root: only its file system uid is
 * user's meanwhile; else an ordinary socket).  A packet's "meta skuid" in
 * nftables is the uid that made its socket, so a socket root binds for
 * a child that later drops to user is then known by the child's uid.
 */
int	socket_as(const char *user, int domain, int type);

#endif
