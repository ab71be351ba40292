/*
 * cfgtxn.c -- change configuration files all or nothing (cfgtxn.h).
 *
 * The old version of each file is kept as a hard link under a hidden
 * name, so that putting it back is one rename: contents, mode and owner
 * come back as they were, and a reader sees the old or the new file,
 * never half of one or none.
 */
#include <sys/random.h>
#include <sys/stat.h>

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
	struct item	*v;
	size_t		 n;
	enum txn_state	 state;
};

struct cfgtxn *
cfgtxn_begin(const char *conf_path)
{
	struct cfgtxn *t = xcalloc(1, sizeof(*t));

	t->conf = xstrdup(conf_path);
	return t;
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
	int fd, saved;

	if (t->state != TXN_STAGED) {
		free(tmp);
		errno = EINVAL;
		return -1;
	}
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		free(tmp);
		return -1;
	}
	if (fchown(fd, uid, gid) == -1 || fchmod(fd, mode) == -1 ||
	    write_all(fd, data, len) == -1 || fsync(fd) == -1) {
		saved = errno;
		close(fd);
		unlink(tmp);
		free(tmp);
		errno = saved;
		return -1;
	}
	if (close(fd) == -1) {
		saved = errno;
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
	if (t->state != TXN_STAGED) {
		errno = EINVAL;
		return -1;
	}
	add_item(t, path)->remove = true;
	return 0;
}

/* Keep the file at path as a hidden hard link: 0 (it->old set, or NULL
 * when there is no such file), or -1. */
static int
keep_old(struct item *it)
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
		if (link(it->path, it->old) == 0)
			return 0;
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
put_in_place(struct item *it)
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
	if (keep_old(it) == -1)
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
		if (put_in_place(&t->v[i]) == -1) {
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
	undo(t);
	t->state = TXN_OVER;
	return -1;
}

int
cfgtxn_rollback(struct cfgtxn *t)
{
	int rc;

	if (t->state != TXN_COMMITTED)
		return 0;
	rc = undo(t);
	t->state = TXN_OVER;
	return rc;
}

void
cfgtxn_end(struct cfgtxn *t)
{
	size_t i;

	if (t == NULL)
		return;
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
