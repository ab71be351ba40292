/*
 * test_gatewayd_forged.c -- a compromised control process can only send
 * IPC_CTL_REQ messages; the parent must check each one again.  The
 * parent's handler (ctl_message) is driven with crafted requests over a
 * real connection to a real control socket, from a process running as
 * "nobody" (a member of the test's moat group): asking for a sandbox
 * another user owns is refused, and so is claiming to be someone else
 * (root) on nobody's connection.  Needs root, to become nobody.  And a
 * reply can carry a descriptor for the client.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <grp.h>
#include <poll.h>
#include <pwd.h>
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

static struct gw gw;
static int ctlipc[2];		/* [0] the parent's end, [1] "control" */
static int conn = -1;		/* nobody's connection, accepted */
static pid_t peer;		/* nobody's process */
static uid_t nobody_uid;
static gid_t nobody_gid;
static char dir[] = "/tmp/moat-forged.XXXXXX";

static const char conf[] =
    "gateway: { uplink = \"up0\"; network = \"10.77.0.0/24\";\n"
    "  bridge = \"moat0\"; dns: { upstream = [ \"203.0.113.53\" ]; }; };\n"
    "sandboxes = (\n"
    "  { name = \"mine\"; mac = \"52:54:00:00:00:0a\"; address = \"10.77.0.10\";"
    " tap = \"mt-mine\"; egress = \"none\"; owner = \"nobody\"; },\n"
    "  { name = \"bobs\"; mac = \"52:54:00:00:00:0b\"; address = \"10.77.0.11\";"
    " tap = \"mt-bobs\"; egress = \"none\"; owner = \"bob\"; } );\n";

