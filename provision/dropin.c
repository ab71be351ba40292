/*
 * dropin.c -- write sandboxes.d/NAME.conf, and keep it only if the whole
 * configuration with it loads.
 *
 * The file goes in through lib/cfgtxn.h, like every other change to the
 * configuration: never over a file that exists, and taken out again (the
 * caller's rollback) if the loader refuses the result, or if a later step
 * of create fails.
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

#include "cfgtxn.h"
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
	if (d->reverify_given)
		fprintf(f, "reverify_interval = %u;\n", d->reverify);
	if (d->quarantine)
		fprintf(f, "quarantine_on_breach = true;\n");
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

static void
print_errors(char *errors)
{
	char *line, *save = NULL;

	for (line = errors ? strtok_r(errors, "\n", &save) : NULL;
	    line != NULL; line = strtok_r(NULL, "\n", &save))
		log_warnx("%s", line);
}

struct cfgtxn *
dropin_add(struct pv *pv, const struct dropin *d, const char *path)
{
	struct cfgtxn *t;
	char *text = NULL, *errors = NULL;
	size_t len = 0;
	FILE *f;

	if ((f = open_memstream(&text, &len)) == NULL)
		fatalx("out of memory");
	if (dropin_render(f, d) == -1 || fclose(f) == EOF) {
		log_warnx("cannot render the drop-in of \"%s\"", d->name);
		free(text);
		return NULL;
	}
	if (access(path, F_OK) == 0) {
		log_warnx("%s already exists: a sandbox of that name is "
		    "configured", path);
		free(text);
		return NULL;
	}
	t = cfgtxn_begin(pv->conf_path);
	/* Drop-ins hold no secret: world-readable like moat.conf. */
	if (cfgtxn_stage_create(t, path, text, len, 0644, 0, 0) == -1)
		log_warn("%s", path);
	else if (cfgtxn_commit_and_check(t, NULL, NULL, &errors) == 0) {
		free(text);
		return t;
	} else {
		log_warnx("the configuration with sandbox \"%s\" added does "
		    "not validate:", d->name);
		print_errors(errors);
	}
	free(errors);
	free(text);
	cfgtxn_end(t);
	return NULL;
}
