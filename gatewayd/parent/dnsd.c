/*
 * parent/dnsd.c -- the parent's side of dnsd: a reload's configuration
 * taken in place (IPC_CONF and its acknowledgement), one sandbox's
 * allow list after a grant (IPC_CONF_ALLOW), and the messages dnsd may
 * send: set additions (decided beside the policy), queries dropped over a
 * rate, names refused or resolved, audit events.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gw.h"
#include "proc.h"
#include "reload.h"
#include "dnsd.h"
#include "proxy.h"
#include "audit.h"
#include "policy.h"
#include "refused.h"
#include "ipc.h"
#include "log.h"

/* The gen of the next list sent to dnsd; 0 when gens ran out (then
 * dnsd is started again, counting from 0: policy_dns_frozen compares
 * them). */
static uint32_t
next_gen(struct gw *gw)
{
	if (dnsd_of(gw)->dns_gen == UINT32_MAX) {
		proc_restart(gw, PROC_DNSD);
		return 0;
	}
	return ++dnsd_of(gw)->dns_gen;
}

/*
 * dnsd takes a reload in place: the new configuration goes to it in a
 * fresh sealed memfd, as at its start, and it swaps its policy while
 * keeping its cache and what it knows of the sets wherever the reload
 * left them true (IPC_CONF).  A dnsd that cannot be told, or that
 * answers it could not (handle_dns_config_ack), is restarted with it.
 */
void
dnsd_reconfigure(struct gw *gw)
{
	struct gw_proc *p = &gw->procs[PROC_DNSD];
	struct ipc_conf m = { 0, IPC_CONF_KEEP, 0, { 0, 0 } };
	int fd;

	if (p->pid <= 0)
		return;		/* it starts with the new configuration */
	if (p->ipc == -1 || (fd = proc_config_memfd(gw)) == -1) {
		proc_restart(gw, PROC_DNSD);
		return;
	}
	if ((m.gen = next_gen(gw)) == 0) {
		close(fd);
		return;
	}
	if (ipc_send_fds(p->ipc, IPC_CONF, 0, &m, sizeof(m), &fd,
	    1) == -1) {
		log_warn("dnsd: sending the new configuration; restarting it");
		proc_restart(gw, PROC_DNSD);
	}
	close(fd);
}

static void
handle_dns_config_ack(struct gw *gw, const struct ipc_conf_ack *m)
{
	if (m->status == 0) {
		log_info("dnsd took the new configuration in place");
		if (m->gen == dnsd_of(gw)->dns_gen)
			policy_dns_thaw(gw);
		return;
	}
	/* A later configuration is on its way; its answer decides. */
	if (m->gen != dnsd_of(gw)->dns_gen)
		return;
	log_warnx("dnsd could not take the new configuration; restarting it");
	proc_restart(gw, PROC_DNSD);
}

/* One sandbox's allow list to dnsd alone; -1 if it does not fit one
 * message (then the whole configuration goes). */
int
dnsd_allow(struct gw *gw, const char *sandbox)
{
	static union {
		struct ipc_conf_allow m;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	size_t len;

	if ((u.m.gen = next_gen(gw)) == 0)
		return 0;
	if ((len = conf_allow_msg(gw, sandbox, u.m.gen, &u)) == 0)
		return -1;
	if (ipc_send(gw->procs[PROC_DNSD].ipc, IPC_CONF_ALLOW, 0, &u.m,
	    len) == -1) {
		log_warn("dnsd: sending %s's allow list; restarting it", sandbox);
		proc_restart(gw, PROC_DNSD);
	} else
		log_info("dnsd: sandbox %s's allow list sent alone (%zu names)",
		    sandbox, config_sandbox_by_name(gw->cfg, sandbox)->allow.n);
	return 0;
}

/* Queries dnsd dropped over a sandbox's rate: kept per sandbox name for
 * `ctl counters`, for the sandboxes the configuration has. */
static void
handle_dns_dropped(struct gw *gw, const struct ipc_dns_dropped *m)
{
	size_t i;

	if (config_sandbox_by_name(gw->cfg, m->sandbox) == NULL)
		return;
	for (i = 0; i < dnsd_of(gw)->ndnsdrops; i++)
		if (strcmp(dnsd_of(gw)->dnsdrops[i].sandbox, m->sandbox) == 0)
			break;
	if (i == dnsd_of(gw)->ndnsdrops) {
		if (dnsd_of(gw)->ndnsdrops >= MOAT_MAX_SANDBOXES)
			return;
		dnsd_of(gw)->dnsdrops = xreallocarray(dnsd_of(gw)->dnsdrops, dnsd_of(gw)->ndnsdrops + 1,
		    sizeof(*dnsd_of(gw)->dnsdrops));
		snprintf(dnsd_of(gw)->dnsdrops[i].sandbox, sizeof(dnsd_of(gw)->dnsdrops[i].sandbox),
		    "%s", m->sandbox);
		dnsd_of(gw)->dnsdrops[i].count = 0;
		dnsd_of(gw)->ndnsdrops++;
	}
	dnsd_of(gw)->dnsdrops[i].count += m->count;
}

void
dnsd_dispatch(struct gw *gw, struct gw_proc *p, int fd, const struct gw_msg *m)
{
	switch (m->h->type) {
	case IPC_SET_ADD:
		policy_set_add_request(gw, p, m->h->id,
		    (const struct ipc_set_add *)m->data);
		break;
	case IPC_DNS_DROPPED:
		handle_dns_dropped(gw, (const struct ipc_dns_dropped *)m->data);
		break;
	case IPC_CONF_ACK:
		handle_dns_config_ack(gw,
		    (const struct ipc_conf_ack *)m->data);
		break;
	case IPC_DNS_NAME:
		refused_dns_name(gw, (const struct ipc_dns_name *)m->data);
		break;
	case IPC_AUDIT:
		audit_child(gw, p, m->data, m->len);
		break;
	}
}

static void
dnsd_init(void *state)
{
	struct gw_dnsd *st = state;

	st->dns_udp = st->dns_tcp = st->dns_udp6 = st->dns_tcp6 = -1;
}

static void
dnsd_stop(struct gw *gw)
{
	free(dnsd_of(gw)->dnsdrops);
	dnsd_of(gw)->dnsdrops = NULL;
	dnsd_of(gw)->ndnsdrops = 0;
}

const struct gw_module dnsd_module = {
	.name = "dnsd",
	.size = sizeof(struct gw_dnsd),
	.init = dnsd_init,
	.stop = dnsd_stop,
};
