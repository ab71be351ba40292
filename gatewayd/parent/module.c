/*
 * module.c -- the table of the parent's modules (gw.h), and the state
 * each keeps.
 */
#include <stdlib.h>

#include "gw.h"
#include "ctl.h"
#include "log.h"

extern const struct gw_module audit_module, ctl_module, policy_module,
    dnsd_module, proxy_module, reload_module, network_module,
    hostnet_module, drift_module, grants_module, egress_module,
    budgets_module, reg_module, ha_module, metrics_module, web_module,
    verdicts_module, sockmap_module, kwatch_module, canary_module,
    refused_module,
    proc_module;

/* In the order they start; they stop in the reverse. */
const struct gw_module *const gw_modules[MOD_MAX] = {
	[MOD_AUDIT] = &audit_module,
	[MOD_CTL] = &ctl_module,
	[MOD_POLICY] = &policy_module,
	[MOD_DNSD] = &dnsd_module,
	[MOD_PROXY] = &proxy_module,
	[MOD_RELOAD] = &reload_module,
	[MOD_HOSTNET] = &hostnet_module,
	[MOD_NETWORK] = &network_module,
	[MOD_KWATCH] = &kwatch_module,
	[MOD_DRIFT] = &drift_module,
	[MOD_GRANTS] = &grants_module,
	[MOD_EGRESS] = &egress_module,
	[MOD_BUDGETS] = &budgets_module,
	[MOD_REG] = &reg_module,
	[MOD_HA] = &ha_module,
	[MOD_METRICS] = &metrics_module,
	[MOD_WEB] = &web_module,
	[MOD_VERDICTS] = &verdicts_module,
	[MOD_SOCKMAP] = &sockmap_module,
	[MOD_CANARY] = &canary_module,
	[MOD_REFUSED] = &refused_module,
	[MOD_PROC] = &proc_module,
};

void *
gw_mod(const struct gw *cgw, enum gw_mod_id id)
{
	struct gw *gw = (struct gw *)cgw;	/* the state is the module's */
	const struct gw_module *m = gw_modules[id];

	if (gw->mod[id] == NULL) {
		gw->mod[id] = xcalloc(1, m->size);
		if (m->init != NULL)
			m->init(gw->mod[id]);
	}
	return gw->mod[id];
}

int
gw_modules_start(struct gw *gw)
{
	size_t i;

	for (i = 0; i < MOD_MAX; i++)
		if (gw_modules[i]->start != NULL && gw_modules[i]->start(gw) == -1) {
			log_warnx("%s: could not start", gw_modules[i]->name);
			return -1;
		}
	return 0;
}

void
gw_modules_stop(struct gw *gw)
{
	size_t i;

	for (i = MOD_MAX; i-- > 0;)
		if (gw_modules[i]->stop != NULL)
			gw_modules[i]->stop(gw);
}

void
gw_modules_free(struct gw *gw)
{
	size_t i;

	for (i = MOD_MAX; i-- > 0;) {
		if (gw->mod[i] == NULL)
			continue;
		if (gw_modules[i]->free != NULL)
			gw_modules[i]->free(gw->mod[i]);
		free(gw->mod[i]);
		gw->mod[i] = NULL;
	}
}

void
gw_modules_status(struct ctl_req *r)
{
	size_t i;

	for (i = 0; i < MOD_MAX; i++)
		if (gw_modules[i]->status != NULL)
			gw_modules[i]->status(r);
}

void
gw_modules_metrics(FILE *fp, const struct gw *gw)
{
	size_t i;

	for (i = 0; i < MOD_MAX; i++)
		if (gw_modules[i]->metrics != NULL)
			gw_modules[i]->metrics(fp, gw);
}

uint64_t
gw_due_in(int ms)
{
	return ms < 0 ? 0 : gw_mono_ms() + (uint64_t)ms;
}
