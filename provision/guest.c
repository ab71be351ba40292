/*
 * guest.c -- provision's per-guest record (guest.conf, libconfig syntax),
 * the per-guest paths, and the argument vector helper.
 */
#include <errno.h>
#include <fcntl.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confpath.h"
#include "log.h"
#include "provision.h"

void
strv_add(struct strv *a, const char *s)
{
	a->v = xreallocarray(a->v, a->n + 2, sizeof(char *));
	a->v[a->n++] = xstrdup(s);
	a->v[a->n] = NULL;
}

void
strv_addf(struct strv *a, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		fatalx("out of memory");
	va_end(ap);
	a->v = xreallocarray(a->v, a->n + 2, sizeof(char *));
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

void
strv_free(struct strv *a)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	a->v = NULL;
	a->n = 0;
}

/* Arguments joined with single quotes where needed, so the output of
 * `provision qemu-args` can be pasted into a shell for review. */
char *
strv_join(const struct strv *a)
{
	char *buf = NULL;
	size_t len = 0, i;
	const char *s;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		fatal("open_memstream");
	for (i = 0; i < a->n; i++) {
		s = a->v[i];
		if (i > 0)
			fputc(' ', f);
		if (*s != '\0' && strspn(s, "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=,./:+@%") ==
		    strlen(s)) {
			fputs(s, f);
			continue;
		}
		fputc('\'', f);
		for (; *s != '\0'; s++) {
			if (*s == '\'')
				fputs("'\\''", f);
			else
				fputc(*s, f);
		}
		fputc('\'', f);
	}
	fclose(f);
	return buf;
}

static const char *const mode_names[] = { "image", "kernel" };
static const char *const accel_names[] = { "auto", "kvm", "tcg" };

const char *
mode_name(enum pv_mode m)
{
	return mode_names[m];
}

const char *
accel_name(enum pv_accel a)
{
	return accel_names[a];
}

int
accel_parse(const char *s, enum pv_accel *a)
{
	size_t i;

	for (i = 0; i < sizeof(accel_names) / sizeof(accel_names[0]); i++)
		if (strcmp(s, accel_names[i]) == 0) {
			*a = (enum pv_accel)i;
			return 0;
		}
	return -1;
}

void
guest_free(struct guest *g)
{
	if (g == NULL)
		return;
	free(g->name);
	free(g->image);
	free(g->image_format);
	free(g->kernel);
	free(g->initrd);
	free(g->append);
	free(g->disk);
	free(g->user);
	free(g->login);
	memset(g, 0, sizeof(*g));
}

static void
put_str(config_setting_t *root, const char *key, const char *v)
{
	if (v != NULL)
		config_setting_set_string(config_setting_add(root, key,
		    CONFIG_TYPE_STRING), v);
}

static void
put_int(config_setting_t *root, const char *key, int v)
{
	config_setting_set_int(config_setting_add(root, key, CONFIG_TYPE_INT),
	    v);
}

/* Written to a temporary file and renamed, so a crash never leaves a torn
 * record that a later `destroy` could not read. */
int
guest_write(const char *path, const struct guest *g)
{
	config_t lc;
	config_setting_t *r;
	char *tmp;
	int fd, rc = -1;

	config_init(&lc);
	r = config_root_setting(&lc);
	put_str(r, "name", g->name);
	put_str(r, "mode", mode_name(g->mode));
	put_str(r, "image", g->image);
	put_str(r, "image_format", g->image_format);
	put_str(r, "kernel", g->kernel);
	put_str(r, "initrd", g->initrd);
	put_str(r, "append", g->append);
	put_int(r, "cpus", g->cpus);
	put_int(r, "memory_mb", g->memory_mb);
	put_str(r, "disk", g->disk);
	put_str(r, "accel", accel_name(g->accel));
	put_str(r, "user", g->user);
	if (g->uid >= 0)
		put_int(r, "uid", (int)g->uid);
	put_str(r, "login", g->login);
	config_setting_set_bool(config_setting_add(r, "sudo",
	    CONFIG_TYPE_BOOL), g->sudo);
	xasprintf(&tmp, "%s.tmpXXXXXX", path);
	if ((fd = mkstemp(tmp)) == -1) {
		log_warn("%s", tmp);
		goto out;
	}
	close(fd);
	if (config_write_file(&lc, tmp) != CONFIG_TRUE) {
		log_warnx("%s: cannot write", tmp);
		unlink(tmp);
		goto out;
	}
	if (rename(tmp, path) == -1) {
		log_warn("rename %s", path);
		unlink(tmp);
		goto out;
	}
	rc = 0;
out:
	free(tmp);
	config_destroy(&lc);
	return rc;
}

static char *
get_str(const config_t *lc, const char *key)
{
	const char *v;

	return config_lookup_string(lc, key, &v) == CONFIG_TRUE ?
	    xstrdup(v) : NULL;
}

