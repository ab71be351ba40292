/*
 * confpath.h -- where moat keeps each configuration file, named in one
 * place.  moat.conf's folder holds sandboxes.d/NAME.conf (one sandbox
 * each) and secrets.d/NAME.conf (one secret each); a path is built the
 * same way the loader reads it, so a file written here is the file the
 * next load finds, and its name matches the loader's record of where a
 * sandbox or secret was defined.
 */
#ifndef MOAT_CONFPATH_H
#define MOAT_CONFPATH_H

#include <stdbool.h>

/* A name a sandbox's or secret's file may carry: 1 to 32 of a-z, 0-9,
 * '-' and '_', starting with a letter or digit (the loader's rule for
 * names), so that it can never lead out of its folder. */
bool	 confpath_name_valid(const char *name);

/* The folder sub ("sandboxes.d", "secrets.d") beside conf_path:
 * "sub" when conf_path has no '/'.  Malloc'ed. */
char	*confpath_dir(const char *conf_path, const char *sub);
/* sandboxes.d/NAME.conf and secrets.d/NAME.conf beside conf_path;
 * malloc'ed, or NULL if name is not valid. */
char	*confpath_sandbox(const char *conf_path, const char *name);
char	*confpath_secret(const char *conf_path, const char *name);

#endif
