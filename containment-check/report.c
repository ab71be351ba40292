/*
 * report.c -- judging each probe against its expectation, and the two
 * reports: a table grouped by class for people, JSON for programs.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc.h"
#include "json.h"
#include "log.h"

#define LIST_CAP	40	/* rows listed per class and outcome */

static const char *const class_names[C_NCLASS] = {
	[C_CONTROL] = "controls", [C_GATEWAY] = "gateway",
	[C_PRIVATE] = "private", [C_METADATA] = "metadata",
	[C_GUESTS] = "guests", [C_IPV6] = "ipv6",
	[C_DNSBYPASS] = "dns-bypass", [C_DNSPOLICY] = "dns-policy",
	[C_SPOOF] = "spoofing", [C_HOST] = "host",
};

static const char *const class_titles[C_NCLASS] = {
	[C_CONTROL] = "positive controls (a dead network must not pass)",
	[C_GATEWAY] = "the gateway itself (only DNS and the proxy)",
	[C_PRIVATE] = "private ranges and --target hosts",
	[C_METADATA] = "cloud metadata endpoints",
	[C_GUESTS] = "other guests (own subnet, neighbour table)",
	[C_IPV6] = "IPv6 (link-local, ULA, NAT64, the gateway host's IPv6)",
	[C_DNSBYPASS] = "DNS past the gateway's resolver",
	[C_DNSPOLICY] = "DNS policy (--allow/--deny/--rebind-name)",
	[C_SPOOF] = "anti-spoofing (forged source MAC, IPv4, ARP, IPv6)",
	[C_HOST] = "host exposure inside the guest",
};

static const char *const verdict_names[] = {
	[V_PENDING] = "pending", [V_REACHABLE] = "reachable",
	[V_CLOSED] = "answered-closed", [V_BLOCKED] = "blocked",
	[V_FILTERED] = "filtered", [V_PROXY] = "proxy-refused",
	[V_CONNECTED] = "connected", [V_SKIPPED] = "not-run",
	[V_FOUND] = "found", [V_ABSENT] = "absent",
};

static const char *const outcome_names[] = {
	[O_OK] = "ok", [O_PASS] = "pass", [O_INFO] = "info",
	[O_BREACH] = "BREACH", [O_FAILED] = "FAILED",
};

const char *
verdict_name(enum cc_verdict v)
{
	return verdict_names[v];
}

const char *
class_name(enum cc_class c)
{
	return class_names[c];
}

/* --- judging ----------------------------------------------------------- */

static bool
any_private(const struct cc_dns_reply *r, const struct moat_rangeset *priv,
    struct moat_addr *which)
{
	struct moat_addr a;
	size_t i;

	for (i = 0; i < r->naddr; i++) {
		a = r->addr[i];
		addr_unmap(&a);
		if (rangeset_contains(priv, &a)) {
			*which = r->addr[i];
			return true;
		}
	}
	return false;
}

static void
note_addr(struct cc_probe *p, const char *what, const struct moat_addr *a)
{
	char b[INET6_ADDRSTRLEN];
	size_t off = strlen(p->evidence);

	snprintf(p->evidence + off, sizeof(p->evidence) - off, ": %s %s",
	    what, addr_fmt(a, b, sizeof(b)));
}

static enum cc_outcome
judge_dns(struct cc_probe *p, const struct moat_rangeset *priv)
{
	const struct cc_dns_reply *r = p->dns;
	struct moat_addr a;

	switch (p->expect) {
	case E_DNS_ANSWER:
		return r != NULL ? O_PASS : O_FAILED;
	case E_DNS_DENY:
		if (r != NULL && r->naddr > 0) {
			note_addr(p, "resolved to", &r->addr[0]);
			return O_BREACH;
		}
		return O_OK;
	case E_DNS_ALLOW:
		if (r == NULL || r->naddr == 0)
			return r != NULL && r->rcode == 0 ? O_INFO : O_FAILED;
		if (any_private(r, priv, &a)) {
			note_addr(p, "private answer", &a);
			return O_BREACH;
		}
		return O_PASS;
	default:	/* E_DNS_REBIND */
		if (r != NULL && any_private(r, priv, &a)) {
			note_addr(p, "private answer", &a);
			return O_BREACH;
		}
		return O_OK;
	}
}

/* A proxy probe breaches only if the proxy served the metadata: a 2xx
 * or 3xx.  A refusal, or no proxy at all, keeps the endpoint away. */
