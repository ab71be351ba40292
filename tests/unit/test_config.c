/*
 * test_config.c -- the config loader against a corpus.
 *
 * tests/configs/bad/ holds one broken config per file (or per NAME.d
 * folder with a moat.conf and sandboxes.d/); its first line says the exact
 * first error expected:  "# expect: @FILE@:LINE: message", or with
 * "# expect-only:" the one error expected (no other may follow).  @FILE@ is the
 * config's path, @CASE@ the case folder, @DIR@ the scratch folder where
 * the secret files live.  tests/configs/good/ must load, and print as a
 * normalised config that loads again to the same output.
 */
#include <sys/stat.h>

#include <sys/socket.h>

#include <dirent.h>
#include <ftw.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "addr.h"
#include "admit.h"
#include "config.h"

static char scratch[] = "/tmp/moat-test-config.XXXXXX";
static const char *corpus;

static char *
slurp(const char *path)
{
	FILE *fp = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;

	assert_non_null(fp);
	assert_int_equal(getdelim(&buf, &len, '\0', fp) >= 0, 1);
	fclose(fp);
	return buf;
}

/* Replace every occurrence of key in s by val; returns a new string. */
static char *
subst(const char *s, const char *key, const char *val)
{
	size_t kl = strlen(key), vl = strlen(val), n = 0;
	const char *p;
	char *out, *o;

	for (p = s; (p = strstr(p, key)) != NULL; p += kl)
		n++;
	out = o = malloc(strlen(s) + n * vl + 1);
	assert_non_null(out);
	while ((p = strstr(s, key)) != NULL) {
		memcpy(o, s, (size_t)(p - s));
		o += p - s;
		memcpy(o, val, vl);
		o += vl;
		s = p + kl;
	}
	strcpy(o, s);
	return out;
}

static void
write_file(const char *path, const char *text, mode_t mode)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	assert_int_equal(chmod(path, mode), 0);
}

/* Copy src (a file or a folder one or two levels deep) to dst with @DIR@
 * replaced by the scratch folder. */
