// SPDX-License-Identifier: MIT
/*
 * ionctl service: talks to iond (service/PROTOCOL.md) through the
 * protocol's own client, service/client.c: usage and quota (status), the
 * heaps and which the caller may have (heaps), an allocation (alloc).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ionctl.h"
#include "service/client.h"

#ifndef IOND_SOCKET_PATH
#define IOND_SOCKET_PATH "/run/libion/iond.sock"
#endif

static void service_usage(FILE *out)
{
	fprintf(out, "usage: ionctl service status [--all] [--json] [--socket PATH]\n"
		     "       ionctl service heaps [--json] [--socket PATH]\n"
		     "       ionctl service alloc --size SIZE [--heap NAME] [--for DEVICE]...\n"
		     "                            [--count N] [--json] [--socket PATH]\n"
		     "Asks iond (man iond(8)) at PATH, else ION_SERVICE, else %s:\n"
		     "status: the caller's buffers, bytes per class and quota (--all: every\n"
		     "client, for root and the service's own user); heaps: the heaps and which\n"
		     "the caller may have; alloc: N buffers held until all are allocated, with\n"
		     "the constraints of each DEVICE sent as ionc1 text.  A refusal prints the\n"
		     "service's reason and exits 1.\n", IOND_SOCKET_PATH);
}

/* "kind k=v k=v" lines as JSON objects, digits as numbers, in ionctl's
 * one object: {"version": 1, "command": "service", "request": ..., "entries": [...]}. */
static void print_json_lines(const char *request, const char *data)
{
	const char *line = data;
	int first = 1;

	ionctl_json_begin("service");
	printf(", \"request\": ");
	ionctl_json_string(request);
	printf(", \"entries\": [");
	while (*line) {
		size_t len = strcspn(line, "\n");
		char *copy = strndup(line, len), *save = NULL, *tok;

		printf("%s\n  {", first ? "" : ",");
		first = 0;
		for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
			char *eq = strchr(tok, '=');

			if (!eq) {
				printf("\"kind\": ");
				ionctl_json_string(tok);
				continue;
			}
			*eq = '\0';
			printf(", ");
			ionctl_json_string(tok);
			printf(": ");
			if (eq[1] && strspn(eq + 1, "0123456789") == strlen(eq + 1) && strlen(eq + 1) < 20)
				printf("%s", eq + 1);
			else
				ionctl_json_string(eq + 1);
		}
		printf("}");
		free(copy);
		line += len + (line[len] == '\n');
	}
	printf("\n]");
	ionctl_json_end();
}

static int call(const char *cmd, const char *path, const struct iond_request *req,
		struct iond_reply *reply, char *store, int *ret_fd)
{
	int sock = iond_client_connect(path), r;

	if (sock < 0)
		return -ionctl_fail(cmd, sock, "cannot reach iond at %s", path);
	r = iond_client_call(sock, req, store, IOND_REPLY_MAX + 2, reply, ret_fd);
	close(sock);
	if (r < 0)
		return -ionctl_fail(cmd, r, "no reply from iond at %s", path);
	if (reply->error)
		return -ionctl_fail(cmd, reply->error, "iond refused: %s", reply->reason);
	return 0;
}

/* The devices' constraints as ionc1 text, or NULL with none. */
static int constraints_for(char **devs, int n, char **ret_text)
{
	struct ion_ctx *ctx = NULL;
	struct ion_device **devices = NULL;
	struct ion_alloc_config *config = NULL;
	int r;

	*ret_text = NULL;
	if (n == 0)
		return 0;
	ctx = ionctl_ctx_new("service");
	if (!ctx)
		return -EINVAL;
	r = ionctl_get_devices("service", ctx, n, devs, &devices);
	if (r == 0)
		r = ion_alloc_config_new(&config);
	for (int i = 0; r == 0 && i < n; i++)
		r = ion_alloc_config_add_device(config, devices[i]);
	if (r == 0)
		r = ion_alloc_config_serialize(config, ret_text);
	if (r < 0)
		ionctl_fail("service", r, "the devices' constraints");
	ion_alloc_config_free(config);
	if (devices)
		ionctl_put_devices(devices, n);
	ion_ctx_unref(ctx);
	return r;
}

