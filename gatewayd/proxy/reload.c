/*
 * reload.c -- what gatewayd tells a worker of a change of configuration
 * (the IPC_CONF family, ipc.h): the new values and the names of what
 * changed, kept aside until the configuration they belong to comes; the
 * configuration, taken in place or drained as gatewayd decided; a grant's
 * allow list, taken alone.  Nothing here compares configurations: gatewayd
 * did, once for every worker, and says what changed.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "log.h"
#include "policy.h"
#include "reload.h"
#include "tls.h"
#include "secret.h"

/* The configuration in force (proxy.cfg), and its name for messages. */
static struct moat_config *live;
static const char *conf_name;
/* The names gatewayd said changed, by kind, until the IPC_CONF. */
static struct moat_strlist staged[IPC_CHANGED_MAX];

void
reload_init(struct moat_config *cfg, const char *name)
{
	live = cfg;
	conf_name = name;
}

static void
stage_names(const struct ipc_conf_changed *m)
{
	struct moat_strlist *l = &staged[m->kind];
	const char *s, *end = m->names + m->len;

	for (s = m->names; s < end; s += strlen(s) + 1) {
		l->v = xreallocarray(l->v, l->n + 1, sizeof(*l->v));
		l->v[l->n++] = xstrdup(s);
	}
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
free_config(void *arg)
{
	config_free(arg);
}

#define SWAP(a, b) do { __typeof__(a) t_ = (a); (a) = (b); (b) = t_; } while (0)

/* Release a generation once this turn's closed connections are freed. */
static void
release_generation(void *arg)
{
	secrets_release(arg);
}

/* The old sandboxes of a configuration retired with a generation: freed
 * once this turn's closed connections are, not kept as long as the
 * generation (which needs only the old secrets' definitions). */
static void
free_sandboxes(void *arg)
{
	config_free_sandboxes(arg);
}

/* The new sandboxes, and with secrets changed a new generation of values
 * (ng) made from the new definitions, take the place of the old. */
static void
take_in_place(struct moat_config *ncfg, struct secrets *ng)
{
	struct secrets *og;

	SWAP(live->sandboxes, ncfg->sandboxes);
	SWAP(live->nsandboxes, ncfg->nsandboxes);
	if (ng == NULL) {
		/* after this turn's closed connections are freed */
		ev_defer(free_config, ncfg);
		return;
	}
	/* The old definitions go with the old generation: ncfg keeps them
	 * until its last holder lets go.  Its old sandboxes go after this
	 * turn's closed connections, first (the proxy's own hold on og is
	 * let go after them). */
	SWAP(live->secrets, ncfg->secrets);
	SWAP(live->nsecrets, ncfg->nsecrets);
	og = proxy.secrets;
	secrets_retire(og, ncfg);
	proxy.secrets = ng;
	ev_defer(free_sandboxes, ncfg);
	ev_defer(release_generation, og);
}

/*
 * A new configuration.  First every open connection it no longer allows
 * is cut: its sandbox removed or among those gatewayd said changed, or
 * its upstream address refused now.  Then, when gatewayd says take it in
 * place, the new sandboxes replace the old; and if secrets changed (a
 * definition, or values gatewayd sent just before), a new generation of
 * values is made from the new definitions, and every connection whose
 * requests the proxy reads for a sandbox holding a secret gatewayd named
 * is cut, so that none goes on with an old value or binding.  The others
 * keep the generation they started with.  Otherwise the proxy drains.
 */
static void
reconfigure(int fd, const struct ipc_conf *m)
{
	struct moat_errors errs = { 0 };
	struct moat_config *ncfg = config_load_normalised(conf_name, fd, &errs);
	struct moat_strlist *sbs = &staged[IPC_CHANGED_SANDBOX];
	struct moat_strlist *sec = &staged[IPC_CHANGED_SECRET];
	bool keep = m->how == IPC_CONF_KEEP && !proxy.draining &&
	    !(m->flags & IPC_CONF_BASIS);
	bool secrets = (m->flags & IPC_CONF_SECRETS) != 0;
	struct secrets *ng = NULL;
	char err[256];
	size_t i;
	int cut;

	close(fd);
	if (ncfg == NULL)
		fatalx("gatewayd's new configuration is not usable%s%s",
		    errs.n ? ": " : "", errs.n ? errs.msg[0] : "");
	if (keep && secrets && (ng = secrets_rebuild(proxy.secrets, ncfg, err,
	    sizeof(err))) == NULL) {
		log_warnx("reload: %s: draining", err);
		keep = false;
	}
	secrets_unstage();
	if (sbs->n > 0)
		qsort(sbs->v, sbs->n, sizeof(*sbs->v), name_cmp);
	/* Draining, the connections that read requests go too when the
	 * rest of the configuration or the secrets changed. */
	cut = conn_rebind(live, ncfg, keep, !keep && (m->flags &
	    (IPC_CONF_BASIS | IPC_CONF_SECRETS)) != 0,
	    (const char *const *)sbs->v, sbs->n);
	for (i = 0; keep && secrets && i < sec->n; i++)
		cut += conn_cut_secret(sec->v[i]);
	/* Kept upstream sessions were made under the old sandboxes and
	 * bindings: new connections start afresh. */
	tls_sessions_flush();
	if (keep) {
		take_in_place(ncfg, ng);
		if (ng != NULL)
			log_info("reload: %zu secret(s) changed, new values and "
			    "definitions taken in place", sec->n);
		log_info("reconfigured: %zu sandboxes, %zu secrets, %d "
		    "connection(s) cut", live->nsandboxes, live->nsecrets, cut);
	} else {
		log_info("reload: %d connection(s) cut", cut);
		config_free(ncfg);
		if (!proxy.draining)
			proxy_drain();
	}
	config_strlist_clear(sbs);
	config_strlist_clear(sec);
}

/* A grant: one allowlist sandbox's new list, and nothing else.  Its
 * connections to names the list no longer covers are cut; every other
 * connection, of it and of every other sandbox, goes on. */
static void
take_allow(const struct ipc_conf_allow *m)
{
	struct moat_strlist l = { NULL, 0 };
	struct moat_sandbox *sb = NULL;
	char why[384] = "";
	size_t i;
	int cut;

	for (i = 0; i < live->nsandboxes && sb == NULL; i++)
		if (strcmp(live->sandboxes[i].name, m->sandbox) == 0)
			sb = &live->sandboxes[i];
	if (sb == NULL || sb->egress != EGRESS_ALLOWLIST ||
	    config_allow_unpack(m->names, m->len, &l, why,
	    sizeof(why)) == -1) {
		/* A draining worker may no longer have it; a running one
		 * always has (gatewayd changed the list it sent it). */
		if (!proxy.draining)
			log_warnx("gatewayd's allow list for %s does not fit "
			    "the configuration%s%s", m->sandbox,
			    *why ? ": " : "", why);
		config_strlist_clear(&l);
		return;
	}
	config_strlist_clear(&sb->allow);
	sb->allow = l;
	cut = conn_cut_allow(sb);
	log_info("sandbox %s: allow list taken in place (%zu names), %d "
	    "connection(s) cut", sb->name, sb->allow.n, cut);
}

void
reload_free(void)
{
	size_t k;

	for (k = 0; k < IPC_CHANGED_MAX; k++)
		config_strlist_clear(&staged[k]);
}

void
reload_ipc(const struct ipc_hdr *h, void *buf, size_t len, int fd)
{
	const struct ipc_conf_secret *s = buf;

	(void)len;
	switch (h->type) {
	case IPC_CONF_SECRET:
		if (secrets_stage(s->name, s->value, s->len) == -1)
			fatalx("ipc: secret \"%s\": a second value, or none",
			    s->name);
		break;
	case IPC_CONF_CHANGED:
		stage_names(buf);
		break;
	case IPC_CONF:
		if (fd != -1) {
			reconfigure(fd, buf);
			break;
		}
		/* No configuration (gatewayd could not make one): drain. */
		secrets_unstage();
		reload_free();
		if (!proxy.draining)
			proxy_drain();
		break;
	case IPC_CONF_ALLOW:
		take_allow(buf);
		break;
	default:
		fatalx("ipc: unexpected %s message", ipc_type_name(h->type));
	}
}
