/* The tunnel program's BPF object, built by clang from tunnel.bpf.c,
 * as read-only data of gatewayd (parent_sockmap.c). */
	.section .rodata
	.balign 8
	.globl	moat_tunnel_bpf
moat_tunnel_bpf:
	.incbin	MOAT_TUNNEL_BPF_OBJ
	.globl	moat_tunnel_bpf_end
moat_tunnel_bpf_end:
	.section .note.GNU-stack,"",@progbits
