/*
 * gatewayd.h -- what gatewayd's entry (gatewayd.c), its parent and its
 * command-line clients share: the options and the entry points.  The
 * parent's own state and its modules are in parent/gw.h and the headers
 * beside it.
 */
#ifndef GATEWAYD_H
#define GATEWAYD_H

#include <stdbool.h>
#include <stdio.h>

#include "ipc.h"
#include "control/control.h"

#define GW_SOCK_DEFAULT		"/run/moat/gatewayd.sock"
#define GW_GROUP		"moat"
#define GW_AUDIT_DIR		"/var/log/moat"
#define GW_AUDIT_DEFAULT	GW_AUDIT_DIR "/audit.log"
#define GW_CTL_MAX_LINE		CTL_MAX_LINE	/* request line, plus a value */
#define GW_CTL_MAX_ARGS		IPC_CTL_MAX_ARGS
#define GW_CTL_MAX_FDS		8	/* files a create passes (SCM_RIGHTS) */
#define GW_SECRET_MAX		4096
#define GW_MAX_CLIENTS		CTL_MAX_CLIENTS
#define GW_PROXY_MAX		MOAT_PROXY_WORKERS_MAX
#define GW_MAX_DRAINING		(2 * GW_PROXY_MAX)	/* old proxy workers
						   finishing connections */

struct gw_opts {
	const char	*conf;
	const char	*sock;		/* control socket path */
	const char	*audit_path;	/* JSON lines file; NULL = state_dir */
	const char	*bindir;	/* where dnsd and moat-proxy live */
	const char	*upstream_ca;	/* passed to the proxy, for tests */
	bool		 foreground;
	bool		 no_children;	/* -X: policy, control, audit only */
	int		 verbose;
	const char	*test_clock;	/* budgets' clock from a file (tests) */
};

/* --- client side (ctl_client.c) --- */

int	ctl_main(const char *sock, int argc, char *argv[]);
void	ctl_usage(FILE *);
/* `gatewayd register ...` on a KVM host (cli/register_client.c). */
int	register_main(int argc, char *argv[]);
int	gw_run(struct gw_opts *);

#endif
