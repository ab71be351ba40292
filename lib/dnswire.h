/*
 * dnswire.h -- ldns's wire parser, called on an answer from outside.
 *
 * ldns 1.8 keeps only the last TSIG record of a message's additional
 * section and loses the others (their memory is never freed), so a
 * message with many of them leaks in whatever parses it.  moat reads
 * nothing of an answer's additional section: it is left out before
 * ldns sees the message.
 */
#ifndef MOAT_DNSWIRE_H
#define MOAT_DNSWIRE_H

#include <stddef.h>
#include <stdint.h>

#include <ldns/ldns.h>

/* ldns_wire2pkt on buf with its additional section left out. */
ldns_status	dnswire_answer(ldns_pkt **, const uint8_t *buf, size_t len);

#endif
