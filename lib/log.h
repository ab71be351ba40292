/*
 * log.h -- the one error vocabulary of moat.
 *
 * log_warn appends strerror(errno); log_warnx does not.  fatal/fatalx log
 * and exit(1): use them only at start-up, on internal IPC violations and on
 * out-of-memory.  A bad packet, query or connection is never fatal.
 */
#ifndef MOAT_LOG_H
#define MOAT_LOG_H

#include <stdarg.h>

/* Set by the Makefile, one string for every program's --version. */
#ifndef MOAT_VERSION
#define MOAT_VERSION "unknown"
#endif

enum log_level { LOG_LVL_WARN = 0, LOG_LVL_INFO = 1, LOG_LVL_DEBUG = 2 };

/* name: program name for messages; to_syslog: 0 stderr, 1 syslog (daemon). */
void	log_init(const char *name, int to_syslog, int verbosity);
void	log_setverbose(int verbosity);
/* Whether messages go to syslog (else to stderr). */
int	log_is_syslog(void);

/* Something an operator must act on now (syslog priority alert): the
 * canary found the policy no longer contains a guest. */
void	log_alertx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	fatal(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
void	fatalx(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

/* Allocation wrappers that fatalx on out-of-memory. */
void	*xmalloc(size_t);
void	*xcalloc(size_t, size_t);
void	*xreallocarray(void *, size_t, size_t);
char	*xstrdup(const char *);
int	 xasprintf(char **, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

#endif
