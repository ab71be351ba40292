/*
 * nr_int.h -- nft-rules internals: the ruleset model shared by the
 * builder, the renderer, the netlink code and the verifier.
 *
 * Every object carries both its libnftnl form (what the kernel gets) and
 * its nft-syntax text (what an operator reviews); the rule builder in
 * nr_rule.c produces the two side by side from one call, so they cannot
 * drift apart.
 */
#ifndef MOAT_NR_INT_H
#define MOAT_NR_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nftrules.h"

struct nftnl_table;
struct nftnl_chain;
struct nftnl_rule;
struct nftnl_set;
struct nftnl_obj;
struct nftnl_set_elem;

/* A growable string. */
struct nr_buf {
	char	*s;
	size_t	 len, cap;
};
void	buf_add(struct nr_buf *, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
char	*buf_take(struct nr_buf *);	/* caller frees; buf is reset */

struct nr_rule {
	struct nftnl_rule *nl;
	char		*text;
};

struct nr_chain {
	char		*name;
	struct nftnl_chain *nl;
	char		*hook;		/* "type filter hook ..." or NULL */
	struct nr_rule	*rules;
	size_t		 nrules, caprules;
};

struct nr_set {
	char		*name;
	struct nftnl_set *nl;
	char		*decl;		/* "type ...; flags ...;" */
	char		**elems;	/* nft syntax of each element */
	size_t		 nelems, capelems;
	struct nftnl_set_elem **nle;	/* each element in nl, in order */
	size_t		 nnle, capnle;
	bool		 dynamic;	/* runtime elements: not verified */
	bool		 map;		/* verdict map: created after chains */
	bool		 per_sandbox;	/* one element per sandbox: "constant"
					 * or not (gatewayd), both the policy */
};

struct nr_table {
	int		 family;	/* NFPROTO_INET or NFPROTO_BRIDGE */
	const char	*fname;		/* "inet" or "bridge" */
	struct nr_set	**sets;		/* pointers: stable while growing */
	size_t		 nsets, capsets;
	struct nr_chain	**chains;	/* in creation order */
	size_t		 nchains, capchains;
	char		**counters;
	size_t		 ncounters, capcounters;
	uint32_t	 next_set_id;
};

struct nftr_ruleset {
	struct nr_table	 tables[2];
	size_t		 ntables;
	char		*source;	/* config path, for the render header */
	size_t		 nsandboxes;
	enum nftr_mode	 mode;
};

/* Model construction (nr_model.c). */
struct nr_table	*model_table(struct nftr_ruleset *, int family,
		    const char *fname);
struct nr_chain	*model_chain(struct nr_table *, const char *name,
		    const char *type, int hooknum, int prio,
		    const char *prio_name);
struct nr_set	*model_set(struct nr_table *, const char *name,
		    uint32_t keytype, uint32_t keylen, uint32_t flags,
		    const char *decl);
void		 model_set_elem(struct nr_set *, const void *key,
		    uint32_t keylen, uint32_t elflags, int verdict,
		    const char *chain, const char *text);
void		 model_set_elem_text(struct nr_set *, const char *text);
void		 model_set_counter(struct nr_set *);
void		 model_counter(struct nr_table *, const char *name);
struct nr_chain	*model_find_chain(struct nr_table *, const char *);
struct nr_set	*model_find_set(struct nr_table *, const char *);
void		 model_free(struct nftr_ruleset *);

/* nftables data type ids, as nft(8) numbers them, so that `nft list`
 * shows our sets with their proper types. */
#define NR_TYPE_VERDICT		1
#define NR_TYPE_IPADDR		7
#define NR_TYPE_IP6ADDR		8
#define NR_TYPE_ETHERADDR	9
#define NR_TYPE_INET_PROTO	12
#define NR_TYPE_INET_SERVICE	13
#define NR_TYPE_UID		24
#define NR_TYPE_IFNAME		41
#define NR_TYPE_BITS		6
#define NR_CONCAT(a, b)		(((a) << NR_TYPE_BITS) | (b))

/* Rule fields the policy matches on (nr_rule.c). */
enum nr_field {
	F_IIFNAME, F_OIFNAME, F_ETHER_SADDR, F_IP_SADDR, F_IP_DADDR,
	F_IP6_DADDR, F_ARP_SHA, F_ARP_SPA, F_TCP_DPORT, F_UDP_DPORT,
	F_UDP_SPORT, F_ARP_TPA, F_SKUID, F_ICMP_TYPE, F_ICMP6_TYPE,
	F_TCP_SPORT, F_L4PROTO, F_TH_DPORT, F_IP6_SADDR, F_IP6_HOPLIMIT,
	F_ND_TARGET, F_NFIELDS
};

/* Build one rule: rb_begin, any number of matches, one or more
 * statements, rb_end (which appends it to the chain). */
struct nr_rb {
	struct nr_table	*t;
	struct nr_chain	*c;
	struct nftnl_rule *r;
	struct nr_buf	 text;
	unsigned	 guards;	/* protocol checks already emitted */
};

void	rb_begin(struct nr_rb *, struct nr_table *, struct nr_chain *);
void	rb_end(struct nr_rb *);
void	rb_cmp_str(struct nr_rb *, enum nr_field, bool neq, const char *);
void	rb_cmp_prefix(struct nr_rb *, enum nr_field, bool neq,
	    const struct moat_prefix *);
void	rb_cmp_port(struct nr_rb *, enum nr_field, uint16_t);
void	rb_cmp_port_neq(struct nr_rb *, enum nr_field, uint16_t);
void	rb_cmp_u8(struct nr_rb *, enum nr_field, uint8_t);
void	rb_icmp_type_code(struct nr_rb *, uint8_t type, uint8_t code);
void	rb_nfproto_ipv6(struct nr_rb *);
void	rb_l4proto(struct nr_rb *, int proto);	/* IPPROTO_TCP/UDP/ICMP/ICMPV6 */
void	rb_ethertype(struct nr_rb *, uint16_t, const char *name);
void	rb_lookup(struct nr_rb *, const enum nr_field *, size_t n,
	    const char *set, bool neq);
void	rb_vmap(struct nr_rb *, enum nr_field, const char *set);
void	rb_ct_state(struct nr_rb *, uint32_t mask, const char *text);
void	rb_ct_unconfirmed(struct nr_rb *);
void	rb_skuid(struct nr_rb *, uint32_t uid);
void	rb_fib_daddr_local(struct nr_rb *);
void	rb_notrack(struct nr_rb *);
void	rb_counter(struct nr_rb *, const char *name);
void	rb_log(struct nr_rb *, const char *prefix, uint16_t group);
void	rb_reject(struct nr_rb *);
void	rb_verdict(struct nr_rb *, int verdict, const char *chain);
void	rb_redirect(struct nr_rb *, uint16_t port);
void	rb_masquerade(struct nr_rb *);
void	rb_snat4(struct nr_rb *, const struct moat_addr *);
void	rb_limit_over(struct nr_rb *, uint32_t rate, uint32_t burst);
void	rb_meter_over(struct nr_rb *, enum nr_field, const char *set,
	    uint32_t rate, uint32_t burst);

/* Canonical text of kernel-side objects, for verify (nr_verify.c). */
char	*canon_rule(const struct nftnl_rule *);

#endif
