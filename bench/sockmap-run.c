/*
 * sockmap-run.c -- run a standalone moat-proxy with the tunnel program
 * gatewayd's parent would load, for bench/proxy-bench.sh's sockmap row.
 *
 *   sockmap-run TUNNEL.BPF.O moat-proxy ARGS...
 *
 * Loads and attaches the object as gatewayd does (parent_sockmap.c),
 * then runs the command with the program's map at descriptor 9, the map
 * of where each socket's data goes at 10, and "--sockmap-fd 9
 * --sockmap-peers-fd 10" added.  Root only (loading BPF needs it).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
main(int argc, char *argv[])
{
	struct bpf_object *o;
	struct bpf_program *p;
	char **av;
	int mfd, pfd, i;

	if (argc < 3) {
		fprintf(stderr, "usage: sockmap-run OBJ CMD ARGS...\n");
		return 2;
	}
	if ((o = bpf_object__open_file(argv[1], NULL)) == NULL ||
	    bpf_object__load(o) != 0) {
		perror("sockmap-run: loading the object");
		return 1;
	}
	p = bpf_object__find_program_by_name(o, "tunnel_verdict");
	mfd = bpf_object__find_map_fd_by_name(o, "tunnels");
	pfd = bpf_object__find_map_fd_by_name(o, "peers");
	if (p == NULL || mfd < 0 || pfd < 0 || bpf_prog_attach(bpf_program__fd(p), mfd,
	    BPF_SK_SKB_STREAM_VERDICT, 0) != 0) {
		perror("sockmap-run: attaching");
		return 1;
	}
	if (dup2(mfd, 9) != 9 || dup2(pfd, 10) != 10) {
		perror("sockmap-run: dup2");
		return 1;
	}
	av = calloc((size_t)argc + 4, sizeof(*av));
	for (i = 2; i < argc; i++)
		av[i - 2] = argv[i];
	av[argc - 2] = "--sockmap-fd";
	av[argc - 1] = "9";
	av[argc] = "--sockmap-peers-fd";
	av[argc + 1] = "10";
	execv(av[0], av);
	perror("sockmap-run: exec");
	return 1;
}