static enum cc_outcome
judge_http(const struct cc_probe *p)
{
	if (p->verdict == V_REACHABLE && p->http_status >= 200 &&
	    p->http_status < 400)
		return O_BREACH;
	return O_OK;
}

static enum cc_outcome
judge_one(struct cc_probe *p, const struct moat_rangeset *priv)
{
	bool reached = p->verdict == V_REACHABLE;
	/* Connected where the proxy may answer, without telling who did:
	 * not proof of reach for a control, a breach where it must fail. */
	bool answered = reached || p->verdict == V_CLOSED ||
	    p->verdict == V_CONNECTED;

	if (p->app == A_HTTP)
		return judge_http(p);
	switch (p->expect) {
	case E_DENY:
		return answered ? O_BREACH : O_OK;
	case E_REACH:
		return reached ? O_PASS : O_FAILED;
	case E_UNREACH:
		return answered ? O_BREACH : O_PASS;
	case E_INFO:
		return O_INFO;
	case E_ABSENT:
		return p->verdict == V_FOUND ? O_BREACH : O_OK;
	default:
		return judge_dns(p, priv);
	}
}

/* The A and AAAA halves of an --allow-name: one empty half is fine as
 * long as the other resolved; judge_dns marks such a half O_INFO. */
static void
judge_allow_pairs(struct cc_probe *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i++) {
		if (p[i].expect != E_DNS_ALLOW || p[i + 1].expect !=
		    E_DNS_ALLOW || p[i].what != p[i + 1].what)
			continue;
		if (p[i].outcome == O_INFO && p[i + 1].outcome == O_INFO)
			p[i].outcome = p[i + 1].outcome = O_FAILED;
		i++;
	}
}

void
report_judge(struct cc_probe *p, size_t n, const struct moat_rangeset *priv)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i].outcome = judge_one(&p[i], priv);
	judge_allow_pairs(p, n);
}

/* --- shared helpers ---------------------------------------------------- */

static const char *
proto_name(const struct cc_probe *p)
{
	static const char *const names[] = {
		[K_TCP] = "tcp", [K_UDP] = "udp", [K_ICMP6] = "icmp6",
		[K_LOCAL] = "local",
	};

	if (p->kind == K_SPOOF)
		return p->spoof != NULL && p->spoof->kind == SP_ARP ? "arp" :
		    p->app == A_DNS ? "udp" : "tcp";
	return names[p->kind];
}

void
probe_target(const struct cc_probe *p, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN], ifn[16] = "";

	if (p->kind == K_LOCAL && p->dst.sa.sa_family == AF_UNSPEC) {
		snprintf(buf, len, "-");
		return;
	}
	if (p->dst.sa.sa_family == AF_INET) {
		inet_ntop(AF_INET, &p->dst.sin.sin_addr, a, sizeof(a));
		if (p->kind == K_SPOOF && p->dst.sin.sin_port == 0)
			snprintf(buf, len, "%s", a);
		else
			snprintf(buf, len, "%s:%u", a,
			    ntohs(p->dst.sin.sin_port));
		return;
	}
	inet_ntop(AF_INET6, &p->dst.sin6.sin6_addr, a, sizeof(a));
	if (p->dst.sin6.sin6_scope_id)
		snprintf(ifn, sizeof(ifn), "%%%u", p->dst.sin6.sin6_scope_id);
	if (p->kind == K_ICMP6)
		snprintf(buf, len, "%s%s", a, ifn);
	else
		snprintf(buf, len, "[%s%s]:%u", a, ifn,
		    ntohs(p->dst.sin6.sin6_port));
}

/* refused: a probe that must be refused got the gateway's refusal
 * (admin-prohibited, or the proxy's); filtered: it got no answer at all,
 * which contains as well (the policy's own silent drops, forged packets
 * that come to nothing, an answer later than the probe waited). */
struct tally {
	size_t	probes, breaches, failed, passed, refused, filtered, skipped;
};

static void
tally(const struct cc_probe *p, size_t n, struct tally *t)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < n; i++) {
		t->probes++;
		t->breaches += p[i].outcome == O_BREACH;
		t->failed += p[i].outcome == O_FAILED;
		t->passed += p[i].outcome == O_PASS;
		t->refused += p[i].outcome == O_OK &&
		    (p[i].verdict == V_BLOCKED || p[i].verdict == V_PROXY);
		t->filtered += p[i].outcome == O_OK &&
		    p[i].verdict == V_FILTERED;
		t->skipped += p[i].verdict == V_SKIPPED;
	}
}

