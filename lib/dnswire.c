/*
 * dnswire.c -- ldns's wire parser on an answer from outside (dnswire.h).
 */
#include <stdlib.h>
#include <string.h>

#include "dnswire.h"

ldns_status
dnswire_answer(ldns_pkt **p, const uint8_t *buf, size_t len)
{
	ldns_status st;
	uint8_t *copy;

	*p = NULL;
	if (len < LDNS_HEADER_SIZE)
		return LDNS_STATUS_PACKET_OVERFLOW;
	if ((copy = malloc(len)) == NULL)
		return LDNS_STATUS_MEM_ERR;
	memcpy(copy, buf, len);
	copy[10] = copy[11] = 0;	/* ARCOUNT */
	st = ldns_wire2pkt(p, copy, len);
	free(copy);
	return st;
}
