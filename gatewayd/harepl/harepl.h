/*
 * harepl.h -- replication of allowlist set elements between the two
 * boxes of a pair (gateway.ha.peer).
 *
 * The master's parent hands each set addition the kernel took to the
 * sending process (harepl/send.c), which keeps one TLS connection to the
 * other box, this box's certificate presented, the other's key checked
 * against gateway.ha.peer_key.  There the replication process (the
 * registration process's code, register.c, on gateway.ha.listen) checks
 * the connecting key with its parent, parses each line (harepl_parse)
 * into the same typed set addition dnsd sends, and the parent admits and
 * adds it exactly as it does dnsd's: a peer can open no more than a DNS
 * answer could.
 *
 * One line each way:
 *   elem SANDBOX TIMEOUT_MS plain|- PORTS|- ADDR,ADDR,...  -> ok | error REASON
 *   spent SANDBOX WINDOW BYTES                             -> ok | error REASON
 *   reg HOSTKEY REQUEST                                    -> ok | error REASON
 *   flush SANDBOX                                          -> ok | error REASON
 *   state SANDBOX                                          -> ok | error REASON
 *   grant SANDBOX SECONDS ENTRY                            -> ok | error REASON
 *   ungrant SANDBOX ENTRY                                  -> ok | error REASON
 *   quarantine SANDBOX                                     -> ok | error REASON
 *   unquarantine SANDBOX                                   -> ok | error REASON
 *   ping                                                   -> ok
 * PORTS is "tcp/22,udp/443" (the ports of the entries with ports of their
 * own that cover the name), "-" for none; "plain" says the addresses open
 * the sandbox's allow_ports.  spent is what the sandbox's guest sent in
 * egress budget window WINDOW, as the master counted it: the other box
 * keeps the larger of that and its own count (parent/egress.c).  reg is a
 * KVM host's registration request (register.c: register, remove, sync)
 * that the master applied, HOSTKEY the host's key in 64 hex digits.
 * flush empties the sandbox's allowlist sets: the master's emptied (its
 * list narrowed: a grant ended or was taken back, a reload), or the
 * master is about to send them whole.  state is that flush at the start
 * of a sandbox's whole state, which also ends the grants the other box
 * holds from this one for it (the state carries them again).  grant is
 * a grant for a while (ctl allow --for) made on either box, ENTRY as it
 * records it ("NAME" or "NAME:PORTS"), SECONDS the time it has left;
 * ungrant one taken back (ctl unallow).  quarantine says that a guest of
 * the sandbox reported NOT CONTAINED there and the sandbox was
 * quarantined (parent/verdict.c); the other box quarantines it too.
 * unquarantine says that box holds no quarantine of its own for it (an
 * admin cleared it, or the whole state says so): the other box ends the
 * quarantine it took from this one, never one of its own.  ping, every HAREPL_PING_S while
 * nothing else goes, is answered by the receiving process itself: a
 * link that does not answer within HAREPL_TIMEOUT_S is closed and made
 * again at once.
 *
 * The state, not only its changes: each time the sending process
 * (re)connects, and each time this box becomes master, the parent sends
 * the whole of it first (IPC_HA_SNAP): for each allowlist sandbox a
 * state line, its grants for a while and then its elements with the time
 * they have left, and each budgeted sandbox's egress total; and from
 * either box, master or not, a quarantine or unquarantine line for each
 * of its sandboxes.  What changed while the link was
 * down, removals included, is then the same on both.
 */
#ifndef GATEWAYD_HAREPL_H
#define GATEWAYD_HAREPL_H

#include <sys/types.h>

#include <stddef.h>

#include "ipc.h"
#include "../register/register.h"

#define HAREPL_USER		REG_USER	/* both ends run as moat-reg */
#define HAREPL_TIMEOUT_S	2	/* connect, handshake, each answer */
#define HAREPL_QUEUE_MAX	4096	/* lines waiting for the peer */
#define HAREPL_PING_S		2	/* a quiet link's heartbeat */
#define HAREPL_IDLE_S		7	/* the receiver's patience with silence */
#define HAREPL_PING		3	/* harepl_parse: a ping, answered "ok" */

/* One line's message: an IPC_SET_ADD, IPC_HA_SPENT, IPC_HA_FLUSH,
 * IPC_HA_GRANT, IPC_HA_QUARANTINE or IPC_REG_REQ. */
union harepl_msg {
	struct ipc_set_add	add;
	struct ipc_ha_spent	spent;
	struct ipc_ha_flush	flush;
	struct ipc_ha_grant	grant;
	struct ipc_ha_quarantine quarantine;
	struct ipc_reg_req	reg;
	char			raw[IPC_MAX_PAYLOAD];
};

/* One line (newline optional) into m: 0 with the message's IPC type in
 * *type and its length in *mlen, HAREPL_PING for a ping (no message), or
 * -1 with the reason (one line) in err.  What it accepts passes
 * ipc_check as that type. */
int	harepl_parse(const char *line, size_t len, union harepl_msg *m,
	    int *type, size_t *mlen, char *err, size_t errlen);
/* The line for a message of that type (without newline) into buf; -1 if
 * it does not fit. */
int	harepl_format(int type, const union harepl_msg *m, char *buf,
	    size_t len);

/* The sending process, in the forked child: ctx-building from pem, drop
 * to HAREPL_USER, narrow, then forward what the parent sends to peer. */
void	harepl_send_main(int ipc, pid_t parent, struct reg_pem *,
	    const char *peer, const uint8_t pin[32]) __attribute__((noreturn));
/* The replication endpoint: regproc_main in its replication mode. */
void	harepl_recv_main(int listen, int ipc, pid_t parent, struct reg_pem *)
	    __attribute__((noreturn));

#endif
