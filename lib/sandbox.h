/*
 * sandbox.h -- the system calls each unprivileged process may make.
 *
 * Every process that reads hostile input, or holds a key, ends its
 * start-up the same way: open what it needs, drop to its own user
 * (privdrop.h), then narrow itself to one of the allowlists below.  A
 * call outside its list kills the whole process.  lib/sandbox.c holds
 * every list, so one file says what each process can do.
 */
#ifndef MOAT_SANDBOX_H
#define MOAT_SANDBOX_H

enum sandbox_role {
	SANDBOX_DNSD,		/* dnsd's resolver */
	SANDBOX_DNSD_REREAD,	/* ... standalone, re-reading its files */
	SANDBOX_PROXY,		/* moat-proxy (each worker) */
	SANDBOX_NFLOG,		/* gatewayd's refusal-log reader */
	SANDBOX_SIGNER,		/* the signer: holds the CA key */
	SANDBOX_CONTROL,	/* gatewayd's control process */
	SANDBOX_REGISTER,	/* gatewayd's registration endpoint */
	SANDBOX_METRICS,	/* gatewayd's metrics endpoint */
	SANDBOX_HA_SEND,	/* gatewayd's replication to the other box */
	SANDBOX_HA_ARP,		/* gatewayd's reader of the uplink's ARP */
	SANDBOX_WEB,		/* gatewayd's web console (moat-web) */
	SANDBOX_NROLES
};

/*
 * Set no_new_privs and install role's filter (default: kill the
 * process).  Call it last, after the privilege drop and after whatever
 * needs a file opened.  0, or -1 if libseccomp or the kernel refused.
 */
int	sandbox_narrow(enum sandbox_role role);

#endif