/* A process that becomes nobody, connects, and waits to be killed. */
static pid_t
connect_as_nobody(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	pid_t pid;
	int fd;

	if ((pid = fork()) != 0)
		return pid;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", gw.opts.sock);
	if (setgroups(0, NULL) == -1 || setresgid(nobody_gid, nobody_gid,
	    nobody_gid) == -1 || setresuid(nobody_uid, nobody_uid,
	    nobody_uid) == -1 || (fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		_exit(1);
	pause();
	_exit(0);
}

static int
setup(void **state)
{
	struct moat_errors errs;
	struct passwd *pw;
	char path[128];
	FILE *fp;

	(void)state;
	if (geteuid() != 0 || (pw = getpwnam("nobody")) == NULL) {
		fprintf(stderr, "# needs root and a user nobody\n");
		return -1;
	}
	nobody_uid = pw->pw_uid;
	nobody_gid = pw->pw_gid;
	if (mkdtemp(dir) == NULL || chmod(dir, 0711) == -1)
		return -1;	/* nobody must reach the socket */
	snprintf(path, sizeof(path), "%s/moat.conf", dir);
	if ((fp = fopen(path, "w")) == NULL)
		return -1;
	fputs(conf, fp);
	fclose(fp);
	if ((gw.cfg = config_load(path, NULL, &errs)) == NULL) {
		config_errors_print(stderr, &errs);
		return -1;
	}
	config_errors_free(&errs);
	gw.opts.sock = strdup(strcat(strcpy(path, dir), "/gatewayd.sock"));
	gw.opts.bindir = "/nonexistent";
	audit_of(&gw)->auditfd = ctl_of(&gw)->ctlfd = -1;
	gw.moat_gid = nobody_gid;	/* nobody is our "member" */
	ctl_of(&gw)->on_ctl_msg = ctl_message;
	for (int i = 0; i < PROC_MAX; i++)
		gw.procs[i].ipc = -1;
	if (control_listen(&gw) == -1 || ipc_pair(ctlipc) == -1)
		return -1;
	gw.procs[PROC_CONTROL].ipc = ctlipc[0];
	peer = connect_as_nobody();
	/* The socket is non-blocking: wait for nobody to connect. */
	if (poll(&(struct pollfd){ ctl_of(&gw)->ctlfd, POLLIN, 0 }, 1, 30000) != 1 ||
	    (conn = accept(ctl_of(&gw)->ctlfd, NULL, NULL)) == -1)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	char path[128];

	(void)state;
	kill(peer, SIGKILL);
	waitpid(peer, NULL, 0);
	control_unlink(&gw);
	unlink(strcat(strcpy(path, dir), "/moat.conf"));
	rmdir(dir);
	return 0;
}

/* Send the parent a request as the control process would, with words
 * NUL-separated in w (wlen bytes, argc of them); its reply's text. */
static const char *
ask(uint32_t uid, uint32_t gid, int verb, const char *w, size_t wlen,
    uint16_t argc)
{
	static union {
		struct ipc_ctl_req m;
		struct ipc_ctl_reply r;
		char raw[IPC_MAX_PAYLOAD + 1];
	} u;
	struct ipc_hdr h = { IPC_CTL_REQ, 0, 0, 7 };
	int fds[1];
	char err[256];
	ssize_t n;

	memset(&u, 0, sizeof(u));
	u.m.uid = uid;
	u.m.gid = gid;
	u.m.pid = peer;
	u.m.verb = (uint8_t)verb;
	u.m.argc = argc;
	memcpy(u.m.data, w, wlen);
	h.len = (uint32_t)(sizeof(u.m) + wlen);
	assert_int_equal(ipc_check(&h, &u, h.len, err, sizeof(err)), 0);
	fds[0] = dup(conn);
	ctl_message(&gw, &h, &u, h.len, fds, 1);
	n = ipc_recv(ctlipc[1], &h, &u, IPC_MAX_PAYLOAD, err, sizeof(err));
	assert_true(n >= (ssize_t)sizeof(u.r));
	assert_int_equal(h.type, IPC_CTL_REPLY);
	assert_int_equal(h.id, 7);
	assert_int_equal(u.r.end, IPC_CTL_END);
	u.raw[n] = '\0';
	return u.r.text;
}

/* nobody may see and act on their own sandbox only. */
static void
own_sandbox_only(void **state)
{
	const char *t;

	(void)state;
	t = ask(nobody_uid, nobody_gid, CTL_SANDBOXES, "sandboxes", 10, 1);
	assert_non_null(strstr(t, "mine"));
	assert_null(strstr(t, "bobs"));
	assert_non_null(strstr(t, "ok\n"));
}

/* The forged request: nobody's credentials, bob's sandbox. */
static void
others_sandbox_refused(void **state)
{
	(void)state;
	assert_string_equal(ask(nobody_uid, nobody_gid, CTL_STOP,
	    "stop\0bobs", 10, 2),
	    "error: stop: no sandbox \"bobs\" owned by nobody\n");
	assert_string_equal(ask(nobody_uid, nobody_gid, CTL_DESTROY,
	    "destroy\0--force\0bobs", 21, 3),
	    "error: destroy: no sandbox \"bobs\" owned by nobody\n");
	assert_int_equal(ctl_of(&gw)->jobs[0].pid, 0);	/* nothing was run */
}

/* Claiming root (or anyone else) on nobody's connection. */
static void
forged_credentials_refused(void **state)
{
	const char *want = "error: permission denied: the request does not "
	    "match its connection\n";

	(void)state;
	assert_string_equal(ask(0, 0, CTL_STOP, "stop\0bobs", 10, 2), want);
	assert_string_equal(ask(0, 0, CTL_SANDBOXES, "sandboxes", 10, 1), want);
	assert_string_equal(ask(nobody_uid, 0, CTL_SANDBOXES, "sandboxes", 10,
	    1), want);
	assert_int_equal(ctl_of(&gw)->jobs[0].pid, 0);
}

/* The parent's side of a reply with a descriptor for the client (as a
 * "console" verb would send): it reaches the control process with the
 * reply's first chunk, and the parent keeps no copy. */
static void
reply_carries_fd(void **state)
{
	static union {
		struct ipc_ctl_reply r;
		char raw[IPC_MAX_PAYLOAD + 1];
	} u;
	struct ctl_req r = { .gw = &gw, .id = 9 };
	struct ipc_hdr h;
	int p[2], got[2], lowest;
	size_t nfds;
	char err[256], c;

	(void)state;
	assert_int_equal(pipe(p), 0);
	ctl_req_open(&r);
	ctl_reply(&r, "ok\n");
	ctl_req_attach_fd(&r, p[1]);
	ctl_req_flush(&r, IPC_CTL_END);
	lowest = dup(0);
	close(lowest);
	assert_int_equal(lowest, p[1]);		/* closed in the parent */
	assert_int_equal(ipc_recv_fds(ctlipc[1], &h, &u, IPC_MAX_PAYLOAD, got,
	    2, &nfds, err, sizeof(err)), (ssize_t)sizeof(u.r) + 3);
	assert_int_equal(h.id, 9);
	assert_int_equal(nfds, 1);
	assert_int_equal(write(got[0], "x", 1), 1);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(got[0]);
	close(p[0]);
}

/* --- the proxy's workers: the proxy's role, each stamped as itself --- */

static char audit_line[1024];

static void
grab(struct gw *g, const char *line)
{
	(void)g;
	snprintf(audit_line, sizeof(audit_line), "%s", line);
}

/* Worker 1's events say worker 1, whatever worker they claim. */
static void
worker_audit_stamped(void **state)
{
	static const char json[] =
	    "{\"source\":\"proxy\",\"worker\":0,\"event\":\"refuse\"}";
	int p[2];

	(void)state;
	assert_int_equal(ipc_pair(p), 0);
	gw.procs[PROC_PROXY + 1].name = "proxy";
	gw.procs[PROC_PROXY + 1].ipc = p[0];
	audit_of(&gw)->on_audit_line = grab;
	assert_int_equal(ipc_send(p[1], IPC_AUDIT, 0, json, sizeof(json) - 1), 0);
	proc_ipc_readable(&gw, PROC_PROXY + 1);
	assert_non_null(strstr(audit_line, "\"source\":\"proxy\",\"worker\":1,"
	    "\"WORKER\":0,\"event\":\"refuse\"}"));
	close(p[1]);
	close(gw.procs[PROC_PROXY + 1].ipc);
	gw.procs[PROC_PROXY + 1].ipc = -1;
}

/* A worker may send only what the proxy may: dnsd's message kills it. */
static void
worker_role_enforced(void **state)
{
	struct ipc_dns_dropped m = { .sandbox = "mine", .count = 1 };
	int p[2], status;
	pid_t pid;

	(void)state;
	assert_int_equal(ipc_pair(p), 0);
	if ((pid = fork()) == 0) {
		pause();
		_exit(0);
	}
	gw.procs[PROC_PROXY + 2].name = "proxy";
	gw.procs[PROC_PROXY + 2].pid = pid;
	gw.procs[PROC_PROXY + 2].ipc = p[0];
	audit_of(&gw)->on_audit_line = grab;
	assert_int_equal(ipc_send(p[1], IPC_DNS_DROPPED, 0, &m, sizeof(m)), 0);
	proc_ipc_readable(&gw, PROC_PROXY + 2);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_non_null(strstr(audit_line, "\"event\":\"child-killed\","
	    "\"child\":\"proxy\",\"reason\":\"sent dns-dropped, which its "
	    "role may not"));
	gw.procs[PROC_PROXY + 2].pid = -1;
	close(p[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(own_sandbox_only),
		cmocka_unit_test(others_sandbox_refused),
		cmocka_unit_test(forged_credentials_refused),
		cmocka_unit_test(reply_carries_fd),
		cmocka_unit_test(worker_audit_stamped),
		cmocka_unit_test(worker_role_enforced),
	};

	log_init("test", 0, 0);
	return cmocka_run_group_tests_name("gatewayd forged control requests",
	    tests, setup, teardown);
}
