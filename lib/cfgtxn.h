/*
 * cfgtxn.h -- change configuration files all or nothing.
 *
 * Every verb that writes moat.conf, a drop-in or a secret's file goes
 * through one transaction, so that none can leave a configuration on
 * disk that the loader refuses (which would stop every later reload and
 * the next start of gatewayd):
 *
 *	t = cfgtxn_begin(conf_path);
 *	cfgtxn_stage_write(t, path, data, len, 0644, 0, 0);
 *	cfgtxn_stage_remove(t, other);
 *	if (cfgtxn_commit_and_check(t, check, arg, &errors) == -1)
 *		... nothing changed; errors says why ...
 *	else if (a later step fails)
 *		cfgtxn_rollback(t);	... the old files are back ...
 *	cfgtxn_end(t);
 *
 * A staged write goes at once to a hidden file beside its target (the
 * loader reads only NAME.conf, never dot-files), with its final mode and
 * owner, so the caller may wipe its buffer.  The commit renames each into
 * place, keeping the old file as a hard link under a hidden name; the
 * check then loads the whole configuration.  A rollback renames the old
 * files back: the same contents, mode and owner (the same inode, even);
 * files that did not exist are removed.
 */
#ifndef MOAT_CFGTXN_H
#define MOAT_CFGTXN_H

#include <sys/types.h>

#include <stddef.h>

struct cfgtxn;

/* 0 if the configuration now on disk is good; else -1 and *errors (a
 * malloc'ed text, one line each, or NULL). */
typedef int (*cfgtxn_check_fn)(void *arg, const char *conf_path,
    char **errors);

struct cfgtxn	*cfgtxn_begin(const char *conf_path);
/* 0, or -1 with errno set (the transaction is unchanged). */
int	cfgtxn_stage_write(struct cfgtxn *, const char *path, const void *data,
	    size_t len, mode_t mode, uid_t uid, gid_t gid);
/* The same for a file that must not exist: the commit fails, changing
 * nothing, if path appeared meanwhile (it is never overwritten). */
int	cfgtxn_stage_create(struct cfgtxn *, const char *path, const void *data,
	    size_t len, mode_t mode, uid_t uid, gid_t gid);
int	cfgtxn_stage_remove(struct cfgtxn *, const char *path);
/* Put every staged change in place and run check (NULL: the loader on
 * conf_path).  0: done, or -1: every file is as it was and *errors says
 * why (the loader's lines, or the file that could not be written). */
int	cfgtxn_commit_and_check(struct cfgtxn *, cfgtxn_check_fn, void *arg,
	    char **errors);
/* After a commit: put the old files back.  -1 if one could not be (it
 * is logged). */
int	cfgtxn_rollback(struct cfgtxn *);
/* Forget the old files (or, before a commit, the staged ones); free. */
void	cfgtxn_end(struct cfgtxn *);
/* The paths staged, for telling a caller which errors are about them. */
size_t	cfgtxn_count(const struct cfgtxn *);
const char *cfgtxn_path(const struct cfgtxn *, size_t);

/* Where a journal recovery would not act on was found, and why (it is
 * also logged); for the caller's audit. */
typedef void (*cfgtxn_report_fn)(void *arg, const char *journal,
	    const char *why);

/* Undo the transactions that a process killed in the middle left in
 * moat's folders: moat.conf's and state_dir (NULL: none), each with the
 * folders in it.  Each keeps a locked journal; one whose lock is free has
 * no owner any more.  Recovery acts only on a journal owned by root (the
 * user it runs as) that nobody else may write, in a folder nobody else
 * may write, every path of which lies in those folders (resolved: no
 * symlink or ".." leads out); any other is reported and left alone.
 * 0, or -1 if one could not be undone or was refused (logged; the
 * journal stays). */
int	cfgtxn_recover(const char *conf_path, const char *state_dir,
	    cfgtxn_report_fn, void *arg);

#define CFGTXN_STATE_DIR_DEFAULT	"/var/lib/moat"
/* gateway.state_dir as moat.conf sets it (or the default), read without
 * the loader, which a half-done change may make refuse the whole; NULL
 * if moat.conf cannot be read.  Malloc'ed. */
char	*cfgtxn_state_dir(const char *conf_path);

/* The loader's check, as a cfgtxn_check_fn (arg unused). */
int	cfgtxn_check_load(void *arg, const char *conf_path, char **errors);

#endif
