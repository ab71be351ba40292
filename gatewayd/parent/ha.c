/*
 * parent/ha.c -- the role of this box in an active/standby pair
 * (gateway.ha), as keepalived gives it through `gatewayd ctl ha ROLE`
 * from its notify script.
 *
 * Fail closed in every state: from start until keepalived names it
 * master or backup, and again in fault, the box forwards nothing.  That
 * is enforced in the kernel by the gate (nftr_ha_gate, table
 * "inet moat_ha"), not by this process: the gate is shut before the
 * control socket opens and is shut again when gatewayd stops.  A box
 * without gateway.ha has no gate and no role.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "gw.h"
#include "audit.h"
#include "ctl.h"
#include "ha.h"
#include "log.h"
#include "nftrules.h"

static const struct {
	const char	*name;
	bool		 open;		/* the gate lets forwarded traffic by */
} roles[] = {
	[HA_UNKNOWN] = { "unknown", false },
	[HA_MASTER] = { "master", true },
	[HA_BACKUP] = { "backup", true },
	[HA_FAULT] = { "fault", false },
};
#define NROLES	(sizeof(roles) / sizeof(roles[0]))

static int
gate(struct gw *gw, int role)
{
	struct nftr_opts o = { .mode = NFTR_MODE_GATEWAY };

	nftr_opts_users(&o);
	return nftr_ha_gate(gw->nft, roles[role].open, &o);
}

int
ha_start(struct gw *gw, char *err, size_t errlen)
{
	ha_of(gw)->ha_on = gw->cfg->gw.ha;
	ha_of(gw)->ha_role = HA_UNKNOWN;
	ha_of(gw)->ha_since = time(NULL);
	/* A box taken out of a pair must not keep a shut gate. */
	if ((ha_of(gw)->ha_on ? gate(gw, HA_UNKNOWN) : nftr_ha_remove(gw->nft)) ==
	    -1) {
		snprintf(err, errlen, "the gate of gateway.ha: %s",
		    nftr_error(gw->nft));
		return -1;
	}
	ha_dup_start(gw);
	return 0;
}

/* Stopping: what is down forwards nothing. */
void
ha_stop(struct gw *gw)
{
	if (ha_of(gw)->ha_on && gw->nft != NULL && gate(gw, HA_FAULT) == -1)
		log_warnx("shutting the gate of gateway.ha: %s",
		    nftr_error(gw->nft));
}

/* The gate changed by someone else: put it back as the role wants. */
int
ha_gate_again(struct gw *gw)
{
	return ha_of(gw)->ha_on ? gate(gw, ha_of(gw)->ha_role) : 0;
}

void
ctl_ha(struct ctl_req *r)
{
	struct gw *gw = r->gw;
	const char *was;
	size_t role;

	if (!ha_of(gw)->ha_on) {
		ctl_refuse(r, NULL, "this box is not in a pair: set "
		    "gateway.ha.enabled and restart gatewayd");
		return;
	}
	for (role = HA_MASTER; role < NROLES; role++)
		if (r->argc == 2 && strcmp(r->argv[1], roles[role].name) == 0)
			break;
	if (role == NROLES) {
		ctl_reply(r, "error: usage: ha master|backup|fault\n");
		return;
	}
	was = roles[ha_of(gw)->ha_role].name;
	if (gate(gw, (int)role) == -1) {
		/* The old gate stands: the kernel took none of the change. */
		ctl_refuse(r, NULL, "the gate could not be changed, still %s: "
		    "%s", was, nftr_error(gw->nft));
		return;
	}
	if ((int)role != ha_of(gw)->ha_role) {
		ha_of(gw)->ha_role = (int)role;
		ha_of(gw)->ha_since = time(NULL);
		/* The new master's state is the pair's from now on. */
		harepl_snapshot(gw);
	}
	audit_event(gw, "ha-role", "role", roles[role].name, "was", was, NULL);
	log_info("ha: %s (was %s)", roles[role].name, was);
	ctl_reply(r, "ok\n");
}

