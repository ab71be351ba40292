/*
 * test_gatewayd_register.c -- a compromised registration process can
 * only send IPC_REG_REQ messages; the parent decides each one against its
 * own configuration.  The parent's handler (reg_message) is driven with
 * forged requests: a key no host has, a host claiming another's pool,
 * another host's sandbox, a static one, a name that is a path.  Each is
 * refused with its reason, audited, counted for the host, and changes no
 * file.  (What is admitted is applied through a reload, which needs the
 * kernel: tests/integration/72-registration-box.sh.)
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../gatewayd/parent/gw.h"
#include "../../gatewayd/parent/proc.h"
#include "../../gatewayd/parent/reload.h"
#include "../../gatewayd/parent/dnsd.h"
#include "../../gatewayd/parent/proxy.h"
#include "../../gatewayd/parent/audit.h"
#include "../../gatewayd/parent/reg.h"
#include "../../gatewayd/parent/ctl.h"
#include "../../gatewayd/parent/team.h"
#include "../../gatewayd/parent/console.h"
#include "../../gatewayd/parent/policy.h"
#include "../../gatewayd/parent/refused.h"
#include "../../gatewayd/parent/grant.h"
#include "../../gatewayd/parent/network.h"
#include "../../gatewayd/parent/drift.h"
#include "../../gatewayd/parent/hostnet.h"
#include "../../gatewayd/parent/egress.h"
#include "../../gatewayd/parent/budgets.h"
#include "../../gatewayd/parent/metrics.h"
#include "../../gatewayd/parent/ha.h"

static struct gw gw;
static int ipc[2];		/* [0] the parent's end, [1] "registration" */
static char dir[] = "/tmp/moat-reg-forged.XXXXXX";
static char audit[128], outside[128], b1[160];

#define KEY_A	"00000000000000000000000000000000000000000000000000000000000000a1"
#define KEY_B	"00000000000000000000000000000000000000000000000000000000000000b2"

static void
write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static int
setup(void **state)
{
	struct moat_errors errs;
	char path[160];

	(void)state;
	if (mkdtemp(dir) == NULL || ipc_pair(ipc) == -1)
		return -1;
	snprintf(path, sizeof(path), "%s/sandboxes.d", dir);
	mkdir(path, 0700);
	snprintf(b1, sizeof(b1), "%s/sandboxes.d/b1.conf", dir);
	write_file(b1, "# registered by host b\nname = \"b1\"; "
	    "address = \"10.77.0.40\"; mac = \"52:54:00:00:0b:01\"; tap = \"b1\"; "
	    "egress = \"none\"; trunk = \"sb0\";\n");
	snprintf(outside, sizeof(outside), "%s/outside.conf", dir);
	write_file(outside, "# registered by host a\n");
	snprintf(path, sizeof(path), "%s/moat.conf", dir);
	write_file(path,
	    "gateway: { uplink = \"up0\"; network = \"10.77.0.0/24\";\n"
	    "  bridge = \"sb0\"; dns: { upstream = [ \"203.0.113.53\" ]; }; };\n"
	    "hosts = ( { name = \"a\"; key = \"sha256:" KEY_A "\";\n"
	    "  pool = \"10.77.0.16/28\"; trunk = \"sb0\"; },\n"
	    "  { name = \"b\"; key = \"sha256:" KEY_B "\";\n"
	    "  pool = \"10.77.0.32/28\"; trunk = \"sb0\"; } );\n"
	    "sandboxes = ( { name = \"st\"; mac = \"52:54:00:00:0f:01\";\n"
	    "  address = \"10.77.0.20\"; tap = \"st0\"; egress = \"none\"; } );\n");
	gw.cfg = config_load(path, NULL, &errs);
	if (gw.cfg == NULL) {
		config_errors_print(stderr, &errs);
		return -1;
	}
	config_errors_free(&errs);
	snprintf(audit, sizeof(audit), "%s/audit.log", dir);
	audit_of(&gw)->auditfd = open(audit, O_WRONLY | O_CREAT | O_APPEND, 0600);
	reg_of(&gw)->regfd = -1;
	return audit_of(&gw)->auditfd == -1 ? -1 : 0;
}

