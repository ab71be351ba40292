/*
 * canary_report.h -- reading the canary's containment-check report
 * (canary_report.c), a pure function over the scanner's text output.
 */
#ifndef GATEWAYD_CANARY_REPORT_H
#define GATEWAYD_CANARY_REPORT_H

#include <stddef.h>

#define CANARY_PROBE_LEN	160

struct canary_report {
	size_t	 breaches;	/* BREACH lines */
	size_t	 failed;	/* FAILED lines (a control that failed) */
	char	 first[CANARY_PROBE_LEN];	/* the first of them, printable
						 * ASCII, spaces folded; "" */
	int	 summary;	/* 1: the final "N probes in" line was seen */
};

/* Read len bytes of the scanner's stdout; never fails: what it cannot
 * read is not counted. */
void	canary_report_parse(const char *buf, size_t len,
	    struct canary_report *);

#endif