static void
copy_case(const char *src, const char *dst)
{
	struct stat st;
	struct dirent *de;
	char s[1024], d[1024], *text, *out;
	DIR *dir;

	assert_int_equal(stat(src, &st), 0);
	if (!S_ISDIR(st.st_mode)) {
		text = slurp(src);
		out = subst(text, "@DIR@", scratch);
		write_file(dst, out, 0644);
		free(text);
		free(out);
		return;
	}
	mkdir(dst, 0755);
	assert_non_null(dir = opendir(src));
	while ((de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(s, sizeof(s), "%s/%s", src, de->d_name);
		snprintf(d, sizeof(d), "%s/%s", dst, de->d_name);
		copy_case(s, d);
	}
	closedir(dir);
}

static void
bad_case(void **state)
{
	const char *name = *state;
	char src[512], dst[512], main_conf[600], *text, *nl, *want, *t1, *t2;
	struct moat_errors errs;
	struct moat_config *cfg;
	size_t len = strlen(name);
	int isdir = len > 2 && strcmp(name + len - 2, ".d") == 0;
	bool only;

	snprintf(src, sizeof(src), "%s/bad/%s", corpus, name);
	snprintf(dst, sizeof(dst), "%s/%s", scratch, name);
	copy_case(src, dst);
	snprintf(main_conf, sizeof(main_conf), "%s%s", dst,
	    isdir ? "/moat.conf" : "");

	text = slurp(main_conf);
	only = strncmp(text, "# expect-only: ", 15) == 0;
	assert_true(only || strncmp(text, "# expect: ", 10) == 0);
	nl = strchr(text, '\n');
	assert_non_null(nl);
	*nl = '\0';
	t1 = subst(text + (only ? 15 : 10), "@FILE@", main_conf);
	t2 = subst(t1, "@CASE@", dst);
	want = subst(t2, "@DIR@", scratch);

	cfg = config_load(main_conf, NULL, &errs);
	if (cfg != NULL)
		fail_msg("%s: loaded, but expected: %s", name, want);
	assert_true(errs.n >= 1);
	if (strcmp(errs.msg[0], want) != 0)
		fail_msg("%s:\n  want: %s\n  got:  %s", name, want, errs.msg[0]);
	if (only && errs.n != 1)
		fail_msg("%s: expected that error only, then also: %s", name,
		    errs.msg[1]);
	config_errors_free(&errs);
	free(text);
	free(t1);
	free(t2);
	free(want);
}

static char *
print_to_string(const struct moat_config *cfg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	assert_non_null(fp);
	config_print(fp, cfg);
	fclose(fp);
	return buf;
}

static void
good_case(void **state)
{
	const char *name = *state;
	char src[512], dst[512], main_conf[600], again[600], *p1, *p2;
	struct moat_errors errs;
	struct moat_config *cfg, *cfg2;
	size_t len = strlen(name);
	int isdir = len > 2 && strcmp(name + len - 2, ".d") == 0;

	snprintf(src, sizeof(src), "%s/good/%s", corpus, name);
	snprintf(dst, sizeof(dst), "%s/good-%s", scratch, name);
	copy_case(src, dst);
	snprintf(main_conf, sizeof(main_conf), "%s%s", dst,
	    isdir ? "/moat.conf" : "");
	cfg = config_load(main_conf, NULL, &errs);
	if (cfg == NULL)
		fail_msg("%s: %s", name, errs.n ? errs.msg[0] : "?");
	p1 = print_to_string(cfg);

	/* The normalised form, with no sandboxes.d beside it, loads again
	 * to exactly the same model. */
	snprintf(again, sizeof(again), "%s/again-%s.conf", scratch, name);
	write_file(again, p1, 0644);
	cfg2 = config_load(again, "/nonexistent", &errs);
	if (cfg2 == NULL)
		fail_msg("%s normalised: %s", name, errs.n ? errs.msg[0] : "?");
	p2 = print_to_string(cfg2);
	assert_string_equal(p1, p2);
	free(p1);
	free(p2);
	config_free(cfg);
	config_free(cfg2);
}

/* The model holds exactly what the full example says. */
static void
full_model(void **state)
{
	char path[600];
	struct moat_errors errs;
	struct moat_config *cfg;
	const struct moat_sandbox *web, *dev;
	const struct moat_secret *sec;
	struct moat_addr a;
	char buf[64];

	(void)state;
	snprintf(path, sizeof(path), "%s/good-full.conf", scratch);
	copy_case("tests/configs/good/full.conf", path);
	cfg = config_load(path, NULL, &errs);
	assert_non_null(cfg);
	assert_string_equal(cfg->gw.uplink, "up0");
	assert_string_equal(addr_fmt(&cfg->gw.address, buf, sizeof(buf)),
	    "10.77.0.1");
	assert_int_equal(cfg->gw.proxy_port, 3128);
	assert_true(cfg->gw.intercept);
	assert_int_equal(cfg->gw.verify_interval, 30);
	assert_false(cfg->gw.verify_repair);
	assert_int_equal(cfg->gw.nexceptions, 1);
	assert_int_equal(cfg->gw.exceptions[0].proto, 6);
	assert_int_equal(cfg->gw.exceptions[0].ports[0], 3142);
	assert_int_equal(cfg->nsandboxes, 2);
	web = config_sandbox_by_name(cfg, "web");
	dev = config_sandbox_by_name(cfg, "dev");
	assert_non_null(web);
	assert_non_null(dev);
	assert_int_equal(web->egress, EGRESS_ALLOWLIST);
	assert_int_equal(dev->egress, EGRESS_OPEN);
	assert_int_equal(web->allow.n, 2);
	assert_string_equal(web->allow.v[1], "*.githubusercontent.com");
	assert_int_equal(web->mac[5], 0x0a);
	assert_string_equal(web->owner, "alice");
	{	/* DNS rate: the sandbox's own, else the gateway's. */
		double q, b;
		assert_int_equal(cfg->gw.dns_cache_size, 65536);
		config_dns_rate(cfg, web, &q, &b);
		assert_true(q == 20 && b == 5);
		config_dns_rate(cfg, dev, &q, &b);
		assert_true(q == 200 && b == 400);
	}
	/* Egress budget: the sandbox's own, else the gateway's. */
	assert_true(config_egress_budget(cfg, web) == 500LL << 20);
	assert_true(config_egress_budget(cfg, dev) == 2LL << 30);
	addr_parse("10.77.0.11", &a);
	assert_ptr_equal(config_sandbox_by_addr(cfg, &a), dev);
	sec = config_secret_by_name(cfg, "openai");
	assert_non_null(sec);
	assert_string_equal(sec->hosts.v[0], "api.openai.com");
	/* treat_as_public took TEST-NET-3 out of the private set. */
	addr_parse("203.0.113.10", &a);
	assert_false(rangeset_contains(cfg->private, &a));
	addr_parse("192.168.77.2", &a);
	assert_true(rangeset_contains(cfg->private, &a));
	config_free(cfg);
}

/* Host names are normalised: case folded, one trailing dot dropped. */
static void
allow_normalised(void **state)
{
	char path[600];
	struct moat_errors errs;
	struct moat_config *cfg;

	(void)state;
	snprintf(path, sizeof(path), "%s/norm.conf", scratch);
	write_file(path, "gateway: { uplink = \"eth0\"; network = "
	    "\"10.77.0.0/24\"; dns: { upstream = [ \"9.9.9.9\" ]; }; };\n"
	    "sandboxes = ( { name = \"a\"; mac = \"52:54:00:00:00:01\";\n"
	    "address = \"10.77.0.2\"; tap = \"mt-a\"; egress = \"allowlist\";\n"
	    "allow = [ \"GitHub.COM.\", \"*.PyPI.org\",\n"
	    "\"Git.Example.COM:UDP/53,tcp/22,tcp/22\", \"github.com:tcp/22\" ]; } );\n",
	    0644);
	cfg = config_load(path, NULL, &errs);
	assert_non_null(cfg);
	assert_string_equal(cfg->sandboxes[0].allow.v[0], "github.com");
	assert_string_equal(cfg->sandboxes[0].allow.v[1], "*.pypi.org");
	/* Ports of its own: sorted, each once, lower case. */
	assert_string_equal(cfg->sandboxes[0].allow.v[2],
	    "git.example.com:tcp/22,udp/53");
	/* The same name plain and with ports: two entries, both count. */
	assert_string_equal(cfg->sandboxes[0].allow.v[3], "github.com:tcp/22");
	config_free(cfg);
}

static struct moat_config *load_text(const char *, const char *);

/* The port list parser: what --ports and "NAME:PORTS" take. */
static void
ports_parser(void **state)
{
	struct moat_port p[MOAT_NAME_PORTS_MAX];
	char why[256], buf[200];
	static const char *const bad[] = { "", ",", "tcp/22,", "tcp/", "tcp/0",
	    "tcp/022", "tcp/65536", "tcp/99999999", "sctp/22", "TCP/22",
	    "tcp/22 ", " tcp/22", "tcp/-1", "tcp/2a", "tcp22", "icmp/1" };
	size_t i;

	(void)state;
	assert_int_equal(config_ports_parse("tcp/22", 6, p, why, sizeof(why)),
	    1);
	assert_int_equal(p[0].proto, IPPROTO_TCP);
	assert_int_equal(p[0].port, 22);
	assert_int_equal(config_ports_parse("udp/443,tcp/65535,tcp/1,udp/443",
	    31, p, why, sizeof(why)), 3);
	config_ports_fmt(p, 3, buf, sizeof(buf));
	assert_string_equal(buf, "tcp/1,tcp/65535,udp/443");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		if (config_ports_parse(bad[i], strlen(bad[i]), p, why,
		    sizeof(why)) != -1)
			fail_msg("\"%s\" was taken", bad[i]);
		assert_non_null(strstr(why, "expected ports such as"));
	}
	snprintf(buf, sizeof(buf), "tcp/1");
	for (i = 2; i <= MOAT_NAME_PORTS_MAX + 1; i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf),
		    ",tcp/%zu", i);
	assert_int_equal(config_ports_parse(buf, strlen(buf), p, why,
	    sizeof(why)), -1);
	assert_non_null(strstr(why, "at most 16 ports"));
	/* Only ports: a name or a stray separator is not one. */
	assert_int_equal(config_ports_parse("tcp/22:tcp/23", 13, p, why,
	    sizeof(why)), -1);
}

