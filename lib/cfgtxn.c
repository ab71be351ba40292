/*
 * cfgtxn.c -- change configuration files all or nothing (cfgtxn.h).
 *
 * The old version of each file is kept as a hard link under a hidden
 * name, so that putting it back is one rename: contents, mode and owner
 * come back as they were, and a reader sees the old or the new file,
 * never half of one or none.
 *
 * A process that dies in the middle (killed, or the machine losing power)
 * cannot roll back itself, so each transaction keeps a journal beside
 * the first file it changes (in moat.conf's folder or the state folder,
 * or one of the folders in them): ".moat-txn.XXXXXX", locked with
 * flock(2) for as long as the transaction lives.  It names each staged file, and each old file once
 * its hidden link exists, before the step that needs it.  cfgtxn_recover()
 * (gatewayd runs it before it reads the configuration) finds the journals
 * whose owner is gone and puts the old files back: a change that nobody
 * saw through is undone, as if the verb had failed.
 *
 * The journal's lines:
 *	W TMP PATH	PATH is to be replaced by the staged file TMP
 *	C TMP PATH	the same, for a file that must not exist
 *	R PATH		PATH is to be removed
 *	O OLD PATH	the old PATH is linked at OLD
 *	A -		abandoned before the commit: only staged files to remove
 *	D TMP PATH	staging TMP failed: nothing of it to undo
 * Paths with a tab or a newline are refused at staging; paths are
 * written absolute.  Recovery trusts a journal only as far as
 * cfgtxn_recover() (cfgtxn.h) says: anyone who can write a file could
 * have planted one.
 */
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <dirent.h>
#include <libconfig.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfgtxn.h"
#include "config.h"
#include "log.h"

struct item {
	char	*path;
	char	*tmp;		/* the staged file; NULL: remove path */
	char	*old;		/* the old file's hidden link; NULL: none */
	bool	 remove;
	bool	 create;	/* never overwrite path */
	bool	 done;		/* in place */
};

enum txn_state { TXN_STAGED, TXN_COMMITTED, TXN_OVER };

struct cfgtxn {
	char		*conf;
	char		*journal;	/* NULL until the first staged change */
	int		 jfd;		/* open and locked while it exists */
	struct item	*v;
	size_t		 n;
	enum txn_state	 state;
};

struct cfgtxn *
cfgtxn_begin(const char *conf_path)
{
	struct cfgtxn *t = xcalloc(1, sizeof(*t));

	t->conf = xstrdup(conf_path);
	t->jfd = -1;
	return t;
}

#define JOURNAL_PREFIX	".moat-txn."

static void	fsync_dir(const char *);
static int	write_all(int, const char *, size_t);

/* The folder that holds path's file ("." for a bare name). */
static char *
dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *s;

	if (slash == NULL)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	xasprintf(&s, "%.*s", (int)(slash - path), path);
	return s;
}

/* "DIR/.BASE.WHAT" with the rest to be filled in by the caller. */
static char *
hidden_name(const char *path, const char *what)
{
	const char *slash = strrchr(path, '/');
	char *s;

	if (slash == NULL)
		xasprintf(&s, ".%s.%s", path, what);
	else
		xasprintf(&s, "%.*s/.%s.%s", (int)(slash - path), path,
		    slash + 1, what);
	return s;
}

static void
fsync_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, (size_t)(slash - path)) : NULL;
	int fd;

	if ((fd = open(dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) !=
	    -1) {
		fsync(fd);
		close(fd);
	}
	free(dir);
}

/* path as an absolute one, for the journal: recovery acts only on
 * absolute paths (gatewayd -c may have been given a relative one). */
static char *
absolute(const char *path)
{
	char cwd[4096], *s;

	if (path[0] == '/' || getcwd(cwd, sizeof(cwd)) == NULL)
		return xstrdup(path);
	xasprintf(&s, "%s/%s", cwd, path);
	return s;
}

