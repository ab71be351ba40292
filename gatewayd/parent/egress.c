/*
 * parent/egress.c -- egress budgets (egress_bytes_per_day): how many bytes
 * each sandbox's guest may send in a window, and the refusal of its new
 * flows once they are spent.
 *
 * The kernel counts: acct_out holds what each guest sends (every packet
 * past the source checks, to anywhere: the internet, the proxy, dnsd),
 * and with gateway.ipv6 acct6_out what it sends over IPv6; the two add
 * up (nftr_acct_read).
 * Once a second the parent reads those counters and charges what each
 * sandbox sent since the last read to its window's total.  A sandbox
 * whose total reaches its budget is put in the kernel's budget_spent set
 * (and its IPv6 address in budget_spent6) until its window ends: from then on the kernel refuses every new flow
 * it opens (nft-rules, reason "budget").  Flows already open go on.
 *
 * A window is a UTC day (00:00 to 24:00).  What was spent survives a
 * reload (the totals are the parent's, read before and after every
 * policy change) and a restart of gatewayd (the
 * totals are written to STATE_DIR/egress-budget every few seconds and
 * when gatewayd stops; the counters the kernel kept meanwhile are
 * charged on start).
 *
 * A budget limits a guest, not a name: a total is kept for the window
 * after its sandbox is removed, and a sandbox that appears in the window
 * takes over the total of one that is gone: first one at the same
 * address, else one of the same owner (the largest).  So renaming a
 * sandbox, creating it again at its address, or an owner's destroying
 * and creating sandboxes gives no fresh budget: an owner with N sandboxes
 * has at most N budgets a window.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gw.h"
#include "commit.h"
#include "audit.h"
#include "policy.h"
#include "egress.h"
#include "ha.h"
#include "log.h"
#include "nftrules.h"

#define EGRESS_TICK_MS	1000	/* counters read this often */
#define EGRESS_SAVE_S	5	/* totals written at most this often */
#define EGRESS_FILE	"egress-budget"

/* The window's length: a day, or MOAT_TEST_EGRESS_WINDOW seconds (for
 * the tests only: a day cannot be waited for). */
static long
window_len(void)
{
	static long len;
	const char *e;
	char *end;
	long v;

	if (len != 0)
		return len;
	len = 86400;
	if ((e = getenv("MOAT_TEST_EGRESS_WINDOW")) != NULL) {
		v = strtol(e, &end, 10);
		if (*e != '\0' && *end == '\0' && v >= 1 && v <= 86400)
			len = v;
		log_warnx("egress budget windows of %ld s "
		    "(MOAT_TEST_EGRESS_WINDOW, for tests)", len);
	}
	return len;
}

static uint64_t
real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int64_t
window_now(void)
{
	return (int64_t)(real_ms() / 1000 / (uint64_t)window_len());
}

/* Milliseconds left in the current window (at least 1). */
static uint32_t
window_left_ms(void)
{
	uint64_t len = (uint64_t)window_len() * 1000, now = real_ms();
	uint64_t left = len - now % len;

	return left == 0 ? 1 : (uint32_t)left;
}

static struct gw_egress *
find(struct gw_egress *v, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return &v[i];
	return NULL;
}

/* The entry of sandbox i of a configuration: after egress_after_apply
 * entry i is sandbox i of the configuration applied, so one comparison
 * finds it but at start and around a reload. */
static struct gw_egress *
entry(struct gw_egress *v, size_t n, size_t i, const char *name)
{
	if (i < n && strcmp(v[i].name, name) == 0)
		return &v[i];
	return find(v, n, name);
}

/* A new window: nothing spent, nothing audited; the entries of sandboxes
 * no longer configured are dropped. */
static void
roll(struct gw *gw, int64_t w)
{
	size_t i, n = 0;

	for (i = 0; i < egress_state(gw)->negress; i++) {
		if (!egress_state(gw)->egress[i].configured)
			continue;
		egress_state(gw)->egress[n] = egress_state(gw)->egress[i];
		egress_state(gw)->egress[n].spent = 0;
		egress_state(gw)->egress[n].replicated = 0;
		egress_state(gw)->egress[n].audited = false;
		n++;
	}
	egress_state(gw)->negress = n;
	if (egress_state(gw)->egress_window != 0)
		log_info("egress budgets: a new window");
	egress_state(gw)->egress_window = w;
	egress_state(gw)->egress_dirty = true;
}

