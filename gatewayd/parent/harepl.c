/*
 * parent/harepl.c -- the parent's side of replication between the two
 * boxes of a pair (harepl.h): it binds gateway.ha.listen and reads this
 * box's certificate and key for the two unprivileged processes, hands the
 * sending one each set addition the kernel took while this box is master,
 * and takes the receiving one's.
 *
 * What the other box sends is admitted here exactly as dnsd's additions
 * are, by nftr_allow_add (admit_set_add, admit_set_ports, the promise
 * record): a compromised peer can open for an allowlist sandbox only
 * what a DNS answer could, never a private range, the sandbox network or
 * an address of this box; the name behind an address is the peer's word.
 * Egress totals only ever grow here (egress_merge): a peer can spend a
 * sandbox's budget early, never give it more.  A KVM host's registration
 * the master applied comes with the host's key and is decided here again
 * by reg_message (admit_registration, against this box's hosts =): the
 * peer can do no more than that host could.  Nothing received is sent
 * on, so two boxes that both believe they are master do not echo.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "gw.h"
#include "audit.h"
#include "reg.h"
#include "ctl.h"
#include "policy.h"
#include "grant.h"
#include "egress.h"
#include "ha.h"
#include "admit.h"
#include "verdicts.h"
#include "../harepl/harepl.h"
#include "log.h"
#include "nftrules.h"

int
harepl_listen(struct gw *gw)
{
	const char *l = gw->cfg->gw.ha_listen;

	ha_of(gw)->hafd = -1;
	if (l == NULL)
		return 0;
	if ((ha_of(gw)->hafd = gw_listen_tcp(l, "gateway.ha")) == -1)
		return -1;
	log_info("ha replication: listening on %s, sending to %s", l,
	    gw->cfg->gw.ha_peer);
	return 0;
}

int
harepl_pem_read(const struct gw *gw, struct reg_pem *pem)
{
	return reg_pem_load(gw->cfg->gw.ha_cert, gw->cfg->gw.ha_key,
	    "ha replication", pem);
}

/* A set addition the kernel took (IPC_SET_ADD) or a sandbox's egress
 * total (IPC_HA_SPENT): to the other box, while master.  The sending
 * process's socket never blocks this loop: what does not fit is dropped
 * and counted (the guest's next answer opens it there; the next total
 * supersedes it). */
void
harepl_forward(struct gw *gw, int type, const void *m, size_t len)
{
	if (ha_of(gw)->ha_role == HA_MASTER)
		harepl_forward_any(gw, type, m, len);
}

void
harepl_forward_any(struct gw *gw, int type, const void *m, size_t len)
{
	struct gw_proc *p = &gw->procs[PROC_HA_SEND];
	int fl;

	if (!ha_of(gw)->ha_on || p->pid <= 0 || p->ipc == -1)
		return;
	if ((fl = fcntl(p->ipc, F_GETFL)) != -1 && !(fl & O_NONBLOCK))
		(void)fcntl(p->ipc, F_SETFL, fl | O_NONBLOCK);
	if (ipc_send(p->ipc, (enum ipc_type)type, 0, m, len) == -1)
		ha_of(gw)->ha_dropped++;
	else if (type == IPC_SET_ADD)
		ha_of(gw)->ha_queued++;	/* "elements sent" */
}

struct snap {
	struct gw	*gw;
	const char	*sandbox;
	size_t		 n;
};

/* One element of a sandbox's set, with the time it has left, as the
 * set addition that would make it: the address alone opens the
 * sandbox's allow_ports (plain), with a port that port. */
static void
snap_one(const struct admit_elem *e, uint64_t left_ms, void *arg)
{
	struct snap *sn = arg;
	union {
		struct ipc_set_add m;
		char raw[sizeof(struct ipc_set_add) + sizeof(struct moat_addr)];
	} u;

	if (left_ms == 0)
		return;
	memset(&u, 0, sizeof(u));
	snprintf(u.m.sandbox, sizeof(u.m.sandbox), "%s", sn->sandbox);
	u.m.timeout_ms = left_ms > IPC_SET_TIMEOUT_MAX_MS ?
	    IPC_SET_TIMEOUT_MAX_MS : (uint32_t)left_ms;
	u.m.naddr = 1;
	u.m.addr[0] = e->addr;
	if (e->svc == 0)
		u.m.plain = 1;
	else {
		u.m.nports = 1;
		u.m.ports[0].proto = ADMIT_SVC_PROTO(e->svc);
		u.m.ports[0].port = ADMIT_SVC_PORT(e->svc);
	}
	harepl_forward(sn->gw, IPC_SET_ADD, &u, sizeof(u));
	sn->n++;
}

