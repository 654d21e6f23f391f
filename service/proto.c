// SPDX-License-Identifier: MIT
/*
 * iond's messages, parsed and written (PROTOCOL.md).  Every integer is in
 * the host's byte order (a Unix socket never leaves the machine), read
 * with memcpy (no alignment is assumed), and every length is checked
 * against the message before anything is read past the header.
 */
#include <errno.h>
#include <string.h>

#include "proto.h"

static uint16_t get16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void put16(unsigned char *p, uint16_t v) { memcpy(p, &v, sizeof(v)); }
static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, sizeof(v)); }
static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, sizeof(v)); }

/* The header: 0 and the op, or a negative errno; *seq set once readable. */
static int header_parse(const unsigned char *p, size_t len, uint16_t *ret_op,
			uint32_t *ret_seq)
{
	if (len < IOND_HDR_SIZE || get32(p) != IOND_MAGIC)
		return -EPROTO;
	if (ret_seq)
		*ret_seq = get32(p + 8);
	if (get32(p + 12) != len)
		return -EPROTO;
	if (get16(p + 4) != IOND_VERSION)
		return -EPROTONOSUPPORT;
	*ret_op = get16(p + 6);
	return 0;
}

static void header_put(unsigned char *p, uint16_t op, uint32_t seq, size_t len)
{
	put32(p, IOND_MAGIC);
	put16(p + 4, IOND_VERSION);
	put16(p + 6, op);
	put32(p + 8, seq);
	put32(p + 12, (uint32_t)len);
}

/* A text field: printable ASCII (0x20..0x7e) only, copied NUL-terminated
 * into *store, which advances. */
static int text_take(const unsigned char *src, size_t n, char **store, const char **ret)
{
	for (size_t i = 0; i < n; i++)
		if (src[i] < 0x20 || src[i] > 0x7e)
			return -EINVAL;
	memcpy(*store, src, n);
	(*store)[n] = '\0';
	*ret = *store;
	*store += n + 1;
	return 0;
}

static int alloc_parse(const unsigned char *p, size_t len, char *store,
		       struct iond_request *req)
{
	const unsigned char *body = p + IOND_HDR_SIZE;
	size_t heap_len, name_len, cons_len, at;
	int r;

	if (len < IOND_HDR_SIZE + IOND_ALLOC_FIXED)
		return -EPROTO;
	req->size = get64(body);
	req->flags = get32(body + 8);
	heap_len = get16(body + 12);
	name_len = get16(body + 14);
	cons_len = get32(body + 16);
	if (get32(body + 20) != 0)
		return -EINVAL;
	if (heap_len > IOND_HEAP_MAX || name_len > IOND_NAME_MAX ||
	    cons_len > IOND_CONSTRAINTS_MAX)
		return -EMSGSIZE;
	at = IOND_HDR_SIZE + IOND_ALLOC_FIXED;
	if (len != at + heap_len + name_len + cons_len)
		return -EPROTO;
	if (req->size == 0)
		return -EINVAL;
	r = text_take(p + at, heap_len, &store, &req->heap);
	if (r == 0)
		r = text_take(p + at + heap_len, name_len, &store, &req->name);
	if (r == 0)
		r = text_take(p + at + heap_len + name_len, cons_len, &store, &req->constraints);
	return r;
}

int iond_request_parse(const void *msg, size_t len, char *store, size_t store_size,
		       struct iond_request *ret_req, uint32_t *ret_seq)
{
	const unsigned char *p = msg;
	struct iond_request req = { .heap = "", .name = "", .constraints = "" };
	size_t body;
	int r;

	if (!msg || !store || !ret_req || store_size < len + 3)
		return -EINVAL;
	r = header_parse(p, len, &req.op, ret_seq);
	if (r < 0)
		return r;
	req.seq = get32(p + 8);
	body = len - IOND_HDR_SIZE;
	switch (req.op) {
	case IOND_OP_ALLOC:
		r = alloc_parse(p, len, store, &req);
		break;
	case IOND_OP_FREE:
		r = body == 8 ? 0 : -EPROTO;
		if (r == 0)
			req.id = get64(p + IOND_HDR_SIZE);
		break;
	case IOND_OP_HEAPS:
		r = body == 0 ? 0 : -EPROTO;
		break;
	case IOND_OP_USAGE:
		r = body == 8 ? 0 : -EPROTO;
		if (r == 0) {
			req.flags = get32(p + IOND_HDR_SIZE);
			if ((req.flags & ~IOND_USAGE_ALL) || get32(p + IOND_HDR_SIZE + 4))
				r = -EINVAL;
		}
		break;
	default:
		r = -EOPNOTSUPP;
	}
	if (r < 0)
		return r;
	*ret_req = req;
	return 0;
}

static size_t str_len(const char *s) { return s ? strlen(s) : 0; }

