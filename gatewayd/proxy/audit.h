/*
 * audit.h -- audit events for refusals and injections: one JSON object to
 * gatewayd over the IPC socket (IPC_AUDIT), or to the log when the proxy
 * runs alone.  Never given a secret value: only names.
 */
#ifndef MOAT_PROXY_AUDIT_H
#define MOAT_PROXY_AUDIT_H

void	audit_init(int ipcfd);
/* audit("refuse", "sandbox", "web", "host", "x.test", NULL): keys and
 * values in pairs, NULL-terminated; NULL values are skipped. */
void	audit(const char *event, ...) __attribute__((sentinel));

#endif
