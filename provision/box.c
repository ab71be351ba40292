/*
 * box.c -- a KVM host's sandboxes at a separate gateway box (the `box`
 * section of moat.conf): create registers, destroy removes, start
 * re-registers before QEMU runs, and `provision sync-box` sends the
 * host's whole list so that the box converges to it.  The box decides;
 * provision only reports its answer (lib/regclient.c speaks the line
 * protocol).
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admit_reg.h"
#include "log.h"
#include "provision.h"
#include "regclient.h"

#define BOX_TIMEOUT_S	30

bool
box_set(const struct pv *pv)
{
	return pv->cfg != NULL && pv->cfg->box.address != NULL;
}

static struct regclient *
box_open(const struct pv *pv)
{
	const struct moat_box *b = &pv->cfg->box;
	struct regclient *rc;
	char why[512];

	rc = regclient_open(b->address, b->ca, b->has_pin ? b->pin : NULL,
	    b->cert, b->key, BOX_TIMEOUT_S, why, sizeof(why));
	if (rc == NULL)
		log_warnx("gateway box %s: %s", b->address, why);
	return rc;
}

/* One request; 0 on ok.  The box's reason (or why it could not answer)
 * is logged with what was asked. */
static int
box_ask(const struct pv *pv, struct regclient *rc, const char *req,
    const char *what, const char *ok_reason)
{
	char why[512];
	int r;

	r = regclient_request(rc, req, NULL, NULL, why, sizeof(why));
	if (r == REG_OK)
		return 0;
	if (r == REG_REFUSED && ok_reason != NULL &&
	    strcmp(why, ok_reason) == 0)
		return 0;
	log_warnx("gateway box %s %s %s: %s", pv->cfg->box.address,
	    r == REG_REFUSED ? "refused" : "did not answer", what, why);
	return -1;
}

/* " KEY=a,b,c" when the list has names; the box checks each. */
static void
append_list(char *buf, size_t len, const char *key, char *const *v, size_t n)
{
	size_t i, at;

	for (i = 0; i < n; i++) {
		at = strlen(buf);
		snprintf(buf + at, len - at, "%s%s", i == 0 ? key : ",", v[i]);
	}
}

/* 0, or -1 when the request does not fit the box's line. */
static int
register_line(char *buf, size_t len, const struct box_sandbox *b)
{
	snprintf(buf, len, "register %s %s %s %s", b->name, b->address,
	    b->mac, b->egress);
	append_list(buf, len, " allow=", b->allow, b->nallow);
	append_list(buf, len, " secrets=", b->secrets, b->nsecrets);
	return strlen(buf) + 1 < len ? 0 : -1;
}

int
box_register(const struct pv *pv, const struct box_sandbox *b)
{
	struct regclient *rc;
	char req[BOX_LINE_MAX], what[128];
	int r;

	if (register_line(req, sizeof(req), b) == -1) {
		log_warnx("sandbox \"%s\": its allowlist and secrets do not "
		    "fit one registration request (%d bytes)", b->name,
		    BOX_LINE_MAX - 1);
		return -1;
	}
	if ((rc = box_open(pv)) == NULL)
		return -1;
	snprintf(what, sizeof(what), "sandbox \"%s\"", b->name);
	r = box_ask(pv, rc, req, what, NULL);
	regclient_close(rc);
	if (r == 0)
		log_info("gateway box %s: sandbox \"%s\" registered",
		    pv->cfg->box.address, b->name);
	return r;
}

static void
sandbox_words(const struct moat_sandbox *sb, char address[64], char mac[18])
{
	addr_fmt(&sb->address, address, 64);
	snprintf(mac, 18, "%02x:%02x:%02x:%02x:%02x:%02x", sb->mac[0],
	    sb->mac[1], sb->mac[2], sb->mac[3], sb->mac[4], sb->mac[5]);
}

int
box_register_sandbox(const struct pv *pv, const struct moat_sandbox *sb)
{
	char address[64], mac[18];
	struct box_sandbox b = { sb->name, address, mac,
	    egress_name(sb->egress), sb->allow.v, sb->allow.n, sb->secrets.v,
	    sb->secrets.n };

	sandbox_words(sb, address, mac);
	return box_register(pv, &b);
}

int
box_remove(const struct pv *pv, const char *name)
{
	struct regclient *rc;
	char req[128], what[128];
	int r;

	if ((rc = box_open(pv)) == NULL)
		return -1;
	snprintf(req, sizeof(req), "remove %s", name);
	snprintf(what, sizeof(what), "the removal of \"%s\"", name);
	/* Already gone (a sync dropped it) is what we wanted. */
	r = box_ask(pv, rc, req, what, "no such sandbox");
	regclient_close(rc);
	return r;
}

/* The box's list of this host's sandboxes, one "NAME ADDRESS" line each. */
struct listed {
	char	**v;
	size_t	  n;
};

static void
listed_line(const char *line, void *arg)
{
	struct listed *l = arg;
	int len = (int)strcspn(line, " ");

	l->v = xreallocarray(l->v, l->n + 1, sizeof(*l->v));
	xasprintf(&l->v[l->n++], "%.*s", len, line);
}

static bool
name_in(char *const *v, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], name) == 0)
			return true;
	return false;
}

