/*
 * fuzz_dnsd_query.c -- the guest-query path of dnsd: dq_parse over
 * (buffer, length), then every kind of answer a guest can get for it
 * (refusal with EDE, an answer with records, truncation to the client's
 * size, FORMERR for what did not parse) and the policy lookup of its name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "config.h"
#include "../dnsd/msg.h"
#include "../dnsd/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static ldns_rr_list *records;
static struct nameset *allow;

static void
init(void)
{
	static const char *const rrs[] = {
		"a.test. 300 IN CNAME b.test.",
		"b.test. 300 IN A 203.0.113.10",
		"b.test. 300 IN A 203.0.113.11",
	};
	uint8_t wire[LDNS_MAX_DOMAINLEN + 2];
	size_t i, len;
	bool wild;

	records = ldns_rr_list_new();
	for (i = 0; i < sizeof(rrs) / sizeof(rrs[0]); i++) {
		ldns_rr *rr = NULL;

		if (ldns_rr_new_frm_str(&rr, rrs[i], 0, NULL, NULL) ==
		    LDNS_STATUS_OK)
			ldns_rr_list_push_rr(records, rr);
	}
	allow = nameset_new(4);
	len = pattern_to_wire("github.test", wire, sizeof(wire), &wild);
	nameset_add(allow, wire, len);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dq q;
	enum dq_status st;
	uint8_t *out;
	size_t olen;
	char name[LDNS_MAX_DOMAINLEN * 4 + 8];

	if (records == NULL)
		init();
	st = dq_parse(data, size, size & 1, &q);
	if (st == DQ_OK) {
		(void)nameset_has(allow, q.name, q.namelen);
		(void)dq_name(&q, name, sizeof(name));
		out = resp_build(&q, LDNS_RCODE_REFUSED, NULL, NULL, 0,
		    EDE_BLOCKED, "not on the allow list", &olen);
		if (out != NULL && olen > q.maxlen)
			abort();
		free(out);
		out = resp_build(&q, LDNS_RCODE_NOERROR, records, NULL, 7, 0,
		    NULL, &olen);
		if (out != NULL && olen > q.maxlen)
			abort();
		free(out);
	} else if (st != DQ_DROP) {
		out = resp_error(data, size, LDNS_RCODE_FORMERR, &olen);
		free(out);
	}
	dq_clear(&q);
	return 0;
}
