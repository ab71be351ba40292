/*
 * qcow2.h -- the qcow2 header check (pure; fuzzed in fuzz/fuzz_qcow2.c).
 */
#ifndef MOAT_QCOW2_H
#define MOAT_QCOW2_H

#include <stddef.h>

/* 0 with *vsize (bytes) set when the header is a qcow2 v2 or v3 that
 * stands alone; -1 with why filled otherwise. */
int	 qcow2_header_check(const unsigned char *, size_t,
	    unsigned long long *vsize, char *why, size_t len);

#endif
