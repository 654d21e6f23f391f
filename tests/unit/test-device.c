// SPDX-License-Identifier: MIT
/*
 * The device reader (src/device.c) through the production path: fake
 * sysroots with sysfs trees as the kernel lays them out (class links,
 * "device" and "subsystem" links, uevent), a heaps.d folder of the test's
 * own, and ion_ctx_new(sysroot).  Lookup by /dev node, sysfs path, name
 * and heaps.d name; enumeration; facts derived from IOMMU groups, device
 * trees and DMA masks; the precedence of cookie, heaps.d and derived
 * facts key by key, each with its source; FIFOs where files belong;
 * references.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/context.h"
#include "src/device.h"
#include "testlib.h"

/* A hang fails the test (SIGALRM ends the program) instead of the run. */
#define HANG_SECONDS 20
/* Discovery in a child: a FIFO blocks it for good, so a short wait does. */
#define CHILD_SECONDS 5

struct state {
	char root[64];
	char heaps_d[96];
	char conf[128];			/* heaps_d/50-test.conf */
	struct fd_table fds;
};

static char log_text[16384];

__attribute__((format(printf, 6, 0)))
static void log_capture(struct ion_ctx *ctx, int priority, const char *file,
			int line, const char *fn, const char *format, va_list args)
{
	size_t used = strlen(log_text);

	(void)ctx;
	(void)priority;
	(void)file;
	(void)line;
	(void)fn;
	if (used + 2 >= sizeof(log_text))
		return;
	vsnprintf(log_text + used, sizeof(log_text) - used - 1, format, args);
	strcat(log_text, "\n");
}

/* ---- building a sysroot ---- */

static void path_in(char *buf, size_t size, const char *root, const char *rel)
{
	int n = snprintf(buf, size, "%s/%s", root, rel);

	assert_true(n > 0 && (size_t)n < size);
}

/* mkdir -p root/rel */
static void mkdirs(const char *root, const char *rel)
{
	char path[512];

	path_in(path, sizeof(path), root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
			*p = '/';
		}
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

/* The folder a relative path is in, created. */
static void parent_dirs(const char *root, const char *rel)
{
	char dir[512];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", rel);
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		mkdirs(root, dir);
	}
}

static void put_len(const char *root, const char *rel, const char *text, size_t len)
{
	char path[512];
	int fd;

	parent_dirs(root, rel);
	path_in(path, sizeof(path), root, rel);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
}

static void put(const char *root, const char *rel, const char *text)
{
	put_len(root, rel, text, strlen(text));
}

/* A relative symlink root/link -> root/target, as sysfs makes them. */
static void link_to(const char *root, const char *link, const char *target)
{
	char path[512], rel[512] = "";

	for (const char *p = link; *p; p++)
		if (*p == '/')
			strcat(rel, "../");
	strcat(rel, target);
	parent_dirs(root, link);
	path_in(path, sizeof(path), root, link);
	assert_int_equal(symlink(rel, path), 0);
}

/* A FIFO in place of whatever root/rel was. */
static void fifo(const char *root, const char *rel)
{
	char path[512];

	parent_dirs(root, rel);
	path_in(path, sizeof(path), root, rel);
	unlink(path);
	assert_int_equal(mkfifo(path, 0644), 0);
}

/*
 * A class device: root/<parent>/<class>/<name> with its subsystem link,
 * a "device" link to its parent (unless the parent is NULL: a virtual
 * device, its own parent), a uevent, and the /sys/class link.
 */
static void class_device(const char *root, const char *parent, const char *cls,
			 const char *name, const char *uevent)
{
	char dir[256], rel[320], target[320];

	if (parent)
		snprintf(dir, sizeof(dir), "%s/%s/%s", parent, cls, name);
	else
		snprintf(dir, sizeof(dir), "sys/devices/virtual/%s/%s", cls, name);
	mkdirs(root, dir);
	snprintf(rel, sizeof(rel), "%s/subsystem", dir);
	snprintf(target, sizeof(target), "sys/class/%s", cls);
	link_to(root, rel, target);
	if (parent) {
		snprintf(rel, sizeof(rel), "%s/device", dir);
		link_to(root, rel, parent);
	}
	if (uevent) {
		snprintf(rel, sizeof(rel), "%s/uevent", dir);
		put(root, rel, uevent);
	}
	snprintf(rel, sizeof(rel), "sys/class/%s/%s", cls, name);
	link_to(root, rel, dir);
}

/* A bus device: its directory, its bus and, if given, its driver. */
static void bus_device(const char *root, const char *dir, const char *bus,
		       const char *driver)
{
	char rel[320], target[320];

	mkdirs(root, dir);
	snprintf(rel, sizeof(rel), "%s/subsystem", dir);
	snprintf(target, sizeof(target), "sys/bus/%s", bus);
	link_to(root, rel, target);
	if (driver) {
		snprintf(rel, sizeof(rel), "%s/driver", dir);
		snprintf(target, sizeof(target), "sys/bus/%s/drivers/%s", bus, driver);
		link_to(root, rel, target);
	}
}

#define GPU "sys/devices/pci0000:00/0000:00:02.0"
#define GPU_SYS "/sys/devices/pci0000:00/0000:00:02.0"
#define VIVID "sys/devices/platform/vivid.0"
#define VIVID_SYS "/sys/devices/platform/vivid.0"
/* vivid's Contiguous on a device-tree machine: nothing says it is not a
 * DMA master outside any IOMMU. */
#define VIVID_ASSUMED "derived: " VIVID_SYS ": a platform device on a device-tree machine with no of_node on it or above: unknown, contiguous assumed"
#define NPU "sys/devices/platform/soc/fe600000.npu"
#define NPU_SYS "/sys/devices/platform/soc/fe600000.npu"
#define NPU_OF "sys/firmware/devicetree/base/soc/npu@fe600000"

