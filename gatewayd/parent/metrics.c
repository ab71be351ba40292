/*
 * parent/metrics.c -- what gatewayd knows, as Prometheus text.
 *
 * Every gateway.metrics.interval seconds the parent renders its counters
 * (the policy's refusal counters read from the kernel, its children's
 * audit events counted per sandbox, restarts, reloads, set additions,
 * budgets) and writes them atomically to gateway.metrics.textfile for
 * node_exporter's textfile collector, and/or hands them to the metrics
 * process that serves gateway.metrics.listen.  Label values are sandbox,
 * secret and child names from the configuration, and words from the
 * children's events that are checked before use; the table of counted
 * series is bounded, so no guest can grow it.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "gw.h"
#include "commit.h"
#include "proc.h"
#include "reload.h"
#include "dnsd.h"
#include "proxy.h"
#include "audit.h"
#include "reg.h"
#include "policy.h"
#include "grant.h"
#include "drift.h"
#include "egress.h"
#include "budgets.h"
#include "metrics.h"
#include "ha.h"
#include "ipc.h"
#include "log.h"
#include "../metrics/metrics.h"
#include "nftrules.h"
#include "sockmap.h"
#include "promise.h"

/* --- rendering ----------------------------------------------------------- */

/* A label value of our own text (a counter's description): escaped as the
 * exposition format asks. */
void
metrics_lvalue(FILE *fp, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', fp);
		if (*s == '\n')
			fputs("\\n", fp);
		else
			fputc(*s, fp);
	}
}