/* What each entry opens for a name (the one decision, lib/admit.c). */
static void
name_ports(void **state)
{
	struct moat_config *cfg;
	const struct moat_sandbox *sb;
	struct moat_port p[MOAT_NAME_PORTS_MAX];
	char t[1400];
	bool plain;

	(void)state;
	snprintf(t, sizeof(t), "gateway: { uplink = \"eth0\"; network = "
	    "\"10.77.0.0/24\"; dns: { upstream = [ \"9.9.9.9\" ]; }; };\n"
	    "sandboxes = ( { name = \"a\"; mac = \"52:54:00:00:00:01\"; "
	    "address = \"10.77.0.2\"; tap = \"mt-a\"; egress = "
	    "\"allowlist\"; allow = [ \"plain.test\", \"git.test:tcp/22\", "
	    "\"*.w.test\", \"x.w.test:udp/443,tcp/2222\" ]; } );\n");
	cfg = load_text("np.conf", t);
	sb = &cfg->sandboxes[0];
	assert_int_equal(admit_name_ports(sb, "plain.test", &plain, p), 0);
	assert_true(plain);
	assert_int_equal(admit_name_ports(sb, "git.test", &plain, p), 1);
	assert_false(plain);
	assert_true(admit_name_port(sb, "git.test", IPPROTO_TCP, 22));
	assert_false(admit_name_port(sb, "git.test", IPPROTO_TCP, 443));
	assert_false(admit_name_port(sb, "git.test", IPPROTO_UDP, 22));
	assert_true(admit_name_port(sb, "plain.test", IPPROTO_TCP, 443));
	assert_false(admit_name_port(sb, "plain.test", IPPROTO_TCP, 22));
	/* Covered twice: the wildcard's allow_ports and its own. */
	assert_int_equal(admit_name_ports(sb, "x.w.test", &plain, p), 2);
	assert_true(plain);
	assert_true(admit_name_port(sb, "x.w.test", IPPROTO_TCP, 443));
	assert_true(admit_name_port(sb, "x.w.test", IPPROTO_TCP, 2222));
	assert_false(admit_name_port(sb, "y.w.test", IPPROTO_TCP, 2222));
	assert_int_equal(admit_name_ports(sb, "git.test.evil", &plain, p), 0);
	assert_false(plain);
	/* The widest: what a flow of the sandbox may keep across a reload. */
	assert_true(admit_port_allowed(sb, IPPROTO_TCP, 22));
	assert_true(admit_port_allowed(sb, IPPROTO_UDP, 443));
	assert_false(admit_port_allowed(sb, IPPROTO_TCP, 23));
	/* What a resolver may ask to open. */
	assert_true(admit_set_ports(cfg, "a", true, NULL, 0));
	assert_true(admit_set_ports(cfg, "a", false, p, 2));
	assert_false(admit_set_ports(cfg, "a", false, NULL, 0));
	p[0] = (struct moat_port){ IPPROTO_TCP, 25 };
	assert_false(admit_set_ports(cfg, "a", true, p, 1));
	config_free(cfg);
}