/* The device at dir in IOMMU group n: the group's folder and the link. */
static void iommu_group(const char *root, const char *dir, unsigned int n)
{
	char rel[320], group[64];

	snprintf(group, sizeof(group), "sys/kernel/iommu_groups/%u", n);
	mkdirs(root, group);
	snprintf(rel, sizeof(rel), "%s/iommu_group", dir);
	link_to(root, rel, group);
}

/* An Intel GPU on PCI: card0, its connector and its render node; a
 * 64-bit DMA mask, which no memory is too large for. */
static void add_gpu(const char *root)
{
	bus_device(root, GPU, "pci", "i915");
	put(root, GPU "/dma_mask_bits", "64\n");
	class_device(root, GPU, "drm", "card0", "MAJOR=226\nMINOR=0\nDEVNAME=dri/card0\n");
	class_device(root, GPU, "drm", "card0-HDMI-A-1", "");
	class_device(root, GPU, "drm", "renderD128", "MAJOR=226\nMINOR=128\nDEVNAME=dri/renderD128\n");
	put(root, "sys/class/drm/version", "drm 1.1.0 20060810\n");
}

/* vivid: a V4L2 capture device on the platform bus, with a name. */
static void add_vivid(const char *root)
{
	bus_device(root, VIVID, "platform", "vivid");
	class_device(root, VIVID, "video4linux", "video0", "MAJOR=81\nMINOR=0\nDEVNAME=video0\n");
	put(root, VIVID "/video4linux/video0/name", "vivid-000-vid-cap\n");
}

/* An NPU in the device tree: of_node, no IOMMU; DMA-coherent if asked. */
static void add_npu(const char *root, bool coherent)
{
	static const char compatible[] = "vendor,npu-v2\0vendor,npu";

	bus_device(root, NPU, "platform", "rknpu");
	link_to(root, NPU "/of_node", NPU_OF);
	put_len(root, NPU_OF "/compatible", compatible, sizeof(compatible));
	if (coherent)
		put(root, NPU_OF "/dma-coherent", "");
	class_device(root, NPU, "accel", "accel0", "MAJOR=261\nMINOR=0\nDEVNAME=accel/accel0\n");
}

/*
 * An accelerator on PCIe under a device-tree host: an of_node (DT PCI
 * nodes), no IOMMU, not DMA-coherent, and a PCI DMA mask of 32 bits.
 */
#define HAILO "sys/devices/platform/soc/fe150000.pcie/pci0000:00/0000:00:00.0/0000:01:00.0"
#define HAILO_SYS "/" HAILO
#define HAILO_OF "sys/firmware/devicetree/base/soc/pcie@fe150000/pcie@0,0/accel@0,0"
#define HAILO_COOKIE HAILO_SYS "/accel/accel0/ion_constraints"

static void add_hailo(const char *root)
{
	static const char compatible[] = "vendor,npu";

	bus_device(root, HAILO, "pci", "hailo");
	link_to(root, HAILO "/of_node", HAILO_OF);
	put_len(root, HAILO_OF "/compatible", compatible, sizeof(compatible));
	put(root, HAILO "/dma_mask_bits", "32\n");
	class_device(root, HAILO, "accel", "accel0", "MAJOR=261\nMINOR=0\nDEVNAME=accel/accel0\n");
}

/* 8 GiB of RAM: memory ends at 2^33. */
static void add_meminfo(const char *root)
{
	put(root, "proc/meminfo", "MemTotal:        8388608 kB\nMemFree:         1048576 kB\n");
}

/* The heaps.d file of the test, 50-test.conf. */
static void conf(const struct state *st, const char *text)
{
	put(st->root, "heaps.d/50-test.conf", text);
}

/* ---- reading devices ---- */

static int setup(void **state)
{
	struct state *st = calloc(1, sizeof(*st));

	assert_non_null(st);
	strcpy(st->root, "/tmp/libion-device-XXXXXX");
	assert_non_null(mkdtemp(st->root));
	path_in(st->heaps_d, sizeof(st->heaps_d), st->root, "heaps.d");
	path_in(st->conf, sizeof(st->conf), st->heaps_d, "50-test.conf");
	mkdirs(st->root, "heaps.d");
	fd_table_read(&st->fds);
	*state = st;
	return 0;
}

static int teardown(void **state)
{
	struct state *st = *state;

	alarm(0);
	fd_table_assert_same(&st->fds);
	test_remove_tree(st->root);
	free(st);
	return 0;
}

static struct ion_ctx *new_ctx(const struct state *st)
{
	struct ion_ctx *ctx;

	assert_int_equal(ion_ctx_new(st->root, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, st->heaps_d), 0);
	log_text[0] = '\0';
	ion_ctx_set_log_fn(ctx, log_capture);
	ion_ctx_set_log_priority(ctx, LOG_ERR);
	return ctx;
}

static struct ion_device *get(struct ion_ctx *ctx, const char *spec)
{
	struct ion_device *dev = NULL;
	int r = ion_ctx_get_device(ctx, spec, &dev);

	if (r != 0)
		fail_msg("%s: %s", spec, strerror(-r));
	return dev;
}

/* "file:line" of the test's heaps.d file. */
static const char *conf_at(const struct state *st, unsigned int line)
{
	static char text[4][192];
	static unsigned int next;
	char *s = text[next++ % 4];

	snprintf(s, sizeof(text[0]), "%s:%u", st->conf, line);
	return s;
}

/*
 * The device's constraint, exactly: want holds key, value, source
 * triples, NULL-terminated, in the order the getters give them.
 */
static void expect_constraint(const struct ion_device *dev, const char *const *want)
{
	int n = ion_device_get_constraint_count(dev), want_n = 0;
	bool ok = true;

	while (want[want_n * 3])
		want_n++;
	for (int i = 0; i < n; i++) {
		const char *key, *value, *source;

		assert_int_equal(ion_device_get_constraint(dev, (unsigned int)i, &key, &value, &source), 0);
		if (i >= want_n || strcmp(key, want[i * 3]) || strcmp(value, want[i * 3 + 1]) ||
		    strcmp(source, want[i * 3 + 2])) {
			print_error("%s: constraint %d is %s = %s (%s)\n", ion_device_get_name(dev), i,
				    key, value, source);
			if (i < want_n)
				print_error("   want %s = %s (%s)\n", want[i * 3], want[i * 3 + 1],
					    want[i * 3 + 2]);
			ok = false;
		}
	}
	for (int i = n; i < want_n; i++) {
		print_error("%s: no constraint %s = %s (%s)\n", ion_device_get_name(dev),
			    want[i * 3], want[i * 3 + 1], want[i * 3 + 2]);
		ok = false;
	}
	assert_true(ok);
}

