/*
 * parent/team.c -- a team-shared host: members of group moat create,
 * start, stop and destroy their own sandboxes through the control socket,
 * and gatewayd does the privileged work by running provision as root on
 * their behalf.
 *
 * The caller is known only by SO_PEERCRED.  Before anything runs, the
 * request is checked here against what the caller owns, which secrets they
 * may attach and their quota; only options from a fixed table reach
 * provision, in an argument vector (never a shell), with --owner set to
 * the caller.  gatewayd never opens a file a member names: the member's
 * provision opens each one as the member and passes the descriptor with
 * the request (SCM_RIGHTS); provision gets it as /dev/fd/N and imports
 * it, so nothing is opened by name later either.
 *
 * provision writes straight to the client's socket (the control process
 * attached it to the request); when it exits, the client gets "ok" or
 * "error: ..." through the control process (ctl_job_reaped).  The parent
 * never waits for it: provision itself asks gatewayd to reload.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfgtxn.h"
#include "gw.h"
#include "audit.h"
#include "ctl.h"
#include "team.h"
#include "guestacct.h"
#include "log.h"

/* create's options are provision's own table (lib/guestacct.c). */
static const struct guest_opt start_opts[] = {
	{ "--accel", GUEST_ARG }, { NULL, 0 }
};
static const struct guest_opt stop_opts[] = {
	{ "--force", GUEST_FLAG }, { "--timeout", GUEST_ARG }, { NULL, 0 }
};

static const struct {
	const char		*verb;
	const struct guest_opt	*opts;
	bool			 create;
} pv_verbs[] = {
	{ "create", guest_create_opts, true },
	{ "start", start_opts, false },
	{ "stop", stop_opts, false },
	{ "destroy", stop_opts, false },
};

#define JOB_MAX_ARGS	(GW_CTL_MAX_ARGS + 16)

/* The request, checked: what provision will be given. */
struct job {
	const char	*argv[JOB_MAX_ARGS];
	int		 argc;
	int		 paths[GW_CTL_MAX_ARGS];	/* argv indexes to open */
	int		 npaths;
	const char	*name;
	const char	*owner;			/* --owner given by an admin */
	const char	*cpus, *memory, *disk, *kernel, *image, *egress;
	const char	*secrets[GW_CTL_MAX_ARGS];
	int		 nsecrets;
	const int	*fds;		/* one per path, in order */
	size_t		 nfds;
};

static bool
in_group(const char *user, gid_t primary, const char *group)
{
	struct group *gr;
	gid_t groups[256];
	int i, n = 256;

	if (group == NULL || user == NULL || (gr = getgrnam(group)) == NULL)
		return false;
	if (primary == gr->gr_gid)
		return true;
	if (getgrouplist(user, primary, groups, &n) == -1)
		return false;
	for (i = 0; i < n; i++)
		if (groups[i] == gr->gr_gid)
			return true;
	return false;
}

bool
team_is_admin(const struct moat_config *cfg, uid_t uid, const char *user)
{
	struct passwd *pw;

	if (uid == 0)
		return true;
	if (user == NULL || (pw = getpwnam(user)) == NULL || pw->pw_uid != uid)
		return false;
	return in_group(user, pw->pw_gid, cfg->gw.admin_group);
}

/* Warnings for a config that validates but may not mean what was written:
 * the loader's own, then names this host does not know.  One line each,
 * "file:line: warning: ...", in a malloc'ed text; NULL if none. */
char *
team_config_warnings(const struct moat_config *cfg,
    const struct moat_errors *errs)
{
	char *text = NULL;
	size_t len = 0, i;
	FILE *fp;

	if ((fp = open_memstream(&text, &len)) == NULL)
		fatalx("out of memory");
	config_warnings_print(fp, errs);
	for (i = 0; i < cfg->nsandboxes; i++) {
		const struct moat_sandbox *s = &cfg->sandboxes[i];
		if (s->owner != NULL && getpwnam(s->owner) == NULL)
			fprintf(fp, "%s:%d: warning: sandbox \"%s\": owner \"%s\" "
			    "is not a user on this host; only root and the "
			    "admin group can manage it\n", s->where.file,
			    s->where.line, s->name, s->owner);
	}
	if (cfg->gw.admin_group != NULL && getgrnam(cfg->gw.admin_group) == NULL)
		fprintf(fp, "%s: warning: gateway.admin_group \"%s\" is not a "
		    "group on this host; only root is an admin\n", cfg->path,
		    cfg->gw.admin_group);
	fclose(fp);
	if (len == 0) {
		free(text);
		return NULL;
	}
	return text;
}

