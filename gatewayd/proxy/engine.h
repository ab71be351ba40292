/*
 * engine.h -- the HTTP engine: requests from the guest (its TLS
 * terminated, or plain HTTP through the explicit proxy) checked,
 * rewritten with real secrets and sent upstream; responses scrubbed and
 * relayed.
 *
 * The proxy's layers, top down: the engine (engine.c) calls the request
 * rules (reqrule.h) and the connection layer (conn.h); the request rules
 * call the connection layer; the connection layer calls the engine only
 * through the table http_app, which main hands it.  No call goes up.
 */
#ifndef MOAT_PROXY_ENGINE_H
#define MOAT_PROXY_ENGINE_H

#include "conn.h"

extern const struct conn_app http_app;

#endif