/* The same for the facts. */
static void expect_facts(const struct ion_device *dev, const char *const *want)
{
	int n = ion_device_get_fact_count(dev), want_n = 0;
	bool ok = true;

	while (want[want_n * 3])
		want_n++;
	for (int i = 0; i < n; i++) {
		const char *key, *value, *source;

		assert_int_equal(ion_device_get_fact(dev, (unsigned int)i, &key, &value, &source), 0);
		if (i >= want_n || strcmp(key, want[i * 3]) || strcmp(value, want[i * 3 + 1]) ||
		    strcmp(source, want[i * 3 + 2])) {
			print_error("%s: fact %d is %s = %s (%s)\n", ion_device_get_name(dev), i, key,
				    value, source);
			ok = false;
		}
	}
	if (n != want_n)
		print_error("%s: %d facts, want %d\n", ion_device_get_name(dev), n, want_n);
	assert_true(ok && n == want_n);
}

#define NONE ((const char *const[]){ NULL })

static void expect_str(const char *got, const char *want)
{
	if (!want)
		assert_null(got);
	else
		assert_string_equal(got ? got : "(null)", want);
}

/* ---- enumeration ---- */

/*
 * DRM cards, not connectors, render nodes or the class's version file;
 * cards in version order (card2 before card10); then video4linux, then
 * accel.
 */
static void test_enumeration(void **state)
{
	static const struct {
		const char *name, *syspath, *subsystem, *devnode, *driver;
	} want[] = {
		{ "card0", GPU_SYS "/drm/card0", "drm", "/dev/dri/card0", "i915" },
		{ "card2", "/sys/devices/virtual/drm/card2", "drm", "/dev/dri/card2", NULL },
		{ "card10", "/sys/devices/virtual/drm/card10", "drm", "/dev/dri/card10", NULL },
		{ "video0", VIVID_SYS "/video4linux/video0", "video4linux", "/dev/video0", "vivid" },
		{ "accel0", NPU_SYS "/accel/accel0", "accel", "/dev/accel/accel0", "rknpu" },
	};
	struct state *st = *state;
	struct ion_device *dev = (void *)1;
	struct ion_ctx *ctx;

	add_gpu(st->root);
	class_device(st->root, NULL, "drm", "card10", "MAJOR=226\nMINOR=10\nDEVNAME=dri/card10\n");
	class_device(st->root, NULL, "drm", "card2", "MAJOR=226\nMINOR=2\nDEVNAME=dri/card2\n");
	add_vivid(st->root);
	add_npu(st->root, true);
	ctx = new_ctx(st);
	assert_int_equal(ion_ctx_get_device_count(ctx), 5);
	for (unsigned int i = 0; i < 5; i++) {
		assert_int_equal(ion_ctx_get_device_at(ctx, i, &dev), 0);
		expect_str(ion_device_get_name(dev), want[i].name);
		expect_str(ion_device_get_syspath(dev), want[i].syspath);
		expect_str(ion_device_get_subsystem(dev), want[i].subsystem);
		expect_str(ion_device_get_devnode(dev), want[i].devnode);
		expect_str(ion_device_get_driver(dev), want[i].driver);
		ion_device_unref(dev);
	}
	dev = (void *)1;
	assert_int_equal(ion_ctx_get_device_at(ctx, 5, &dev), -ENOENT);
	assert_ptr_equal(dev, (void *)1);
	ion_ctx_unref(ctx);
}

/* ---- lookup ---- */

static void test_lookup(void **state)
{
	static const char *const missing[] = {
		"/dev/video9", "/sys/class/drm/card9", "nosuch", "/tmp",
		/* not enumerated (no card), and no char device to ask sysfs about */
		"/dev/dri/renderD128",
	};
	struct state *st = *state;
	struct ion_device *card0, *dev;
	struct ion_ctx *ctx;

	add_gpu(st->root);
	add_vivid(st->root);
	/* /dev/video0 a plain file: no char device, so the uevent's DEVNAME
	 * says which device it is. */
	put(st->root, "dev/video0", "");
	conf(st,
	     "[Device secure-sink]\n"		/* 1: a description alone */
	     "Heaps = protected,secure-video\n"	/* 2 */
	     "[Device gpu]\n"			/* 3: matches card0 */
	     "MatchDriver = i915\n"		/* 4 */
	     "Alignment = 64K\n");		/* 5 */
	ctx = new_ctx(st);
	assert_int_equal(ion_ctx_get_device_at(ctx, 0, &card0), 0);
	assert_string_equal(ion_device_get_name(card0), "card0");

	/* Every way to name card0 finds discovery's card0. */
	for (size_t i = 0; i < 5; i++) {
		const char *spec = (const char *[]){
			"/dev/dri/card0", "/sys/class/drm/card0", GPU_SYS "/drm/card0", "card0",
			"gpu",	/* the heaps.d section that matched it */
		}[i];

		dev = get(ctx, spec);
		assert_ptr_equal(dev, card0);
		ion_device_unref(dev);
	}
	dev = get(ctx, "/dev/video0");
	assert_string_equal(ion_device_get_name(dev), "video0");
	ion_device_unref(dev);

	/* A bus device by its own path: read for the call, its own parent. */
	dev = get(ctx, VIVID_SYS);
	assert_string_equal(ion_device_get_name(dev), "vivid.0");
	assert_string_equal(ion_device_get_syspath(dev), VIVID_SYS);
	assert_string_equal(ion_device_get_subsystem(dev), "platform");
	assert_string_equal(ion_device_get_driver(dev), "vivid");
	assert_null(ion_device_get_devnode(dev));
	ion_device_unref(dev);

	/* A heaps.d [Device] with no Match keys: its sections alone. */
	dev = get(ctx, "secure-sink");
	assert_string_equal(ion_device_get_name(dev), "secure-sink");
	assert_null(ion_device_get_syspath(dev));
	assert_null(ion_device_get_devnode(dev));
	assert_null(ion_device_get_subsystem(dev));
	assert_null(ion_device_get_driver(dev));
	expect_constraint(dev, (const char *const[]){
		"Heaps", "protected,secure-video", conf_at(st, 2), NULL });
	assert_int_equal(ion_device_get_fact_count(dev), 0);
	ion_device_unref(dev);

	for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++) {
		dev = (void *)1;
		if (ion_ctx_get_device(ctx, missing[i], &dev) != -ENODEV)
			fail_msg("%s: found", missing[i]);
		assert_ptr_equal(dev, (void *)1);
	}
	assert_int_equal(ion_ctx_get_device(ctx, "", &dev), -EINVAL);
	assert_int_equal(ion_ctx_get_device(ctx, NULL, &dev), -EINVAL);
	assert_int_equal(ion_ctx_get_device(ctx, "card0", NULL), -EINVAL);
	assert_int_equal(ion_ctx_get_device(NULL, "card0", &dev), -EINVAL);
	ion_device_unref(card0);
	ion_ctx_unref(ctx);
}