static bool
name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 32 && s[0] != '-' && s[0] != '_' &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-_") == n;
}

static const struct guest_opt *
opt_find(const struct guest_opt *t, const char *name)
{
	for (; t->name != NULL; t++)
		if (strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

/* Remember the values the checks below need. */
static void
job_note(struct job *j, const char *opt, const char *val)
{
	static const struct {
		const char	*opt;
		size_t		 off;
	} notes[] = {
		{ "--owner", offsetof(struct job, owner) },
		{ "--cpus", offsetof(struct job, cpus) },
		{ "--memory", offsetof(struct job, memory) },
		{ "--disk", offsetof(struct job, disk) },
		{ "--kernel", offsetof(struct job, kernel) },
		{ "--image", offsetof(struct job, image) },
		{ "--egress", offsetof(struct job, egress) },
	};
	size_t i;

	if (strcmp(opt, "--secret") == 0) {
		j->secrets[j->nsecrets++] = val;
		return;
	}
	for (i = 0; i < sizeof(notes) / sizeof(notes[0]); i++)
		if (strcmp(notes[i].opt, opt) == 0)
			*(const char **)((char *)j + notes[i].off) = val;
}

/* argv[0] is the verb; options from the verb's table, one NAME. */
static int
job_parse(struct ctl_req *r, size_t v, struct job *j)
{
	const struct guest_opt *o;
	int i;

	for (i = 1; i < r->argc; i++) {
		if (r->argv[i][0] != '-') {
			if (j->name != NULL || !name_ok(r->argv[i])) {
				ctl_refuse(r, NULL, "usage: %s [options] NAME "
				    "(one NAME of a-z, 0-9, '-', '_')",
				    pv_verbs[v].verb);
				return -1;
			}
			j->name = r->argv[i];
			continue;
		}
		if ((o = opt_find(pv_verbs[v].opts, r->argv[i])) == NULL ||
		    (o->kind == GUEST_ADMIN && !r->admin)) {
			ctl_refuse(r, NULL, "%s: option %.64s is not available "
			    "here", pv_verbs[v].verb, r->argv[i]);
			return -1;
		}
		j->argv[j->argc++] = r->argv[i];
		if (o->kind == GUEST_FLAG)
			continue;
		if (++i == r->argc) {
			ctl_refuse(r, NULL, "%s: %s needs a value",
			    pv_verbs[v].verb, o->name);
			return -1;
		}
		if (o->kind == GUEST_PATH)
			j->paths[j->npaths++] = j->argc;
		job_note(j, o->name, r->argv[i]);
		j->argv[j->argc++] = r->argv[i];
	}
	if (j->name == NULL) {
		ctl_refuse(r, NULL, "usage: %s [options] NAME", pv_verbs[v].verb);
		return -1;
	}
	return 0;
}

/* --- quotas ------------------------------------------------------------ */

static int
quota_check(struct ctl_req *r, const struct job *j, const char *owner)
{
	const struct moat_config *cfg = r->gw->cfg;
	const struct moat_quota *q = config_quota_for(cfg, owner);
	struct guest_usage have = { 0 }, want;
	size_t i;

	if (q == NULL)
		return 0;
	for (i = 0; i < cfg->nsandboxes; i++)
		if (cfg->sandboxes[i].owner != NULL &&
		    strcmp(cfg->sandboxes[i].owner, owner) == 0)
			guestacct_add(cfg->gw.state_dir,
			    cfg->sandboxes[i].name, &have);
	want.sandboxes = 1;
	want.cpus = j->cpus ? atol(j->cpus) : GUEST_DEFAULT_CPUS;
	want.memory_mb = j->memory ? guestacct_memory_mb(j->memory) :
	    GUEST_DEFAULT_MEMORY_MB;
	want.disk_gb = j->disk ? guestacct_disk_gb(j->disk) : j->kernel ?
	    guestacct_disk_gb(GUEST_KERNEL_DISK) : -1;
	if (want.cpus < 1 || want.memory_mb < 1 || (j->disk && want.disk_gb < 0)) {
		ctl_refuse(r, j->name, "create: --cpus, --memory or --disk is "
		    "malformed");
		return -1;
	}
	if (want.disk_gb < 0 && q->disk_gb >= 0) {
		ctl_refuse(r, j->name, "quota: give --disk SIZE: %s's disk space "
		    "is limited to %ld GiB", owner, q->disk_gb);
		return -1;
	}
#define OVER(field, what, unit)						\
	if (q->field >= 0 && have.field + want.field > q->field) {	\
		ctl_refuse(r, j->name, "quota: %s may use at most %ld "	\
		    what "%s; %ld in use, this request asks for %ld", owner,	\
		    q->field, unit, have.field, want.field);		\
		return -1;						\
	}
	OVER(sandboxes, "sandboxes", "")
	OVER(cpus, "vCPUs", "")
	OVER(memory_mb, "MiB of memory", "")
	OVER(disk_gb, "GiB of disk", "")
#undef OVER
	return 0;
}

/* --- checks ------------------------------------------------------------- */

static int
check_secrets(struct ctl_req *r, const struct job *j, const char *owner)
{
	const struct moat_secret *sec;
	int i;

	for (i = 0; i < j->nsecrets; i++) {
		sec = config_secret_by_name(r->gw->cfg, j->secrets[i]);
		/* Admins may attach their own unowned secrets; everyone else
		 * only what the sandbox's owner may use.  One answer for
		 * "missing" and "not yours": no oracle. */
		if (sec != NULL && ((owner != NULL &&
		    secret_usable_by(sec, owner)) || (r->admin &&
		    (owner == NULL || sec->owner == NULL))))
			continue;
		ctl_refuse(r, j->name, "create: no secret \"%.32s\" that %s "
		    "owns or that is shared with %s", j->secrets[i],
		    owner ? owner : "root", owner ? owner : "root");
		return -1;
	}
	return 0;
}

static bool
create_running(const struct gw *gw, const char *user)
{
	int i;

	for (i = 0; i < GW_MAX_CLIENTS; i++)
		if (ctl_of(gw)->jobs[i].pid > 0 &&
		    strcmp(ctl_of(gw)->jobs[i].verb, "create") == 0 &&
		    strcmp(ctl_of(gw)->jobs[i].user, user) == 0)
			return true;
	return false;
}

/* How wide an egress mode is: none < allowlist < open. */
static int
egress_width(enum moat_egress e)
{
	return e == EGRESS_OPEN ? 2 : e == EGRESS_ALLOWLIST ? 1 : 0;
}

/* A member creates nothing wider than gateway.member_max_egress. */
static int
check_egress(struct ctl_req *r, const struct job *j)
{
	enum moat_egress max = r->gw->cfg->gw.member_max_egress;
	enum moat_egress want = j->egress == NULL ? EGRESS_NONE :
	    strcmp(j->egress, "open") == 0 ? EGRESS_OPEN :
	    strcmp(j->egress, "allowlist") == 0 ? EGRESS_ALLOWLIST : EGRESS_NONE;

	if (r->admin || egress_width(want) <= egress_width(max))
		return 0;
	ctl_refuse(r, j->name, "create: --egress %s is wider than members may "
	    "create here (gateway.member_max_egress = \"%s\"); root%s%s can "
	    "create it", egress_name(want), egress_name(max),
	    r->gw->cfg->gw.admin_group ? " or a member of group " : "",
	    r->gw->cfg->gw.admin_group ? r->gw->cfg->gw.admin_group : "");
	return -1;
}

static int
check_create(struct ctl_req *r, struct job *j, const char **owner)
{
	*owner = r->admin && j->owner ? j->owner :
	    r->uid == 0 && j->owner == NULL ? NULL : r->user;
	if (*owner == r->user && !ctl_may_own(r, j->name))
		return -1;
	if (config_sandbox_by_name(r->gw->cfg, j->name) != NULL) {
		ctl_refuse(r, j->name, "create: a sandbox named \"%s\" already "
		    "exists", j->name);
		return -1;
	}
	if (create_running(r->gw, r->user)) {
		ctl_refuse(r, j->name, "create: another create of yours is "
		    "still running; try again when it is done");
		return -1;
	}
	if (check_secrets(r, j, *owner) == -1 || check_egress(r, j) == -1)
		return -1;
	return *owner != NULL ? quota_check(r, j, *owner) : 0;
}

static int
check_owned(struct ctl_req *r, const struct job *j, const char *verb)
{
	const struct moat_sandbox *s = config_sandbox_by_name(r->gw->cfg,
	    j->name);

	/* The same answer whether it is missing or someone else's. */
	if (s == NULL || !ctl_may_see(r, s->owner)) {
		ctl_refuse(r, j->name, "%s: no sandbox \"%s\" owned by %s", verb,
		    j->name, r->user);
		return -1;
	}
	return 0;
}

/* --- running provision --------------------------------------------------- */

/* In the child: the request's descriptors become 3, 4, ... and each
 * file option's value names its own, /dev/fd/N. */
static int
pass_fds(struct job *j, char names[][16])
{
	int tmp[GW_CTL_MAX_FDS];
	size_t i;

	for (i = 0; i < j->nfds; i++)
		if ((tmp[i] = fcntl(j->fds[i], F_DUPFD_CLOEXEC, 64)) == -1)
			return -1;
	for (i = 0; i < j->nfds; i++) {
		if (dup2(tmp[i], 3 + (int)i) == -1)
			return -1;
		snprintf(names[i], 16, "/dev/fd/%d", 3 + (int)i);
		j->argv[j->paths[i]] = names[i];
	}
	/* Nothing else of the daemon's reaches provision. */
	return close_range(3 + (unsigned)j->nfds, ~0U, CLOSE_RANGE_CLOEXEC);
}

static void __attribute__((noreturn))
job_child(const struct ctl_req *c, struct job *j)
{
	static char names[GW_CTL_MAX_FDS][16];
	sigset_t all;
	int fd, fl;

	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	signal(SIGPIPE, SIG_DFL);
	/* The socket is shared with the control process, which only
	 * writes to it with MSG_DONTWAIT, and not before the job is done. */
	if ((fl = fcntl(c->conn, F_GETFL)) != -1)
		fcntl(c->conn, F_SETFL, fl & ~O_NONBLOCK);
	if ((fd = open("/dev/null", O_RDONLY)) == -1 || dup2(fd, 0) == -1 ||
	    dup2(c->conn, 1) == -1 || dup2(c->conn, 2) == -1)
		_exit(127);
	if (pass_fds(j, names) == -1)
		_exit(127);
	execv(j->argv[0], (char *const *)j->argv);
	dprintf(2, "gatewayd: cannot run %s: %s\n", j->argv[0],
	    strerror(errno));
	_exit(127);
}

/* provision, run as root, prints every error of a configuration that
 * does not load, and its output goes to the caller: a member is told
 * only what is about their own files (ctl_reply_errors) instead. */
static bool
config_loads_for(struct ctl_req *r)
{
	char *errors = NULL;

	if (r->admin || cfgtxn_check_load(NULL, r->gw->cfg->path, &errors) == 0)
		return true;
	ctl_reply_errors(r, errors, NULL, 0);
	free(errors);
	ctl_refuse(r, NULL, "the configuration on disk does not load; an "
	    "administrator must fix it first");
	return false;
}

static void
job_start(struct ctl_req *r, struct job *j)
{
	struct gw_job *g = NULL;
	pid_t pid;
	int i;

	if (!config_loads_for(r))
		return;
	j->argv[j->argc] = NULL;
	for (i = 0; i < GW_MAX_CLIENTS && g == NULL; i++)
		if (ctl_of(r->gw)->jobs[i].pid == 0)
			g = &ctl_of(r->gw)->jobs[i];
	if (g == NULL) {
		ctl_refuse(r, j->name, "too many provision jobs are running; "
		    "try again later");
		return;
	}
	if ((pid = fork()) == -1) {
		ctl_refuse(r, j->name, "cannot run provision: %s",
		    strerror(errno));
		return;
	}
	if (pid == 0)
		job_child(r, j);
	g->pid = pid;
	g->id = r->id;
	g->gen = ctl_of(r->gw)->ctl_gen;
	g->uid = r->uid;
	snprintf(g->user, sizeof(g->user), "%s", r->user);
	snprintf(g->verb, sizeof(g->verb), "%s", r->argv[0]);
	snprintf(g->sandbox, sizeof(g->sandbox), "%s", j->name);
	r->job = true;
}

/* "list": provision's own list, run as root, so that a member gets the
 * same rows and schema as root does; members see only what they own. */
void
team_list(struct ctl_req *r)
{
	struct job j = { .argc = 0, .name = "" };
	char *prog, *run_dir, *slash;

	if (r->argc != 1) {
		ctl_refuse(r, NULL, "usage: list [--json]");
		return;
	}
	xasprintf(&prog, "%s/provision", r->gw->opts.bindir);
	run_dir = xstrdup(r->gw->opts.sock);
	if ((slash = strrchr(run_dir, '/')) != NULL)
		*slash = '\0';
	j.argv[j.argc++] = prog;
	j.argv[j.argc++] = "-c";
	j.argv[j.argc++] = r->gw->cfg->path;
	j.argv[j.argc++] = "--run-dir";
	j.argv[j.argc++] = run_dir;
	j.argv[j.argc++] = "list";
	if (r->json)
		j.argv[j.argc++] = "--json";
	if (!r->admin) {
		j.argv[j.argc++] = "--owner";
		j.argv[j.argc++] = r->user;
	}
	job_start(r, &j);
	free(prog);
	free(run_dir);
}

/* Each file option needs its own descriptor, sent by the member's
 * provision; a bare path (from `gatewayd ctl`) is never opened here. */
static int
check_fds(struct ctl_req *r, struct job *j, const int *fds, size_t nfds)
{
	if ((size_t)j->npaths != nfds) {
		ctl_refuse(r, j->name, "%s: %d file option(s) but %zu open "
		    "file(s) sent: use provision, which opens your files as you "
		    "and passes them", r->argv[0], j->npaths, nfds);
		return -1;
	}
	j->fds = fds;
	j->nfds = nfds;
	return 0;
}

void
team_provision_fds(struct ctl_req *r, const int *fds, size_t nfds)
{
	struct job j = { .argc = 0 };
	const char *owner = NULL;
	char *prog, *run_dir, *slash, uid[16];
	size_t v;

	for (v = 0; v < sizeof(pv_verbs) / sizeof(pv_verbs[0]); v++)
		if (strcmp(pv_verbs[v].verb, r->argv[0]) == 0)
			break;
	if (v == sizeof(pv_verbs) / sizeof(pv_verbs[0]))
		fatalx("team_provision: %s is not in its table", r->argv[0]);
	/* provision's global options first; the user's go after the verb. */
	xasprintf(&prog, "%s/provision", r->gw->opts.bindir);
	run_dir = xstrdup(r->gw->opts.sock);
	if ((slash = strrchr(run_dir, '/')) != NULL)
		*slash = '\0';
	j.argv[j.argc++] = prog;
	j.argv[j.argc++] = "-c";
	j.argv[j.argc++] = r->gw->cfg->path;
	j.argv[j.argc++] = "--run-dir";
	j.argv[j.argc++] = run_dir;
	j.argv[j.argc++] = r->argv[0];
	if (job_parse(r, v, &j) == -1)
		goto out;
	snprintf(uid, sizeof(uid), "%u", (unsigned)r->uid);
	audit_event(r->gw, "control", "uid", uid, "user", r->user, "verb",
	    r->argv[0], "sandbox", j.name, NULL);
	if (pv_verbs[v].create ? check_create(r, &j, &owner) == -1 :
	    check_owned(r, &j, r->argv[0]) == -1)
		goto out;
	if (check_fds(r, &j, fds, nfds) == -1)
		goto out;
	if (pv_verbs[v].create && owner != NULL && j.owner == NULL) {
		j.argv[j.argc++] = "--owner";
		j.argv[j.argc++] = owner;
	}
	j.argv[j.argc++] = j.name;
	job_start(r, &j);
out:
	free(prog);
	free(run_dir);
}

void
team_provision(struct ctl_req *r)
{
	team_provision_fds(r, NULL, 0);
}
