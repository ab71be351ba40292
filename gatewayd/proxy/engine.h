/*
 * engine.h -- the HTTP engine: requests from the guest (its TLS
 * terminated, or plain HTTP through the explicit proxy) checked,
 * rewritten with real secrets and sent upstream; responses scrubbed and
 * relayed.  It runs on the connection layer (conn.h), which calls it
 * through http_app.
 */
#ifndef MOAT_PROXY_ENGINE_H
#define MOAT_PROXY_ENGINE_H

#include "conn.h"

void	http_start(struct conn *);
void	http_pump(struct conn *);
void	http_free(struct http *);
/* The secrets' generation an HTTP connection works with (secret.h). */
const struct secrets *http_secrets(const struct conn *);
void	tunnel_pump(struct conn *);

extern const struct conn_app http_app;

#endif
