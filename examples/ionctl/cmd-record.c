// SPDX-License-Identifier: MIT
/*
 * ionctl record: the parts of a machine's /sys, /proc and /dev that
 * libion reads, written as a tree file (tests/lib/faketree.h), after
 * umockdev-record and libinput record; --draft proposes a heaps.d board
 * file instead (cmd-record-draft.c).
 *
 * What it writes: the board's identity (device tree, DMI's vendor,
 * product and board names), where memory ends (the firmware's map, memory
 * blocks, MemTotal and CmaTotal of /proc/meminfo), the DMA-BUF heap,
 * udmabuf and ION nodes, every DRM, V4L2 and accel class device with the
 * bus devices above it (subsystem, driver, of_node, iommu_group, DMA
 * masks).  What it leaves out: anything that names a person or a unit
 * (serial numbers, MAC addresses, the device tree's /chosen with its
 * command line and seeds, udev's database), and what only a live node
 * answers (a DRM driver's name, GEM and ION heaps): a replayed tree has
 * the heap nodes as /dev/null and no DRM or V4L2 nodes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <search.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "ionctl.h"

#define VALUE_MAX 4096 /* a longer attribute or property is left out */

struct rec {
	FILE *out;
	const char *root;	/* the sysroot, "" for / */
	void *seen;		/* tsearch() set of the paths written */
	bool masters;		/* a recorded node names DMA masters */
};

static int compare(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Whether path was written already; marks it written.  Paths with a blank
 * cannot be written at all. */
static bool once(struct rec *r, const char *path)
{
	char *copy;
	void *node;

	if (strpbrk(path, " \t\n"))
		return false;
	node = tfind(path, &r->seen, compare);
	if (node)
		return false;
	copy = strdup(path);
	return copy && tsearch(copy, &r->seen, compare);
}

/* path inside the tree, in full (PATH_MAX); false if too long, as a
 * path cut short would name another file. */
static bool in_tree(const struct rec *r, const char *path, char *full)
{
	return (size_t)snprintf(full, PATH_MAX, "%s%s", r->root, path) < PATH_MAX;
}

/* A file's bytes, at most VALUE_MAX; -1 when it cannot be read. */
static ssize_t read_value(struct rec *r, const char *path, char *buf)
{
	char full[PATH_MAX];
	ssize_t n;
	int fd;

	if (!in_tree(r, path, full))
		return -1;
	fd = open(full, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	n = read(fd, buf, VALUE_MAX + 1);
	close(fd);
	return n > VALUE_MAX ? -1 : n;
}

static void write_escaped(FILE *out, const char *v, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c == '\0')
			fputs("\\0", out);
		else if (c == '\\')
			fputs("\\\\", out);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(out, "\\x%02x", c);
		else
			fputc(c, out);
	}
}

/* "file PATH VALUE" for what path holds (keep: a line filter or NULL). */
static void record_file(struct rec *r, const char *path, bool (*keep)(const char *line))
{
	char buf[VALUE_MAX + 1];
	ssize_t n = read_value(r, path, buf);

	if (n < 0 || !once(r, path))
		return;
	fprintf(r->out, "file %s ", path);
	if (keep) {
		buf[n] = '\0';
		for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
			if (keep(line)) {
				write_escaped(r->out, line, strlen(line));
				fputs("\\n", r->out);
			}
	} else {
		write_escaped(r->out, buf, (size_t)n);
	}
	fputc('\n', r->out);
}

static void record_dir(struct rec *r, const char *path)
{
	if (once(r, path))
		fprintf(r->out, "dir %s\n", path);
}

/* path's link, as the tree says it: the target inside the tree when it is
 * there, else the link's own text (a dangling link stays dangling).
 * *ret_target (PATH_MAX) gets the target inside the tree, or "". */
static bool record_link(struct rec *r, const char *path, char *ret_target)
{
	char full[PATH_MAX], real[PATH_MAX], text[PATH_MAX];
	size_t root_len = strlen(r->root);
	ssize_t n;

	ret_target[0] = '\0';
	if (!in_tree(r, path, full))
		return false;
	n = readlink(full, text, sizeof(text) - 1);
	if (n < 0)
		return false;
	text[n] = '\0';
	if (realpath(full, real) && strncmp(real, r->root, root_len) == 0 && real[root_len] == '/')
		snprintf(ret_target, PATH_MAX, "%s", real + root_len);
	if (once(r, path))
		fprintf(r->out, "link %s %s\n", path, ret_target[0] ? ret_target : text);
	return true;
}

static bool is_private(const char *name)
{
	return strstr(name, "serial") || strstr(name, "mac-address") || strstr(name, "seed") ||
	       strcmp(name, "chosen") == 0 || strcmp(name, "__symbols__") == 0;
}

