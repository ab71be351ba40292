/*
 * tunnel.bpf.c -- the kernel half of a spliced tunnel.
 *
 * Two socket hashes.  `peers` says where a socket's data goes: each
 * socket of a tunnel is stored there under the cookie of the other one,
 * so its data goes to whatever the proxy paired it with and nowhere
 * else.  `tunnels`, to which the program is attached, holds the sockets
 * whose data the kernel carries, each under its own cookie.  The program
 * runs for every chunk a socket in `tunnels` receives and redirects it to
 * the peer's send side.  The proxy fills `peers` first, then `tunnels`:
 * a socket's data is handed to the program only once its peer is known,
 * so no chunk is ever left behind for the proxy while newer ones go
 * through.  A socket whose peer is no longer in `peers` (it closed)
 * keeps its bytes: they stay readable by the proxy.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u32);
} peers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u32);
} tunnels SEC(".maps");

SEC("sk_skb/stream_verdict")
int
tunnel_verdict(struct __sk_buff *skb)
{
	__u64 key = bpf_get_socket_cookie(skb);

	/* SK_PASS with a redirect set sends the chunk to the peer; a failed
	 * lookup sets none, and SK_PASS then leaves it with this socket. */
	bpf_sk_redirect_hash(skb, &peers, &key, 0);
	return SK_PASS;
}

char LICENSE[] SEC("license") = "GPL";
