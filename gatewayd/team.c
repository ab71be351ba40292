/*
 * team.c -- a team-shared host: members of group moat create, start, stop
 * and destroy their own sandboxes through the control socket, and gatewayd
 * does the privileged work by running provision as root on their behalf.
 *
 * The caller is known only by SO_PEERCRED.  Before anything runs, the
 * request is checked here against what the caller owns, which secrets they
 * may attach and their quota; only options from a fixed table reach
 * provision, in an argument vector (never a shell), with --owner set to
 * the caller.  Files named in options are opened with the caller's file
 * system identity, so nobody can have root read a file they cannot.
 *
 * provision writes straight to the client's socket; when it exits, the
 * client gets "ok" or "error: ..." (control_job_reaped).  The parent
 * never waits for it: provision itself asks gatewayd to reload.
 */
#include <sys/fsuid.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libconfig.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gatewayd.h"
#include "log.h"

enum optkind { K_FLAG, K_ARG, K_PATH, K_ADMIN };	/* K_ADMIN: admins only */

struct pv_opt {
	const char	*name;
	enum optkind	 kind;
};

static const struct pv_opt create_opts[] = {
	{ "--image", K_PATH }, { "--image-format", K_ARG },
	{ "--kernel", K_PATH }, { "--initrd", K_PATH }, { "--append", K_ARG },
	{ "--cpus", K_ARG }, { "--memory", K_ARG }, { "--disk", K_ARG },
	{ "--egress", K_ARG }, { "--allow", K_ARG }, { "--secret", K_ARG },
	{ "--ssh-key", K_PATH }, { "--ca", K_PATH },
	{ "--password-hash-file", K_PATH }, { "--accel", K_ARG },
	{ "--login", K_ARG }, { "--sudo", K_FLAG },
	{ "--autostart", K_FLAG }, { "--no-autostart", K_FLAG },
	{ "--owner", K_ADMIN }, { "--user", K_ADMIN },
	{ NULL, 0 }
};
static const struct pv_opt start_opts[] = {
	{ "--accel", K_ARG }, { NULL, 0 }
};
static const struct pv_opt stop_opts[] = {
	{ "--force", K_FLAG }, { "--timeout", K_ARG }, { NULL, 0 }
};

static const struct {
	const char		*verb;
	const struct pv_opt	*opts;
	bool			 create;
} pv_verbs[] = {
	{ "create", create_opts, true },
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
	const char	*cpus, *memory, *disk, *kernel, *image;
	const char	*secrets[GW_CTL_MAX_ARGS];
	int		 nsecrets;
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

static const struct pv_opt *
opt_find(const struct pv_opt *t, const char *name)
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
	const struct pv_opt *o;
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
		    (o->kind == K_ADMIN && !r->admin)) {
			ctl_refuse(r, NULL, "%s: option %.64s is not available "
			    "here", pv_verbs[v].verb, r->argv[i]);
			return -1;
		}
		j->argv[j->argc++] = r->argv[i];
		if (o->kind == K_FLAG)
			continue;
		if (++i == r->argc) {
			ctl_refuse(r, NULL, "%s: %s needs a value",
			    pv_verbs[v].verb, o->name);
			return -1;
		}
		if (o->kind == K_PATH)
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

struct usage {
	long	 sandboxes, cpus, memory_mb, disk_gb;
};

/* "8G", "512M", "1T", "1048576" (bytes, as qemu-img reads it) -> GiB,
 * rounded up.  -1 if malformed. */
static long
size_gb(const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 10), div;

	if (end == s || v < 0)
		return -1;
	switch (*end) {
	case 'T': v *= 1024; /* FALLTHROUGH */
	case 'G': div = 1; break;
	case 'M': div = 1024; break;
	case 'K': div = 1024 * 1024; break;
	case '\0': div = 1024LL * 1024 * 1024; end--; break;
	default: return -1;
	}
	if (end[1] != '\0')
		return -1;
	return (long)((v + div - 1) / div);
}

/* "1024", "512M", "2G" -> MiB, as provision reads --memory. */
static long
size_mb(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || v <= 0)
		return -1;
	if (*end == 'G' || *end == 'g')
		v *= 1024, end++;
	else if (*end == 'M' || *end == 'm')
		end++;
	return *end == '\0' ? v : -1;
}

/* What an existing guest holds, from provision's guest.conf.  A sandbox
 * without one (written by hand) counts as a sandbox only. */
static void
usage_add_guest(const struct moat_config *cfg, const char *name,
    struct usage *u)
{
	config_t lc;
	const char *disk = NULL, *mode = NULL;
	char *path;
	int v;

	u->sandboxes++;
	xasprintf(&path, "%s/guests/%s/guest.conf", cfg->gw.state_dir, name);
	config_init(&lc);
	if (config_read_file(&lc, path) == CONFIG_TRUE) {
		if (config_lookup_int(&lc, "cpus", &v) == CONFIG_TRUE)
			u->cpus += v;
		if (config_lookup_int(&lc, "memory_mb", &v) == CONFIG_TRUE)
			u->memory_mb += v;
		config_lookup_string(&lc, "mode", &mode);
		if (config_lookup_string(&lc, "disk", &disk) == CONFIG_TRUE &&
		    size_gb(disk) > 0)
			u->disk_gb += size_gb(disk);
		else if (mode != NULL && strcmp(mode, "kernel") == 0)
			u->disk_gb += 1;	/* provision's default */
	}
	config_destroy(&lc);
	free(path);
}