/* A device-tree node and everything below it, less what is private. */
static void record_dt(struct rec *r, const char *path, int depth)
{
	char full[PATH_MAX], child[PATH_MAX];
	struct dirent **names;
	int n;

	if (!in_tree(r, path, full))
		return;
	n = scandir(full, &names, NULL, alphasort);
	if (n < 0)
		return;
	record_dir(r, path);
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		struct stat st;

		if ((size_t)snprintf(child, sizeof(child), "%s/%s", path, name) < sizeof(child) &&
		    in_tree(r, child, full) && name[0] != '.' && !is_private(name) &&
		    lstat(full, &st) == 0) {
			if (S_ISDIR(st.st_mode) && depth < 32)
				record_dt(r, child, depth + 1);
			else if (S_ISREG(st.st_mode))
				record_file(r, child, NULL);
		}
		free(names[i]);
	}
	free(names);
}

static bool uevent_line(const char *line)
{
	return !strncmp(line, "MAJOR=", 6) || !strncmp(line, "MINOR=", 6) ||
	       !strncmp(line, "DEVNAME=", 8) || !strncmp(line, "DEVTYPE=", 8);
}

static bool meminfo_line(const char *line)
{
	return !strncmp(line, "MemTotal:", 9) || !strncmp(line, "MemFree:", 8) ||
	       !strncmp(line, "CmaTotal:", 9) || !strncmp(line, "CmaFree:", 8);
}

/* A link whose target is a folder of the tree that holds nothing we read
 * (a bus, a driver, a class): the link and the folder. */
static void record_link_to_dir(struct rec *r, const char *path)
{
	char target[PATH_MAX];

	if (record_link(r, path, target) && target[0])
		record_dir(r, target);
}

/* Whether a device-tree node names the DMA masters of a virtual subsystem
 * (ports, allwinner,pipelines), which libion follows (src/platform.c). */
static bool names_masters(struct rec *r, const char *node)
{
	static const char *const props[] = { "ports", "allwinner,pipelines" };
	char full[PATH_MAX + 32];
	struct stat st;

	for (size_t i = 0; i < 2; i++) {
		snprintf(full, sizeof(full), "%s%s/%s", r->root, node, props[i]);
		if (stat(full, &st) == 0 && S_ISREG(st.st_mode))
			return true;
	}
	return false;
}

/* A bus device and those above it, up to /sys/devices. */
static void record_parents(struct rec *r, const char *devpath)
{
	char path[PATH_MAX], link[PATH_MAX + 64], target[PATH_MAX], *slash;

	snprintf(path, sizeof(path), "%s", devpath);
	while (strncmp(path, "/sys/devices/", 13) == 0) {
		snprintf(link, sizeof(link), "%s/subsystem", path);
		if (!once(r, path)) /* done already, with those above it */
			return;
		record_link_to_dir(r, link);
		snprintf(link, sizeof(link), "%s/driver", path);
		record_link_to_dir(r, link);
		snprintf(link, sizeof(link), "%s/of_node", path);
		if (record_link(r, link, target) && target[0])
			r->masters |= names_masters(r, target);
		snprintf(link, sizeof(link), "%s/iommu_group", path);
		if (record_link(r, link, target) && target[0]) {
			snprintf(link, sizeof(link), "%s/devices/%s", target, strrchr(path, '/') + 1);
			if (once(r, link))
				fprintf(r->out, "link %s %s\n", link, path);
		}
		snprintf(link, sizeof(link), "%s/dma_mask_bits", path);
		record_file(r, link, NULL);
		snprintf(link, sizeof(link), "%s/consistent_dma_mask_bits", path);
		record_file(r, link, NULL);
		slash = strrchr(path, '/');
		*slash = '\0';
	}
}

/* The platform devices with a device-tree node, and the bus folder that
 * lists them, where libion looks for the masters a node names. */
static void record_platform_devices(struct rec *r)
{
	char path[2 * PATH_MAX + 64], entry[320], target[PATH_MAX];
	struct dirent **names;
	struct stat st;
	int n;

	snprintf(path, sizeof(path), "%s/sys/bus/platform/devices", r->root);
	n = scandir(path, &names, NULL, alphasort);
	if (n < 0)
		return;
	fprintf(r->out, "\n# platform devices, for the DMA masters a node names\n");
	for (int i = 0; i < n; i++) {
		snprintf(entry, sizeof(entry), "/sys/bus/platform/devices/%s", names[i]->d_name);
		snprintf(path, sizeof(path), "%s%s/of_node", r->root, entry);
		if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 &&
		    record_link(r, entry, target) && target[0])
			record_parents(r, target);
		free(names[i]);
	}
	free(names);
}

