// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for iond's untrusted input: the first byte picks what
 * the rest is: a request (what any local user may send the service), a
 * reply (what the library's client reads), or an iond.d policy file.
 * A message that parses must encode back to the very same bytes; a
 * policy must resolve for any uid without a NULL source.  Anything else
 * aborts.  Built with -DFUZZ_REPLAY it runs the files (or folders) it is
 * given, so that every build replays the seed corpus as a unit test.
 * Built with -DFUZZ_PROTO_ONLY (fuzz-iond-proto) it takes messages only,
 * at the speed a run of ten million inputs wants: the policy reader, with
 * its allocations per key, is an order of magnitude slower.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void request(const uint8_t *msg, size_t len)
{
	static char store[IOND_REQUEST_MAX + 8];
	static unsigned char again[IOND_REQUEST_MAX + 8];
	struct iond_request req;
	uint32_t seq;
	int n;

	if (len > IOND_REQUEST_MAX || iond_request_parse(msg, len, store, sizeof(store), &req, &seq) < 0)
		return;
	n = iond_request_encode(&req, again, sizeof(again));
	if (n < 0 || (size_t)n != len || memcmp(again, msg, len) != 0 || seq != req.seq)
		abort();
}

static void reply(const uint8_t *msg, size_t len)
{
	static char store[IOND_REPLY_MAX + 8];
	static unsigned char again[IOND_REPLY_MAX + 8];
	struct iond_reply rep;
	int n;

	if (len > IOND_REPLY_MAX || iond_reply_parse(msg, len, store, sizeof(store), &rep) < 0)
		return;
	n = iond_reply_encode(&rep, again, sizeof(again));
	if (n < 0 || (size_t)n != len || memcmp(again, msg, len) != 0)
		abort();
}

static void policy(const uint8_t *text, size_t len)
{
	static const gid_t groups[] = { 44, 65534 };
	char *copy = malloc(len + 1);
	struct iond_policy *p;
	struct iond_limits lim;

	if (!copy)
		return;
	memcpy(copy, text, len);
	copy[len] = '\0';
	if (iond_policy_load_text(copy, "fuzz.conf", &p) == 0) {
		for (uid_t uid = 0; uid < 3; uid++) {
			iond_policy_resolve(p, uid, 44, groups, 2, &lim);
			for (int k = 0; k < IOND_LIMIT_COUNT; k++)
				if (!lim.source[k])
					abort();
			if (!lim.heaps || !lim.heaps_source)
				abort();
			iond_limits_allow_heap(&lim, "system");
		}
		iond_policy_free(p);
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
#ifdef FUZZ_PROTO_ONLY
	if (data[0] % 3 == 2)
		return 0;
#endif
	switch (data[0] % 3) {
	case 0: request(data + 1, size - 1); break;
	case 1: reply(data + 1, size - 1); break;
	default: policy(data + 1, size - 1); break;
	}
	return 0;
}

#ifdef FUZZ_REPLAY
#include <ftw.h>

static int replayed;

static int replay(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	static uint8_t buf[IOND_REQUEST_MAX + 16];
	FILE *f;
	size_t n;

	(void)st;
	(void)ftw;
	if (type != FTW_F)
		return 0;
	f = fopen(path, "rbe");
	if (!f)
		return 1;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	replayed++;
	return 0;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (nftw(argv[i], replay, 8, FTW_PHYS) != 0) {
			perror(argv[i]);
			return 1;
		}
	printf("replayed %d inputs\n", replayed);
	return replayed > 0 ? 0 : 1;
}
#endif