/* Charge what each configured sandbox sent since the last read.  A
 * counter below the last read was made again (the policy replaced):
 * all of it is new. */
static int
charge(struct gw *gw, const struct moat_config *cfg)
{
	struct nftr_acct *t;
	size_t i;

	if (gw->nft == NULL || cfg->nsandboxes == 0)
		return 0;
	t = xcalloc(cfg->nsandboxes, sizeof(*t));
	if (nftr_acct_read(gw->nft, cfg, t) == -1) {
		log_warnx("egress budgets: %s", nftr_error(gw->nft));
		free(t);
		return -1;
	}
	for (i = 0; i < cfg->nsandboxes; i++) {
		struct gw_egress *e = entry(egress_state(gw)->egress, egress_state(gw)->negress, i,
		    cfg->sandboxes[i].name);
		uint64_t now = t[i].bytes_out;

		if (e == NULL || !e->configured ||
		    memcmp(&e->addr, &cfg->sandboxes[i].address,
		    sizeof(e->addr)) != 0)
			continue;
		e->spent += now >= e->last ? now - e->last : now;
		if (now != e->last)
			egress_state(gw)->egress_dirty = true;
		e->last = now;
	}
	free(t);
	return 0;
}

/*
 * Judge which sandboxes have spent their budget, audit each once a
 * window, and with sync put exactly those in budget_spent.  Without sync
 * (the counters' tick, the other box's total) a change is a commit of its
 * own (gw_commit), which syncs the set from inside it (egress_after_apply):
 * budget_spent changes only there.  True if the set must change.
 */
static bool
enforce(struct gw *gw, bool sync)
{
	const struct moat_sandbox *sb;
	struct moat_addr *a;
	uint32_t *tmo, left = window_left_ms();
	char b[24], s[24];
	size_t i, n = 0;
	bool changed = egress_state(gw)->egress_resync;

	/* Each spent sandbox's IPv4 address, and its IPv6 address when it
	 * has one (budget_spent6): its IPv6 is no way around the budget. */
	a = xcalloc(egress_state(gw)->negress * 2 + 1, sizeof(*a));
	tmo = xcalloc(egress_state(gw)->negress * 2 + 1, sizeof(*tmo));
	for (i = 0; i < egress_state(gw)->negress; i++) {
		struct gw_egress *e = &egress_state(gw)->egress[i];
		bool over = e->configured && e->budget > 0 &&
		    e->spent >= e->budget;

		if (over != e->in_set)
			changed = true;
		e->in_set = over;
		if (!over)
			continue;
		a[n] = e->addr;
		tmo[n++] = left;
		if ((sb = config_sandbox_by_name(gw->cfg, e->name)) != NULL &&
		    config_sandbox_addr6(gw->cfg, sb, &a[n]))
			tmo[n++] = left;
		if (e->audited)
			continue;
		e->audited = true;
		egress_state(gw)->egress_dirty = true;
		snprintf(b, sizeof(b), "%llu", (unsigned long long)e->budget);
		snprintf(s, sizeof(s), "%llu", (unsigned long long)e->spent);
		log_info("sandbox %s: egress budget spent (%s of %s bytes); "
		    "new flows refused until the window ends", e->name, s, b);
		audit_event(gw, "egress-budget-spent", "sandbox", e->name,
		    "budget_bytes", b, "spent_bytes", s, NULL);
	}
	if (sync && changed && egress_state(gw)->egress_policy) {
		if (nftr_budget_set(gw->nft, a, n, tmo) == -1)
			log_warnx("egress budgets: %s", nftr_error(gw->nft));
		else
			egress_state(gw)->egress_resync = false;
	}
	free(a);
	free(tmo);
	return changed && egress_state(gw)->egress_policy;
}

/* A sandbox's budget ran out (or a new window began): through the one
 * commit path.  It widens nothing and cuts nothing: flows already open go
 * on; budget_spent refuses new ones. */
static void
budget_commit(struct gw *gw)
{
	struct gw_commit c = { .why = "egress budget" };
	char err[512];

	if (gw_commit(gw, NULL, &c, err, sizeof(err)) == -1) {
		log_warnx("egress budgets: the kernel refused the change: %s; "
		    "tried again in a second", err);
		egress_state(gw)->egress_resync = true;
	}
}