/*
 * A /dev node that is a char device (here /dev/null, whichever number
 * it has): a listed device with that number from its uevent, else what
 * /sys/dev/char/MAJOR:MINOR links to, read for the call.
 */
static void test_lookup_char_node(void **state)
{
	struct state *st = *state;
	struct ion_device *video0, *dev;
	char uevent[96], rel[64], path[512];
	struct ion_ctx *ctx;
	struct stat null;

	assert_int_equal(stat("/dev/null", &null), 0);
	bus_device(st->root, VIVID, "platform", "vivid");
	snprintf(uevent, sizeof(uevent), "MAJOR=%u\nMINOR=%u\nDEVNAME=video0\n",
		 major(null.st_rdev), minor(null.st_rdev));
	class_device(st->root, VIVID, "video4linux", "video0", uevent);
	mkdirs(st->root, "dev/dri");
	for (size_t i = 0; i < 2; i++) {
		path_in(path, sizeof(path), st->root, i ? "dev/dri/card7" : "dev/video0");
		assert_int_equal(symlink("/dev/null", path), 0);
	}
	ctx = new_ctx(st);
	assert_int_equal(ion_ctx_get_device_at(ctx, 0, &video0), 0);
	dev = get(ctx, "/dev/video0");
	assert_ptr_equal(dev, video0);
	ion_device_unref(dev);
	/* Not the number's node by name, but the number says video0. */
	dev = get(ctx, "/dev/dri/card7");
	assert_ptr_equal(dev, video0);
	ion_device_unref(dev);
	ion_device_unref(video0);
	ion_ctx_unref(ctx);

	/* No listed device has the number: sysfs says what it is. */
	put(st->root, VIVID "/video4linux/video0/uevent", "DEVNAME=video0\n");
	class_device(st->root, NULL, "mem", "null", NULL);
	snprintf(rel, sizeof(rel), "sys/dev/char/%u:%u", major(null.st_rdev), minor(null.st_rdev));
	link_to(st->root, rel, "sys/devices/virtual/mem/null");
	ctx = new_ctx(st);
	dev = get(ctx, "/dev/dri/card7");
	assert_string_equal(ion_device_get_name(dev), "null");
	assert_string_equal(ion_device_get_subsystem(dev), "mem");
	assert_string_equal(ion_device_get_syspath(dev), "/sys/devices/virtual/mem/null");
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
}

/* ---- derived facts ---- */

/* Behind an IOMMU: scattered memory is fine, and the DMA mask does not
 * matter (the IOMMU maps any page below it); the mask is still a fact. */
static void test_iommu_on_device(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;
	struct ion_ctx *ctx;

	add_gpu(st->root);
	iommu_group(st->root, GPU, 1);
	put(st->root, GPU "/dma_mask_bits", "32\n");
	add_meminfo(st->root);
	ctx = new_ctx(st);
	dev = get(ctx, "card0");
	expect_constraint(dev, (const char *const[]){
		"Contiguous", "no",
		"derived: " GPU_SYS "/iommu_group: behind an IOMMU, scattered memory is fine",
		NULL });
	expect_facts(dev, (const char *const[]){
		"iommu", "behind an IOMMU", GPU_SYS "/iommu_group",
		"dma_mask_bits", "32", GPU_SYS "/dma_mask_bits",
		NULL });
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
}

/* A GPU behind a PCI bridge whose group covers it: the nearest ancestor
 * with an iommu_group is named. */
#define BRIDGE "sys/devices/pci0000:00/0000:00:01.0"
#define DGPU BRIDGE "/0000:01:00.0"

static void test_iommu_on_ancestor(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;
	struct ion_ctx *ctx;

	bus_device(st->root, BRIDGE, "pci", "pcieport");
	iommu_group(st->root, BRIDGE, 2);
	bus_device(st->root, DGPU, "pci", "amdgpu");
	put(st->root, DGPU "/dma_mask_bits", "40\n");
	class_device(st->root, DGPU, "drm", "card1", "MAJOR=226\nMINOR=1\nDEVNAME=dri/card1\n");
	ctx = new_ctx(st);
	dev = get(ctx, "/sys/class/drm/card1");
	assert_string_equal(ion_device_get_driver(dev), "amdgpu");
	expect_constraint(dev, (const char *const[]){
		"Contiguous", "no",
		"derived: /" BRIDGE "/iommu_group: behind an IOMMU, scattered memory is fine",
		NULL });
	expect_facts(dev, (const char *const[]){
		"iommu", "behind an IOMMU", "/" BRIDGE "/iommu_group",
		"dma_mask_bits", "40", "/" DGPU "/dma_mask_bits", NULL });
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
}

