/*
 * dropin.h -- change the allow list in a sandbox's drop-in file
 * (sandboxes.d/NAME.conf) and put the file back only if the whole
 * configuration still loads: what `gatewayd ctl allow` and `unallow`
 * write when a grant is for good.
 */
#ifndef GATEWAYD_DROPIN_H
#define GATEWAYD_DROPIN_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The drop-in's text with its top-level allow list changed: the names in
 * add appended (those already listed are left), those in del removed
 * (found[i] says whether del[i] was listed); a name in del without ports
 * removes its entries with ports of their own too ("NAME:tcp/22").  Everything else, comments
 * and other keys, is kept byte for byte; a file without allow gets one
 * at its end.  NULL (with why) if the text cannot be read as a drop-in:
 * an unterminated string, comment or list, or an allow that is not a
 * list of strings.  Pure: for the unit tests and fuzzing.
 */
char	*dropin_allow_edit(const char *text, const char *const *add,
	    size_t nadd, const char *const *del, size_t ndel, bool *found,
	    char *why, size_t whylen);

/*
 * Replace path's contents with text, keeping its owner and mode, and load
 * the whole configuration mainconf with it: if that fails, the old file is
 * put back and *errors holds the loader's messages (malloc'ed).  It goes
 * through the journaled writer (lib/cfgtxn.h): in by rename, the old file
 * back by rename on failure, undone at the next start if gatewayd dies
 * in between.  0 or -1;
 * on success *loaded (if not NULL) is the configuration as loaded, the
 * caller's to free.
 */
struct moat_config;
int	dropin_replace_checked(const char *mainconf, const char *path,
	    const char *text, char **errors, struct moat_config **loaded);

#endif
