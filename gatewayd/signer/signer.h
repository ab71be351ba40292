/*
 * signer.h -- the signer process: holds the CA key and nothing else, and
 * signs leaf certificates for the proxy on request.
 *
 * It runs as its own user with no capabilities, no network and a seccomp
 * allowlist of the few calls its loop needs.  Its only input is
 * IPC_SIGN_REQ messages on one socket from one proxy; it exits when that
 * socket closes or when the process that started it dies.
 */
#ifndef MOAT_SIGNER_H
#define MOAT_SIGNER_H

#include <sys/types.h>

#include "ca.h"

#define SIGNER_USER	"moat-ca"

/*
 * Fork the signer with ca (which the caller then frees: the key stays
 * only in the child).  *fd: the caller's end of the signer's socket, for
 * the proxy.  The pid, or -1.
 */
pid_t	signer_fork(struct ca *, const char *user, int *fd);

/* In a new child: load the CA from state_dir, then become the signer.
 * For a stand-alone proxy, whose own process must never load the key. */
pid_t	signer_fork_load(const char *state_dir, const char *user, int *fd);

#endif
