/*
 * test_gatewayd_dnsreload.c -- the parent's side of reloading dnsd in
 * place: a reload sends dnsd the new configuration as a sealed memfd
 * attached to IPC_CONF, and leaves dnsd running; dnsd answering that
 * it could not take it (status -1) gets it restarted (SIGTERM, an expected
 * exit, so it starts again at once with the new configuration), and so
 * does a dnsd that cannot be told.  "dnsd" here is a forked child that
 * waits to be killed; the test holds its IPC end.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
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
#include "log.h"

static const char conf[] =
    "gateway: { uplink = \"up0\"; network = \"10.77.0.0/24\";\n"
    "  bridge = \"moat0\"; dns: { upstream = [ \"203.0.113.53\" ]; }; };\n"
    "sandboxes = (\n"
    "  { name = \"web\"; mac = \"52:54:00:00:00:0a\"; address = \"10.77.0.10\";"
    " tap = \"mt-web\"; egress = \"allowlist\"; allow = [ \"pypi.org\" ]; } );\n";

static struct gw gw;
static int dns[2];		/* [0] the parent's end, [1] "dnsd"'s */
static char path[64];

static int
setup(void **state)
{
	struct moat_errors errs;
	int fd;
	pid_t pid;

	(void)state;
	memset(&gw, 0, sizeof(gw));
	snprintf(path, sizeof(path), "/tmp/moat-dnsreload.XXXXXX");
	if ((fd = mkstemp(path)) == -1 || write(fd, conf, sizeof(conf) - 1) !=
	    (ssize_t)(sizeof(conf) - 1))
		return -1;
	close(fd);
	if ((gw.cfg = config_load(path, NULL, &errs)) == NULL) {
		config_errors_print(stderr, &errs);
		return -1;
	}
	config_errors_free(&errs);
	audit_of(&gw)->auditfd = ctl_of(&gw)->ctlfd = -1;
	for (int i = 0; i < PROC_MAX; i++) {
		gw.procs[i].ipc = -1;
		gw.procs[i].pid = -1;
	}
	if (ipc_pair(dns) == -1 || (pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		pause();
		_exit(0);
	}
	gw.procs[PROC_DNSD].pid = pid;
	gw.procs[PROC_DNSD].ipc = dns[0];
	gw.procs[PROC_DNSD].name = "dnsd";
	return 0;
}

/* No proxy worker runs here: what changed concerns only them. */
static const struct gw_delta nodelta;

static int
teardown(void **state)
{
	(void)state;
	if (gw.procs[PROC_DNSD].pid > 0) {
		kill(gw.procs[PROC_DNSD].pid, SIGKILL);
		waitpid(gw.procs[PROC_DNSD].pid, NULL, 0);
	}
	unlink(path);
	config_free(gw.cfg);
	free(reload_of(&gw)->cfgtext.text);
	reload_of(&gw)->cfgtext.text = NULL;
	free(proxy_of(&gw)->secret_ids);
	proxy_of(&gw)->secret_ids = NULL;
	promises_free(policy_of(&gw)->promises);	/* made by a set addition */
	policy_of(&gw)->promises = NULL;
	if (gw.procs[PROC_DNSD].ipc != -1)
		close(gw.procs[PROC_DNSD].ipc);
	close(dns[1]);
	gw_modules_free(&gw);	/* each module's state, made on first use */
	return 0;
}

/* What the parent sent "dnsd": the generation, and the configuration's
 * text read from the memfd, which must be sealed against writing. */
static uint32_t
received(char *text, size_t cap)
{
	struct ipc_conf m;
	struct ipc_hdr h;
	char err[256];
	int fd = -1;
	size_t nfds;
	ssize_t n;

	/* Nothing sent must fail the test, not hang it. */
	assert_int_equal(poll(&(struct pollfd){ dns[1], POLLIN, 0 }, 1, 5000),
	    1);
	n = ipc_recv_fds(dns[1], &h, &m, IPC_MAX_PAYLOAD, &fd, 1, &nfds, err,
	    sizeof(err));
	assert_int_equal(n, (ssize_t)sizeof(m));
	assert_int_equal(h.type, IPC_CONF);
	assert_int_equal(nfds, 1);
	assert_true((fcntl(fd, F_GET_SEALS) & F_SEAL_WRITE) != 0);
	n = read(fd, text, cap - 1);
	assert_true(n > 0);
	text[n] = '\0';
	close(fd);
	return m.gen;
}

static void
ack(uint32_t gen, int32_t status)
{
	struct ipc_conf_ack a = { gen, status };

	assert_int_equal(ipc_send(dns[1], IPC_CONF_ACK, 0, &a,
	    sizeof(a)), 0);
	proc_ipc_readable(&gw, PROC_DNSD);
}

static bool
still_running(void)
{
	return waitpid(gw.procs[PROC_DNSD].pid, NULL, WNOHANG) == 0;
}

static void
reload_in_place(void **state)
{
	static char text[65536];
	uint32_t gen;

	(void)state;
	proc_reload(&gw, &nodelta);
	gen = received(text, sizeof(text));
	assert_true(gen >= 1);
	assert_non_null(strstr(text, "\"pypi.org\""));
	ack(gen, 0);
	assert_true(still_running());
	assert_false(gw.procs[PROC_DNSD].expected);
}

static void
refused_restarts(void **state)
{
	static char text[65536];
	uint32_t gen;
	int status;

	(void)state;
	proc_reload(&gw, &nodelta);
	gen = received(text, sizeof(text));
	ack(gen, -1);
	/* SIGTERM, and its exit is expected: restarted at once, not after
	 * a crash's backoff. */
	assert_true(gw.procs[PROC_DNSD].expected);
	assert_int_equal(waitpid(gw.procs[PROC_DNSD].pid, &status, 0),
	    gw.procs[PROC_DNSD].pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	gw.procs[PROC_DNSD].pid = -1;
}

static void
untold_restarts(void **state)
{
	int status;

	(void)state;
	close(gw.procs[PROC_DNSD].ipc);	/* the channel is gone */
	gw.procs[PROC_DNSD].ipc = -1;
	proc_reload(&gw, &nodelta);
	assert_true(gw.procs[PROC_DNSD].expected);
	assert_int_equal(waitpid(gw.procs[PROC_DNSD].pid, &status, 0),
	    gw.procs[PROC_DNSD].pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	gw.procs[PROC_DNSD].pid = -1;
}

/* An older generation's failure does not restart a dnsd that has a newer
 * configuration on its way. */
static void
stale_failure_ignored(void **state)
{
	static char text[65536];
	uint32_t g1, g2;

	(void)state;
	proc_reload(&gw, &nodelta);
	g1 = received(text, sizeof(text));
	proc_reload(&gw, &nodelta);
	g2 = received(text, sizeof(text));
	assert_true(g2 != g1);
	ack(g1, -1);
	assert_true(still_running());
	assert_false(gw.procs[PROC_DNSD].expected);
	ack(g2, 0);
	assert_true(still_running());
}

/* dnsd asks to open an address for web, as it would for an answer
 * judged by the allow list it took with gen. */
static int32_t
set_add_web(uint32_t gen)
{
	static union {
		struct ipc_set_add m;
		uint8_t raw[sizeof(struct ipc_set_add) +
		    sizeof(struct moat_addr)];
	} u;
	struct ipc_set_ack a;
	struct ipc_hdr h;
	char err[256];

	memset(&u, 0, sizeof(u));
	snprintf(u.m.sandbox, sizeof(u.m.sandbox), "web");
	u.m.timeout_ms = 61000;
	u.m.naddr = 1;
	u.m.plain = 1;
	u.m.gen = gen;
	u.m.addr[0].family = AF_INET;
	/* Public (the test config treats no range as public); never dialled. */
	memcpy(u.m.addr[0].a, "\135\270\330\042", 4);	/* 93.184.216.34 */
	assert_int_equal(ipc_send(dns[1], IPC_SET_ADD, 9, &u, sizeof(u)), 0);
	proc_ipc_readable(&gw, PROC_DNSD);
	assert_int_equal(poll(&(struct pollfd){ dns[1], POLLIN, 0 }, 1, 5000),
	    1);
	assert_int_equal(ipc_recv(dns[1], &h, &a, IPC_MAX_PAYLOAD, err,
	    sizeof(err)), (ssize_t)sizeof(a));
	assert_int_equal(h.type, IPC_SET_ACK);
	assert_int_equal(h.id, 9);
	return a.status;
}

/* A reload narrowed web's allow list: dnsd's additions judged by a list
 * sent before the narrowing (gen g1 or older) are refused, those judged
 * by the new list (g2) are not, even before dnsd's acknowledgement; the
 * acknowledgement of the newest one ends the mark. */
static void
narrowed_refuses_only_old_lists(void **state)
{
	static char text[65536];
	uint32_t g1, g2;

	(void)state;
	proc_reload(&gw, &nodelta);
	g1 = received(text, sizeof(text));
	policy_dns_freeze(&gw, "web");
	proc_reload(&gw, &nodelta);
	g2 = received(text, sizeof(text));
	assert_true(g2 > g1);
	assert_int_equal(set_add_web(g1), -1);
	assert_int_equal(set_add_web(0), -1);
	assert_true(set_add_web(g2) >= 0);
	ack(g1, 0);			/* not the newest: the mark stays */
	assert_true(policy_dns_frozen(&gw, "web", g1));
	assert_false(policy_dns_frozen(&gw, "web", g2));
	assert_int_equal(set_add_web(g1), -1);
	ack(g2, 0);
	assert_false(policy_dns_frozen(&gw, "web", g1));
	assert_int_equal(policy_of(&gw)->ndns_frozen, 0);
}

/* A narrowing again: the mark moves to the newest gen sent. */
static void
narrowed_twice_moves_mark(void **state)
{
	static char text[65536];
	uint32_t g1, g2;

	(void)state;
	proc_reload(&gw, &nodelta);
	g1 = received(text, sizeof(text));
	policy_dns_freeze(&gw, "web");
	proc_reload(&gw, &nodelta);
	g2 = received(text, sizeof(text));
	policy_dns_freeze(&gw, "web");
	assert_int_equal(policy_of(&gw)->ndns_frozen, 1);
	assert_true(policy_dns_frozen(&gw, "web", g1));
	assert_true(policy_dns_frozen(&gw, "web", g2));
	assert_false(policy_dns_frozen(&gw, "other", g1));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(reload_in_place, setup, teardown),
		cmocka_unit_test_setup_teardown(refused_restarts, setup, teardown),
		cmocka_unit_test_setup_teardown(untold_restarts, setup, teardown),
		cmocka_unit_test_setup_teardown(stale_failure_ignored, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(narrowed_refuses_only_old_lists,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(narrowed_twice_moves_mark, setup,
		    teardown),
	};

	log_init("test", 0, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