static struct moat_config *
load_text(const char *name, const char *text)
{
	char path[600];
	struct moat_errors errs;
	struct moat_config *cfg;

	snprintf(path, sizeof(path), "%s/%s", scratch, name);
	write_file(path, text, 0644);
	cfg = config_load(path, NULL, &errs);
	assert_non_null(cfg);
	config_errors_free(&errs);
	return cfg;
}

#define SB_GW	"gateway: { uplink = \"eth0\"; network = \"10.77.0.0/24\"; " \
	"dns: { upstream = [ \"9.9.9.9\" ]; }; %s };\n"
#define SB_A	"{ name = \"a\"; mac = \"52:54:00:00:00:01\"; address = " \
	"\"10.77.0.2\"; tap = \"mt-a\"; egress = \"%s\"; }"
#define SB_B	"{ name = \"b\"; mac = \"52:54:00:00:00:02\"; address = " \
	"\"10.77.0.3\"; tap = \"mt-b\"; egress = \"open\"; }"

/* egress_bytes_per_day: sizes in powers of 1024 or bytes, a sandbox's own
 * over the gateway's, "unlimited" for none; the normalised config says
 * the same. */
static void
egress_budget_sizes(void **state)
{
	static const char *const sb[] = {
		"{ name = \"a\"; mac = \"52:54:00:00:00:01\"; address = "
		    "\"10.77.0.2\"; tap = \"mt-a\"; egress = \"open\"; "
		    "egress_bytes_per_day = \"unlimited\"; }",
		"{ name = \"b\"; mac = \"52:54:00:00:00:02\"; address = "
		    "\"10.77.0.3\"; tap = \"mt-b\"; egress = \"open\"; }",
		"{ name = \"c\"; mac = \"52:54:00:00:00:03\"; address = "
		    "\"10.77.0.4\"; tap = \"mt-c\"; egress = \"open\"; "
		    "egress_bytes_per_day = \"3K\"; }",
		"{ name = \"d\"; mac = \"52:54:00:00:00:04\"; address = "
		    "\"10.77.0.5\"; tap = \"mt-d\"; egress = \"open\"; "
		    "egress_bytes_per_day = \"7\"; }",
	};
	char t[2048], *text = NULL;
	size_t len = 0;
	struct moat_config *c, *c2;
	FILE *fp;
	int round;

	(void)state;
	snprintf(t, sizeof(t), SB_GW "sandboxes = ( %s, %s, %s, %s );\n",
	    "egress_bytes_per_day = \"1G\";", sb[0], sb[1], sb[2], sb[3]);
	c = load_text("budget.conf", t);
	for (round = 0; round < 2; round++) {
		assert_true(c->gw.egress_budget == 1LL << 30);
		assert_true(config_egress_budget(c, &c->sandboxes[0]) == 0);
		assert_true(config_egress_budget(c, &c->sandboxes[1]) ==
		    1LL << 30);
		assert_true(config_egress_budget(c, &c->sandboxes[2]) == 3072);
		assert_true(config_egress_budget(c, &c->sandboxes[3]) == 7);
		if (round == 1)
			break;
		fp = open_memstream(&text, &len);
		config_print(fp, c);
		fclose(fp);
		c2 = load_text("budget-nv.conf", text);
		free(text);
		config_free(c);
		c = c2;
	}
	config_free(c);
}

