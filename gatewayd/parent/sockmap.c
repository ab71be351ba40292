/*
 * parent_sockmap.c -- load the tunnel program and its socket hash, once,
 * as root; hand out the map's descriptor (parent_sockmap.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "gw.h"
#include "ctl.h"
#include "log.h"
#include "sockmap.h"

/* The object clang built from gatewayd/bpf/tunnel.bpf.c, linked in
 * (tunnel_obj.S), so there is no file to find or to swap at run time. */
extern const unsigned char moat_tunnel_bpf[], moat_tunnel_bpf_end[];

static struct {
	bool		 splice_only;	/* --tunnels splice, the default */
	bool		 tried;
	struct bpf_object *obj;
	int		 mapfd, peersfd;
	unsigned	 insns, xlated, jited;
	char		 why[160];
} sm = { .splice_only = true, .mapfd = -1, .peersfd = -1 };

int
sockmap_choose(const char *how)
{
	if (strcmp(how, "auto") == 0)
		sm.splice_only = false;
	else if (strcmp(how, "splice") == 0)
		sm.splice_only = true;
	else
		return -1;
	return 0;
}

/* libbpf's own messages (the verifier's log among them) go to the
 * debug log; what failed is said once by sockmap_load. */
static int
bpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_debug("libbpf: %s", line);
	return 0;
}

static int
fail(const char *what, int err)
{
	snprintf(sm.why, sizeof(sm.why), "%s: %s", what, strerror(err));
	if (sm.obj != NULL)
		bpf_object__close(sm.obj);
	sm.obj = NULL;
	sm.mapfd = sm.peersfd = -1;
	return -1;
}

static int
sockmap_load(void)
{
	struct bpf_prog_info info;
	struct bpf_program *prog;
	__u32 len = sizeof(info);
	int pfd;

	libbpf_set_print(bpf_print);
	sm.obj = bpf_object__open_mem(moat_tunnel_bpf,
	    (size_t)(moat_tunnel_bpf_end - moat_tunnel_bpf), NULL);
	if (sm.obj == NULL)
		return fail("BPF object", errno);
	if (bpf_object__load(sm.obj) != 0)
		return fail("loading the tunnel program", errno);
	prog = bpf_object__find_program_by_name(sm.obj, "tunnel_verdict");
	sm.mapfd = bpf_object__find_map_fd_by_name(sm.obj, "tunnels");
	sm.peersfd = bpf_object__find_map_fd_by_name(sm.obj, "peers");
	if (prog == NULL || sm.mapfd < 0 || sm.peersfd < 0)
		return fail("BPF object", ENOENT);
	pfd = bpf_program__fd(prog);
	if (bpf_prog_attach(pfd, sm.mapfd, BPF_SK_SKB_STREAM_VERDICT, 0) != 0)
		return fail("attaching the stream verdict", errno);
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(pfd, &info, &len) == 0) {
		sm.xlated = info.xlated_prog_len;
		sm.jited = info.jited_prog_len;
	}
	sm.insns = (unsigned)bpf_program__insn_cnt(prog);
	snprintf(sm.why, sizeof(sm.why), "%u instructions verified, %u bytes "
	    "JIT-compiled", sm.insns, sm.jited);
	return 0;
}

int
sockmap_fd(void)
{
	if (sm.splice_only) {
		snprintf(sm.why, sizeof(sm.why), "--tunnels splice; "
		    "--tunnels auto for the kernel's socket map");
		return -1;
	}
	if (!sm.tried) {
		sm.tried = true;
		if (sockmap_load() == 0)
			log_info("tunnels: through the kernel's socket hash "
			    "(%s)", sm.why);
		else
			log_warnx("tunnels: through splice(2), the kernel "
			    "path is not available (%s)", sm.why);
	}
	return sm.mapfd;
}

int
sockmap_peers_fd(void)
{
	return sockmap_fd() >= 0 ? sm.peersfd : -1;
}

const char *
sockmap_path(void)
{
	return sm.mapfd >= 0 ? "sockmap" : "splice";
}

const char *
sockmap_why(void)
{
	return sm.why[0] != '\0' ? sm.why : "not started";
}

void
sockmap_metrics(FILE *fp)
{
	fputs("# HELP moat_tunnel_path Which path carries spliced tunnels "
	    "(1 for the one in use).\n# TYPE moat_tunnel_path gauge\n", fp);
	fprintf(fp, "moat_tunnel_path{path=\"sockmap\"} %d\n"
	    "moat_tunnel_path{path=\"splice\"} %d\n", sm.mapfd >= 0,
	    sm.mapfd < 0);
}

/* ctl status: which path carries tunnels, and why. */
static void
sockmap_status(struct ctl_req *r)
{
	if (r->json) {
		ctl_reply(r, "\"tunnels\":{\"path\":\"%s\",\"why\":",
		    sockmap_path());
		ctl_reply_jstr(r, sockmap_why());
		ctl_reply(r, "},");
	} else
		ctl_reply(r, "tunnels    %s (%s)\n", sockmap_path(),
		    sockmap_why());
}

static void
sockmap_mod_metrics(FILE *fp, const struct gw *gw)
{
	(void)gw;
	sockmap_metrics(fp);
}

const struct gw_module sockmap_module = {
	.name = "sockmap",
	.size = sizeof(char),
	.status = sockmap_status,
	.metrics = sockmap_mod_metrics,
};
