/*
 * dropin.c -- write sandboxes.d/NAME.conf atomically, and only after the
 * whole configuration with the new file in it has passed the loader.
 *
 * The new text goes to a dot-file (the loader skips those), then a dot
 * folder inside sandboxes.d gets hard links of every existing drop-in plus
 * the new one under its final name, and config_load() reads main file and
 * that folder: exactly what gatewayd will read after the rename.  Only then
 * is the dot-file renamed into place (RENAME_NOREPLACE: never clobber).
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "provision.h"

static void
render_list(FILE *f, const char *key, const struct strv *l)
{
	size_t i;

	if (l->n == 0)
		return;
	fprintf(f, "%s = [ ", key);
	for (i = 0; i < l->n; i++)
		fprintf(f, "%s\"%s\"", i ? ", " : "", l->v[i]);
	fprintf(f, " ];\n");
}

/* Every value was checked by the caller to hold no quote or backslash
 * (names, patterns and addresses only), so no escaping is needed; the
 * loader re-validates all of it anyway. */
int
dropin_render(FILE *f, const struct dropin *d)
{
	fprintf(f, "# sandbox \"%s\", written by provision(8); remove it with "
	    "`provision destroy %s`\n", d->name, d->name);
	fprintf(f, "name = \"%s\";\n", d->name);
	fprintf(f, "mac = \"%s\";\n", d->mac);
	fprintf(f, "address = \"%s\";\n", d->address);
	fprintf(f, "tap = \"%s\";\n", d->tap);
	fprintf(f, "egress = \"%s\";\n", d->egress);
	render_list(f, "allow", &d->allow);
	render_list(f, "secrets", &d->secrets);
	if (d->owner != NULL)
		fprintf(f, "owner = \"%s\";\n", d->owner);
	return ferror(f) ? -1 : 0;
}

/* An exclusive lock on the folder itself, so two creates never pick the
 * same address and no lock file is ever left behind. */
int
dir_lock(const char *dir)
{
	int fd;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		log_warn("%s", dir);
		return -1;
	}
	if (flock(fd, LOCK_EX) == -1) {
		log_warn("lock %s", dir);
		close(fd);
		return -1;
	}
	return fd;
}

static int
write_tmp(const char *sbdir, const struct dropin *d, char **tmp)
{
	FILE *f;
	int fd;

	xasprintf(tmp, "%s/.%s.conf.XXXXXX", sbdir, d->name);
	if ((fd = mkstemp(*tmp)) == -1) {
		log_warn("%s", *tmp);
		free(*tmp);
		*tmp = NULL;
		return -1;
	}
	/* Drop-ins hold no secret: world-readable like moat.conf. */
	fchmod(fd, 0644);
	if ((f = fdopen(fd, "w")) == NULL) {
		close(fd);
		goto fail;
	}
	if (dropin_render(f, d) == -1 || fflush(f) == EOF ||
	    fsync(fileno(f)) == -1) {
		fclose(f);
		goto fail;
	}
	if (fclose(f) == EOF)
		goto fail;
	return 0;
fail:
	log_warn("%s", *tmp);
	unlink(*tmp);
	free(*tmp);
	*tmp = NULL;
	return -1;
}

static void
rm_vdir(const char *vdir)
{
	DIR *dp;
	struct dirent *de;
	char *p;

	if ((dp = opendir(vdir)) == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		xasprintf(&p, "%s/%s", vdir, de->d_name);
		unlink(p);
		free(p);
	}
	closedir(dp);
	rmdir(vdir);
}

static int
link_existing(const char *sbdir, const char *vdir, const char *newname)
{
	DIR *dp;
	struct dirent *de;
	char *a, *b;
	size_t len;
	int rc = 0;

	if ((dp = opendir(sbdir)) == NULL) {
		log_warn("%s", sbdir);
		return -1;
	}
	while (rc == 0 && (de = readdir(dp)) != NULL) {
		len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len < 6 ||
		    strcmp(de->d_name + len - 5, ".conf") != 0)
			continue;
		if (strcmp(de->d_name, newname) == 0) {
			log_warnx("%s/%s already exists: a sandbox of that "
			    "name is configured", sbdir, newname);
			rc = -1;
			break;
		}
		xasprintf(&a, "%s/%s", sbdir, de->d_name);
		xasprintf(&b, "%s/%s", vdir, de->d_name);
		if (link(a, b) == -1) {
			log_warn("link %s", a);
			rc = -1;
		}
		free(a);
		free(b);
	}
	closedir(dp);
	return rc;
}

/* Print the loader's messages with the validation folder's name replaced
 * by the real sandboxes.d, which is where the file would have gone. */
static void
print_errors(const struct moat_errors *e, const char *vdir, const char *sbdir)
{
	size_t i, vl = strlen(vdir);
	const char *m;

	for (i = 0; i < e->n; i++) {
		m = e->msg[i];
		if (strncmp(m, vdir, vl) == 0)
			log_warnx("%s%s", sbdir, m + vl);
		else
			log_warnx("%s", m);
	}
}

static int
validate(const struct pv *pv, const char *tmp, const char *name)
{
	struct moat_errors errs = { 0 };
	struct moat_config *cfg;
	char *vdir, *final, *b;
	int rc = -1;

	xasprintf(&vdir, "%s/.validate.XXXXXX", pv->sbdir);
	if (mkdtemp(vdir) == NULL) {
		log_warn("%s", vdir);
		free(vdir);
		return -1;
	}
	xasprintf(&final, "%s.conf", name);
	xasprintf(&b, "%s/%s", vdir, final);
	if (link_existing(pv->sbdir, vdir, final) == -1)
		goto out;
	if (link(tmp, b) == -1) {
		log_warn("link %s", tmp);
		goto out;
	}
	cfg = config_load(pv->conf_path, vdir, &errs);
	if (cfg == NULL) {
		log_warnx("the configuration with sandbox \"%s\" added does "
		    "not validate:", name);
		print_errors(&errs, vdir, pv->sbdir);
	} else
		rc = 0;
	config_free(cfg);
	config_errors_free(&errs);
out:
	rm_vdir(vdir);
	free(b);
	free(final);
	free(vdir);
	return rc;
}

/* Write and validate; *tmp is the dot-file to commit or remove. */
int
dropin_prepare(struct pv *pv, const struct dropin *d, char **tmp)
{
	if (write_tmp(pv->sbdir, d, tmp) == -1)
		return -1;
	if (validate(pv, *tmp, d->name) == -1) {
		unlink(*tmp);
		free(*tmp);
		*tmp = NULL;
		return -1;
	}
	return 0;
}

/* RENAME_NOREPLACE: never clobber a drop-in that appeared meanwhile. */
int
dropin_commit(struct pv *pv, const char *tmp, const char *final)
{
	int dfd;

	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) == -1) {
		log_warn("rename to %s", final);
		return -1;
	}
	if ((dfd = open(pv->sbdir, O_RDONLY | O_DIRECTORY)) != -1) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}