/* ha.uplink_address: an IPv4 address, kept by the normalised config; an
 * IPv6 one is an error naming the key. */
static void
ha_uplink_address(void **state)
{
	char t[1024], *text = NULL;
	size_t len = 0;
	struct moat_config *c, *c2;
	struct moat_errors errs;
	char path[600];
	FILE *fp;

	(void)state;
	snprintf(t, sizeof(t), SB_GW "sandboxes = ( " SB_B " );\n",
	    "ha: { enabled = true; uplink_address = \"203.0.113.1\"; };");
	c = load_text("ha.conf", t);
	assert_true(c->gw.ha);
	assert_int_equal(c->gw.ha_uplink_address.family, AF_INET);
	fp = open_memstream(&text, &len);
	config_print(fp, c);
	fclose(fp);
	assert_non_null(strstr(text, "uplink_address = \"203.0.113.1\""));
	c2 = load_text("ha-nv.conf", text);
	assert_true(addr_eq(&c2->gw.ha_uplink_address,
	    &c->gw.ha_uplink_address));
	free(text);
	config_free(c2);
	config_free(c);
	snprintf(t, sizeof(t), SB_GW "sandboxes = ( " SB_B " );\n",
	    "ha: { enabled = true; uplink_address = \"2001:db8::1\"; };");
	snprintf(path, sizeof(path), "%s/ha6.conf", scratch);
	write_file(path, t, 0644);
	assert_null(config_load(path, NULL, &errs));
	assert_int_equal(errs.n, 1);
	assert_non_null(strstr(errs.msg[0], "uplink_address: expected an "
	    "IPv4 address"));
	config_errors_free(&errs);
}

/* What lets the proxy take a reload in place: two configs whose text but
 * sandboxes is equal differ in sandboxes only; a sandbox compares equal
 * only with every setting equal. */
static void
text_but_sandboxes(void **state)
{
	char t[1024];
	struct moat_config *c1, *c2, *c3;
	char *a, *b, *c;

	(void)state;
	snprintf(t, sizeof(t), SB_GW "sandboxes = ( " SB_A " );\n", "", "open");
	c1 = load_text("s1.conf", t);
	snprintf(t, sizeof(t), SB_GW "sandboxes = ( " SB_A ", " SB_B " );\n", "",
	    "none");
	c2 = load_text("s2.conf", t);
	snprintf(t, sizeof(t), SB_GW "sandboxes = ( " SB_A " );\n",
	    "audit_max_kb = 2048;", "open");
	c3 = load_text("s3.conf", t);
	a = config_text_but_sandboxes_secrets(c1);
	b = config_text_but_sandboxes_secrets(c2);
	c = config_text_but_sandboxes_secrets(c3);
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);
	assert_null(strstr(a, "mt-a"));
	assert_true(config_sandbox_same(&c1->sandboxes[0], &c3->sandboxes[0]));
	assert_false(config_sandbox_same(&c1->sandboxes[0], &c2->sandboxes[0]));
	assert_false(config_sandbox_same(&c2->sandboxes[0], &c2->sandboxes[1]));
	free(a);
	free(b);
	free(c);
	config_free(c1);
	config_free(c2);
	config_free(c3);
}

/* Every error is reported, not just the first. */
static void
all_errors_reported(void **state)
{
	char path[600];
	struct moat_errors errs;

	(void)state;
	snprintf(path, sizeof(path), "%s/many.conf", scratch);
	write_file(path, "gateway: { uplink = \"eth0\"; network = "
	    "\"10.77.0.0/24\"; dns: { upstream = [ \"x\" ]; }; };\n"
	    "sandboxes = ( { name = \"a\"; mac = \"zz\"; address = \"10.9.0.2\";"
	    " tap = \"mt-a\"; egress = \"maybe\"; } );\n", 0644);
	assert_null(config_load(path, NULL, &errs));
	assert_int_equal(errs.n, 4);
	config_errors_free(&errs);
}