/* Append one line to the journal and make it durable.  0 or -1. */
static int
journal_add(struct cfgtxn *t, char kind, const char *a, const char *b)
{
	char *line, *absa = NULL, *absb = NULL;
	int rc;

	if (t->jfd == -1) {
		/* Beside the first file it changes: a folder the change
		 * may write to (under a unit's ProtectSystem, moat.conf's
		 * own folder may be read-only). */
		char *dir = dir_of(kind == 'R' ? a : b);
		int saved;

		xasprintf(&t->journal, "%s/" JOURNAL_PREFIX "XXXXXX", dir);
		free(dir);
		if ((t->jfd = mkostemp(t->journal, O_CLOEXEC | O_APPEND)) ==
		    -1 || flock(t->jfd, LOCK_EX) == -1) {
			saved = errno;
			if (t->jfd != -1) {
				unlink(t->journal);
				close(t->jfd);
				t->jfd = -1;
			}
			free(t->journal);
			t->journal = NULL;
			errno = saved;
			return -1;
		}
		fsync_dir(t->journal);
	}
	if (b != NULL)
		xasprintf(&line, "%c %s\t%s\n", kind, absa = absolute(a),
		    absb = absolute(b));
	else
		xasprintf(&line, "%c %s\n", kind, kind == 'A' ? a :
		    (absa = absolute(a)));
	rc = write_all(t->jfd, line, strlen(line)) == -1 ||
	    fdatasync(t->jfd) == -1 ? -1 : 0;
	free(absa);
	free(absb);
	free(line);
	return rc;
}

/* The transaction is over, one way or the other: nothing to recover. */
static void
journal_drop(struct cfgtxn *t)
{
	if (t->jfd == -1)
		return;
	unlink(t->journal);
	fsync_dir(t->journal);
	close(t->jfd);
	t->jfd = -1;
	free(t->journal);
	t->journal = NULL;
}

static bool
path_ok(const char *path)
{
	return path[0] != '\0' && strpbrk(path, "\t\n") == NULL;
}

static struct item *
add_item(struct cfgtxn *t, const char *path)
{
	struct item *it;

	t->v = xreallocarray(t->v, t->n + 1, sizeof(*t->v));
	it = &t->v[t->n++];
	memset(it, 0, sizeof(*it));
	it->path = xstrdup(path);
	return it;
}