static int
quota_check(struct ctl_req *r, const struct job *j, const char *owner)
{
	const struct moat_config *cfg = r->gw->cfg;
	const struct moat_quota *q = config_quota_for(cfg, owner);
	struct usage have = { 0 }, want;
	size_t i;

	if (q == NULL)
		return 0;
	for (i = 0; i < cfg->nsandboxes; i++)
		if (cfg->sandboxes[i].owner != NULL &&
		    strcmp(cfg->sandboxes[i].owner, owner) == 0)
			usage_add_guest(cfg, cfg->sandboxes[i].name, &have);
	want.sandboxes = 1;
	want.cpus = j->cpus ? atol(j->cpus) : 1;
	want.memory_mb = j->memory ? size_mb(j->memory) : 1024;
	want.disk_gb = j->disk ? size_gb(j->disk) : j->kernel ? 1 : -1;
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
		if (gw->clients[i].fd != -1 && gw->clients[i].job > 0 &&
		    strcmp(gw->clients[i].verb, "create") == 0 &&
		    strcmp(gw->clients[i].user, user) == 0)
			return true;
	return false;
}

static int
check_create(struct ctl_req *r, struct job *j, const char **owner)
{
	*owner = r->admin && j->owner ? j->owner :
	    r->c->uid == 0 && j->owner == NULL ? NULL : r->user;
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
	if (check_secrets(r, j, *owner) == -1)
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

/* In the child, with the caller's file-system identity: open each named
 * file, require a regular file, and hand provision its canonical path. */
static int
resolve_paths(struct gw_client *c, struct job *j, char canon[][PATH_MAX])
{
	struct passwd *pw = getpwuid(c->uid);
	gid_t groups[256];
	char link[64];
	struct stat st;
	ssize_t n;
	int i, fd, ng = 256, rc = 0;

	if (j->npaths == 0 || c->uid == 0)
		return 0;
	if (pw == NULL || getgrouplist(pw->pw_name, c->gid, groups, &ng) == -1 ||
	    setgroups((size_t)ng, groups) == -1)
		return -1;
	setfsgid(c->gid);
	setfsuid(c->uid);
	if ((uid_t)setfsuid((uid_t)-1) != c->uid)
		rc = -1;
	for (i = 0; rc == 0 && i < j->npaths; i++) {
		const char *p = j->argv[j->paths[i]];
		if ((fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1 ||
		    fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
			dprintf(1, "gatewayd: %s %s: not a regular file you can "
			    "read\n", j->argv[j->paths[i] - 1], p);
			rc = -1;
		} else {
			snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
			n = readlink(link, canon[i], PATH_MAX - 1);
			if (n <= 0)
				rc = -1;
			else {
				canon[i][n] = '\0';
				j->argv[j->paths[i]] = canon[i];
			}
		}
		if (fd != -1)
			close(fd);
	}
	setfsuid(0);
	setfsgid(0);
	if (setgroups(0, NULL) == -1 || (uid_t)setfsuid((uid_t)-1) != 0)
		_exit(127);
	return rc;
}

static void __attribute__((noreturn))
job_child(struct gw *gw, struct gw_client *c, struct job *j)
{
	static char canon[GW_CTL_MAX_ARGS][PATH_MAX];
	sigset_t all;
	int fd, fl;

	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	signal(SIGPIPE, SIG_DFL);
	/* The socket is shared with the parent, which only writes to it
	 * with MSG_DONTWAIT while the job runs. */
	if ((fl = fcntl(c->fd, F_GETFL)) != -1)
		fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
	if ((fd = open("/dev/null", O_RDONLY)) == -1 || dup2(fd, 0) == -1 ||
	    dup2(c->fd, 1) == -1 || dup2(c->fd, 2) == -1)
		_exit(127);
	if (resolve_paths(c, j, canon) == -1)
		_exit(1);
	execv(j->argv[0], (char *const *)j->argv);
	dprintf(2, "gatewayd: cannot run %s: %s\n", j->argv[0],
	    strerror(errno));
	_exit(127);
}

static void
job_start(struct ctl_req *r, struct job *j)
{
	struct gw_client *c = r->c;
	pid_t pid;

	j->argv[j->argc] = NULL;
	snprintf(c->verb, sizeof(c->verb), "%s", r->argv[0]);
	snprintf(c->sandbox, sizeof(c->sandbox), "%s", j->name);
	if ((pid = fork()) == -1) {
		ctl_refuse(r, j->name, "cannot run provision: %s",
		    strerror(errno));
		return;
	}
	if (pid == 0)
		job_child(r->gw, c, j);
	c->job = pid;
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

void
team_provision(struct ctl_req *r)
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
	snprintf(uid, sizeof(uid), "%u", (unsigned)r->c->uid);
	audit_event(r->gw, "control", "uid", uid, "user", r->user, "verb",
	    r->argv[0], "sandbox", j.name, NULL);
	if (pv_verbs[v].create ? check_create(r, &j, &owner) == -1 :
	    check_owned(r, &j, r->argv[0]) == -1)
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