/*
 * The config against a host's interfaces (config_check_host): one row per
 * host, "NAME" for an interface without an IPv4 address or
 * "NAME=ADDR/PLEN", and the one error expected (NULL: none).  The config
 * is line 1 uplink, line 2 network, line 3 bridge.
 */
static const struct host_case {
	const char	*uplink, *network, *ifs, *want;
} host_cases[] = {
	{ "eth0", "10.77.0.0/24", "lo=127.0.0.1/8 eth0=192.168.1.10/24", NULL },
	/* The bridge may (and once gatewayd ran, does) have it. */
	{ "eth0", "10.77.0.0/24", "eth0=192.168.1.10/24 moat0=10.77.0.1/24",
	    NULL },
	{ "eth0", "192.168.1.0/24", "lo=127.0.0.1/8 eth0=192.168.1.10/24",
	    "host.conf:2: gateway: network: 192.168.1.0/24 overlaps "
	    "192.168.1.0/24, the network of 192.168.1.10/24 on interface eth0 "
	    "(expected a sandbox network that no interface but the bridge "
	    "moat0 uses)" },
	/* Wider or narrower on the host: an overlap either way. */
	{ "eth0", "10.77.0.0/24", "eth0=192.168.1.10/24 wg0=10.0.0.5/8",
	    "host.conf:2: gateway: network: 10.77.0.0/24 overlaps 10.0.0.0/8, "
	    "the network of 10.0.0.5/8 on interface wg0 (expected a sandbox "
	    "network that no interface but the bridge moat0 uses)" },
	{ "eth0", "10.77.0.0/16", "eth0 lan0=10.77.3.1/28",
	    "host.conf:2: gateway: network: 10.77.0.0/16 overlaps "
	    "10.77.3.0/28, the network of 10.77.3.1/28 on interface lan0 "
	    "(expected a sandbox network that no interface but the bridge "
	    "moat0 uses)" },
	{ "upO", "10.77.0.0/24", "lo=127.0.0.1/8 up0=203.0.113.1/24 up0 lan0",
	    "host.conf:1: gateway: uplink: no interface \"upO\" on this host "
	    "(it has: lo, up0, lan0) and no IPv4 default route; set uplink to "
	    "the interface towards the internet, the one `ip route show "
	    "default` will name" },
	/* The shipped "eth0" on a NIC named by its slot ("*": the default
	 * route leaves there): the fix-it line names it. */
	{ "eth0", "10.77.0.0/24", "lo=127.0.0.1/8 enp3s0*=192.168.1.20/24 "
	    "enp3s0* wlp2s0",
	    "host.conf:1: gateway: uplink: no interface \"eth0\" on this host "
	    "(it has: lo, enp3s0, wlp2s0); the default route leaves through "
	    "enp3s0: set uplink = \"enp3s0\";" },
};

static void
parse_ifs(const char *spec, struct moat_hostif *v, size_t *n)
{
	char buf[256], *tok, *save = NULL, *eq, *slash;
	int b;

	snprintf(buf, sizeof(buf), "%s", spec);
	*n = 0;
	for (tok = strtok_r(buf, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save)) {
		memset(&v[*n], 0, sizeof(v[*n]));
		if ((eq = strchr(tok, '=')) != NULL) {
			*eq = '\0';
			slash = strchr(eq + 1, '/');
			assert_non_null(slash);
			*slash = '\0';
			assert_int_equal(addr_parse(eq + 1, &v[*n].addr), 0);
			/* The network: the address with its host bits off. */
			v[*n].net.addr = v[*n].addr;
			v[*n].net.plen = atoi(slash + 1);
			for (b = v[*n].net.plen; b < 32; b++)
				v[*n].net.addr.a[b / 8] &= (uint8_t)~(0x80 >> (b % 8));
			assert_int_equal(v[*n].addr.family, AF_INET);
		}
		if (tok[strlen(tok) - 1] == '*') {
			tok[strlen(tok) - 1] = '\0';
			v[*n].default_route = true;
		}
		snprintf(v[*n].name, sizeof(v[*n].name), "%s", tok);
		(*n)++;
	}
}