/* What was probed per address family: the address a probe is about (a
 * literal asked of the proxy counts for its own family).  Local checks
 * belong to neither. */
static const struct family {
	sa_family_t	 fam;
	const char	*name, *json;
} families[] = {
	{ AF_INET, "IPv4", "ipv4" },
	{ AF_INET6, "IPv6", "ipv6" },
};

static void
tally_family(const struct cc_probe *p, size_t n, sa_family_t fam,
    struct tally *t)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < n; i++) {
		if (p[i].fam != fam)
			continue;
		t->probes++;
		t->breaches += p[i].outcome == O_BREACH;
		t->failed += p[i].outcome == O_FAILED;
		t->passed += p[i].outcome == O_PASS;
		t->skipped += p[i].verdict == V_SKIPPED;
	}
}

/* Whether the guest itself has IPv6 beyond its link, in words; with
 * IPv6 on and no IPv6 control, the IPv6 internet was not proven. */
static const char *
v6_state(const struct cc_probe *p, size_t n, const struct cc_disc *d,
    char *buf, size_t len)
{
	bool ctl = false;
	size_t i;

	if (!disc_has_v6(d))
		return "the guest is IPv4-only (no global or unique local "
		    "IPv6 address and route)";
	for (i = 0; i < n; i++)
		ctl |= p[i].cls == C_CONTROL && p[i].fam == AF_INET6 &&
		    (p[i].expect == E_REACH || p[i].expect == E_UNREACH);
	snprintf(buf, len, "the guest has IPv6 (%s)%s", d->route6, ctl ? "" :
	    ", no IPv6 control given (--internet [ADDR]:PORT)");
	return buf;
}

/* --- human ------------------------------------------------------------- */

static void
human_row(const struct cc_probe *p)
{
	char tgt[80];

	probe_target(p, tgt, sizeof(tgt));
	printf("  %-6s %-5s %-30s %-15s %s", outcome_names[p->outcome],
	    proto_name(p), tgt, verdict_names[p->verdict], p->evidence);
	if (p->what != NULL)
		printf("  [%s]", p->what);
	printf("\n");
}

/* Probes of one sweep that ended alike: same address, reason, outcome,
 * verdict and evidence, differing only in the port. */
static bool
same_group(const struct cc_probe *a, const struct cc_probe *b)
{
	if (a->kind != K_TCP || b->kind != K_TCP || a->what != b->what ||
	    a->outcome != b->outcome || a->verdict != b->verdict ||
	    a->dst.sa.sa_family != b->dst.sa.sa_family ||
	    strcmp(a->evidence, b->evidence) != 0)
		return false;
	if (a->dst.sa.sa_family == AF_INET)
		return a->dst.sin.sin_addr.s_addr == b->dst.sin.sin_addr.s_addr;
	return memcmp(&a->dst.sin6.sin6_addr, &b->dst.sin6.sin6_addr, 16) == 0;
}

static void
port_ranges(char *buf, size_t len, const uint16_t *ports, size_t n)
{
	size_t i, j, off = 0;
	int w;

	buf[0] = '\0';
	for (i = 0; i < n; i = j + 1) {
		for (j = i; j + 1 < n && ports[j + 1] == ports[j] + 1; j++)
			;
		w = j > i ? snprintf(buf + off, len - off, "%s%u-%u",
		    off ? "," : "", ports[i], ports[j]) :
		    snprintf(buf + off, len - off, "%s%u", off ? "," : "",
		    ports[i]);
		if (w < 0 || (size_t)w >= len - off) {
			snprintf(buf + (off < len - 4 ? off : len - 4), 4,
			    "...");
			return;
		}
		off += (size_t)w;
	}
}

/* Prints probe i and every later probe of its group as one row with a
 * port list; marks them done.  Returns the number of probes covered. */
static size_t
human_group(const struct cc_probe *p, size_t n, size_t i, bool *done)
{
	static uint16_t ports[65536];
	char tgt[80], list[120];
	size_t j, np = 0;

	for (j = i; j < n; j++) {
		if (!done[j] && (j == i || same_group(&p[i], &p[j]))) {
			ports[np++] = ntohs(p[j].dst.sin.sin_port);
			done[j] = true;
		}
	}
	if (np == 1) {
		human_row(&p[i]);
		return 1;
	}
	probe_target(&p[i], tgt, sizeof(tgt));
	*strrchr(tgt, ':') = '\0';
	port_ranges(list, sizeof(list), ports, np);
	printf("  %-6s %-5s %-30s %-15s %s  [%s: %zu ports: %s]\n",
	    outcome_names[p[i].outcome], "tcp", tgt,
	    verdict_names[p[i].verdict], p[i].evidence, p[i].what, np, list);
	return np;
}

