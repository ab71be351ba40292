/*
 * reload.h -- a change of configuration as gatewayd tells a worker of it
 * (the IPC_CONF family).
 */
#ifndef MOAT_PROXY_RELOAD_H
#define MOAT_PROXY_RELOAD_H

#include <stddef.h>

#include "config.h"
#include "ipc.h"

/* cfg is the configuration in force (proxy.cfg); name names it. */
void	reload_init(struct moat_config *cfg, const char *name);
/* One of gatewayd's IPC_CONF* messages (shape-checked); fd the memfd an
 * IPC_CONF carries, or -1. */
void	reload_ipc(const struct ipc_hdr *, void *buf, size_t len, int fd);
void	reload_free(void);	/* what is staged */
/* Stop accepting, finish what is open, then exit (main.c). */
void	proxy_drain(void);

#endif
