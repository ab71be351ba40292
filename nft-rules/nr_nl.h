/*
 * nr_nl.h -- nft-rules internals: the netlink context and batches.
 */
#ifndef MOAT_NR_NL_H
#define MOAT_NR_NL_H

#include <stdbool.h>
#include <stdint.h>

#include "nftrules.h"

struct mnl_socket;
struct nftnl_batch;
struct nlmsghdr;

struct nftr_ctx {
	struct mnl_socket *nl;
	uint32_t	 portid, seq;
	unsigned	 features;	/* NFTR_F_* */
	bool		 probed;
	const struct nftr_ruleset *applied;	/* last committed through us */
	char		 err[512];
};

struct nl_batch {
	struct nftr_ctx	*ctx;
	struct nftnl_batch *b;
	bool		 ack_all;
	uint32_t	 first_seq, last_seq;
	struct nlmsghdr	*last;
	char		**desc;		/* per message, for error messages */
	size_t		 ndesc, capdesc;
};

void	nl_seterr(struct nftr_ctx *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
struct nl_batch *batch_new(struct nftr_ctx *, bool ack_all);
void	batch_free(struct nl_batch *);
struct nlmsghdr *batch_msg(struct nl_batch *, uint16_t type, int family,
	    uint16_t flags, const char *what);
void	batch_next(struct nl_batch *);
int	batch_send(struct nl_batch *);
int	batch_run(struct nl_batch *, bool commit);
int	probe_recv(struct nl_batch *, unsigned *features);
int	nl_dump(struct nftr_ctx *, struct nlmsghdr *req,
	    int (*cb)(const struct nlmsghdr *, void *), void *arg);
uint32_t table_flags(struct nftr_ctx *);

/* nr_ha.c: delete the gate of a pair, if there is one. */
void	ha_delete_to_batch(struct nl_batch *);

/* nr_apply.c: append the whole replacement transaction to a batch.
 * carry (may be NULL) holds allowlist elements to keep, per set name. */
struct nr_carry;
void	ruleset_to_batch(struct nl_batch *, const struct nftr_ruleset *,
	    uint32_t tflags, struct nr_carry *carry);

#endif