/* Rows that are ok are folded into one count per verdict when a class has
 * many; the rest is listed, probes of a port sweep that ended alike as one
 * row (unless -v), up to LIST_CAP rows per outcome, the rest counted. */
static void
human_class(const struct cc_probe *p, size_t n, enum cc_class c, bool verbose,
    bool *done)
{
	size_t i, nc = 0, listed[5] = { 0 }, hidden[5] = { 0 };
	size_t folded[V_ABSENT + 1] = { 0 };
	bool fold;

	for (i = 0; i < n; i++)
		nc += p[i].cls == c;
	if (nc == 0)
		return;
	fold = !verbose && nc > LIST_CAP;
	printf("\n== %s: %s ==\n", class_names[c], class_titles[c]);
	for (i = 0; i < n; i++) {
		if (p[i].cls != c || done[i])
			continue;
		if (fold && (p[i].outcome == O_OK ||
		    p[i].outcome == O_INFO)) {
			folded[p[i].verdict]++;
			continue;
		}
		if (!verbose && listed[p[i].outcome] >= LIST_CAP) {
			hidden[p[i].outcome]++;
			continue;
		}
		listed[p[i].outcome]++;
		if (verbose)
			human_row(&p[i]);
		else
			human_group(p, n, i, done);
	}
	for (i = 0; i <= V_ABSENT; i++)
		if (folded[i])
			printf("  %-6s %zu more probes %s\n", "ok", folded[i],
			    verdict_names[i]);
	for (i = 0; i < 5; i++)
		if (hidden[i])
			printf("  %-6s ... and %zu more (use -v or --json)\n",
			    outcome_names[i], hidden[i]);
}

static void
human_header(const struct cc_disc *d, const struct cc_opts *o)
{
	char a[INET6_ADDRSTRLEN];
	size_t i;

	printf("containment-check: expect %s", args_mode_name(o->mode));
	if (d->gateway.family != AF_UNSPEC)
		printf(", gateway %s", addr_fmt(&d->gateway, a, sizeof(a)));
	for (i = 0; i < d->nv4; i++)
		printf(", %s %s/%d", d->v4[i].name,
		    addr_fmt(&d->v4[i].addr, a, sizeof(a)), d->v4[i].plen);
	printf("\n");
}

static void
human_families(const struct cc_probe *p, size_t n, const struct cc_disc *d)
{
	char buf[160];
	struct tally t;
	size_t i;

	for (i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		tally_family(p, n, families[i].fam, &t);
		printf("%s: %zu probes, %zu breach%s, %zu failed control%s, "
		    "%zu controls passed, %zu not run", families[i].name,
		    t.probes, t.breaches, t.breaches == 1 ? "" : "es",
		    t.failed, t.failed == 1 ? "" : "s", t.passed, t.skipped);
		if (families[i].fam == AF_INET6)
			printf("; %s", v6_state(p, n, d, buf, sizeof(buf)));
		printf("\n");
	}
}

int
report_human(const struct cc_probe *p, size_t n, const struct cc_disc *d,
    const struct cc_opts *o, uint64_t elapsed_us)
{
	struct tally t;
	bool *done = xcalloc(n ? n : 1, sizeof(*done));
	int c;

	human_header(d, o);
	for (c = 0; c < C_NCLASS; c++)
		human_class(p, n, (enum cc_class)c, o->verbose, done);
	free(done);
	tally(p, n, &t);
	printf("\n%zu probes in %.2f s: %zu breach%s, %zu failed control%s, "
	    "%zu controls passed, %zu refused by the gateway, %zu filtered "
	    "(expected), %zu not run\n", t.probes, (double)elapsed_us / 1e6,
	    t.breaches, t.breaches == 1 ? "" : "es", t.failed,
	    t.failed == 1 ? "" : "s", t.passed, t.refused, t.filtered,
	    t.skipped);
	human_families(p, n, d);
	printf("verdict: %s\n", t.breaches || t.failed ? "NOT CONTAINED" :
	    "contained");
	return t.breaches || t.failed ? EXIT_FALSE : EXIT_OK;
}