/*
 * A full fd table says nothing of the device: the call fails with EMFILE
 * and leaves its out-parameter alone, instead of making a device that
 * lacks the facts it could not read (its driver, its DMA mask).
 */
static void test_transient_errors(void **state)
{
	struct state *st = *state;
	struct ion_device *dev = (void *)1;
	struct rlimit old, low;
	struct ion_ctx *ctx;
	int fds[64], n = 0, r;

	/* A device no class lists: made at the call, not at discovery. */
	bus_device(st->root, DGPU, "pci", "amdgpu");
	put(st->root, DGPU "/dma_mask_bits", "32\n");
	ctx = new_ctx(st);
	assert_true(ion_ctx_get_heap_count(ctx) > 0);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 64;
	if (setrlimit(RLIMIT_NOFILE, &low) < 0)
		skip();
	while (n < 64 && (fds[n] = dup(0)) >= 0)
		n++;
	if (n == 64) {
		/* valgrind keeps its own fds apart: no EMFILE to be had. */
		while (n)
			close(fds[--n]);
		setrlimit(RLIMIT_NOFILE, &old);
		ion_ctx_unref(ctx);
		skip();
	}
	r = ion_ctx_get_device(ctx, "/" DGPU, &dev);
	while (n)
		close(fds[--n]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	if (r != -EMFILE)
		fail_msg("ion_ctx_get_device with a full fd table: %d", r);
	assert_ptr_equal(dev, (void *)1);
	/* Nothing was remembered: with fds to spare the facts are there. */
	dev = get(ctx, "/" DGPU);
	assert_string_equal(ion_device_get_driver(dev), "amdgpu");
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
}

/*
 * A device-tree DMA master outside any IOMMU sees physical addresses:
 * contiguous memory.  Without dma-coherent in its node the CPU's caches
 * are not snooped: uncached memory first.
 */
static void test_devicetree_without_iommu(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;
	struct ion_ctx *ctx;

	add_npu(st->root, false);
	ctx = new_ctx(st);
	dev = get(ctx, "accel0");
	expect_constraint(dev, (const char *const[]){
		"Contiguous", "yes",
		"derived: " NPU_SYS "/of_node, no iommu_group: a device-tree DMA master outside any IOMMU",
		"PreferUncached", "yes", "derived: " NPU_SYS "/of_node has no dma-coherent",
		NULL });
	expect_facts(dev, (const char *const[]){
		"iommu", "none: a device-tree DMA master sees physical addresses", NPU_SYS "/of_node",
		"dma-coherent", "no", NPU_SYS "/of_node/dma-coherent",
		NULL });
	assert_true(dev->constraint.prefer_uncached);
	ion_device_unref(dev);
	ion_ctx_unref(ctx);

	/* The same, DMA-coherent: contiguous still, no preference. */
	put(st->root, NPU_OF "/dma-coherent", "");
	ctx = new_ctx(st);
	dev = get(ctx, "accel0");
	expect_constraint(dev, (const char *const[]){
		"Contiguous", "yes",
		"derived: " NPU_SYS "/of_node, no iommu_group: a device-tree DMA master outside any IOMMU",
		NULL });
	expect_facts(dev, (const char *const[]){
		"iommu", "none: a device-tree DMA master sees physical addresses", NPU_SYS "/of_node",
		"dma-coherent", "yes", NPU_SYS "/of_node/dma-coherent",
		NULL });
	assert_false(dev->constraint.prefer_uncached);
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
}

/*
 * A PCI DMA mask narrower than memory: AddressBits.  8 GiB of RAM end at
 * 2^33, so 32 bits are too few, 33 enough and 40 plenty.
 */
static void test_dma_mask(void **state)
{
	static const struct {
		const char *bits;
		bool derived;
	} masks[] = { { "32", true }, { "33", false }, { "40", false } };
	struct state *st = *state;
	struct ion_ctx *ctx;

	add_meminfo(st->root);
	for (unsigned int i = 0; i < 3; i++) {
		char dir[128], rel[192], card[16], uevent[64];

		snprintf(dir, sizeof(dir), "sys/devices/pci0000:00/0000:00:0%u.0", i + 3);
		bus_device(st->root, dir, "pci", "qxl");
		snprintf(rel, sizeof(rel), "%s/dma_mask_bits", dir);
		put(st->root, rel, masks[i].bits);
		snprintf(card, sizeof(card), "card%u", i);
		snprintf(uevent, sizeof(uevent), "MAJOR=226\nMINOR=%u\nDEVNAME=dri/%s\n", i, card);
		class_device(st->root, dir, "drm", card, uevent);
	}
	ctx = new_ctx(st);
	for (unsigned int i = 0; i < 3; i++) {
		char card[16], source[192], fact_source[192];
		struct ion_device *dev;

		snprintf(card, sizeof(card), "card%u", i);
		dev = get(ctx, card);
		snprintf(source, sizeof(source),
			 "derived: /sys/devices/pci0000:00/0000:00:0%u.0/dma_mask_bits is %s, and memory reaches 2^33",
			 i + 3, masks[i].bits);
		snprintf(fact_source, sizeof(fact_source),
			 "/sys/devices/pci0000:00/0000:00:0%u.0/dma_mask_bits", i + 3);
		if (masks[i].derived)
			expect_constraint(dev, (const char *const[]){
				"AddressBits", masks[i].bits, source, NULL });
		else
			expect_constraint(dev, NONE);
		expect_facts(dev, (const char *const[]){
			"dma_mask_bits", masks[i].bits, fact_source, NULL });
		ion_device_unref(dev);
	}
	ion_ctx_unref(ctx);
}

/* The firmware's memory map says where memory ends, before MemTotal: RAM
 * up to 0x23fffffff (9 GiB) ends at 2^34, so a 33-bit mask is too few. */
static void test_dma_mask_memmap(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;
	struct ion_ctx *ctx;

	add_meminfo(st->root);
	put(st->root, "sys/firmware/memmap/0/type", "System RAM\n");
	put(st->root, "sys/firmware/memmap/0/start", "0x0\n");
	put(st->root, "sys/firmware/memmap/0/end", "0x9fbff\n");
	put(st->root, "sys/firmware/memmap/1/type", "System RAM\n");
	put(st->root, "sys/firmware/memmap/1/start", "0x100000000\n");
	put(st->root, "sys/firmware/memmap/1/end", "0x23fffffff\n");
	put(st->root, "sys/firmware/memmap/2/type", "Reserved\n");
	put(st->root, "sys/firmware/memmap/2/start", "0xfd00000000\n");
	put(st->root, "sys/firmware/memmap/2/end", "0xffffffffff\n");
	add_gpu(st->root);
	put(st->root, GPU "/dma_mask_bits", "33\n");
	ctx = new_ctx(st);
	dev = get(ctx, "card0");
	expect_constraint(dev, (const char *const[]){
		"AddressBits", "33",
		"derived: " GPU_SYS "/dma_mask_bits is 33, and memory reaches 2^34", NULL });
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
}

/* ---- heaps.d rules ---- */

static void test_heaps_d_rules(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;
	struct ion_ctx *ctx;

	add_gpu(st->root);
	class_device(st->root, NULL, "drm", "card2", "MAJOR=226\nMINOR=2\nDEVNAME=dri/card2\n");
	add_vivid(st->root);
	add_npu(st->root, true);
	conf(st,
	     "[Device gpu]\n"				/* 1 */
	     "MatchSubsystem = drm\n"			/* 2 */
	     "MatchDriver = i915\n"			/* 3 */
	     "Alignment = 64K\n"			/* 4 */
	     "[Device capture]\n"			/* 5 */
	     "MatchName = vivid-*-vid-cap\n"		/* 6 */
	     "MatchSysfsPath = " VIVID_SYS "\n"		/* 7: the parent's path */
	     "Cache = cached\n"				/* 8 */
	     "[Device npu]\n"				/* 9 */
	     "MatchOFCompatible = vendor,npu\n"		/* 10: the second entry */
	     "MatchSubsystem = platform\n"		/* 11: the parent's bus */
	     "KernelMap = yes\n"			/* 12 */
	     "[Device nobody]\n"			/* 13 */
	     "MatchDriver = nouveau\n"			/* 14 */
	     "Contiguous = yes\n"			/* 15 */
	     "[Device all-drm]\n"			/* 16 */
	     "MatchSubsystem = drm\n"			/* 17 */
	     "Pool = 4x1M\n");				/* 18 */
	ctx = new_ctx(st);
	assert_int_equal(ion_ctx_get_config_error_count(ctx), 0);

	dev = get(ctx, "card0");
	expect_constraint(dev, (const char *const[]){
		"Alignment", "64K", conf_at(st, 4), "Pool", "4x1M", conf_at(st, 18), NULL });
	ion_device_unref(dev);
	/* A DRM card with no driver: MatchDriver finds nothing to match. */
	dev = get(ctx, "card2");
	expect_constraint(dev, (const char *const[]){ "Pool", "4x1M", conf_at(st, 18), NULL });
	ion_device_unref(dev);
	/* vivid, a platform device without of_node on what the NPU makes a
	 * device-tree machine: contiguous assumed. */
	dev = get(ctx, "video0");
	expect_constraint(dev, (const char *const[]){
		"Contiguous", "yes", VIVID_ASSUMED, "Cache", "cached", conf_at(st, 8), NULL });
	ion_device_unref(dev);
	/* heaps.d adds to what sysfs derived. */
	dev = get(ctx, "accel0");
	expect_constraint(dev, (const char *const[]){
		"Contiguous", "yes",
		"derived: " NPU_SYS "/of_node, no iommu_group: a device-tree DMA master outside any IOMMU",
		"KernelMap", "yes", conf_at(st, 12), NULL });
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
}

/* ---- precedence ---- */

#define COOKIE_SYS NPU_SYS "/accel/accel0/ion_constraints"

/* The board that names the cookie, matched by DMI. */
static void add_board(const struct state *st, const char *device_lines)
{
	char text[2048];

	put(st->root, "sys/class/dmi/id/sys_vendor", "LibionTest\n");
	put(st->root, "sys/class/dmi/id/product_name", "Fake NPU board\n");
	snprintf(text, sizeof(text),
		 "[Board test]\n"			/* 1 */
		 "MatchDMIVendor = LibionTest\n"	/* 2 */
		 "CookieAttribute = ion_constraints\n"	/* 3 */
		 "[Device npu]\n"			/* 4 */
		 "MatchOFCompatible = vendor,npu\n"	/* 5 */
		 "%s", device_lines);			/* from 6 */
	conf(st, text);
}

/*
 * Key by key, the first source that sets a key wins: the cookie over
 * heaps.d (Alignment), heaps.d over derived facts (Contiguous,
 * AddressBits), and what only one source says stays (KernelMap from the
 * cookie, Cache from heaps.d, PreferUncached derived).
 */
static void test_precedence(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;
	struct ion_ctx *ctx;

	add_meminfo(st->root);
	/* Derived: Contiguous = yes (of_node, no IOMMU), AddressBits = 32
	 * (below memory's 2^33), PreferUncached (no dma-coherent). */
	add_hailo(st->root);
	add_board(st,
		  "Contiguous = no\n"		/* 6 */
		  "AddressBits = 36\n"		/* 7 */
		  "Alignment = 1M\n"		/* 8 */
		  "Cache = uncached\n");	/* 9 */
	put(st->root, HAILO "/accel/accel0/ion_constraints",
	    "# what the vendor kernel exports\n"	/* 1 */
	    "Alignment = 64K\n"				/* 2 */
	    "KernelMap = yes\n");			/* 3 */
	ctx = new_ctx(st);
	assert_int_equal(ion_ctx_get_board_count(ctx), 1);
	dev = get(ctx, "accel0");
	expect_constraint(dev, (const char *const[]){
		"Contiguous", "no", conf_at(st, 6),
		"AddressBits", "36", conf_at(st, 7),
		"Cache", "uncached", conf_at(st, 9),
		"Alignment", "64K", HAILO_COOKIE ":2",
		"KernelMap", "yes", HAILO_COOKIE ":3",
		"PreferUncached", "yes", "derived: " HAILO_SYS "/of_node has no dma-coherent",
		NULL });
	ion_device_unref(dev);
	ion_ctx_unref(ctx);

	/* Another board: neither the cookie it names nor the [Device]
	 * section in its scope applies, and the derived facts take over. */
	put(st->root, "sys/class/dmi/id/sys_vendor", "Someone Else\n");
	ctx = new_ctx(st);
	assert_int_equal(ion_ctx_get_board_count(ctx), 0);
	dev = get(ctx, "accel0");
	expect_constraint(dev, (const char *const[]){
		"Contiguous", "yes",
		"derived: " HAILO_SYS "/of_node, no iommu_group: a device-tree DMA master outside any IOMMU",
		"AddressBits", "32",
		"derived: " HAILO_SYS "/dma_mask_bits is 32, and memory reaches 2^33",
		"PreferUncached", "yes", "derived: " HAILO_SYS "/of_node has no dma-coherent",
		NULL });
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
}

/* The cookie may sit on the parent; one with any error is ignored whole
 * and reported with its path and line. */
static void test_cookie_parent_and_errors(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;
	struct ion_ctx *ctx;

	add_npu(st->root, true);
	add_board(st, "Alignment = 1M\n");	/* 6 */
	put(st->root, NPU "/ion_constraints", "Alignment = 2M\n");
	ctx = new_ctx(st);
	dev = get(ctx, "accel0");
	expect_constraint(dev, (const char *const[]){
		"Contiguous", "yes",
		"derived: " NPU_SYS "/of_node, no iommu_group: a device-tree DMA master outside any IOMMU",
		"Alignment", "2M", NPU_SYS "/ion_constraints:1",
		NULL });
	ion_device_unref(dev);
	ion_ctx_unref(ctx);

	/* The class device's own cookie comes first, and a broken one is
	 * not replaced by the parent's: it is ignored, and said so. */
	put(st->root, NPU "/accel/accel0/ion_constraints",
	    "KernelMap = yes\n"		/* 1: fine, but the cookie is broken */
	    "Alignment = 3\n");		/* 2: no power of two */
	ctx = new_ctx(st);
	dev = get(ctx, "accel0");
	expect_constraint(dev, (const char *const[]){
		"Contiguous", "yes",
		"derived: " NPU_SYS "/of_node, no iommu_group: a device-tree DMA master outside any IOMMU",
		"Alignment", "1M", conf_at(st, 6),
		NULL });
	if (!strstr(log_text, COOKIE_SYS ":2: "))
		fail_msg("not reported: %s", log_text);
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
}

/* A Heaps list is the answer: no derived key at all, from whichever
 * source the list came; the facts are still read and listed. */
static void test_heaps_list_leaves_derived_out(void **state)
{
	static const char *const facts[] = {
		"iommu", "none: a device-tree DMA master sees physical addresses", HAILO_SYS "/of_node",
		"dma_mask_bits", "32", HAILO_SYS "/dma_mask_bits",
		"dma-coherent", "no", HAILO_SYS "/of_node/dma-coherent",
		NULL
	};
	struct state *st = *state;
	struct ion_device *dev;
	struct ion_ctx *ctx;

	add_meminfo(st->root);
	add_hailo(st->root);
	add_board(st, "Heaps = reserved\n");	/* 6 */
	ctx = new_ctx(st);
	dev = get(ctx, "accel0");
	expect_constraint(dev, (const char *const[]){ "Heaps", "reserved", conf_at(st, 6), NULL });
	expect_facts(dev, facts);
	assert_false(dev->constraint.prefer_uncached);
	ion_device_unref(dev);
	ion_ctx_unref(ctx);

	/* From the cookie: heaps.d's own keys stay, derived ones do not. */
	add_board(st, "Alignment = 1M\n");	/* 6 */
	put(st->root, HAILO "/accel/accel0/ion_constraints", "Heaps = cma\n");
	ctx = new_ctx(st);
	dev = get(ctx, "accel0");
	expect_constraint(dev, (const char *const[]){
		"Heaps", "cma", HAILO_COOKIE ":1",
		"Alignment", "1M", conf_at(st, 6),
		NULL });
	expect_facts(dev, facts);
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
}

/* ---- FIFOs where files belong ---- */

/* Each attribute the reader opens, a FIFO: no hang, and the attribute
 * simply is not there. */
static void test_fifo_attributes(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;
	struct ion_ctx *ctx;

	alarm(HANG_SECONDS);
	add_vivid(st->root);
	add_npu(st->root, false);
	add_board(st, "");
	fifo(st->root, VIVID "/video4linux/video0/uevent");
	fifo(st->root, VIVID "/video4linux/video0/name");
	fifo(st->root, NPU_OF "/compatible");
	add_gpu(st->root);
	fifo(st->root, GPU "/dma_mask_bits");
	fifo(st->root, "proc/meminfo");
	/* The class device's cookie a FIFO: the parent's is read instead. */
	fifo(st->root, NPU "/accel/accel0/ion_constraints");
	put(st->root, NPU "/ion_constraints", "Alignment = 2M\n");
	put(st->root, "heaps.d/60-name.conf",
	    "[Device named]\nMatchName = *\nKernelMap = yes\n");
	ctx = new_ctx(st);
	assert_int_equal(ion_ctx_get_device_count(ctx), 3);

	/* No DMA mask read: PCI's default of 32 bits, and no meminfo read:
	 * where memory ends is unknown, so the 32 bits count. */
	dev = get(ctx, "card0");
	expect_constraint(dev, (const char *const[]){
		"AddressBits", "32",
		"derived: " GPU_SYS "/dma_mask_bits is unreadable (not a regular file): PCI's default of 32 bits assumed, and where memory ends is unknown",
		NULL });
	expect_facts(dev, (const char *const[]){
		"dma_mask_bits", "32 assumed (PCI's default): unreadable (not a regular file)",
		GPU_SYS "/dma_mask_bits", NULL });
	ion_device_unref(dev);

	/* No uevent read: no node, so no lookup by node. */
	dev = get(ctx, "/sys/class/video4linux/video0");
	assert_null(ion_device_get_devnode(dev));
	/* No name read: MatchName matches nothing. */
	expect_constraint(dev, (const char *const[]){ "Contiguous", "yes", VIVID_ASSUMED, NULL });
	ion_device_unref(dev);
	assert_int_equal(ion_ctx_get_device(ctx, "/dev/video0", &dev), -ENODEV);

	/* No compatible list: the [Device npu] section does not apply, but
	 * the of_node is there, and so is the parent's cookie. */
	dev = get(ctx, "accel0");
	expect_constraint(dev, (const char *const[]){
		"Contiguous", "yes",
		"derived: " NPU_SYS "/of_node, no iommu_group: a device-tree DMA master outside any IOMMU",
		"Alignment", "2M", NPU_SYS "/ion_constraints:1",
		"PreferUncached", "yes", "derived: " NPU_SYS "/of_node has no dma-coherent",
		NULL });
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
	alarm(0);
}

/* The /dev node a FIFO: the uevent names the device, and nothing opens
 * the node (the V4L2 card name is asked of char devices only). */
static void test_fifo_dev_node(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;
	struct ion_ctx *ctx;

	alarm(HANG_SECONDS);
	add_vivid(st->root);
	fifo(st->root, "dev/video0");
	ctx = new_ctx(st);
	dev = get(ctx, "/dev/video0");
	assert_string_equal(ion_device_get_name(dev), "video0");
	assert_null(dev->v4l2_card);
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
	alarm(0);
}

/*
 * Discovery's own nodes a FIFO (/dev/dma_heap/<name>, /dev/ion): opening
 * one for reading waits for a writer.  Run in a child with an alarm, so
 * that a hang fails this test alone.
 */
static int discover_in_child(const struct state *st)
{
	struct ion_ctx *ctx;
	int n;

	alarm(CHILD_SECONDS);
	if (ion_ctx_new(st->root, &ctx) < 0)
		return 2;
	ion_ctx_set_heaps_path(ctx, st->heaps_d);
	n = ion_ctx_get_heap_count(ctx);
	ion_ctx_unref(ctx);
	return n > 0 ? 0 : 3;
}

static void expect_no_hang(const struct state *st, const char *what)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(discover_in_child(st));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("%s: discovery killed by signal %d%s", what, WTERMSIG(status),
			 WTERMSIG(status) == SIGALRM ? " (it hung)" : "");
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_fifo_dma_heap_node(void **state)
{
	struct state *st = *state;

	fifo(st->root, "dev/dma_heap/system");
	expect_no_hang(st, "/dev/dma_heap/system a FIFO");
}

static void test_fifo_ion_node(void **state)
{
	struct state *st = *state;

	fifo(st->root, "dev/ion");
	expect_no_hang(st, "/dev/ion a FIFO");
}

/* ---- references ---- */

/* A device keeps its context: it outlives the caller's reference to the
 * context, and the last device reference frees both (valgrind and ASan
 * check that nothing stays behind). */
static void test_references(void **state)
{
	struct state *st = *state;
	struct ion_device *listed, *fresh, *named;
	struct ion_ctx *ctx;

	add_gpu(st->root);
	conf(st, "[Device sink]\nContiguous = yes\n");
	ctx = new_ctx(st);
	listed = get(ctx, "card0");
	fresh = get(ctx, GPU_SYS);	/* read for the call, not listed */
	named = get(ctx, "sink");
	assert_ptr_equal(ion_device_ref(listed), listed);
	assert_null(ion_device_ref(NULL));
	/* The caller's reference and one per device reference. */
	assert_int_equal(ion_ctx_get_refcount(ctx), 5);
	assert_null(ion_ctx_unref(ctx));
	assert_int_equal(ion_ctx_get_refcount(ctx), 4);

	assert_string_equal(ion_device_get_name(listed), "card0");
	assert_string_equal(ion_device_get_name(fresh), "0000:00:02.0");
	assert_string_equal(ion_device_get_subsystem(fresh), "pci");
	expect_constraint(named, (const char *const[]){ "Contiguous", "yes", conf_at(st, 2), NULL });
	assert_null(ion_device_unref(named));
	assert_null(ion_device_unref(fresh));
	assert_null(ion_device_unref(listed));
	/* Still one reference: the device and the context live on. */
	assert_int_equal(ion_ctx_get_refcount(ctx), 1);
	assert_string_equal(ion_device_get_syspath(listed), GPU_SYS "/drm/card0");
	/* The last one frees the device (and its registry, and the context). */
	assert_null(ion_device_unref(listed));
	assert_null(ion_device_unref(NULL));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	static const struct CMUnitTest tests[] = {
		T(test_enumeration),
		T(test_lookup),
		T(test_lookup_char_node),
		T(test_iommu_on_device),
		T(test_iommu_on_ancestor),
	T(test_transient_errors),
		T(test_devicetree_without_iommu),
		T(test_dma_mask),
		T(test_dma_mask_memmap),
		T(test_heaps_d_rules),
		T(test_precedence),
		T(test_cookie_parent_and_errors),
		T(test_heaps_list_leaves_derived_out),
		T(test_fifo_attributes),
		T(test_fifo_dev_node),
		T(test_fifo_dma_heap_node),
		T(test_fifo_ion_node),
		T(test_references),
	};
#undef T

	return cmocka_run_group_tests_name("device", tests, NULL, NULL);
}