void
ha_status(struct ctl_req *r)
{
	struct gw *gw = r->gw;
	char when[32], mac[18];
	struct tm tm;
	time_t first;
	int dup;

	if (!ha_of(gw)->ha_on)
		return;
	dup = ha_dup_state(gw, mac, sizeof(mac), &first);
	if (r->json) {
		ctl_reply(r, "\"ha\":{\"role\":\"%s\",\"since\":%lld",
		    roles[ha_of(gw)->ha_role].name, (long long)ha_of(gw)->ha_since);
		if (ha_of(gw)->ha_dup != NULL)
			ctl_reply(r, ",\"split_brain\":%s,"
			    "\"split_brain_unconfirmed\":%s",
			    dup == HA_DUP_CONFIRMED ? "true" : "false",
			    dup == HA_DUP_UNCONFIRMED ? "true" : "false");
		ctl_reply(r, "},");
		harepl_status(r);
		return;
	}
	gmtime_r(&ha_of(gw)->ha_since, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	ctl_reply(r, "ha         %s since %s (%llds), %s\n",
	    roles[ha_of(gw)->ha_role].name, when,
	    (long long)(time(NULL) - ha_of(gw)->ha_since),
	    roles[ha_of(gw)->ha_role].open ? "forwarding" : "forwarding nothing");
	if (dup == HA_DUP_CONFIRMED)
		ctl_reply(r, "split-brain another master (%s) answers for the "
		    "shared uplink address too, for %llds\n", mac,
		    (long long)(time(NULL) - first));
	else if (dup == HA_DUP_UNCONFIRMED)
		ctl_reply(r, "split-brain unconfirmed: %s answered a probe of "
		    "the shared uplink address but not yet a second one, for "
		    "%llds\n", mac, (long long)(time(NULL) - first));
	harepl_status(r);
}

void
ha_metrics(FILE *fp, const struct gw *gw)
{
	char mac[18];
	time_t first;
	size_t i;

	if (!ha_of(gw)->ha_on)
		return;
	fputs("# HELP moat_ha_role The role keepalived gave this box (1: the "
	    "current one).\n# TYPE moat_ha_role gauge\n", fp);
	for (i = 0; i < NROLES; i++)
		fprintf(fp, "moat_ha_role{role=\"%s\"} %d\n", roles[i].name,
		    (int)i == ha_of(gw)->ha_role);
	if (ha_of(gw)->ha_dup != NULL)
		fprintf(fp, "# HELP moat_ha_split_brain 1 while another box "
		    "answers for the shared uplink address as this master "
		    "does (confirmed by a second probe).\n"
		    "# TYPE moat_ha_split_brain gauge\nmoat_ha_split_brain %d\n",
		    ha_dup_state(gw, mac, sizeof(mac), &first) ==
		    HA_DUP_CONFIRMED);
	fprintf(fp, "# HELP moat_ha_role_change_timestamp_seconds When the "
	    "role last changed.\n# TYPE moat_ha_role_change_timestamp_seconds "
	    "gauge\nmoat_ha_role_change_timestamp_seconds %lld\n",
	    (long long)ha_of(gw)->ha_since);
}

static void
ha_init(void *state)
{
	struct gw_ha *st = state;

	st->hafd = -1;
}

/* Leaving the pair: the gate as a stopped box's, the split-brain watch
 * and the replication listener gone. */
static void
ha_mod_stop(struct gw *gw)
{
	ha_stop(gw);
	ha_dup_stop(gw);
	if (ha_of(gw)->hafd != -1)
		close(ha_of(gw)->hafd);
	ha_of(gw)->hafd = -1;
}

/* The split-brain watch's next probe. */
static uint64_t
ha_due(const struct gw *gw)
{
	int ms = ha_dup_timeout(gw, -1);

	return gw_due_in(ms);
}

const struct gw_module ha_module = {
	.name = "ha",
	.size = sizeof(struct gw_ha),
	.init = ha_init,
	.start = harepl_listen,
	.stop = ha_mod_stop,
	.due = ha_due,
	.timer = ha_dup_tick,
	.status = ha_status,
	.metrics = ha_metrics,
};