/* --- JSON -------------------------------------------------------------- */

/* A JSON string on stdout; a missing value is the empty string. */
static void
put_jstr(const char *s)
{
	json_fputs(stdout, s != NULL ? s : "");
}

static void
json_probe(const struct cc_probe *p, bool first)
{
	char tgt[80];

	probe_target(p, tgt, sizeof(tgt));
	printf("%s\n    {\"class\": ", first ? "" : ",");
	put_jstr(class_names[p->cls]);
	printf(", \"outcome\": ");
	put_jstr(outcome_names[p->outcome]);
	printf(", \"proto\": ");
	put_jstr(proto_name(p));
	printf(", \"target\": ");
	put_jstr(tgt);
	printf(", \"verdict\": ");
	put_jstr(verdict_names[p->verdict]);
	printf(", \"evidence\": ");
	put_jstr(p->evidence);
	printf(", \"what\": ");
	put_jstr(p->what);
	printf(", \"ms\": %.1f}", p->rtt_us / 1000.0);
}

static void
json_families(const struct cc_probe *p, size_t n, const struct cc_disc *d)
{
	char buf[160];
	struct tally t;
	size_t i;

	for (i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		tally_family(p, n, families[i].fam, &t);
		printf("%s\n    ", i ? "," : "");
		put_jstr(families[i].json);
		printf(": {\"probes\": %zu, \"breaches\": %zu, "
		    "\"failed_controls\": %zu, \"controls_passed\": %zu, "
		    "\"not_run\": %zu", t.probes, t.breaches, t.failed,
		    t.passed, t.skipped);
		if (families[i].fam == AF_INET6) {
			printf(", \"guest_has_ipv6\": %s, \"state\": ",
			    disc_has_v6(d) ? "true" : "false");
			put_jstr(v6_state(p, n, d, buf, sizeof(buf)));
		}
		printf("}");
	}
}

/* Every probe that is not a plain ok is listed; ok ones are counted per
 * class and verdict (all of them with -v). */
int
report_json(const struct cc_probe *p, size_t n, const struct cc_disc *d,
    const struct cc_opts *o, uint64_t elapsed_us)
{
	size_t counts[C_NCLASS][V_ABSENT + 1] = { { 0 } };
	char a[INET6_ADDRSTRLEN];
	struct tally t;
	bool first = true, cfirst;
	size_t i;
	int c, v;

	tally(p, n, &t);
	printf("{\n  \"version\": 1,\n  \"expect\": ");
	put_jstr(args_mode_name(o->mode));
	printf(",\n  \"gateway\": ");
	put_jstr(d->gateway.family == AF_UNSPEC ? "" :
	    addr_fmt(&d->gateway, a, sizeof(a)));
	printf(",\n  \"contained\": %s,\n  \"probes\": %zu,\n"
	    "  \"breaches\": %zu,\n  \"failed_controls\": %zu,\n"
	    "  \"controls_passed\": %zu,\n  \"refused\": %zu,\n"
	    "  \"filtered\": %zu,\n  \"not_run\": %zu,\n"
	    "  \"elapsed_ms\": %.1f,\n  \"results\": [",
	    t.breaches || t.failed ? "false" : "true", t.probes, t.breaches,
	    t.failed, t.passed, t.refused, t.filtered, t.skipped,
	    (double)elapsed_us / 1000.0);
	for (i = 0; i < n; i++) {
		if (!o->verbose && p[i].outcome == O_OK) {
			counts[p[i].cls][p[i].verdict]++;
			continue;
		}
		json_probe(&p[i], first);
		first = false;
	}
	printf("\n  ],\n  \"ok_counts\": {");
	for (c = 0, first = true; c < C_NCLASS; c++) {
		printf("%s\n    ", first ? "" : ",");
		put_jstr(class_names[c]);
		printf(": {");
		for (v = 0, cfirst = true; v <= V_ABSENT; v++) {
			if (counts[c][v] == 0)
				continue;
			printf("%s", cfirst ? "" : ", ");
			put_jstr(verdict_names[v]);
			printf(": %zu", counts[c][v]);
			cfirst = false;
		}
		printf("}");
		first = false;
	}
	printf("\n  },\n  \"families\": {");
	json_families(p, n, d);
	printf("\n  }\n}\n");
	return t.breaches || t.failed ? EXIT_FALSE : EXIT_OK;
}