static int do_alloc(const char *path, struct iond_request *req, char **devs, int n_devs,
		    unsigned int count, int json, char *store)
{
	char *text = NULL;
	int *fds = calloc(count, sizeof(int)), ret = 0;
	unsigned int got = 0;

	if (!fds || constraints_for(devs, n_devs, &text) < 0) {
		free(fds);
		return 1;
	}
	req->constraints = text;
	if (json) {
		ionctl_json_begin("service");
		printf(", \"request\": \"alloc\", \"buffers\": [");
	}
	for (; got < count; got++) {
		struct iond_reply reply;

		if (call("service", path, req, &reply, store, &fds[got]) < 0) {
			ret = 1;
			break;
		}
		if (json)
			printf("%s\n  {\"id\": %" PRIu64 ", \"size\": %" PRIu64 ", \"data\": ",
			       got ? "," : "", reply.id, reply.size);
		else
			printf("buffer %" PRIu64 ": %" PRIu64 " bytes, %s", reply.id, reply.size,
			       reply.data);
		if (json) {
			ionctl_json_string(reply.data);
			printf("}");
		}
	}
	if (json) {
		printf("\n]");
		ionctl_json_end();
	}
	for (unsigned int i = 0; i < got; i++)
		close(fds[i]);
	free(fds);
	free(text);
	return ret;
}

int ionctl_service(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 'S' }, { "json", no_argument, NULL, 'j' },
		{ "all", no_argument, NULL, 'a' },          { "size", required_argument, NULL, 's' },
		{ "heap", required_argument, NULL, 'H' },   { "for", required_argument, NULL, 'f' },
		{ "count", required_argument, NULL, 'c' },  { "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *path = secure_getenv("ION_SERVICE");
	struct iond_request req = { .seq = 1 };
	struct iond_reply reply;
	char *devs[64], *store;
	int n_devs = 0, json = 0, c, ret;
	size_t size = 0;
	uint64_t count = 1;

	if (!path || !*path)
		path = IOND_SOCKET_PATH;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'S': path = optarg; break;
		case 'j': json = 1; break;
		case 'a': req.flags |= IOND_USAGE_ALL; break;
		case 's': if (ionctl_parse_size("service", optarg, &size) < 0) return IONCTL_USAGE; break;
		case 'H': req.heap = optarg; break;
		case 'f':
			if (n_devs == 64)
				return ionctl_usage_error("service", "at most 64 --for");
			devs[n_devs++] = optarg;
			break;
		case 'c':
			if (ionctl_parse_u64(optarg, &count) < 0 || count == 0 || count > 4096)
				return ionctl_usage_error("service", "--count: 1 to 4096");
			break;
		case 'h': service_usage(stdout); return 0;
		default: service_usage(stderr); return IONCTL_USAGE;
		}
	}
	if (optind + 1 != argc)
		return ionctl_usage_error("service", "one of status, heaps, alloc");
	store = malloc(IOND_REPLY_MAX + 2);
	if (!store)
		return ionctl_fail("service", -ENOMEM, "out of memory");
	if (strcmp(argv[optind], "alloc") == 0) {
		req.op = IOND_OP_ALLOC;
		req.size = size;
		ret = size ? do_alloc(path, &req, devs, n_devs, (unsigned int)count, json, store)
			   : ionctl_usage_error("service", "alloc needs --size");
	} else if (strcmp(argv[optind], "status") == 0 || strcmp(argv[optind], "heaps") == 0) {
		req.op = argv[optind][0] == 's' ? IOND_OP_USAGE : IOND_OP_HEAPS;
		if (req.op == IOND_OP_HEAPS)
			req.flags = 0;
		ret = call("service", path, &req, &reply, store, NULL) < 0 ? 1 : 0;
		if (ret == 0 && json)
			print_json_lines(argv[optind], reply.data);
		else if (ret == 0)
			fputs(reply.data, stdout);
	} else {
		ret = ionctl_usage_error("service", "no subcommand '%s' (status, heaps, alloc)",
					 argv[optind]);
	}
	free(store);
	return ret;
}