static void
host_checks(void **state)
{
	struct moat_hostif ifs[8];
	struct moat_errors errs;
	struct moat_config *cfg;
	char text[512];
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(host_cases) / sizeof(host_cases[0]); i++) {
		const struct host_case *c = &host_cases[i];

		snprintf(text, sizeof(text), "gateway: { uplink = \"%s\";\n"
		    "network = \"%s\";\nbridge = \"moat0\";\n"
		    "dns: { upstream = [ \"203.0.113.53\" ]; }; };\n",
		    c->uplink, c->network);
		cfg = config_load_buffer("host.conf", text, "/nonexistent", &errs);
		if (cfg == NULL)
			fail_msg("case %zu: %s", i, errs.msg[0]);
		config_errors_free(&errs);
		parse_ifs(c->ifs, ifs, &n);
		config_check_host(cfg, ifs, n, &errs);
		if (c->want == NULL && errs.n != 0)
			fail_msg("case %zu: want no error, got: %s", i,
			    errs.msg[0]);
		if (c->want != NULL && errs.n != 1)
			fail_msg("case %zu: want one error, got %zu", i, errs.n);
		if (c->want != NULL)
			assert_string_equal(errs.msg[0], c->want);
		config_errors_free(&errs);
		config_free(cfg);
	}
}

/*
 * gateway.ipv6: each sandbox's address derived from its IPv4 host part,
 * none for ipv6 = false or a sandbox that is not open; the /64 checked
 * against the host's IPv6 networks as the IPv4 network is.
 */
static void
ipv6_model(void **state)
{
	static const char text[] =
	    "gateway: { uplink = \"eth0\"; network = \"10.77.0.0/16\";\n"
	    "bridge = \"moat0\"; dns: { upstream = [ \"9.9.9.9\" ]; };\n"
	    "ipv6 = { network = \"2001:db8:77:1::/64\"; uplink_mode = "
	    "\"routed\"; }; };\n"
	    "sandboxes = (\n"
	    "{ name = \"a\"; mac = \"52:54:00:00:00:0a\"; address = "
	    "\"10.77.3.10\"; tap = \"mt-a\"; egress = \"open\"; },\n"
	    "{ name = \"b\"; mac = \"52:54:00:00:00:0b\"; address = "
	    "\"10.77.0.11\"; tap = \"mt-b\"; egress = \"open\"; "
	    "ipv6 = false; },\n"
	    "{ name = \"c\"; mac = \"52:54:00:00:00:0c\"; address = "
	    "\"10.77.0.12\"; tap = \"mt-c\"; egress = \"none\"; },\n"
	    "{ name = \"d\"; mac = \"52:54:00:00:00:0d\"; address = "
	    "\"10.77.0.13\"; tap = \"mt-d\"; egress = \"open\"; "
	    "egress_bytes_per_day = \"1G\"; },\n"
	    "{ name = \"e\"; mac = \"52:54:00:00:00:0e\"; address = "
	    "\"10.77.0.14\"; tap = \"mt-e\"; egress = \"open\"; "
	    "secrets = [ \"api\" ]; } );\n"
	    "secrets = ( { name = \"api\"; file = \"%s/secret-ok\"; "
	    "hosts = [ \"api.example.com\" ]; header = \"Authorization\"; "
	    "placeholder = \"moat-api-PLACEHOLDER\"; } );\n";
	char conf[2048];
	struct moat_hostif ifs[3];
	struct moat_errors errs;
	struct moat_config *cfg;
	struct moat_addr a, want;
	char buf[64];

	(void)state;
	snprintf(conf, sizeof(conf), text, scratch);
	cfg = config_load_buffer("v6.conf", conf, "/nonexistent", &errs);
	if (cfg == NULL)
		fail_msg("%s", errs.msg[0]);
	assert_true(cfg->gw.ipv6);
	assert_int_equal(cfg->gw.ipv6_uplink, V6_UPLINK_ROUTED);
	assert_string_equal(addr_fmt(&cfg->gw.ipv6_address, buf, sizeof(buf)),
	    "2001:db8:77:1::1");
	assert_true(config_sandbox_addr6(cfg, &cfg->sandboxes[0], &a));
	assert_int_equal(addr_parse("2001:db8:77:1::30a", &want), 0);
	assert_true(addr_eq(&a, &want));
	assert_false(config_sandbox_addr6(cfg, &cfg->sandboxes[1], &a));
	assert_false(config_sandbox_addr6(cfg, &cfg->sandboxes[2], &a));
	/* A budget counts and refuses both families (acct6_out,
	 * budget_spent6): its sandbox has IPv6. */
	assert_true(config_sandbox_addr6(cfg, &cfg->sandboxes[3], &a));
	/* A sandbox with secrets does: the proxy takes its IPv6 too. */
	assert_true(config_sandbox_addr6(cfg, &cfg->sandboxes[4], &a));
	assert_int_equal(addr_parse("2001:db8:77:1::e", &want), 0);
	assert_true(addr_eq(&a, &want));
	/* Its IPv6 source is that sandbox; another of the /64 is none. */
	assert_ptr_equal(config_sandbox_by_addr(cfg, &want),
	    &cfg->sandboxes[4]);
	assert_int_equal(addr_parse("2001:db8:77:1::b", &want), 0);
	assert_null(config_sandbox_by_addr(cfg, &want));
	assert_int_equal(addr_parse("2001:db8:77:1::30a", &want), 0);
	/* The delegated /64 is never a public destination. */
	assert_true(rangeset_contains(cfg->private, &want));

	memset(ifs, 0, sizeof(ifs));
	snprintf(ifs[0].name, sizeof(ifs[0].name), "eth0");
	assert_int_equal(addr_parse("2001:db8:77:1::99", &ifs[0].addr), 0);
	assert_int_equal(prefix_parse("2001:db8:77::/48", &ifs[0].net), 0);
	snprintf(ifs[1].name, sizeof(ifs[1].name), "moat0");
	assert_int_equal(addr_parse("2001:db8:77:1::1", &ifs[1].addr), 0);
	assert_int_equal(prefix_parse("2001:db8:77:1::/64", &ifs[1].net), 0);
	config_check_host(cfg, ifs, 2, &errs);
	assert_int_equal(errs.n, 1);
	assert_string_equal(errs.msg[0], "v6.conf:3: gateway: ipv6: network: "
	    "2001:db8:77:1::/64 overlaps 2001:db8:77::/48, the network of "
	    "2001:db8:77:1::99/48 on interface eth0 (expected a sandbox "
	    "network that no interface but the bridge moat0 uses)");
	config_errors_free(&errs);
	ifs[0].net.plen = 0;	/* eth0 without that address: fine */
	config_check_host(cfg, ifs, 2, &errs);
	assert_int_equal(errs.n, 0);
	config_errors_free(&errs);
	config_free(cfg);
}

