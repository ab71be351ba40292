/*
 * audit.h -- audit events for refusals and injections: JSON objects to
 * gatewayd over the IPC socket (IPC_AUDIT; the events of one turn of the
 * event loop in one message, a line each), or to the log when the proxy
 * runs alone.  Never given a secret value: only names.
 */
#ifndef MOAT_PROXY_AUDIT_H
#define MOAT_PROXY_AUDIT_H

void	audit_init(int ipcfd);
/* audit("refuse", "sandbox", "web", "host", "x.test", NULL): keys and
 * values in pairs, NULL-terminated; NULL values are skipped. */
void	audit(const char *event, ...) __attribute__((sentinel));
/* Send what is queued now (the loop does it after every turn; the worker
 * calls it once more before it exits). */
void	audit_flush(void);

#endif