/*
 * The whole state, before any change that follows it: for each allowlist
 * sandbox, the grants the other box holds from this one end there and
 * ours are sent again with the time they have left, and its sets are
 * emptied there and filled with what ours hold now, each element with
 * the time it has left (so what was removed here while the link was down
 * goes there too); then every budgeted sandbox's egress total.  Sent when
 * the sending process (re)connects and when this box becomes master;
 * harepl_forward sends nothing unless this box is master.  One element a
 * line: a state larger than the sending queue (HAREPL_QUEUE_MAX) or the
 * socket to it loses its oldest lines, counted as dropped.
 */
void
harepl_snapshot(struct gw *gw)
{
	struct snap sn = { gw, NULL, 0 };
	struct ipc_ha_flush f;
	size_t i;

	if (!ha_of(gw)->ha_on || ha_of(gw)->ha_role != HA_MASTER ||
	    gw->cfg->gw.ha_peer == NULL)
		return;
	for (i = 0; i < gw->cfg->nsandboxes; i++) {
		if (gw->cfg->sandboxes[i].egress != EGRESS_ALLOWLIST)
			continue;
		sn.sandbox = gw->cfg->sandboxes[i].name;
		memset(&f, 0, sizeof(f));
		snprintf(f.sandbox, sizeof(f.sandbox), "%s", sn.sandbox);
		f.whole = 1;
		harepl_forward(gw, IPC_HA_FLUSH, &f, sizeof(f));
		grants_snapshot(gw, sn.sandbox, false);
		if (nftr_set_elems(gw->nft, sn.sandbox, snap_one, &sn) == -1)
			log_warnx("ha replication: allowlist %s could not be "
			    "read for the other box: %s", sn.sandbox,
			    nftr_error(gw->nft));
	}
	egress_snapshot(gw);
	log_info("ha replication: the whole state to the other box (%zu "
	    "element(s))", sn.n);
}

static void
reply(int fd, int32_t status, const char *text)
{
	static union {
		struct ipc_reg_reply r;
		char raw[256];
	} u;
	size_t len = strlen(text);

	u.r.status = status;
	memcpy(u.r.text, text, len);
	if (ipc_send(fd, IPC_REG_REPLY, 0, &u, sizeof(u.r) + len) == -1)
		log_warn("ha replication: reply");
}

/* Is this the other box?  Its key's SHA-256 is gateway.ha.peer_key. */
static void
hello(struct gw *gw, int fd, const struct ipc_reg_req *m)
{
	static const char why[] = "unknown peer key";
	char hex[65];
	size_t i;

	if (m->verb != REG_HELLO) {	/* a host's request, forwarded */
		if (reg_of(gw)->regfd == -1)
			reply(fd, 1, "this box takes no registrations");
		else
			(void)reg_message(gw, fd, m);
		return;
	}
	if (m->verb == REG_HELLO && gw->cfg->gw.ha_has_peer_key &&
	    CRYPTO_memcmp(m->key, gw->cfg->gw.ha_peer_key, 32) == 0) {
		reply(fd, 0, "");
		return;
	}
	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", m->key[i]);
	ha_of(gw)->ha_unknown++;
	log_warnx("ha replication: connection with an unknown key refused: "
	    "sha256:%s", hex);
	audit_event(gw, "ha-peer-refused", "key", hex, "reason", why, NULL);
	reply(fd, 1, why);
}

/* An element from the other box, admitted as dnsd's are. */
static void
element(struct gw *gw, int fd, const struct ipc_set_add *m)
{
	char a[64];
	int rc;

	rc = policy_set_add_peer(gw, m);
	if (rc > 0) {
		ha_of(gw)->ha_received++;
		reply(fd, 0, "");
		return;
	}
	if (rc == 0) {		/* nothing admissible among them */
		ha_of(gw)->ha_refused++;
		addr_fmt(&m->addr[0], a, sizeof(a));
		log_warnx("ha replication: element for %s refused: %s and the "
		    "rest not admitted", m->sandbox, a);
		audit_event(gw, "ha-element-refused", "sandbox", m->sandbox,
		    "address", a, "reason", "not admitted", NULL);
		reply(fd, 1, "not admitted");
		return;
	}
	ha_of(gw)->ha_refused++;
	addr_fmt(&m->addr[0], a, sizeof(a));
	log_warnx("ha replication: element for %s refused: %s", m->sandbox, a);
	audit_event(gw, "ha-element-refused", "sandbox", m->sandbox, "address",
	    a, "reason", "refused", NULL);
	reply(fd, 1, "refused");
}

/* What the other box sent could not be taken: counted, logged, audited
 * (name: the entry a grant named, or NULL) and answered. */
static void
peer_refused(struct gw *gw, int fd, const char *what, const char *sandbox,
    const char *name, const char *why)
{
	ha_of(gw)->ha_refused++;
	if (name != NULL) {
		log_warnx("ha replication: %s of %s to %s refused: %s", what,
		    name, sandbox, why);
		audit_event(gw, "ha-element-refused", "sandbox", sandbox,
		    "name", name, "reason", why, NULL);
	} else {
		log_warnx("ha replication: %s of %s refused: %s", what,
		    sandbox, why);
		audit_event(gw, "ha-element-refused", "sandbox", sandbox,
		    "reason", why, NULL);
	}
	reply(fd, 1, why);
}