static int
add_tests(struct CMUnitTest **t, size_t *n, const char *sub,
    void (*fn)(void **))
{
	char path[512];
	struct dirent **list;
	int i, k;

	snprintf(path, sizeof(path), "%s/%s", corpus, sub);
	k = scandir(path, &list, NULL, alphasort);
	if (k < 0)
		return -1;
	for (i = 0; i < k; i++) {
		if (list[i]->d_name[0] != '.') {
			*t = realloc(*t, (*n + 1) * sizeof(**t));
			(*t)[*n] = (struct CMUnitTest){ strdup(list[i]->d_name), fn,
			    NULL, NULL, strdup(list[i]->d_name) };
			(*n)++;
		}
		free(list[i]);
	}
	free(list);
	return 0;
}

static int
rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	return remove(p);
}

int
main(void)
{
	struct CMUnitTest *t = NULL;
	size_t n = 0;
	char p[600];
	int rc;

	corpus = getenv("MOAT_CORPUS") ? getenv("MOAT_CORPUS") : "tests/configs";
	if (mkdtemp(scratch) == NULL)
		return 1;
	/* The secret files the corpus refers to. */
	snprintf(p, sizeof(p), "%s/secret-ok", scratch);
	write_file(p, "sk-not-a-real-key", 0600);
	snprintf(p, sizeof(p), "%s/secret-0644", scratch);
	write_file(p, "sk-not-a-real-key", 0644);
	snprintf(p, sizeof(p), "%s/secret-nobody", scratch);
	write_file(p, "sk-not-a-real-key", 0600);
	if (chown(p, 65534, 65534) != 0)
		return 1;
	snprintf(p, sizeof(p), "%s/secret-link", scratch);
	if (symlink("secret-ok", p) != 0)
		return 1;

	if (add_tests(&t, &n, "bad", bad_case) == -1 ||
	    add_tests(&t, &n, "good", good_case) == -1) {
		fprintf(stderr, "cannot read corpus %s\n", corpus);
		return 1;
	}
	t = realloc(t, (n + 10) * sizeof(*t));
	t[n++] = (struct CMUnitTest)cmocka_unit_test(ipv6_model);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(ports_parser);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(name_ports);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(host_checks);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(full_model);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(allow_normalised);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(text_but_sandboxes);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(egress_budget_sizes);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(ha_uplink_address);
	t[n++] = (struct CMUnitTest)cmocka_unit_test(all_errors_reported);
	rc = _cmocka_run_group_tests("config", t, n, NULL, NULL);
	nftw(scratch, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	return rc;
}
