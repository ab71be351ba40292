/*
 * ipc.h -- typed, size-checked messages between gatewayd and its children.
 *
 * Transport: a SOCK_SEQPACKET socketpair, so one send is one message and
 * framing cannot drift.  Every message is a struct ipc_hdr followed by
 * exactly hdr.len bytes of payload.  ipc_recv() checks the total size, the
 * type and the payload's shape against one table; anything wrong is a
 * protocol violation, which is fatal to the receiver (STYLE.md point 4):
 * the caller logs it and exits (or, in gatewayd's parent, kills the child).
 */
#ifndef MOAT_IPC_H
#define MOAT_IPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "admit.h"
#include "ranges.h"

#define IPC_MAX_PAYLOAD		8192
#define IPC_SET_MAX_ADDRS	64
#define IPC_NAME_LEN		33	/* sandbox names are at most 32 */
/* A set-add asking for longer is a protocol violation (dnsd caps TTLs). */
#define IPC_SET_TIMEOUT_MAX_MS	ADMIT_SET_TIMEOUT_MAX_MS

enum ipc_type {
	IPC_SET_ADD = 1,	/* dnsd -> parent: open addresses for a sandbox */
	IPC_SET_ACK,		/* parent -> dnsd: result of an IPC_SET_ADD */
	IPC_AUDIT,		/* child -> parent: one audit event, JSON object */
	IPC_RELOAD,		/* parent -> child: re-read the configuration */
	IPC_SIGN_REQ,		/* proxy -> signer: a leaf certificate, please */
	IPC_SIGN_CERT,		/* signer -> proxy: the leaf and the CA, DER */
	IPC_SECRET,		/* parent -> proxy: one secret's value, at start */
	IPC_DNS_DROPPED,	/* dnsd -> parent: queries over a sandbox's rate */
	IPC_BUDGET_REQ,		/* proxy -> parent: charge a request to budgets */
	IPC_BUDGET_ACK,		/* parent -> proxy: charged, or which is spent */
	IPC_TYPE_MAX
};

struct ipc_hdr {
	uint16_t	type;
	uint16_t	reserved;	/* must be 0 */
	uint32_t	len;		/* payload bytes after the header */
	uint32_t	id;		/* request id, echoed in the reply */
};

struct ipc_set_add {
	char		sandbox[IPC_NAME_LEN];	/* NUL-terminated */
	uint8_t		pad[3];
	uint32_t	timeout_ms;	/* at most IPC_SET_TIMEOUT_MAX_MS */
	uint32_t	naddr;		/* 1 .. IPC_SET_MAX_ADDRS */
	struct moat_addr addr[];	/* naddr entries */
};

struct ipc_set_ack {
	int32_t		status;		/* >= 0 addresses added, -1 refused */
};

#define IPC_HOST_LEN		254	/* a DNS name or an address literal */
#define IPC_SIGN_MAX_KEY	1024	/* DER SubjectPublicKeyInfo */

struct ipc_sign_req {
	char		host[IPC_HOST_LEN];	/* NUL-terminated */
	uint16_t	keylen;
	uint8_t		key[];		/* the leaf's public key, DER */
};

struct ipc_sign_cert {
	int32_t		status;		/* 0 signed, -1 refused */
	uint16_t	leaflen;
	uint16_t	calen;
	uint8_t		der[];		/* leaf then CA certificate, DER */
};

#define IPC_SECRET_MAX		4096	/* SECRET_FILE_MAX */

/* The parent sends one per configured secret, in the configuration's
 * order, before the proxy serves anything. */
struct ipc_secret {
	char		name[IPC_NAME_LEN];	/* NUL-terminated */
	uint8_t		pad[3];
	uint32_t	len;			/* 1 .. IPC_SECRET_MAX */
	char		value[];
};

/* Sent at most once a second per sandbox, with the count since the last. */
struct ipc_dns_dropped {
	char		sandbox[IPC_NAME_LEN];	/* NUL-terminated */
	uint8_t		pad[7];
	uint64_t	count;		/* >= 1 */
};

/* One request that carries the placeholders of secrets with a budget:
 * the parent charges every named secret, or none if any is spent. */
#define IPC_BUDGET_MAX		8
struct ipc_budget_req {
	uint32_t	nsecret;		/* 1 .. IPC_BUDGET_MAX */
	char		secret[IPC_BUDGET_MAX][IPC_NAME_LEN];	/* NUL-terminated */
	uint8_t		pad[4];
};

struct ipc_budget_ack {
	int32_t		status;		/* 0 charged, 1 a budget is spent */
	uint32_t	retry_after;	/* seconds, 1 .. 86400 when spent */
	char		secret[IPC_NAME_LEN];	/* the spent one, or "" */
	char		window[8];	/* "minute" or "day", or "" */
	uint8_t		pad[3];
};

/* An IPC_AUDIT payload is a JSON object of printable ASCII, without NUL or
 * newline, at most IPC_MAX_PAYLOAD bytes. */

/* Create the pair (SOCK_SEQPACKET, close-on-exec on both ends). */
int	ipc_pair(int fds[2]);
/* Send one message.  0 or -1 (errno set). */
int	ipc_send(int fd, enum ipc_type, uint32_t id, const void *payload,
	    size_t len);
/* Receive one message into buf (at least IPC_MAX_PAYLOAD bytes).
 * Returns the payload length, 0 on orderly EOF with *hdr zeroed, -1 on
 * a socket error (errno) and -2 on a protocol violation (message in err). */
ssize_t	ipc_recv(int fd, struct ipc_hdr *hdr, void *buf, size_t buflen,
	    char *err, size_t errlen);
/* The shape check ipc_recv applies; exposed for tests and fuzzing.
 * 0 valid, -1 invalid (message in err). */
int	ipc_check(const struct ipc_hdr *, const void *payload, size_t len,
	    char *err, size_t errlen);
const char *ipc_type_name(int type);

#endif