int
guest_read(const char *path, struct guest *g)
{
	config_t lc;
	char *s;
	int i, rc = -1;

	memset(g, 0, sizeof(*g));
	config_init(&lc);
	if (config_read_file(&lc, path) != CONFIG_TRUE) {
		if (config_error_type(&lc) == CONFIG_ERR_FILE_IO)
			log_warnx("%s: cannot read: %s", path, strerror(errno));
		else
			log_warnx("%s:%d: %s", path, config_error_line(&lc),
			    config_error_text(&lc));
		goto out;
	}
	g->name = get_str(&lc, "name");
	s = get_str(&lc, "mode");
	g->mode = s != NULL && strcmp(s, "kernel") == 0 ? MODE_KERNEL :
	    MODE_IMAGE;
	free(s);
	g->image = get_str(&lc, "image");
	g->image_format = get_str(&lc, "image_format");
	g->kernel = get_str(&lc, "kernel");
	g->initrd = get_str(&lc, "initrd");
	g->append = get_str(&lc, "append");
	g->cpus = config_lookup_int(&lc, "cpus", &i) == CONFIG_TRUE ? i : 1;
	g->memory_mb = config_lookup_int(&lc, "memory_mb", &i) ==
	    CONFIG_TRUE ? i : 1024;
	g->disk = get_str(&lc, "disk");
	s = get_str(&lc, "accel");
	if (s == NULL || accel_parse(s, &g->accel) == -1)
		g->accel = ACCEL_AUTO;
	free(s);
	g->user = get_str(&lc, "user");
	g->uid = config_lookup_int(&lc, "uid", &i) == CONFIG_TRUE && i > 0 ?
	    i : -1;
	g->login = get_str(&lc, "login");
	g->sudo = config_lookup_bool(&lc, "sudo", &i) == CONFIG_TRUE && i;
	if (g->name == NULL || (g->user == NULL && g->uid < 0) || g->cpus < 1 ||
	    g->memory_mb < 64 || (g->mode == MODE_IMAGE && g->image == NULL) ||
	    (g->mode == MODE_KERNEL && g->kernel == NULL)) {
		log_warnx("%s: incomplete guest record", path);
		guest_free(g);
		goto out;
	}
	rc = 0;
out:
	config_destroy(&lc);
	return rc;
}

void
gpaths_init(struct gpaths *p, const struct pv *pv, const char *name)
{
	xasprintf(&p->dir, "%s/%s", pv->guests_dir, name);
	xasprintf(&p->meta, "%s/guest.conf", p->dir);
	xasprintf(&p->disk, "%s/disk.qcow2", p->dir);
	xasprintf(&p->seed, "%s/seed.iso", p->dir);
	xasprintf(&p->log, "%s/console.log", p->dir);
	xasprintf(&p->log_old, "%s/console.log.1", p->dir);
	xasprintf(&p->qemu_log, "%s/qemu.log", p->dir);
	xasprintf(&p->accel, "%s/accel", p->dir);
	xasprintf(&p->verdict, "%s/verdict", p->dir);
	xasprintf(&p->latest, "%s/verdict.rec", p->dir);
	xasprintf(&p->kernel, "%s/kernel", p->dir);
	xasprintf(&p->initrd, "%s/initrd", p->dir);
	xasprintf(&p->import, "%s/import.tmp", p->dir);
	xasprintf(&p->rdir, "%s/guests/%s", pv->run_dir, name);
	xasprintf(&p->qmp, "%s/qmp.sock", p->rdir);
	xasprintf(&p->console, "%s/console.sock", p->rdir);
	xasprintf(&p->pidfile, "%s/qemu.pid", p->rdir);
	/* Every verb checks NAME (name_valid) before it names a guest. */
	if ((p->dropin = confpath_sandbox(pv->conf_path, name)) == NULL)
		fatalx("guest name \"%s\" is not valid", name);
}

void
gpaths_free(struct gpaths *p)
{
	free(p->dir);
	free(p->meta);
	free(p->disk);
	free(p->seed);
	free(p->log);
	free(p->log_old);
	free(p->qemu_log);
	free(p->accel);
	free(p->verdict);
	free(p->latest);
	free(p->kernel);
	free(p->initrd);
	free(p->import);
	free(p->rdir);
	free(p->qmp);
	free(p->console);
	free(p->pidfile);
	free(p->dropin);
	memset(p, 0, sizeof(*p));
}

/* Load (or reload) the configuration and derive the guests' folder. */
int
pv_load(struct pv *pv)
{
	struct moat_errors errs = { 0 };

	config_free(pv->cfg);
	free(pv->guests_dir);
	pv->guests_dir = NULL;
	if ((pv->cfg = config_load(pv->conf_path, pv->sbdir, &errs)) == NULL) {
		config_errors_print(stderr, &errs);
		config_errors_free(&errs);
		log_warnx("%s: configuration invalid", pv->conf_path);
		return -1;
	}
	xasprintf(&pv->guests_dir, "%s/guests", pv->cfg->gw.state_dir);
	return 0;
}