static void
head(FILE *fp, const char *name, const char *type, const char *help)
{
	fprintf(fp, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
kernel_counter(void *arg, const char *family, const char *name,
    const char *what, uint64_t packets)
{
	FILE *fp = arg;

	fprintf(fp, "moat_refusals_total{family=\"%s\",counter=\"", family);
	metrics_lvalue(fp, name);
	fputs("\",reason=\"", fp);
	metrics_lvalue(fp, what);
	fprintf(fp, "\"} %llu\n", (unsigned long long)packets);
}

static void
render_children(FILE *fp, const struct gw *gw)
{
	int i;

	head(fp, "moat_child_up", "gauge", "Whether each child of gatewayd runs.");
	for (i = 0; i < PROC_MAX; i++)
		if (gw->procs[i].enabled)
			fprintf(fp, "moat_child_up{child=\"%s\",slot=\"%d\"} %d\n",
			    gw->procs[i].name, i, gw->procs[i].pid > 0);
	head(fp, "moat_child_restarts_total", "counter", "Restarts of each "
	    "child after it died.");
	for (i = 0; i < PROC_MAX; i++)
		if (gw->procs[i].enabled)
			fprintf(fp, "moat_child_restarts_total{child=\"%s\","
			    "slot=\"%d\"} %u\n", gw->procs[i].name, i,
			    gw->procs[i].restarts);
}

/* Live grants for a while per sandbox that has any, and the seconds
 * until the soonest of them ends. */
static void
render_grants(FILE *fp, const struct gw *gw)
{
	struct grant_sum *v;
	size_t i, n = grants_sums(gw, &v);

	head(fp, "moat_grants", "gauge", "Live grants for a while of each "
	    "sandbox (ctl grants).");
	for (i = 0; i < n; i++)
		fprintf(fp, "moat_grants{sandbox=\"%s\"} %zu\n", v[i].sandbox,
		    v[i].n);
	head(fp, "moat_grant_seconds_left", "gauge", "Seconds until the "
	    "soonest grant for a while of each sandbox ends.");
	for (i = 0; i < n; i++)
		fprintf(fp, "moat_grant_seconds_left{sandbox=\"%s\"} %ld\n",
		    v[i].sandbox, v[i].left);
	free(v);
}

static void
render_sandboxes(FILE *fp, const struct gw *gw)
{
	const struct moat_config *cfg = gw->cfg;
	uint64_t minute, day;
	size_t i;

	head(fp, "moat_sandboxes", "gauge", "Sandboxes in the configuration.");
	fprintf(fp, "moat_sandboxes %zu\n", cfg->nsandboxes);
	head(fp, "moat_sandbox_info", "gauge", "Each sandbox and its egress.");
	for (i = 0; i < cfg->nsandboxes; i++)
		fprintf(fp, "moat_sandbox_info{sandbox=\"%s\",egress=\"%s\"} 1\n",
		    cfg->sandboxes[i].name,
		    egress_name(cfg->sandboxes[i].egress));
	render_grants(fp, gw);
	head(fp, "moat_dns_dropped_total", "counter", "DNS queries dnsd dropped "
	    "over a sandbox's rate.");
	for (i = 0; i < dnsd_of(gw)->ndnsdrops; i++)
		fprintf(fp, "moat_dns_dropped_total{sandbox=\"%s\"} %llu\n",
		    dnsd_of(gw)->dnsdrops[i].sandbox,
		    (unsigned long long)dnsd_of(gw)->dnsdrops[i].count);
	head(fp, "moat_budget_requests", "gauge", "Requests charged to each "
	    "budgeted secret in the last minute and day.");
	for (i = 0; i < budgets_of(gw)->budgets.n; i++) {
		budget_usage(&budgets_of(gw)->budgets, budgets_of(gw)->budgets.v[i].name,
		    gw_budget_now(gw), &minute, &day);
		fprintf(fp, "moat_budget_requests{secret=\"%s\",window=\"minute\"}"
		    " %llu\nmoat_budget_requests{secret=\"%s\",window=\"day\"} "
		    "%llu\n", budgets_of(gw)->budgets.v[i].name,
		    (unsigned long long)minute, budgets_of(gw)->budgets.v[i].name,
		    (unsigned long long)day);
	}
}

/* The sandboxes with an egress budget: its size, what is left of it in
 * the current window, and whether new flows are refused. */
static void
render_budgets(FILE *fp, struct gw *gw)
{
	static const char *const names[] = {
		"moat_sandbox_egress_budget_bytes",
		"moat_sandbox_egress_left_bytes",
		"moat_sandbox_egress_spent",
	};
	static const char *const helps[] = {
		"Each sandbox's egress budget (egress_bytes_per_day).",
		"What is left of it in the current window.",
		"1 while its budget is spent and its new flows are refused.",
	};
	const struct gw_egress *e;
	unsigned long long v;
	size_t i, k;

	for (k = 0; k < 3; k++) {
		head(fp, names[k], "gauge", helps[k]);
		for (i = 0; i < gw->cfg->nsandboxes; i++) {
			if ((e = egress_of(gw, i)) == NULL || e->budget == 0)
				continue;
			v = k == 0 ? e->budget : k == 2 ? e->in_set :
			    e->spent >= e->budget ? 0 : e->budget - e->spent;
			fprintf(fp, "%s{sandbox=\"%s\"} %llu\n", names[k],
			    gw->cfg->sandboxes[i].name, v);
		}
	}
}

/* Each sandbox's traffic from the kernel's accounting counters; nothing
 * (the HELP lines alone) when they cannot be read. */
static void
render_traffic(FILE *fp, struct gw *gw)
{
	const struct moat_config *cfg = gw->cfg;
	struct nftr_acct *t;
	uint32_t *live;
	size_t i;
	bool ok;

	t = xcalloc(cfg->nsandboxes ? cfg->nsandboxes : 1, sizeof(*t));
	ok = gw->nft != NULL && nftr_acct_read(gw->nft, cfg, t) == 0;
	head(fp, "moat_sandbox_bytes_total", "counter", "Bytes each sandbox's "
	    "guest sent (out) and received (in), counted by the kernel.");
	for (i = 0; ok && i < cfg->nsandboxes; i++)
		fprintf(fp, "moat_sandbox_bytes_total{sandbox=\"%s\","
		    "direction=\"in\"} %llu\nmoat_sandbox_bytes_total{sandbox="
		    "\"%s\",direction=\"out\"} %llu\n", cfg->sandboxes[i].name,
		    (unsigned long long)t[i].bytes_in, cfg->sandboxes[i].name,
		    (unsigned long long)t[i].bytes_out);
	head(fp, "moat_sandbox_packets_total", "counter", "Packets each "
	    "sandbox's guest sent (out) and received (in).");
	for (i = 0; ok && i < cfg->nsandboxes; i++)
		fprintf(fp, "moat_sandbox_packets_total{sandbox=\"%s\","
		    "direction=\"in\"} %llu\nmoat_sandbox_packets_total{sandbox="
		    "\"%s\",direction=\"out\"} %llu\n", cfg->sandboxes[i].name,
		    (unsigned long long)t[i].packets_in, cfg->sandboxes[i].name,
		    (unsigned long long)t[i].packets_out);
	head(fp, "moat_sandbox_connections_total", "counter", "Connections "
	    "each sandbox's guest opened (out, refused attempts too) and that "
	    "were opened to it (in).");
	for (i = 0; ok && i < cfg->nsandboxes; i++)
		fprintf(fp, "moat_sandbox_connections_total{sandbox=\"%s\","
		    "direction=\"in\"} %llu\nmoat_sandbox_connections_total{"
		    "sandbox=\"%s\",direction=\"out\"} %llu\n",
		    cfg->sandboxes[i].name, (unsigned long long)t[i].conns_in,
		    cfg->sandboxes[i].name, (unsigned long long)t[i].conns_out);
	free(t);
	live = xcalloc(cfg->nsandboxes ? cfg->nsandboxes : 1, sizeof(*live));
	ok = policy_live_flows(cfg, live) == 0;
	head(fp, "moat_sandbox_connections", "gauge", "Flows of each sandbox "
	    "live now in the kernel's connection tracking, both families, "
	    "proxied and direct: TCP connections being set up or "
	    "established, other flows while tracked.");
	for (i = 0; ok && i < cfg->nsandboxes; i++)
		fprintf(fp, "moat_sandbox_connections{sandbox=\"%s\"} %lu\n",
		    cfg->sandboxes[i].name, (unsigned long)live[i]);
	free(live);
	render_budgets(fp, gw);
}

static void
render_gateway(FILE *fp, struct gw *gw)
{
	head(fp, "moat_up", "gauge", "gatewayd answers.");
	fputs("moat_up 1\n", fp);
	head(fp, "moat_start_time_seconds", "gauge", "When gatewayd started.");
	fprintf(fp, "moat_start_time_seconds %lld\n", (long long)gw->started);
	gw_modules_metrics(fp, gw);
	head(fp, "moat_reloads_total", "counter", "Reloads, by result.");
	fprintf(fp, "moat_reloads_total{result=\"ok\"} %u\n"
	    "moat_reloads_total{result=\"refused\"} %u\n", reload_of(gw)->reloads,
	    reload_of(gw)->reload_failures);
	head(fp, "moat_last_reload_timestamp_seconds", "gauge", "When the last "
	    "reload took effect (0: none yet).");
	fprintf(fp, "moat_last_reload_timestamp_seconds %lld\n",
	    (long long)reload_of(gw)->last_reload);
	head(fp, "moat_reload_duration_seconds", "gauge", "How long the last "
	    "reload took in the parent (load, check, apply).");
	fprintf(fp, "moat_reload_duration_seconds %.6f\n", reload_of(gw)->reload_ms / 1e3);
	head(fp, "moat_set_additions_total", "counter", "Addresses added to "
	    "allowlist sets for dnsd's answers, by result.");
	fprintf(fp, "moat_set_additions_total{result=\"added\"} %llu\n"
	    "moat_set_additions_total{result=\"refused\"} %llu\n",
	    (unsigned long long)policy_of(gw)->set_adds,
	    (unsigned long long)policy_of(gw)->set_refused);
	head(fp, "moat_allowlist_elements", "gauge", "Allowlist set elements "
	    "the parent has promised and not yet seen expire.");
	fprintf(fp, "moat_allowlist_elements %zu\n", policy_of(gw)->promises != NULL ?
	    promises_count(policy_of(gw)->promises) : 0);
	head(fp, "moat_audit_lines_total", "counter", "Audit log lines written.");
	fprintf(fp, "moat_audit_lines_total %llu\n",
	    (unsigned long long)audit_of(gw)->audit.lines);
	head(fp, "moat_audit_suppressed_total", "counter", "Refusals left out "
	    "of syslog by its rate limit (all are in the file).");
	fprintf(fp, "moat_audit_suppressed_total %llu\n",
	    (unsigned long long)audit_of(gw)->audit.suppressed);
	head(fp, "moat_refusals_total", "counter", "Packets the policy refused, "
	    "by counter (read from the kernel).");
	(void)policy_counters_each(gw, kernel_counter, fp);
}

char *
metrics_render(struct gw *gw, size_t *len)
{
	char *text = NULL;
	FILE *fp;

	if ((fp = open_memstream(&text, len)) == NULL)
		return NULL;
	render_gateway(fp, gw);
	render_children(fp, gw);
	render_sandboxes(fp, gw);
	render_traffic(fp, gw);
	if (metrics_of(gw)->metrics != NULL)
		metrics_series_print(fp, metrics_of(gw)->metrics);
	if (fclose(fp) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* --- where it goes ------------------------------------------------------- */

/*
 * The textfile is written by the root parent, in its loop: nothing on
 * the way may block it or be followed.  The temporary name is created
 * fresh (O_EXCL, never an existing file, FIFO or link), opened without
 * blocking and checked to be a regular file; a name something else
 * holds is left alone and another is used; the final name is replaced
 * only when it is absent or a regular file, never a FIFO, a folder or a
 * link (rename would not follow one, but something else placed it).
 */
#define TEXTFILE_TRIES	4
#define TEXTFILE_FLAGS	(O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | \
			 O_NONBLOCK | O_CLOEXEC)

/* What went wrong last, so that each new trouble is logged once. */
static char textfile_trouble[512];

static void
trouble(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
trouble(const char *fmt, ...)
{
	char msg[sizeof(textfile_trouble)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (strcmp(msg, textfile_trouble) != 0)
		log_warnx("metrics: %s", msg);
	snprintf(textfile_trouble, sizeof(textfile_trouble), "%s", msg);
}

static const char *
kind(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" : S_ISLNK(m) ? "a symbolic link" :
	    S_ISDIR(m) ? "a folder" : S_ISSOCK(m) ? "a socket" :
	    S_ISCHR(m) || S_ISBLK(m) ? "a device" : S_ISREG(m) ?
	    "a file" : "not a regular file";
}

/* The textfile's folder, made (0755, root's) where it is missing. */
static void
textfile_folder(const char *path)
{
	char dir[4096];
	char *p;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir) ||
	    (p = strrchr(dir, '/')) == NULL || p == dir)
		return;
	*p = '\0';
	for (p = dir + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(dir, 0755) == 0) {
			(void)chmod(dir, 0755);	/* whatever the umask */
			log_info("metrics: made the folder %s", dir);
		}
		*p = c;
		if (c == '\0')
			break;
	}
}

/* A temporary name beside path that nothing held: created here. */
static int
textfile_open(const char *path, char *tmp, size_t len)
{
	static unsigned seq;
	struct stat st;
	int fd, i;

	for (i = 0; i < TEXTFILE_TRIES; i++) {
		if (i == 0)
			snprintf(tmp, len, "%s.%ld.tmp", path, (long)getpid());
		else
			snprintf(tmp, len, "%s.%ld.%u.tmp", path,
			    (long)getpid(), ++seq);
		if ((fd = open(tmp, TEXTFILE_FLAGS, 0644)) == -1 &&
		    errno == ENOENT) {
			textfile_folder(path);
			fd = open(tmp, TEXTFILE_FLAGS, 0644);
		}
		if (fd == -1 && errno == EEXIST) {
			if (lstat(tmp, &st) == 0)
				trouble("%s is %s that is not ours: left alone, "
				    "writing through another name", tmp,
				    kind(st.st_mode));
			continue;
		}
		if (fd == -1) {
			trouble("%s: %s", tmp, strerror(errno));
			return -1;
		}
		if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
			trouble("%s is not a regular file once opened", tmp);
			close(fd);
			return -1;
		}
		return fd;
	}
	trouble("every temporary name beside %s is taken; not written", path);
	return -1;
}

/* Replace path at once: a reader sees the old file or the new one.
 * 0, or -1 after a log line (once for each new trouble). */
static int
textfile_write(const char *path, const char *text, size_t len)
{
	char tmp[4200];
	struct stat st;
	size_t off = 0;
	ssize_t n;
	int fd;

	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		trouble("%s is %s, not a regular file: not replaced, no metrics "
		    "written there until it is removed", path, kind(st.st_mode));
		return -1;
	}
	if ((fd = textfile_open(path, tmp, sizeof(tmp))) == -1)
		return -1;
	while (off < len) {
		if ((n = write(fd, text + off, len - off)) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		off += (size_t)n;
	}
	if (off < len || fchmod(fd, 0644) == -1 || close(fd) == -1 ||
	    rename(tmp, path) == -1) {
		trouble("%s: %s", off < len ? tmp : path, strerror(errno));
		if (off < len)
			close(fd);
		unlink(tmp);
		return -1;
	}
	if (textfile_trouble[0] != '\0' && strstr(textfile_trouble,
	    "writing through another name") == NULL) {
		log_info("metrics: %s written again", path);
		textfile_trouble[0] = '\0';
	}
	return 0;
}

static void
metrics_tick(struct gw *gw, time_t now)
{
	const struct moat_gateway *g = &gw->cfg->gw;
	size_t len;
	char *text;
	int fd;

	if (g->metrics_textfile == NULL && metrics_of(gw)->metricsfd == -1)
		return;
	if (now < metrics_of(gw)->metrics_due && (metrics_of(gw)->metricsfd == -1 ||
	    metrics_of(gw)->metrics_sent != 0 || gw->procs[PROC_METRICS].ipc == -1))
		return;
	metrics_of(gw)->metrics_due = now + g->metrics_interval;
	if ((text = metrics_render(gw, &len)) == NULL)
		return;
	if (g->metrics_textfile != NULL)
		(void)textfile_write(g->metrics_textfile, text, len);
	if (gw->procs[PROC_METRICS].ipc != -1 &&
	    (fd = gw_sealed_memfd("moat-metrics", text, len)) != -1) {
		if (ipc_send_fds(gw->procs[PROC_METRICS].ipc, IPC_METRICS, 0,
		    NULL, 0, &fd, 1) == 0)
			metrics_of(gw)->metrics_sent = now;
		close(fd);
	}
	free(text);
}

static int
metrics_next_timeout(const struct gw *gw, time_t now)
{
	if (gw->cfg->gw.metrics_textfile == NULL && metrics_of(gw)->metricsfd == -1)
		return -1;
	return metrics_of(gw)->metrics_due <= now ? 0 : (int)(metrics_of(gw)->metrics_due - now) * 1000;
}

/* The listener, with room in its queue for scrapers while a flood of
 * connections waits to be refused. */
static int
metrics_bind(const char *listen_on)
{
	int fd;

	if ((fd = gw_listen_tcp(listen_on, "metrics")) != -1)
		(void)listen(fd, 128);
	return fd;
}

int
metrics_listen(struct gw *gw)
{
	metrics_of(gw)->metrics = metrics_new();
	metrics_of(gw)->metrics_due = 0;
	metrics_of(gw)->metricsfd = -1;
	if (gw->cfg->gw.metrics_textfile != NULL)
		textfile_folder(gw->cfg->gw.metrics_textfile);
	if (gw->cfg->gw.metrics_listen == NULL)
		return 0;
	if ((metrics_of(gw)->metricsfd = metrics_bind(gw->cfg->gw.metrics_listen)) == -1)
		return -1;
	log_info("metrics endpoint http://%s/metrics",
	    gw->cfg->gw.metrics_listen);
	return 0;
}

/* --- a reload -------------------------------------------------------------- */

/* The listener a reload bound, until it commits or is refused. */
static int pending = -1;

static bool
same_str(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool
same_allow(const struct moat_gateway *a, const struct moat_gateway *b)
{
	size_t i;

	if (a->nmetrics_allow != b->nmetrics_allow)
		return false;
	for (i = 0; i < a->nmetrics_allow; i++)
		if (a->metrics_allow[i].plen != b->metrics_allow[i].plen ||
		    !addr_eq(&a->metrics_allow[i].addr,
		    &b->metrics_allow[i].addr))
			return false;
	return true;
}

int
metrics_reload_check(struct gw *gw, const struct moat_config *cfg, char *err,
    size_t errlen)
{
	const char *l = cfg->gw.metrics_listen;

	metrics_reload_abort();
	if (l == NULL || (metrics_of(gw)->metricsfd != -1 &&
	    same_str(gw->cfg->gw.metrics_listen, l)))
		return 0;
	if ((pending = metrics_bind(l)) == -1) {
		snprintf(err, errlen, "%s:%d: gateway.metrics: listen: cannot "
		    "listen on %s: %s", cfg->gw.metrics_where.file ?
		    cfg->gw.metrics_where.file : cfg->path,
		    cfg->gw.metrics_where.line, l, strerror(errno));
		return -1;
	}
	return 0;
}

void
metrics_reload_abort(void)
{
	if (pending != -1)
		close(pending);
	pending = -1;
}

/* gw->cfg is the new configuration, old the one it replaced: a listener
 * added, moved or gone, or a new allow list, takes effect now (a new
 * metrics process with the new socket and list), and the textfile's
 * folder is made if it is missing. */
void
metrics_reload(struct gw *gw, const struct moat_config *old)
{
	const struct moat_gateway *o = &old->gw, *n = &gw->cfg->gw;
	struct gw_proc *p = &gw->procs[PROC_METRICS];
	bool moved = !same_str(o->metrics_listen, n->metrics_listen) ||
	    (n->metrics_listen != NULL && metrics_of(gw)->metricsfd == -1);

	if (n->metrics_textfile != NULL &&
	    !same_str(o->metrics_textfile, n->metrics_textfile)) {
		textfile_folder(n->metrics_textfile);
		textfile_trouble[0] = '\0';
		metrics_of(gw)->metrics_due = 0;
	}
	if (!moved && same_allow(o, n)) {
		metrics_reload_abort();
		return;
	}
	if (moved) {
		if (metrics_of(gw)->metricsfd != -1)
			close(metrics_of(gw)->metricsfd);
		metrics_of(gw)->metricsfd = pending;
		pending = -1;
		if (metrics_of(gw)->metricsfd != -1)
			log_info("metrics endpoint now http://%s/metrics",
			    n->metrics_listen);
		else
			log_info("metrics endpoint closed");
	}
	p->enabled = metrics_of(gw)->metricsfd != -1;
	metrics_of(gw)->metrics_due = 0;
	if (p->pid > 0)
		proc_restart(gw, PROC_METRICS);	/* and started again */
	else if (p->enabled)
		p->restart_at = time(NULL);
}

static void
metrics_init(void *state)
{
	struct gw_metrics *st = state;

	st->metricsfd = -1;
}

/* Due at the next rendering, or at once when a metrics process that
 * started has nothing yet. */
static uint64_t
metrics_due_ms(const struct gw *gw)
{
	int ms = metrics_next_timeout(gw, time(NULL));

	if (metrics_of(gw)->metricsfd != -1 && metrics_of(gw)->metrics_sent == 0 &&
	    gw->procs[PROC_METRICS].ipc != -1)
		ms = 0;
	return gw_due_in(ms);
}

static void
metrics_timer(struct gw *gw)
{
	metrics_tick(gw, time(NULL));
}

static void
metrics_stop(struct gw *gw)
{
	if (metrics_of(gw)->metricsfd != -1)
		close(metrics_of(gw)->metricsfd);
	metrics_of(gw)->metricsfd = -1;
	metrics_free(metrics_of(gw)->metrics);
	metrics_of(gw)->metrics = NULL;
}

static void
metrics_on_commit(struct gw *gw, const struct gw_commit *c)
{
	if (c->file_changed)
		metrics_reload(gw, c->old);
}

const struct gw_module metrics_module = {
	.on_commit = metrics_on_commit,
	.name = "metrics",
	.size = sizeof(struct gw_metrics),
	.init = metrics_init,
	.start = metrics_listen,
	.due = metrics_due_ms,
	.timer = metrics_timer,
	.stop = metrics_stop,
};
