/*
 * confpath.c -- the paths of moat's configuration files (confpath.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confpath.h"
#include "config_int.h"
#include "log.h"

bool
confpath_name_valid(const char *name)
{
	return name != NULL && ident_valid(name, 32);
}

char *
confpath_dir(const char *conf_path, const char *sub)
{
	const char *slash = strrchr(conf_path, '/');
	char *dir;

	if (slash == NULL)
		return xstrdup(sub);
	xasprintf(&dir, "%.*s/%s", (int)(slash - conf_path), conf_path, sub);
	return dir;
}

static char *
in_dir(const char *conf_path, const char *sub, const char *name)
{
	char *dir, *path;

	if (!confpath_name_valid(name))
		return NULL;
	dir = confpath_dir(conf_path, sub);
	xasprintf(&path, "%s/%s.conf", dir, name);
	free(dir);
	return path;
}

char *
confpath_sandbox(const char *conf_path, const char *name)
{
	return in_dir(conf_path, "sandboxes.d", name);
}

char *
confpath_secret(const char *conf_path, const char *name)
{
	return in_dir(conf_path, "secrets.d", name);
}