static int
write_all(int fd, const char *p, size_t len)
{
	ssize_t w;

	while (len > 0) {
		if ((w = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static int
stage(struct cfgtxn *t, const char *path, const void *data, size_t len,
    mode_t mode, uid_t uid, gid_t gid, bool create)
{
	char *tmp = hidden_name(path, "new.XXXXXX");
	struct item *it;
	bool staged;
	int fd, saved;

	if (t->state != TXN_STAGED || !path_ok(path)) {
		free(tmp);
		errno = EINVAL;
		return -1;
	}
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		free(tmp);
		return -1;
	}
	/* Named in the journal before it holds anything, so that a crash
	 * leaves no staged copy (of a secret, say) behind. */
	staged = journal_add(t, create ? 'C' : 'W', tmp, path) == 0 &&
	    fchown(fd, uid, gid) == 0 && fchmod(fd, mode) == 0 &&
	    write_all(fd, data, len) == 0 && fsync(fd) == 0;
	saved = errno;
	if (close(fd) == -1 && staged) {
		staged = false;
		saved = errno;
	}
	if (!staged) {
		/* Its journal line, if written, must not stand for a file
		 * put in place: a crash before the end would remove path. */
		if (t->jfd != -1)
			(void)journal_add(t, 'D', tmp, path);
		unlink(tmp);
		free(tmp);
		errno = saved;
		return -1;
	}
	it = add_item(t, path);
	it->tmp = tmp;
	it->create = create;
	return 0;
}

int
cfgtxn_stage_write(struct cfgtxn *t, const char *path, const void *data,
    size_t len, mode_t mode, uid_t uid, gid_t gid)
{
	return stage(t, path, data, len, mode, uid, gid, false);
}

int
cfgtxn_stage_create(struct cfgtxn *t, const char *path, const void *data,
    size_t len, mode_t mode, uid_t uid, gid_t gid)
{
	return stage(t, path, data, len, mode, uid, gid, true);
}

int
cfgtxn_stage_remove(struct cfgtxn *t, const char *path)
{
	if (t->state != TXN_STAGED || !path_ok(path)) {
		errno = EINVAL;
		return -1;
	}
	if (journal_add(t, 'R', path, NULL) == -1)
		return -1;
	add_item(t, path)->remove = true;
	return 0;
}

/* Keep the file at path as a hidden hard link: 0 (it->old set, or NULL
 * when there is no such file), or -1. */
static int
keep_old(struct cfgtxn *t, struct item *it)
{
	unsigned char rnd[6];
	char what[32];
	int tries;

	for (tries = 0; tries < 8; tries++) {
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			return -1;
		snprintf(what, sizeof(what), "old.%02x%02x%02x%02x%02x%02x",
		    rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
		it->old = hidden_name(it->path, what);
		/* Journaled once it exists: an old file the journal names
		 * and that is gone has been put back already. */
		if (link(it->path, it->old) == 0)
			return journal_add(t, 'O', it->old, it->path);
		free(it->old);
		it->old = NULL;
		if (errno == ENOENT)
			return 0;
		if (errno != EEXIST)
			return -1;
	}
	return -1;
}

static int
put_in_place(struct cfgtxn *t, struct item *it)
{
	if (it->create) {
		if (renameat2(AT_FDCWD, it->tmp, AT_FDCWD, it->path,
		    RENAME_NOREPLACE) == -1)
			return -1;
		free(it->tmp);
		it->tmp = NULL;
		it->done = true;
		return 0;
	}
	if (keep_old(t, it) == -1)
		return -1;
	if (it->tmp != NULL) {
		if (rename(it->tmp, it->path) == -1)
			return -1;
		free(it->tmp);
		it->tmp = NULL;
	} else if (it->old != NULL && unlink(it->path) == -1)
		return -1;
	it->done = true;
	return 0;
}

/* Undo what put_in_place did, or drop a link it took before failing. */
static int
put_back(struct item *it)
{
	int rc = 0;

	if (it->done && it->old != NULL) {
		if ((rc = rename(it->old, it->path)) == -1)
			log_warn("cannot put back %s (the old file is %s)",
			    it->path, it->old);
	} else if (it->done && !it->remove && unlink(it->path) == -1 &&
	    errno != ENOENT) {
		log_warn("cannot remove %s", it->path);
		rc = -1;
	}
	if (rc == 0 && it->old != NULL) {
		if (!it->done)
			unlink(it->old);
		free(it->old);
		it->old = NULL;
	}
	it->done = false;
	fsync_dir(it->path);
	return rc;
}

static int
undo(struct cfgtxn *t)
{
	size_t i = t->n;
	int rc = 0;

	while (i-- > 0)
		if (put_back(&t->v[i]) == -1)
			rc = -1;
	return rc;
}

int
cfgtxn_commit_and_check(struct cfgtxn *t, cfgtxn_check_fn check, void *arg,
    char **errors)
{
	size_t i;

	*errors = NULL;
	if (t->state != TXN_STAGED) {
		xasprintf(errors, "internal error: the transaction is over\n");
		return -1;
	}
	t->state = TXN_COMMITTED;
	for (i = 0; i < t->n; i++)
		if (put_in_place(t, &t->v[i]) == -1) {
			xasprintf(errors, "cannot write %s: %s\n", t->v[i].path,
			    strerror(errno));
			break;
		}
	for (i = 0; *errors == NULL && i < t->n; i++)
		fsync_dir(t->v[i].path);
	if (*errors == NULL && (check ? check(arg, t->conf, errors) :
	    cfgtxn_check_load(NULL, t->conf, errors)) == 0)
		return 0;
	if (*errors == NULL)
		xasprintf(errors, "the configuration was refused\n");
	if (undo(t) == 0)
		journal_drop(t);
	t->state = TXN_OVER;
	return -1;
}

int
cfgtxn_rollback(struct cfgtxn *t)
{
	int rc;

	if (t->state != TXN_COMMITTED)
		return 0;
	if ((rc = undo(t)) == 0)
		journal_drop(t);
	t->state = TXN_OVER;
	return rc;
}

void
cfgtxn_end(struct cfgtxn *t)
{
	size_t i;

	if (t == NULL)
		return;
	/* Abandoned before the commit: said so first (a staged file that
	 * is gone then means removed, not put in place), then the staged
	 * files go, then the journal that names them. */
	if (t->state == TXN_STAGED && t->jfd != -1)
		(void)journal_add(t, 'A', "-", NULL);
	for (i = 0; t->state == TXN_STAGED && i < t->n; i++)
		if (t->v[i].tmp != NULL)
			unlink(t->v[i].tmp);
	/* Seen through: first forget the journal, so that an old file it
	 * names is never mistaken for one to put back.  A rollback that
	 * could not finish keeps it, for cfgtxn_recover(). */
	if (t->state != TXN_OVER)
		journal_drop(t);
	else if (t->jfd != -1) {
		close(t->jfd);
		free(t->journal);
	}
	for (i = 0; i < t->n; i++) {
		if (t->v[i].tmp != NULL)
			unlink(t->v[i].tmp);
		/* After a rollback that could not put a file back, its old
		 * version stays where the log said. */
		if (t->v[i].old != NULL && t->state == TXN_COMMITTED)
			unlink(t->v[i].old);
		free(t->v[i].tmp);
		free(t->v[i].old);
		free(t->v[i].path);
	}
	free(t->v);
	free(t->conf);
	free(t);
}

size_t
cfgtxn_count(const struct cfgtxn *t)
{
	return t->n;
}

const char *
cfgtxn_path(const struct cfgtxn *t, size_t i)
{
	return i < t->n ? t->v[i].path : NULL;
}

/* --- recovery: journals whose owner is gone ------------------------------ */

struct jitem {
	char	 kind;		/* W, C or R */
	char	*tmp;
	char	*path;
	char	*old;
};

/* One journal's lines into v; -1 (nothing done) if one is not ours. */
static int
journal_read(FILE *fp, struct jitem **v, size_t *n, bool *abandoned)
{
	char *line = NULL, *tab;
	size_t cap = 0, i;
	ssize_t len;
	int rc = 0;

	*v = NULL;
	*n = 0;
	*abandoned = false;
	while (rc == 0 && (len = getline(&line, &cap, fp)) != -1) {
		/* A line cut short: the step it announced never began (each
		 * line is on disk before its step). */
		if (line[len - 1] != '\n')
			break;
		if (len < 3 || line[1] != ' ') {
			rc = -1;
			break;
		}
		line[len - 1] = '\0';
		tab = strchr(line + 2, '\t');
		switch (line[0]) {
		case 'W': case 'C': case 'R':
			if ((line[0] == 'R') != (tab == NULL)) {
				rc = -1;
				break;
			}
			*v = xreallocarray(*v, *n + 1, sizeof(**v));
			memset(&(*v)[*n], 0, sizeof(**v));
			(*v)[*n].kind = line[0];
			if (tab != NULL) {
				*tab = '\0';
				(*v)[*n].tmp = xstrdup(line + 2);
				(*v)[*n].path = xstrdup(tab + 1);
			} else
				(*v)[*n].path = xstrdup(line + 2);
			(*n)++;
			break;
		case 'O':
			rc = -1;
			if (tab == NULL)
				break;
			*tab = '\0';
			for (i = *n; i-- > 0; )
				if (strcmp((*v)[i].path, tab + 1) == 0 &&
				    (*v)[i].old == NULL) {
					(*v)[i].old = xstrdup(line + 2);
					rc = 0;
					break;
				}
			break;
		case 'A':
			*abandoned = true;
			break;
		case 'D':
			if (tab == NULL) {
				rc = -1;
				break;
			}
			*tab = '\0';
			for (i = 0; i < *n; i++)
				if ((*v)[i].tmp != NULL &&
				    strcmp((*v)[i].tmp, line + 2) == 0)
					(*v)[i].kind = 'D';
			break;
		default:
			rc = -1;
		}
	}
	free(line);
	return rc;
}

static void
jitems_free(struct jitem *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].tmp);
		free(v[i].path);
		free(v[i].old);
	}
	free(v);
}

/*
 * What recovery may touch: moat's own configuration folder (moat.conf's)
 * and state folder, each with everything under it, as real paths.  A
 * journal is data that anyone able to write a file could have planted, so
 * every path in it is held to these before root renames or removes it.
 */
struct roots {
	char	*v[2];
	size_t	 n;
};

static bool
under_root(const struct roots *r, const char *real)
{
	size_t i, len;

	for (i = 0; i < r->n; i++) {
		len = strlen(r->v[i]);
		if (strncmp(real, r->v[i], len) == 0 && (real[len] == '\0' ||
		    real[len] == '/' || strcmp(r->v[i], "/") == 0))
			return true;
	}
	return false;
}

/* A folder recovery may act in: a real folder under a root, owned by
 * the user recovery runs as (root, for gatewayd) or by root, and
 * writable by nobody else (else its files may be swapped under it). */
static const char *
dir_untrusted(const struct roots *r, const char *real)
{
	struct stat st;

	if (!under_root(r, real))
		return "names a path outside moat's configuration and state "
		    "folders";
	if (stat(real, &st) == -1 || !S_ISDIR(st.st_mode))
		return "names a path in a folder that does not exist";
	if ((st.st_uid != geteuid() && st.st_uid != 0) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
		return "names a path in a folder others may write to";
	return NULL;
}

/*
 * One path of a journal, made safe to act on: p must be absolute, its
 * last part a plain name (no "." or ".."), and its folder, resolved
 * (symlinks and ".." followed), a trusted folder under a root.  *out: the
 * resolved folder and the name, which is what recovery then acts on, so
 * a symlink swapped in later changes nothing.  NULL, or why not.
 */
static const char *
jpath_resolve(const struct roots *r, const char *p, char **out)
{
	const char *slash = strrchr(p, '/'), *base, *why;
	char *dir, *real;

	*out = NULL;
	if (p[0] != '/' || slash == NULL)
		return "names a relative path";
	base = slash + 1;
	if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return "names a path that is no file";
	if (slash == p)
		dir = xstrdup("/");
	else
		xasprintf(&dir, "%.*s", (int)(slash - p), p);
	real = realpath(dir, NULL);
	free(dir);
	if (real == NULL)
		return "names a path in a folder that does not exist";
	if ((why = dir_untrusted(r, real)) == NULL)
		xasprintf(out, "%s/%s", strcmp(real, "/") == 0 ? "" : real,
		    base);
	free(real);
	return why;
}

/* A staged or old file's hidden name is beside its target and shaped
 * ".BASE.new.*" or ".BASE.old.*" (hidden_name()): a journal cannot make
 * recovery rename any other file over the target. */
static bool
beside(const char *hidden, const char *path, const char *what)
{
	const char *hs = strrchr(hidden, '/'), *ps = strrchr(path, '/');
	size_t dl = (size_t)(ps - path), bl = strlen(ps + 1);

	return (size_t)(hs - hidden) == dl && strncmp(hidden, path, dl) == 0 &&
	    hs[1] == '.' && strncmp(hs + 2, ps + 1, bl) == 0 &&
	    hs[2 + bl] == '.' && strncmp(hs + 3 + bl, what, strlen(what)) == 0;
}

/* Every path of the journal resolved in place; NULL, or why not. */
static const char *
jitems_check(const struct roots *r, struct jitem *v, size_t n)
{
	const char *why = NULL;
	char *rp;
	size_t i;

	for (i = 0; why == NULL && i < n; i++) {
		if ((why = jpath_resolve(r, v[i].path, &rp)) != NULL)
			break;
		free(v[i].path);
		v[i].path = rp;
		if (v[i].tmp != NULL &&
		    (why = jpath_resolve(r, v[i].tmp, &rp)) == NULL) {
			free(v[i].tmp);
			v[i].tmp = rp;
			if (!beside(v[i].tmp, v[i].path, "new."))
				why = "names a staged file that is not beside "
				    "its target";
		}
		if (why == NULL && v[i].old != NULL &&
		    (why = jpath_resolve(r, v[i].old, &rp)) == NULL) {
			free(v[i].old);
			v[i].old = rp;
			if (!beside(v[i].old, v[i].path, "old."))
				why = "names an old file that is not beside "
				    "its target";
		}
	}
	return why;
}

/* The journal file itself: a regular file of the user recovery runs as
 * (or root) that nobody else may write.  NULL, or why not. */
static const char *
journal_untrusted(int fd)
{
	struct stat st;

	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		return "is not a regular file";
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return "is not owned by root";
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
		return "may be written by others";
	return NULL;
}

/*
 * Undo one change.  The journal tells what was staged; the files tell
 * how far it got: a staged file still there was never put in place, and
 * an old file named but gone has been put back already.
 */
static int
jitem_undo(const struct jitem *it, bool abandoned)
{
	struct stat st;
	bool staged = it->tmp != NULL && lstat(it->tmp, &st) == 0;
	bool old = it->old != NULL && lstat(it->old, &st) == 0;
	int rc = 0;

	if (staged && unlink(it->tmp) == -1)
		rc = -1;
	if (abandoned || it->kind == 'D')
		;	/* nothing was put in place */
	else if (old) {
		/* In place (a new file, or the path removed): the old one
		 * goes back.  Not in place: the link is only a copy. */
		bool in_place = it->kind == 'R' ?
		    lstat(it->path, &st) == -1 : !staged;

		if (in_place ? rename(it->old, it->path) == -1 :
		    unlink(it->old) == -1)
			rc = -1;
	} else if (it->old == NULL && !staged && it->kind != 'R' &&
	    unlink(it->path) == -1 && errno != ENOENT)
		rc = -1;	/* a new file where there was none */
	if (rc == -1)
		log_warn("cannot undo the unfinished change of %s", it->path);
	else
		fsync_dir(it->path);
	return rc;
}

struct recover_ctx {
	struct roots		 roots;
	cfgtxn_report_fn	 report;
	void			*arg;
	int			 rc;
};

static void
refuse(struct recover_ctx *x, const char *jpath, const char *why)
{
	log_warnx("%s: a configuration journal that %s; left alone", jpath,
	    why);
	if (x->report != NULL)
		x->report(x->arg, jpath, why);
	x->rc = -1;
}

static void
recover_one(struct recover_ctx *x, const char *jpath, FILE *fp)
{
	struct jitem *v;
	const char *why;
	bool abandoned, bad = false;
	size_t n, i;

	if (journal_read(fp, &v, &n, &abandoned) == -1) {
		jitems_free(v, n);
		refuse(x, jpath, "is not a journal of a configuration change");
		return;
	}
	if ((why = jitems_check(&x->roots, v, n)) != NULL) {
		jitems_free(v, n);
		refuse(x, jpath, why);
		return;
	}
	log_warnx("a configuration change was cut short (%s): putting back "
	    "the %zu file%s it touched", jpath, n, n == 1 ? "" : "s");
	for (i = n; i-- > 0; )
		if (jitem_undo(&v[i], abandoned) == -1)
			bad = true;
	if (bad)
		x->rc = -1;
	else {
		unlink(jpath);
		fsync_dir(jpath);
	}
	jitems_free(v, n);
}

static void
recover_dir(struct recover_ctx *x, const char *dir)
{
	const char *why;
	struct dirent *de;
	char *jpath;
	DIR *dp;
	FILE *fp;
	int fd;

	if ((dp = opendir(dir)) == NULL) {
		if (errno != ENOENT)
			x->rc = -1;
		return;
	}
	while ((de = readdir(dp)) != NULL) {
		if (strncmp(de->d_name, JOURNAL_PREFIX,
		    strlen(JOURNAL_PREFIX)) != 0)
			continue;
		xasprintf(&jpath, "%s/%s", dir, de->d_name);
		/* Never a symlink, never a wait on a FIFO. */
		fd = openat(dirfd(dp), de->d_name, O_RDONLY | O_CLOEXEC |
		    O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
		if (fd == -1) {
			refuse(x, jpath, errno == ELOOP ? "is a symlink" :
			    "cannot be opened");
			free(jpath);
			continue;
		}
		if ((why = journal_untrusted(fd)) != NULL ||
		    (why = dir_untrusted(&x->roots, dir)) != NULL) {
			refuse(x, jpath, why);
			close(fd);
			free(jpath);
			continue;
		}
		/* Locked: its transaction is still going on. */
		if (flock(fd, LOCK_EX | LOCK_NB) == -1 ||
		    (fp = fdopen(fd, "r")) == NULL) {
			close(fd);
			free(jpath);
			continue;
		}
		recover_one(x, jpath, fp);
		fclose(fp);
		free(jpath);
	}
	closedir(dp);
}

/* A folder and the folders in it (not deeper: no verb writes deeper). */
static void
recover_tree(struct recover_ctx *x, const char *dir)
{
	struct dirent *de;
	struct stat st;
	char *sub;
	DIR *dp;

	recover_dir(x, dir);
	if ((dp = opendir(dir)) == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		xasprintf(&sub, "%s/%s", dir, de->d_name);
		if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
			recover_dir(x, sub);
		free(sub);
	}
	closedir(dp);
}

/*
 * A journal lies beside the first file its change writes: moat.conf's
 * folder or a folder in it (sandboxes.d, secrets.d, secrets), or the state
 * folder or one in it (a new secret's value, state_dir/secrets).
 */
int
cfgtxn_recover(const char *conf_path, const char *state_dir,
    cfgtxn_report_fn report, void *arg)
{
	struct recover_ctx x = { .report = report, .arg = arg };
	char *dir = dir_of(conf_path), *real;
	size_t i;

	if ((real = realpath(dir, NULL)) != NULL)
		x.roots.v[x.roots.n++] = real;
	if (state_dir != NULL && (real = realpath(state_dir, NULL)) != NULL) {
		if (x.roots.n == 1 && under_root(&x.roots, real))
			free(real);	/* inside the first: scanned with it */
		else
			x.roots.v[x.roots.n++] = real;
	}
	free(dir);
	for (i = 0; i < x.roots.n; i++)
		recover_tree(&x, x.roots.v[i]);
	for (i = 0; i < x.roots.n; i++)
		free(x.roots.v[i]);
	return x.rc;
}

/* moat.conf's own gateway.state_dir, read without the loader: recovery
 * runs before the configuration can be trusted to load. */
char *
cfgtxn_state_dir(const char *conf_path)
{
	const char *v = NULL;
	char *s = NULL;
	config_t lc;

	config_init(&lc);
	if (config_read_file(&lc, conf_path) == CONFIG_TRUE) {
		if (config_lookup_string(&lc, "gateway.state_dir", &v) !=
		    CONFIG_TRUE)
			v = CFGTXN_STATE_DIR_DEFAULT;
		if (v[0] == '/')
			s = xstrdup(v);
	}
	config_destroy(&lc);
	return s;
}

int
cfgtxn_check_load(void *arg, const char *conf_path, char **errors)
{
	struct moat_errors errs;
	struct moat_config *cfg;

	(void)arg;
	if ((cfg = config_load(conf_path, NULL, &errs)) != NULL) {
		config_free(cfg);
		config_errors_free(&errs);
		return 0;
	}
	*errors = config_errors_text(&errs);
	config_errors_free(&errs);
	return -1;
}