/* The master emptied a sandbox's sets (or sends them whole next). */
static void
flush(struct gw *gw, int fd, const struct ipc_ha_flush *m)
{
	const char *why = NULL;

	if (m->whole)
		grants_peer_state(gw, m->sandbox);
	if (policy_flush_peer(gw, m->sandbox, &why) == -1) {
		peer_refused(gw, fd, "flush", m->sandbox, NULL, why);
		return;
	}
	reply(fd, 0, "");
}

/* A grant for a while the other box made or took back. */
static void
grant(struct gw *gw, int fd, const struct ipc_ha_grant *m)
{
	const char *why = NULL;
	char secs[16];

	if (grants_peer(gw, m, &why) == -1) {
		peer_refused(gw, fd, "grant", m->sandbox, m->entry, why);
		return;
	}
	snprintf(secs, sizeof(secs), "%u", m->secs);
	audit_event(gw, m->secs ? "ha-grant" : "ha-ungrant", "sandbox",
	    m->sandbox, "name", m->entry, "seconds", secs, NULL);
	reply(fd, 0, "");
}

/* The other box quarantined a sandbox, or holds no quarantine of its own
 * for it any more. */
static void
quarantine(struct gw *gw, int fd, const struct ipc_ha_quarantine *m)
{
	const char *why = NULL;

	if (verdicts_peer(gw, m->sandbox, m->on, &why) == -1) {
		peer_refused(gw, fd, "quarantine", m->sandbox, NULL, why);
		return;
	}
	reply(fd, 0, "");
}

void
harepl_recv_dispatch(struct gw *gw, struct gw_proc *p, int fd,
    const struct gw_msg *m)
{
	(void)p;
	if (m->h->type == IPC_REG_REQ)
		hello(gw, fd, (const struct ipc_reg_req *)m->data);
	else if (m->h->type == IPC_SET_ADD)
		element(gw, fd, (const struct ipc_set_add *)m->data);
	else if (m->h->type == IPC_HA_SPENT) {
		egress_merge(gw, (const struct ipc_ha_spent *)m->data);
		reply(fd, 0, "");
	} else if (m->h->type == IPC_HA_FLUSH)
		flush(gw, fd, (const struct ipc_ha_flush *)m->data);
	else if (m->h->type == IPC_HA_GRANT)
		grant(gw, fd, (const struct ipc_ha_grant *)m->data);
	else if (m->h->type == IPC_HA_QUARANTINE)
		quarantine(gw, fd, (const struct ipc_ha_quarantine *)m->data);
}

void
harepl_send_dispatch(struct gw *gw, struct gw_proc *p, int fd,
    const struct gw_msg *m)
{
	(void)fd;
	if (m->h->type == IPC_AUDIT)
		audit_child(gw, p, m->data, m->len);
	else if (m->h->type == IPC_HA_SNAP && ha_of(gw)->ha_role == HA_MASTER)
		harepl_snapshot(gw);
	else if (m->h->type == IPC_HA_SNAP)	/* ours reach the master too */
		grants_snapshot(gw, NULL, true);
	if (m->h->type == IPC_HA_SNAP)		/* from either box */
		verdicts_snapshot(gw);
}

void
harepl_status(struct ctl_req *r)
{
	struct gw *gw = r->gw;

	if (!ha_of(gw)->ha_on || gw->cfg->gw.ha_peer == NULL)
		return;
	if (r->json) {
		ctl_reply(r, "\"ha_replication\":{\"peer\":\"%s\",\"sent\":%llu,"
		    "\"dropped\":%llu,\"received\":%llu,\"refused\":%llu,"
		    "\"unknown_keys\":%llu},", gw->cfg->gw.ha_peer,
		    (unsigned long long)ha_of(gw)->ha_queued,
		    (unsigned long long)ha_of(gw)->ha_dropped,
		    (unsigned long long)ha_of(gw)->ha_received,
		    (unsigned long long)ha_of(gw)->ha_refused,
		    (unsigned long long)ha_of(gw)->ha_unknown);
		return;
	}
	ctl_reply(r, "ha peer    %s: %llu elements sent, %llu dropped; %llu "
	    "received, %llu refused, %llu unknown keys\n", gw->cfg->gw.ha_peer,
	    (unsigned long long)ha_of(gw)->ha_queued,
	    (unsigned long long)ha_of(gw)->ha_dropped,
	    (unsigned long long)ha_of(gw)->ha_received,
	    (unsigned long long)ha_of(gw)->ha_refused,
	    (unsigned long long)ha_of(gw)->ha_unknown);
}
