/* SPDX-License-Identifier: MIT */
/*
 * iond's wire protocol (service/PROTOCOL.md is the reference): the
 * message layouts, and a strict parser and encoder for each, with no I/O,
 * so that the daemon, the library's client and ionctl share one
 * definition and the parser can be fuzzed alone.
 */
#ifndef IOND_PROTO_H
#define IOND_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define IOND_MAGIC 0x444e4f49U /* "IOND" in a little-endian word */
#define IOND_VERSION 1
#define IOND_HDR_SIZE 16
#define IOND_ALLOC_FIXED 24 /* an allocate request's fields after the header */
#define IOND_REPLY_FIXED 32 /* a reply's fields after the header */
/* The longest text fields, and so the longest message of either side. */
#define IOND_HEAP_MAX 63
#define IOND_NAME_MAX 31
#define IOND_CONSTRAINTS_MAX (64U * 1024U)
#define IOND_REASON_MAX 1024U
#define IOND_DATA_MAX (60U * 1024U)
#define IOND_REQUEST_MAX (IOND_HDR_SIZE + IOND_ALLOC_FIXED + IOND_HEAP_MAX + \
			  IOND_NAME_MAX + IOND_CONSTRAINTS_MAX)
#define IOND_REPLY_MAX (IOND_HDR_SIZE + IOND_REPLY_FIXED + IOND_REASON_MAX + IOND_DATA_MAX)

enum iond_op {
	IOND_OP_ALLOC = 1,  /* a buffer: size, heap or ionc1 constraints */
	IOND_OP_FREE = 2,   /* a buffer the caller is done with, by id */
	IOND_OP_HEAPS = 3,  /* the heaps, and which the caller may have */
	IOND_OP_USAGE = 4,  /* the caller's usage and quota (or everyone's) */
	IOND_OP_REPLY = 0x8000, /* OR-ed into a reply's op */
};

/* IOND_OP_USAGE flags: every client, for root and the service's uid. */
#define IOND_USAGE_ALL (1U << 0)

struct iond_request {
	uint16_t op;
	uint32_t seq;
	uint64_t size;     /* ALLOC */
	uint32_t flags;    /* ALLOC: ION_FLAG_*; USAGE: IOND_USAGE_* */
	uint64_t id;       /* FREE */
	/* ALLOC, NUL-terminated copies ("" when absent); point into the
	 * caller's storage given to iond_request_parse(). */
	const char *heap;
	const char *name;
	const char *constraints;
};

struct iond_reply {
	uint16_t op;        /* the request's op (without IOND_OP_REPLY) */
	uint32_t seq;
	int32_t error;      /* 0 or a negative errno */
	uint64_t id;        /* ALLOC: the buffer's id */
	uint64_t size;      /* ALLOC: its size */
	const char *reason; /* why, in words ("" on success) */
	const char *data;   /* key=value lines ("") */
};

/*
 * Parses one request of len bytes.  Text fields are copied, NUL-terminated,
 * into store (at least len + 3 bytes).  A field must hold printable ASCII
 * only.  0, or -EPROTO (bad magic or header, a length that is not the
 * message's), -EPROTONOSUPPORT (another version), -EOPNOTSUPP (an op
 * unknown), -EINVAL (a field out of range, a byte not printable),
 * -EMSGSIZE (a field past its maximum); ret_req is written on success
 * only.  ret_seq gets the header's seq whenever the header could be read,
 * so that a refusal can still be matched to its request.
 */
int iond_request_parse(const void *msg, size_t len, char *store, size_t store_size,
		       struct iond_request *ret_req, uint32_t *ret_seq);
/* Encodes a request into buf; its length, or -EMSGSIZE / -EINVAL. */
int iond_request_encode(const struct iond_request *req, void *buf, size_t size);

/* The same for replies; store holds at least len + 2 bytes. */
int iond_reply_parse(const void *msg, size_t len, char *store, size_t store_size,
		     struct iond_reply *ret_reply);
/* Reason and data longer than their maximum are cut (never refused). */
int iond_reply_encode(const struct iond_reply *reply, void *buf, size_t size);

#endif