/* ---- the state file ------------------------------------------------- */

static void
save(struct gw *gw)
{
	char path[1024], tmp[1100], ip[64];
	FILE *fp;
	size_t i;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", gw->cfg->gw.state_dir,
	    EGRESS_FILE);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	/* Root's alone: it names every member's sandboxes. */
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) == -1 || (fp = fdopen(fd, "w")) == NULL) {
		log_warn("egress budgets: %s", tmp);
		if (fd != -1)
			close(fd);
		return;
	}
	fprintf(fp, "# moat egress budgets: written by gatewayd\n"
	    "window %lld %ld\n", (long long)egress_state(gw)->egress_window, window_len());
	for (i = 0; i < egress_state(gw)->negress; i++) {
		const struct gw_egress *e = &egress_state(gw)->egress[i];

		fprintf(fp, "%s %s %llu %llu %d %s\n", e->name,
		    addr_fmt(&e->addr, ip, sizeof(ip)),
		    (unsigned long long)e->spent,
		    (unsigned long long)e->last, e->audited,
		    e->owner[0] != '\0' ? e->owner : "-");
	}
	if (fclose(fp) == EOF || rename(tmp, path) == -1) {
		log_warn("egress budgets: %s", path);
		unlink(tmp);
		return;
	}
	egress_state(gw)->egress_saved = time(NULL);
	egress_state(gw)->egress_dirty = false;
}

/* What the last gatewayd wrote, if it is about the current window;
 * anything malformed is ignored (the budgets then start at zero). */
static void
load(struct gw *gw)
{
	char path[1024], line[256], name[IPC_NAME_LEN], ip[64];
	char owner[IPC_NAME_LEN];
	unsigned long long spent, last;
	long long w;
	long len;
	int audited;
	FILE *fp;
	struct gw_egress e;

	snprintf(path, sizeof(path), "%s/%s", gw->cfg->gw.state_dir,
	    EGRESS_FILE);
	if ((fp = fopen(path, "r")) == NULL) {
		if (errno != ENOENT)
			log_warn("egress budgets: %s", path);
		return;
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		if (line[0] == '#')
			continue;
		if (sscanf(line, "window %lld %ld", &w, &len) == 2) {
			if (w != window_now() || len != window_len())
				break;
			egress_state(gw)->egress_window = w;
			continue;
		}
		memset(&e, 0, sizeof(e));
		/* The owner (a sixth field) is missing in files written by
		 * an older gatewayd. */
		strcpy(owner, "-");
		if (egress_state(gw)->egress_window == 0 || sscanf(line, "%32s %63s %llu "
		    "%llu %d %32s", name, ip, &spent, &last, &audited,
		    owner) < 5 ||
		    addr_parse(ip, &e.addr) == -1 ||
		    find(egress_state(gw)->egress, egress_state(gw)->negress, name) != NULL)
			continue;
		snprintf(e.name, sizeof(e.name), "%s", name);
		if (strcmp(owner, "-") != 0)
			snprintf(e.owner, sizeof(e.owner), "%s", owner);
		e.spent = spent;
		e.last = last;
		e.audited = audited != 0;
		egress_state(gw)->egress = xreallocarray(egress_state(gw)->egress, egress_state(gw)->negress + 1,
		    sizeof(*egress_state(gw)->egress));
		egress_state(gw)->egress[egress_state(gw)->negress++] = e;
	}
	fclose(fp);
	if (egress_state(gw)->negress > 0)
		log_info("egress budgets: %zu sandbox(es)' totals carried "
		    "over from %s", egress_state(gw)->negress, path);
}

/* ---- the hooks ------------------------------------------------------ */

/* Before the policy changes: charge what the counters hold now, so that
 * nothing is lost if the change makes them again.  On start, the totals
 * of the last run first, and the counters it left in the kernel. */