/* A class device (card1, video0, a connector) and its bus device. */
static void record_class_device(struct rec *r, const char *class, const char *name)
{
	static const char *const attrs[] = { "dev", "name", "index", "status" };
	char path[PATH_MAX], devpath[PATH_MAX], attr[PATH_MAX + 16], value[VALUE_MAX + 1];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/%s/%s", class, name);
	if (!record_link(r, path, devpath) || !devpath[0])
		return;
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		snprintf(attr, sizeof(attr), "%s/%s", devpath, attrs[i]);
		record_file(r, attr, NULL);
	}
	snprintf(attr, sizeof(attr), "%s/uevent", devpath);
	record_file(r, attr, uevent_line);
	snprintf(attr, sizeof(attr), "%s/subsystem", devpath);
	record_link_to_dir(r, attr);
	snprintf(attr, sizeof(attr), "%s/device", devpath);
	if (record_link(r, attr, path) && path[0])
		record_parents(r, path);
	snprintf(attr, sizeof(attr), "%s/dev", devpath);
	n = read_value(r, attr, value);
	if (n > 0) {
		value[n] = '\0';
		value[strcspn(value, "\n")] = '\0';
		snprintf(attr, sizeof(attr), "/sys/dev/char/%s", value);
		if (once(r, attr))
			fprintf(r->out, "link %s %s\n", attr, devpath);
	}
}

static void record_class(struct rec *r, const char *class)
{
	char path[PATH_MAX];
	struct dirent **names;
	int n;

	snprintf(path, sizeof(path), "%s/sys/class/%s", r->root, class);
	n = scandir(path, &names, NULL, versionsort);
	if (n < 0)
		return;
	fprintf(r->out, "\n# /sys/class/%s\n", class);
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.')
			record_class_device(r, class, names[i]->d_name);
		free(names[i]);
	}
	free(names);
}

/* A misc device node (udmabuf, ion) as another of the host's nodes, which
 * /sys/dev/char describes as the misc device. */
static void record_misc_node(struct rec *r, const char *name, const char *host, const char *devnum)
{
	char path[PATH_MAX], full[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "/dev/%s", name);
	snprintf(full, sizeof(full), "%s%s", r->root, path);
	if (stat(full, &st) < 0 || !S_ISCHR(st.st_mode))
		return;
	fprintf(r->out, "dev %s %s\n", path, host);
	fprintf(r->out, "link /sys/dev/char/%s /sys/devices/virtual/misc/%s\n", devnum, name);
	fprintf(r->out, "link /sys/devices/virtual/misc/%s/subsystem /sys/class/misc\n", name);
	record_dir(r, "/sys/class/misc");
}

/* Whether the link at full names another heap's node ("linux,cma"), as
 * an alias does, rather than a device node elsewhere. */
static bool is_heap_alias(const char *full)
{
	char text[PATH_MAX];
	ssize_t n = readlink(full, text, sizeof(text) - 1);

	if (n <= 0)
		return false;
	text[n] = '\0';
	return !strchr(text, '/') || !strncmp(text, "/dev/dma_heap/", 14);
}

