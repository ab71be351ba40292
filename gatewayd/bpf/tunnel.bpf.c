/*
 * tunnel.bpf.c -- the kernel half of a spliced tunnel.
 *
 * Each socket of a tunnel is stored in `tunnels` under the cookie of the
 * other one, so a socket's data goes to whatever the proxy paired it
 * with and nowhere else.  The program runs for every chunk a paired
 * socket receives and redirects it to the peer's send side.  A socket
 * whose peer is not (yet, or no longer) in the map keeps its bytes: they
 * stay readable by the proxy, which copies them as before.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

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
	bpf_sk_redirect_hash(skb, &tunnels, &key, 0);
	return SK_PASS;
}

char LICENSE[] SEC("license") = "GPL";