void
egress_before_apply(struct gw *gw, const struct moat_config *cur)
{
	size_t i;

	if (!egress_state(gw)->egress_loaded) {
		egress_state(gw)->egress_loaded = true;
		load(gw);
		/* The last run's sandboxes, matched by name and address,
		 * are charged from the counters it left. */
		for (i = 0; i < egress_state(gw)->negress; i++)
			egress_state(gw)->egress[i].configured = true;
		if (egress_state(gw)->egress_window == 0)
			roll(gw, window_now());
	}
	if (egress_state(gw)->egress_window != window_now())
		roll(gw, window_now());
	(void)charge(gw, cur);
}

/* The total a new sandbox SB takes over: that of a sandbox gone from the
 * configuration (not taken yet) at SB's address, else the largest of one
 * of SB's owner; NULL for a fresh one. */
static struct gw_egress *
heir_of(struct gw *gw, const struct moat_sandbox *sb)
{
	struct gw_egress *e, *best = NULL;
	size_t i;

	for (i = 0; i < egress_state(gw)->negress; i++) {
		e = &egress_state(gw)->egress[i];
		if (e->name[0] != '\0' && memcmp(&e->addr, &sb->address,
		    sizeof(e->addr)) == 0)
			return e;
	}
	if (sb->owner == NULL || sb->owner[0] == '\0')
		return NULL;
	for (i = 0; i < egress_state(gw)->negress; i++) {
		e = &egress_state(gw)->egress[i];
		if (e->name[0] != '\0' && strcmp(e->owner, sb->owner) == 0 &&
		    (best == NULL || e->spent > best->spent))
			best = e;
	}
	return best;
}

/* After the policy changed to cfg: one entry per configured sandbox (its
 * total kept by name), the counters' values as the baseline, and the
 * kernel's budget_spent made to match (a full replacement of the tables
 * keeps its elements, but budgets may have changed). */
void
egress_after_apply(struct gw *gw, const struct moat_config *cfg)
{
	struct gw_egress *v;
	struct nftr_acct *t;
	size_t i, n = 0;
	bool ok;

	v = xcalloc(cfg->nsandboxes + egress_state(gw)->negress + 1, sizeof(*v));
	t = xcalloc(cfg->nsandboxes + 1, sizeof(*t));
	ok = gw->nft != NULL && nftr_acct_read(gw->nft, cfg, t) == 0;
	/* Those that keep their name first, so that an heir never takes a
	 * total that is still its own sandbox's. */
	for (i = 0; i < cfg->nsandboxes; i++) {
		struct gw_egress *old = entry(egress_state(gw)->egress, egress_state(gw)->negress, i,
		    cfg->sandboxes[i].name);

		if (old != NULL) {
			v[i] = *old;
			old->name[0] = '\0';	/* taken */
		}
	}
	for (i = 0; i < cfg->nsandboxes; i++) {
		const struct moat_sandbox *sb = &cfg->sandboxes[i];
		struct gw_egress *old;
		long long b = config_egress_budget(cfg, sb);

		if (v[n].name[0] == '\0') {
			if ((old = heir_of(gw, sb)) != NULL) {
				log_info("sandbox %s: takes over the egress "
				    "total of %s (%llu bytes this window)",
				    sb->name, old->name,
				    (unsigned long long)old->spent);
				v[n] = *old;
				old->name[0] = '\0';
			}
			snprintf(v[n].name, sizeof(v[n].name), "%s", sb->name);
		}
		snprintf(v[n].owner, sizeof(v[n].owner), "%s",
		    sb->owner != NULL ? sb->owner : "");
		v[n].addr = sb->address;
		v[n].budget = b > 0 ? (uint64_t)b : 0;
		v[n].configured = true;
		v[n].last = ok ? t[i].bytes_out : 0;
		n++;
	}
	/* Removed sandboxes keep their totals until the window ends, so
	 * that destroying and creating one again does not reset it. */
	for (i = 0; i < egress_state(gw)->negress; i++)
		if (egress_state(gw)->egress[i].name[0] != '\0') {
			v[n] = egress_state(gw)->egress[i];
			v[n].configured = false;
			v[n++].in_set = false;
		}
	free(egress_state(gw)->egress);
	free(t);
	egress_state(gw)->egress = v;
	egress_state(gw)->negress = n;
	egress_state(gw)->egress_policy = config_any_egress_budget(cfg);
	egress_state(gw)->egress_resync = true;
	egress_state(gw)->egress_dirty = true;
	(void)enforce(gw, true);
	if (egress_state(gw)->egress_policy)
		save(gw);
}

