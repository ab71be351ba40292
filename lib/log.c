/*
 * log.c -- logging to stderr or syslog with levels, and allocation
 * wrappers that treat out-of-memory as fatal.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "exitcodes.h"
#include "log.h"

static const char *log_name = "moat";
static int log_syslog;
static int log_verbose;

void
log_init(const char *name, int to_syslog, int verbosity)
{
	log_name = name;
	log_syslog = to_syslog;
	log_verbose = verbosity;
	if (to_syslog)
		openlog(name, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void
log_setverbose(int v)
{
	log_verbose = v;
}

int
log_is_syslog(void)
{
	return log_syslog;
}

static void
vlog(int pri, const char *fmt, va_list ap, int with_errno)
{
	char msg[2048];
	int saved = errno;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (log_syslog) {
		if (with_errno)
			syslog(pri, "%s: %s", msg, strerror(saved));
		else
			syslog(pri, "%s", msg);
	} else {
		if (with_errno)
			fprintf(stderr, "%s: %s: %s\n", log_name, msg,
			    strerror(saved));
		else
			fprintf(stderr, "%s: %s\n", log_name, msg);
	}
	errno = saved;
}

#define LOGFN(fn, pri, lvl, err)					\
void									\
fn(const char *fmt, ...)						\
{									\
	va_list ap;							\
	if (log_verbose < (lvl))					\
		return;							\
	va_start(ap, fmt);						\
	vlog(pri, fmt, ap, err);					\
	va_end(ap);							\
}

LOGFN(log_alertx, LOG_ALERT, LOG_LVL_WARN, 0)
LOGFN(log_warn, LOG_WARNING, LOG_LVL_WARN, 1)
LOGFN(log_warnx, LOG_WARNING, LOG_LVL_WARN, 0)
LOGFN(log_info, LOG_INFO, LOG_LVL_INFO, 0)
LOGFN(log_debug, LOG_DEBUG, LOG_LVL_DEBUG, 0)

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_CRIT, fmt, ap, 1);
	va_end(ap);
	exit(EXIT_SYSTEM);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_CRIT, fmt, ap, 0);
	va_end(ap);
	exit(EXIT_SYSTEM);
}

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		fatalx("out of memory");
	return p;
}

void *
xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);

	if (p == NULL)
		fatalx("out of memory");
	return p;
}

void *
xreallocarray(void *old, size_t n, size_t sz)
{
	void *p = reallocarray(old, n ? n : 1, sz ? sz : 1);

	if (p == NULL)
		fatalx("out of memory");
	return p;
}

char *
xstrdup(const char *s)
{
	char *p = strdup(s);

	if (p == NULL)
		fatalx("out of memory");
	return p;
}

int
xasprintf(char **ret, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(ret, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatalx("out of memory");
	return n;
}
