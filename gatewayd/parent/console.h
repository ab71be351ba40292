/*
 * console.h -- a member's guest console (console.c).
 */
#ifndef GW_PARENT_CONSOLE_H
#define GW_PARENT_CONSOLE_H

#include "gw.h"

/* --- console (parent/console.c) --- */

/* Who asked, from SO_PEERCRED (the control protocol's caller). */
struct ctl_creds {
	uid_t		 uid;
	gid_t		 gid;
	const char	*user;		/* login name, or "#UID" */
	bool		 admin;		/* root or gateway.admin_group */
};
/* Where a console is: its socket, to be connected as its folder's owner
 * (connect_as_start, privdrop.h). */
struct console_target {
	char		 path[108];
	uid_t		 uid;
	gid_t		 gid;
};
/* "console NAME": (request, caller) -> where the guest's serial console
 * is, or -1 with err set (one answer for missing and not yours). */
int	console_verb(const struct moat_config *, const char *run_dir, int argc,
	    char *const argv[], const struct ctl_creds *,
	    struct console_target *, char *err, size_t len);
/* The answer for a guest whose console cannot be reached. */
void	console_gone(const char *name, char *err, size_t len);

#endif