/* The master's totals that grew since the other box last heard them. */
static void
replicate(struct gw *gw)
{
	struct ipc_ha_spent m;
	size_t i;

	if (ha_of(gw)->ha_role != HA_MASTER)
		return;
	for (i = 0; i < egress_state(gw)->negress; i++) {
		struct gw_egress *e = &egress_state(gw)->egress[i];

		if (!e->configured || e->budget == 0 || e->spent == e->replicated)
			continue;
		memset(&m, 0, sizeof(m));
		snprintf(m.sandbox, sizeof(m.sandbox), "%s", e->name);
		m.window = egress_state(gw)->egress_window;
		m.bytes = e->spent;
		harepl_forward(gw, IPC_HA_SPENT, &m, sizeof(m));
		e->replicated = e->spent;
	}
}

/* Every budgeted sandbox's total, for the whole state the other box gets
 * when the link is (re)made (harepl_snapshot). */
void
egress_snapshot(struct gw *gw)
{
	size_t i;

	for (i = 0; i < egress_state(gw)->negress; i++)
		egress_state(gw)->egress[i].replicated = 0;
	replicate(gw);
}

/* The other box's total for a sandbox: the larger of it and ours counts,
 * so a failover gives a guest no more than what the master had not yet
 * sent of it (a second's worth). */
void
egress_merge(struct gw *gw, const struct ipc_ha_spent *m)
{
	struct gw_egress *e;

	if (!egress_state(gw)->egress_policy)
		return;
	if (egress_state(gw)->egress_window != window_now()) {
		roll(gw, window_now());
		egress_state(gw)->egress_resync = true;
	}
	if (m->window != egress_state(gw)->egress_window ||
	    (e = find(egress_state(gw)->egress, egress_state(gw)->negress, m->sandbox)) == NULL ||
	    !e->configured || m->bytes <= e->spent)
		return;
	e->spent = e->replicated = m->bytes;
	egress_state(gw)->egress_dirty = true;
	if (enforce(gw, false))
		budget_commit(gw);
}

static void
egress_tick(struct gw *gw)
{
	uint64_t now = gw_mono_ms();

	if (!egress_state(gw)->egress_policy || now < egress_state(gw)->egress_next_ms)
		return;
	egress_state(gw)->egress_next_ms = now + EGRESS_TICK_MS;
	if (egress_state(gw)->egress_window != window_now()) {
		roll(gw, window_now());
		egress_state(gw)->egress_resync = true;
	}
	if (charge(gw, gw->cfg) == 0) {
		if (enforce(gw, false))
			budget_commit(gw);
		replicate(gw);
	}
	if (egress_state(gw)->egress_dirty && time(NULL) - egress_state(gw)->egress_saved >= EGRESS_SAVE_S)
		save(gw);
}

static int
egress_timeout(const struct gw *gw, int timeout)
{
	uint64_t now = gw_mono_ms(), next;

	if (!egress_state(gw)->egress_policy)
		return timeout;
	next = egress_state(gw)->egress_next_ms <= now ? 0 : egress_state(gw)->egress_next_ms - now;
	return timeout >= 0 && (uint64_t)timeout < next ? timeout : (int)next;
}

void
egress_stop(struct gw *gw)
{
	if (egress_state(gw)->egress_policy) {
		(void)charge(gw, gw->cfg);
		save(gw);
	}
	free(egress_state(gw)->egress);
	egress_state(gw)->egress = NULL;
	egress_state(gw)->negress = 0;
}

const struct gw_egress *
egress_of(const struct gw *gw, size_t i)
{
	const struct gw_egress *e;

	if (i >= gw->cfg->nsandboxes)
		return NULL;
	e = entry(egress_state(gw)->egress, egress_state(gw)->negress, i, gw->cfg->sandboxes[i].name);
	return e != NULL && e->configured ? e : NULL;
}

static uint64_t
egress_due(const struct gw *gw)
{
	int ms = egress_timeout(gw, -1);

	return gw_due_in(ms);
}

const struct gw_module egress_module = {
	.name = "egress",
	.size = sizeof(struct gw_egress_state),
	.stop = egress_stop,
	.due = egress_due,
	.timer = egress_tick,
};