/* The names do not fit one sync line: ask the box for its list of this
 * host's sandboxes and remove, one request each, every one not kept.
 * Not one apply as a sync is, but it converges to the same list, and the
 * box audits each removal. */
static int
sync_by_removal(const struct pv *pv, struct regclient *rc,
    char *const *keep, size_t nkeep)
{
	struct listed l = { NULL, 0 };
	char why[512], req[64], what[128];
	size_t i;
	int r, rc_all = 0;

	r = regclient_request(rc, "list", listed_line, &l, why, sizeof(why));
	if (r != REG_OK) {
		log_warnx("gateway box %s %s the list of this host's "
		    "sandboxes: %s", pv->cfg->box.address,
		    r == REG_REFUSED ? "refused" : "did not answer", why);
		rc_all = -1;
	}
	for (i = 0; i < l.n; i++) {
		if (name_in(keep, nkeep, l.v[i]))
			continue;
		if (!reg_name_valid(l.v[i])) {
			log_warnx("gateway box %s listed a sandbox name that is "
			    "not one: not removing it", pv->cfg->box.address);
			rc_all = -1;
			break;
		}
		snprintf(req, sizeof(req), "remove %s", l.v[i]);
		snprintf(what, sizeof(what), "the removal of \"%s\"", l.v[i]);
		if (box_ask(pv, rc, req, what, "no such sandbox") == -1)
			rc_all = -1;
	}
	for (i = 0; i < l.n; i++)
		free(l.v[i]);
	free(l.v);
	return rc_all;
}

/* Register every sandbox of this host, then "sync" with the names the
 * box took: it drops this host's others.  A refused sandbox is left out
 * of the list, so the box forgets any older version of it.  A list too
 * long for one request line is settled by removals instead. */
static int
sync_all(const struct pv *pv, struct regclient *rc, size_t *nok)
{
	const struct moat_config *cfg = pv->cfg;
	char req[BOX_LINE_MAX], what[128], address[64], mac[18], *sync;
	char **kept = xcalloc(cfg->nsandboxes + 1, sizeof(*kept));
	size_t i, len = sizeof("sync -");
	int rc_all = 0;

	for (i = 0; i < cfg->nsandboxes; i++) {
		const struct moat_sandbox *sb = &cfg->sandboxes[i];

		struct box_sandbox b = { sb->name, address, mac,
		    egress_name(sb->egress), sb->allow.v, sb->allow.n,
		    sb->secrets.v, sb->secrets.n };

		sandbox_words(sb, address, mac);
		snprintf(what, sizeof(what), "sandbox \"%s\"", sb->name);
		if (register_line(req, sizeof(req), &b) == -1) {
			log_warnx("%s: its allowlist and secrets do not fit one "
			    "registration request", what);
			rc_all = -1;
			continue;
		}
		if (box_ask(pv, rc, req, what, NULL) == -1) {
			rc_all = -1;
			continue;
		}
		kept[(*nok)++] = sb->name;
		len += strlen(sb->name) + 1;
	}
	if (len > REG_REQUEST_MAX + 1) {
		log_info("gateway box %s: %zu names do not fit one sync request "
		    "(%d bytes): removing this host's others one by one",
		    cfg->box.address, *nok, REG_REQUEST_MAX);
		if (sync_by_removal(pv, rc, kept, *nok) == -1)
			rc_all = -1;
		free(kept);
		return rc_all;
	}
	sync = xcalloc(1, len);
	strcpy(sync, "sync ");
	for (i = 0; i < *nok; i++) {
		if (i > 0)
			strcat(sync, ",");
		strcat(sync, kept[i]);
	}
	if (*nok == 0)
		strcat(sync, "-");
	if (box_ask(pv, rc, sync, "the sync", NULL) == -1)
		rc_all = -1;
	free(sync);
	free(kept);
	return rc_all;
}

int
cmd_sync_box(struct pv *pv, int argc, char **argv)
{
	struct regclient *rc;
	size_t nok = 0;
	int r, lockfd;

	if (argc != 1) {
		log_warnx("usage: provision sync-box");
		return EXIT_USAGE;
	}
	if (pv_load(pv) == -1)
		return EXIT_FALSE;
	if (!box_set(pv)) {
		log_warnx("%s has no box section: there is no gateway box to "
		    "sync with", pv->conf_path);
		return EXIT_USAGE;
	}
	/* Under the lock creates and destroys hold: the list sent is the
	 * list this host has. */
	if (mkdir(pv->sbdir, 0755) == -1 && errno != EEXIST)
		log_warn("mkdir %s", pv->sbdir);
	if ((lockfd = dir_lock(pv->sbdir)) == -1)
		return EXIT_SYSTEM;
	if (pv_load(pv) == -1) {
		close(lockfd);
		return EXIT_FALSE;
	}
	if ((rc = box_open(pv)) == NULL) {
		close(lockfd);
		return EXIT_SYSTEM;
	}
	r = sync_all(pv, rc, &nok);
	regclient_close(rc);
	close(lockfd);
	printf("gateway box %s: %zu of %zu sandbox(es) registered%s\n",
	    pv->cfg->box.address, nok, pv->cfg->nsandboxes,
	    r == 0 ? ", the box has no others of this host" : "");
	return r == 0 ? EXIT_OK : EXIT_FALSE;
}