int iond_request_encode(const struct iond_request *req, void *buf, size_t size)
{
	unsigned char *p = buf;
	size_t heap_len, name_len, cons_len, len = IOND_HDR_SIZE;

	if (!req || !buf)
		return -EINVAL;
	heap_len = str_len(req->heap);
	name_len = str_len(req->name);
	cons_len = str_len(req->constraints);
	switch (req->op) {
	case IOND_OP_ALLOC:
		if (heap_len > IOND_HEAP_MAX || name_len > IOND_NAME_MAX ||
		    cons_len > IOND_CONSTRAINTS_MAX)
			return -EMSGSIZE;
		len += IOND_ALLOC_FIXED + heap_len + name_len + cons_len;
		break;
	case IOND_OP_FREE:
	case IOND_OP_USAGE:
		len += 8;
		break;
	case IOND_OP_HEAPS:
		break;
	default:
		return -EINVAL;
	}
	if (len > size)
		return -EMSGSIZE;
	memset(p, 0, len);
	header_put(p, req->op, req->seq, len);
	p += IOND_HDR_SIZE;
	if (req->op == IOND_OP_ALLOC) {
		put64(p, req->size);
		put32(p + 8, req->flags);
		put16(p + 12, (uint16_t)heap_len);
		put16(p + 14, (uint16_t)name_len);
		put32(p + 16, (uint32_t)cons_len);
		p += IOND_ALLOC_FIXED;
		memcpy(p, req->heap ? req->heap : "", heap_len);
		memcpy(p + heap_len, req->name ? req->name : "", name_len);
		memcpy(p + heap_len + name_len, req->constraints ? req->constraints : "", cons_len);
	} else if (req->op == IOND_OP_FREE) {
		put64(p, req->id);
	} else if (req->op == IOND_OP_USAGE) {
		put32(p, req->flags);
	}
	return (int)len;
}

int iond_reply_parse(const void *msg, size_t len, char *store, size_t store_size,
		     struct iond_reply *ret_reply)
{
	const unsigned char *p = msg, *body;
	struct iond_reply reply;
	size_t reason_len, data_len;
	uint16_t op;
	int r;

	if (!msg || !store || !ret_reply || store_size < len + 2)
		return -EINVAL;
	r = header_parse(p, len, &op, NULL);
	if (r < 0)
		return r;
	if (!(op & IOND_OP_REPLY) || len < IOND_HDR_SIZE + IOND_REPLY_FIXED)
		return -EPROTO;
	body = p + IOND_HDR_SIZE;
	reply.op = op & (uint16_t)~IOND_OP_REPLY;
	reply.seq = get32(p + 8);
	reply.error = (int32_t)get32(body);
	reason_len = get32(body + 4);
	data_len = get32(body + 8);
	reply.id = get64(body + 16);
	reply.size = get64(body + 24);
	if (reply.error > 0 || reply.error < -4095 || reason_len > IOND_REASON_MAX ||
	    data_len > IOND_DATA_MAX || get32(body + 12) != 0)
		return -EINVAL;
	if (len != IOND_HDR_SIZE + IOND_REPLY_FIXED + reason_len + data_len)
		return -EPROTO;
	body += IOND_REPLY_FIXED;
	r = text_take(body, reason_len, &store, &reply.reason);
	if (r == 0) {
		/* data is lines: newlines are its one control byte */
		for (size_t i = 0; i < data_len; i++)
			if ((body[reason_len + i] < 0x20 && body[reason_len + i] != '\n') ||
			    body[reason_len + i] > 0x7e)
				return -EINVAL;
		memcpy(store, body + reason_len, data_len);
		store[data_len] = '\0';
		reply.data = store;
	}
	if (r < 0)
		return r;
	*ret_reply = reply;
	return 0;
}

int iond_reply_encode(const struct iond_reply *reply, void *buf, size_t size)
{
	unsigned char *p = buf;
	size_t reason_len, data_len, len;

	if (!reply || !buf)
		return -EINVAL;
	reason_len = str_len(reply->reason);
	data_len = str_len(reply->data);
	if (reason_len > IOND_REASON_MAX)
		reason_len = IOND_REASON_MAX;
	if (data_len > IOND_DATA_MAX)
		data_len = IOND_DATA_MAX;
	len = IOND_HDR_SIZE + IOND_REPLY_FIXED + reason_len + data_len;
	if (len > size)
		return -EMSGSIZE;
	memset(p, 0, IOND_HDR_SIZE + IOND_REPLY_FIXED);
	header_put(p, reply->op | IOND_OP_REPLY, reply->seq, len);
	p += IOND_HDR_SIZE;
	put32(p, (uint32_t)reply->error);
	put32(p + 4, (uint32_t)reason_len);
	put32(p + 8, (uint32_t)data_len);
	put64(p + 16, reply->id);
	put64(p + 24, reply->size);
	p += IOND_REPLY_FIXED;
	if (reason_len)
		memcpy(p, reply->reason, reason_len);
	if (data_len)
		memcpy(p + reason_len, reply->data, data_len);
	/* what the parser refuses never leaves: a byte not printable is '?' */
	for (size_t i = 0; i < reason_len + data_len; i++)
		if ((p[i] < 0x20 && !(i >= reason_len && p[i] == '\n')) || p[i] > 0x7e)
			p[i] = '?';
	return (int)len;
}