static void record_heap_nodes(struct rec *r)
{
	char path[PATH_MAX], target[PATH_MAX];
	struct dirent **names;
	bool any = false;
	int n;

	snprintf(path, sizeof(path), "%s/dev/dma_heap", r->root);
	n = scandir(path, &names, NULL, alphasort);
	fprintf(r->out, "\n# heap nodes: DMA-BUF heaps as /dev/null, which any process opens\n");
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		struct stat st;

		snprintf(path, sizeof(path), "%s/dev/dma_heap/%s", r->root, name);
		/* A link to another heap's node stays a link (an alias). */
		if (name[0] != '.' && lstat(path, &st) == 0 &&
		    (!S_ISLNK(st.st_mode) || is_heap_alias(path) || stat(path, &st) == 0)) {
			snprintf(path, sizeof(path), "/dev/dma_heap/%s", name);
			if (S_ISLNK(st.st_mode)) {
				record_link(r, path, target);
			} else if (S_ISCHR(st.st_mode)) {
				fprintf(r->out, "null %s\n", path);
				any = true;
			}
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	if (any)
		fprintf(r->out, "dir /sys/class/dma_heap\n"
				"link /sys/dev/char/1:3/subsystem /sys/class/dma_heap\n");
	record_misc_node(r, "udmabuf", "/dev/zero", "1:5");
	record_misc_node(r, "ion", "/dev/full", "1:7");
	record_file(r, "/sys/module/udmabuf/parameters/size_limit_mb", NULL);
}

/* Where memory ends: the firmware's map, and the highest memory block. */
static void record_memory(struct rec *r)
{
	char path[PATH_MAX], top[sizeof(((struct dirent *)0)->d_name) + 8] = "";
	unsigned long best = 0;
	struct dirent **names;
	int n;

	fprintf(r->out, "\n# memory\n");
	record_file(r, "/proc/meminfo", meminfo_line);
	snprintf(path, sizeof(path), "%s/sys/firmware/memmap", r->root);
	n = scandir(path, &names, NULL, versionsort);
	for (int i = 0; i < n; i++) {
		static const char *const attrs[] = { "start", "end", "type" };

		for (size_t k = 0; names[i]->d_name[0] != '.' && k < 3; k++) {
			snprintf(path, sizeof(path), "/sys/firmware/memmap/%s/%s", names[i]->d_name,
				 attrs[k]);
			record_file(r, path, NULL);
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	snprintf(path, sizeof(path), "%s/sys/devices/system/memory", r->root);
	n = scandir(path, &names, NULL, NULL);
	for (int i = 0; i < n; i++) {
		char *end;
		unsigned long index = strncmp(names[i]->d_name, "memory", 6) ? 0 :
				      strtoul(names[i]->d_name + 6, &end, 10);

		if (index >= best && !strncmp(names[i]->d_name, "memory", 6) && !*end) {
			best = index;
			snprintf(top, sizeof(top), "%s", names[i]->d_name);
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	if (top[0]) {
		record_file(r, "/sys/devices/system/memory/block_size_bytes", NULL);
		snprintf(path, sizeof(path), "/sys/devices/system/memory/%s", top);
		record_dir(r, path);
	}
}

static void record_board(struct rec *r)
{
	static const char *const dmi[] = { "sys_vendor", "product_name", "board_name" };
	char path[PATH_MAX + 32], target[PATH_MAX];

	fprintf(r->out, "\n# the board\n");
	record_file(r, "/proc/sys/kernel/osrelease", NULL);
	if (record_link(r, "/sys/class/dmi/id", target) && target[0])
		for (size_t i = 0; i < 3; i++) {
			snprintf(path, sizeof(path), "%s/%s", target, dmi[i]);
			record_file(r, path, NULL);
		}
	record_dt(r, "/sys/firmware/devicetree/base", 0);
	record_link(r, "/proc/device-tree", target);
}

int ionctl_record_tree(FILE *out, const char *sysroot)
{
	struct rec r = { out, "", NULL, false };
	char root[PATH_MAX];
	struct utsname u;

	/* Links are followed with realpath(), which answers absolute paths. */
	if (sysroot && strcmp(sysroot, "/")) {
		if (!realpath(sysroot, root))
			return -errno;
		r.root = root;
	}
	uname(&u);
	fprintf(out, "# Recorded by ionctl record (libion %d.%d.%d)%s%s on %s %s: the parts of\n"
		     "# /sys, /proc and /dev that libion reads; the format is\n"
		     "# tests/lib/faketree.h's.  Nothing private (serial numbers, MAC\n"
		     "# addresses, /chosen, udev's database), and nothing only a live node\n"
		     "# answers (a DRM driver's name, GEM and ION heaps).\n",
		LIBION_VERSION_MAJOR, LIBION_VERSION_MINOR, LIBION_VERSION_MICRO,
		r.root[0] ? " of " : "", r.root, u.sysname, u.release);
	record_board(&r);
	record_memory(&r);
	record_heap_nodes(&r);
	record_class(&r, "drm");
	record_class(&r, "video4linux");
	record_class(&r, "accel");
	if (r.masters)
		record_platform_devices(&r);
	tdestroy(r.seen, free);
	return ferror(out) ? -EIO : 0;
}

int ionctl_record(int argc, char **argv)
{
	static const struct option options[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "draft", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *output = NULL;
	bool draft = false;
	FILE *out = stdout;
	int c, r;

	while ((c = getopt_long(argc, argv, "o:h", options, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'd':
			draft = true;
			break;
		case 'h':
			printf("usage: ionctl record [--draft] [--output FILE]\n\n"
			       "Writes the parts of this machine's /sys, /proc and /dev that libion\n"
			       "reads (or --sysroot's) as a tree file, for make-faketree and\n"
			       "--sysroot to replay; nothing private goes in.  --draft writes a\n"
			       "heaps.d board file to start from instead: the board's match, its\n"
			       "heaps, and each device's needs with where they came from.\n");
			return 0;
		default:
			return ionctl_usage_error("record", "see ionctl record --help");
		}
	}
	if (optind < argc)
		return ionctl_usage_error("record", "no arguments but options");
	if (output && !(out = fopen(output, "we")))
		return ionctl_fail("record", -errno, "%s", output);
	r = draft ? ionctl_record_draft(out) : ionctl_record_tree(out, ionctl_sysroot);
	if (out != stdout && fclose(out) != 0 && r == 0)
		r = -errno;
	if (r > 0)
		return IONCTL_NO;
	return r < 0 ? ionctl_fail("record", r, "writing %s", output ? output : "stdout") : 0;
}