static int
teardown(void **state)
{
	char cmd[160];

	(void)state;
	config_free(gw.cfg);
	free(reg_of(&gw)->hoststats);
	close(audit_of(&gw)->auditfd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void
key(uint8_t k[32], char last)
{
	memset(k, 0, 32);
	k[31] = (uint8_t)(last == 'a' ? 0xa1 : last == 'b' ? 0xb2 : 0x77);
}

/* Send the parent one forged request; its answer: "ok" or the reason. */
static const char *
forge(char host, uint8_t verb, const char *name, const char *address,
    const char *mac, const char *egress, const char *text)
{
	static union {
		struct ipc_reg_req m;
		char raw[IPC_MAX_PAYLOAD];
	} u;
	static union {
		struct ipc_reg_reply r;
		char raw[IPC_MAX_PAYLOAD + 1];
	} a;
	struct ipc_hdr h;
	char err[128];
	size_t len;
	ssize_t n;

	memset(&u.m, 0, sizeof(u.m));
	key(u.m.key, host);
	u.m.verb = verb;
	snprintf(u.m.name, sizeof(u.m.name), "%s", name);
	snprintf(u.m.address, sizeof(u.m.address), "%s", address);
	snprintf(u.m.mac, sizeof(u.m.mac), "%s", mac);
	snprintf(u.m.egress, sizeof(u.m.egress), "%s", egress);
	len = strlen(text) + 1;
	memcpy(u.m.text, text, len);
	h = (struct ipc_hdr){ IPC_REG_REQ, 0, (uint32_t)(sizeof(u.m) + len), 0 };
	assert_int_equal(ipc_check(&h, &u, sizeof(u.m) + len, err, sizeof(err)),
	    0);
	reg_message(&gw, ipc[0], &u.m);
	n = ipc_recv(ipc[1], &h, a.raw, IPC_MAX_PAYLOAD, err, sizeof(err));
	assert_true(n >= (ssize_t)sizeof(a.r));
	assert_int_equal(h.type, IPC_REG_REPLY);
	a.raw[n] = '\0';
	return a.r.status == 0 ? "ok" : a.r.text;
}

static bool
exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static bool
audited(const char *needle)
{
	char buf[8192];
	ssize_t n;
	int fd = open(audit, O_RDONLY);

	assert_true(fd != -1);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return strstr(buf, needle) != NULL;
}

static void
forged_requests(void **state)
{
	const char *mac = "52:54:00:00:0a:01";
	char path[200];

	(void)state;
	assert_string_equal(forge('x', REG_LIST, "", "", "", "", ""),
	    "unknown host key");
	assert_true(audited("\"host\":\"" "00000000000000000000000000000000"
	    "00000000000000000000000000000077\""));
	assert_int_equal(reg_of(&gw)->reg_unknown, 1);
	assert_string_equal(forge('a', REG_HELLO, "", "", "", "", ""), "ok");
	assert_string_equal(forge('a', REG_REGISTER, "a1", "10.77.0.33", mac,
	    "none", ""), "address outside this host's pool");
	snprintf(path, sizeof(path), "%s/sandboxes.d/a1.conf", dir);
	assert_false(exists(path));
	assert_string_equal(forge('a', REG_REGISTER, "a1", "10.77.0.21", mac,
	    "open", ""), "egress \"open\" is wider than this host's max_egress "
	    "\"allowlist\"");
	assert_string_equal(forge('a', REG_REGISTER, "b1", "10.77.0.21", mac,
	    "none", ""), "name used by another sandbox");
	assert_string_equal(forge('a', REG_REGISTER, "a1", "10.77.0.20", mac,
	    "none", ""), "address used by another sandbox");
	assert_string_equal(forge('a', REG_REMOVE, "b1", "", "", "", ""),
	    "not this host's sandbox");
	assert_true(exists(b1));
	assert_string_equal(forge('a', REG_REMOVE, "st", "", "", "", ""),
	    "no such sandbox");
	assert_string_equal(forge('a', REG_REMOVE, "../outside", "", "", "",
	    ""), "no such sandbox");
	assert_true(exists(outside));
	assert_string_equal(forge('a', REG_SYNC, "", "", "", "", "-"), "ok");
	assert_true(exists(b1));	/* host a's sync: host b's stays */
	assert_string_equal(forge('b', REG_LIST, "", "", "", "", ""), "ok");
	assert_true(audited("\"event\":\"registration-refused\",\"host\":\"a\","
	    "\"request\":\"remove\",\"sandbox\":\"b1\",\"reason\":\"not this "
	    "host's sandbox\""));
	assert_int_equal(reg_of(&gw)->nhoststats, 2);
	assert_string_equal(reg_of(&gw)->hoststats[0].name, "a");
	assert_int_equal(reg_of(&gw)->hoststats[0].refusals, 7);
	assert_true(reg_of(&gw)->hoststats[0].last_seen > 0);
	assert_int_equal(reg_of(&gw)->hoststats[1].refusals, 0);
	assert_int_equal(reg_count(&gw, &gw.cfg->hosts[1]), 1);
	assert_int_equal(reg_count(&gw, &gw.cfg->hosts[0]), 0);
}

/* list answers the host's own sandboxes, one line each, then ok. */
static void
list_own(void **state)
{
	static union {
		struct ipc_reg_req m;
		char raw[sizeof(struct ipc_reg_req) + 1];
	} u;
	static union {
		struct ipc_reg_reply r;
		char raw[IPC_MAX_PAYLOAD + 1];
	} a;
	struct ipc_hdr h;
	char err[128];
	ssize_t n;

	(void)state;
	memset(&u, 0, sizeof(u));
	key(u.m.key, 'b');
	u.m.verb = REG_LIST;
	reg_message(&gw, ipc[0], &u.m);
	n = ipc_recv(ipc[1], &h, a.raw, IPC_MAX_PAYLOAD, err, sizeof(err));
	assert_true(n > (ssize_t)sizeof(a.r));
	a.raw[n] = '\0';
	assert_int_equal(a.r.status, 0);
	assert_string_equal(a.r.text, "b1 10.77.0.40\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(forged_requests),
		cmocka_unit_test(list_own),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
