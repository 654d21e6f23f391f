// SPDX-License-Identifier: MIT
/*
 * Derivation that fails safe, and the devices that really do the DMA
 * (src/platform.c, src/derive.c), on fake trees (tests/lib/faketree.h)
 * written inline: every fact that dangles, cannot be read or is garbage
 * gives the stricter answer and says so; a DRM device on a virtual
 * subsystem node is judged by the masters its node names, each named.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "faketree.h"
#include "src/context.h"
#include "src/device.h"
#include "src/platform.h"
#include "testlib.h"

struct state {
	char root[64];
	struct ion_ctx *ctx;
	struct ion_device *dev;
	struct fd_table fds;
};

/* ---- trees ---- */

/* The parts every tree here shares: sysfs's class and bus folders. */
#define COMMON \
	"dir /sys/class/drm\n" \
	"dir /sys/class/video4linux\n" \
	"dir /sys/bus/platform/devices\n" \
	"dir /sys/bus/pci\n" \
	"dir /heaps.d\n"

/* A device-tree machine. */
#define DT "file /sys/firmware/devicetree/base/compatible vendor,board\\0\n"

/* 8 GiB of memory: it ends at 2^33. */
#define MEM8G "file /proc/meminfo MemTotal:        8388608 kB\\n\n"

/* A DRM card of the device at DIR (a /sys/devices path). */
#define CARD(DIR, N) \
	"file " DIR "/drm/card" #N "/uevent MAJOR=226\\nMINOR=" #N "\\nDEVNAME=dri/card" #N "\\n\n" \
	"link " DIR "/drm/card" #N "/device " DIR "\n" \
	"link " DIR "/drm/card" #N "/subsystem /sys/class/drm\n" \
	"link /sys/class/drm/card" #N " " DIR "/drm/card" #N "\n"

/* A bus device at DIR on BUS. */
#define BUS(DIR, BUSNAME) "link " DIR "/subsystem /sys/bus/" BUSNAME "\n"

/* A platform device of a device-tree node, listed on its bus. */
#define PDEV(DIR, NAME, NODE) \
	BUS(DIR, "platform") \
	"link " DIR "/of_node /sys/firmware/devicetree/base" NODE "\n" \
	"link /sys/bus/platform/devices/" NAME " " DIR "\n"

/* DIR in IOMMU group N. */
#define GROUP(DIR, N) \
	"dir /sys/kernel/iommu_groups/" #N "\n" \
	"link " DIR "/iommu_group /sys/kernel/iommu_groups/" #N "\n"

static void build(struct state *st, const char *text)
{
	char file[128], err[512];
	FILE *f;

	snprintf(file, sizeof(file), "%s.tree", st->root);
	f = fopen(file, "we");
	assert_non_null(f);
	fputs(COMMON, f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	if (faketree_build(file, st->root, err, sizeof(err)) < 0)
		fail_msg("%s", err);
	unlink(file);
}

/* An empty root again, for another tree. */
static void reset(struct state *st)
{
	st->dev = ion_device_unref(st->dev);
	st->ctx = ion_ctx_unref(st->ctx);
	test_remove_tree(st->root);
	assert_int_equal(mkdir(st->root, 0700), 0);
}

/* A symbolic link that dangles, which tree files refuse. */
static void dangling(struct state *st, const char *rel, const char *target)
{
	char path[256];

	snprintf(path, sizeof(path), "%s%s", st->root, rel);
	assert_int_equal(symlink(target, path), 0);
}

static int setup(void **state)
{
	struct state *st = calloc(1, sizeof(*st));

	assert_non_null(st);
	strcpy(st->root, "/tmp/libion-derive-XXXXXX");
	assert_non_null(mkdtemp(st->root));
	fd_table_read(&st->fds);
	*state = st;
	return 0;
}

static int teardown(void **state)
{
	struct state *st = *state;

	ion_device_unref(st->dev);
	ion_ctx_unref(st->ctx);
	fd_table_assert_same(&st->fds);
	test_remove_tree(st->root);
	free(st);
	return 0;
}

/* The device called name on a fresh context of the tree (held by st). */
static struct ion_device *device(struct state *st, const char *name)
{
	char heaps_d[96];
	int r;

	st->dev = ion_device_unref(st->dev);
	st->ctx = ion_ctx_unref(st->ctx);
	assert_int_equal(ion_ctx_new(st->root, &st->ctx), 0);
	snprintf(heaps_d, sizeof(heaps_d), "%s/heaps.d", st->root);
	assert_int_equal(ion_ctx_set_heaps_path(st->ctx, heaps_d), 0);
	r = ion_ctx_get_device(st->ctx, name, &st->dev);
	if (r < 0)
		fail_msg("%s: %s", name, strerror(-r));
	return st->dev;
}

/* The value of key in the device's constraint (or facts), with its
 * source containing text; NULL value: the key must be absent. */
static void expect(const struct ion_device *dev, bool facts, const char *key,
		   const char *value, const char *text)
{
	int n = facts ? ion_device_get_fact_count(dev) : ion_device_get_constraint_count(dev);

	for (int i = 0; i < n; i++) {
		const char *k, *v, *s;

		assert_int_equal(facts ? ion_device_get_fact(dev, (unsigned int)i, &k, &v, &s)
				       : ion_device_get_constraint(dev, (unsigned int)i, &k, &v, &s), 0);
		if (strcmp(k, key) != 0 || (value && facts && strcmp(v, value) != 0))
			continue;
		if (!value)
			fail_msg("%s: %s = %s (%s), expected none", ion_device_get_name(dev), k, v, s);
		if (strcmp(v, value) != 0 || !strstr(s, text))
			fail_msg("%s: %s = %s (%s), expected %s (...%s...)", ion_device_get_name(dev),
				 k, v, s, value, text);
		return;
	}
	if (value)
		fail_msg("%s: no %s %s = %s", ion_device_get_name(dev), facts ? "fact" : "constraint",
			 key, value);
}

#define constraint(dev, key, value, text) expect((dev), false, (key), (value), (text))
#define fact(dev, key, value, text) expect((dev), true, (key), (value), (text))

/* What platform.c answers for the device at devpath, as gem.c asks. */
static enum ion_dma_need need_of(const struct state *st, const char *devpath)
{
	struct ion_dma_facts f;
	enum ion_dma_need need;

	assert_int_equal(ion_platform_read(st->root, devpath, &f), 0);
	need = ion_dma_need(&f);
	ion_dma_facts_clear(&f);
	return need;
}

/* ---- fail safe ---- */

#define NPU "/sys/devices/platform/soc/fe600000.npu"
#define NPU_TREE DT PDEV(NPU, "fe600000.npu", "/soc/npu@fe600000") \
	"file /sys/firmware/devicetree/base/soc/npu@fe600000/compatible vendor,npu\\0\n" \
	"file " NPU "/accel/accel0/uevent MAJOR=261\\nMINOR=0\\nDEVNAME=accel/accel0\\n\n" \
	"link " NPU "/accel/accel0/device " NPU "\n" \
	"dir /sys/class/accel\n" \
	"link " NPU "/accel/accel0/subsystem /sys/class/accel\n" \
	"link /sys/class/accel/accel0 " NPU "/accel/accel0\n"

#define GPU "/sys/devices/pci0000:00/0000:00:02.0"
#define GPU_TREE BUS(GPU, "pci") CARD(GPU, 0)

/*
 * An iommu_group link that dangles is no IOMMU: a device-tree master then
 * needs contiguous memory, and a PCI device's mask counts.  A GEM heap is
 * not called contiguous on it (that is not known).
 */
static void test_dangling_iommu_group(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;

	build(st, NPU_TREE GPU_TREE MEM8G "file " GPU "/dma_mask_bits 32\\n\n");
	dangling(st, NPU "/iommu_group", "../../../../kernel/iommu_groups/7");
	dangling(st, GPU "/iommu_group", "../../../kernel/iommu_groups/8");

	dev = device(st, "accel0");
	constraint(dev, "Contiguous", "yes", NPU "/of_node, no iommu_group");
	fact(dev, "iommu_group", "dangles: counted as no IOMMU", NPU "/iommu_group");
	fact(dev, "iommu", "none: a device-tree DMA master sees physical addresses", NPU "/of_node");
	assert_int_equal(need_of(st, NPU), ION_DMA_CONTIGUOUS_ASSUMED);

	dev = device(st, "card0");
	constraint(dev, "Contiguous", NULL, NULL);
	constraint(dev, "AddressBits", "32", GPU "/dma_mask_bits is 32, and memory reaches 2^33");
	fact(dev, "iommu_group", "dangles: counted as no IOMMU", GPU "/iommu_group");
}

/* dma_mask_bits missing, garbage, 0 or past 64: PCI's default 32 bits,
 * which 8 GiB of memory make an AddressBits, and the fact says why. */
static void test_unreadable_dma_mask(void **state)
{
	static const char *const masks[] = { NULL, "garbage\\n", "0\\n", "65\\n" };
	static const char *const why[] = {
		"unreadable (No such file or directory)", "\"garbage\", no number of bits",
		"\"0\", no number of bits", "\"65\", no number of bits",
	};

	for (size_t i = 0; i < 4; i++) {
		struct state *st = *state;
		char tree[1024], value[128];
		struct ion_device *dev;

		snprintf(tree, sizeof(tree), "%s%s%s%s%s", GPU_TREE, MEM8G,
			 masks[i] ? "file " GPU "/dma_mask_bits " : "", masks[i] ? masks[i] : "",
			 masks[i] ? "\n" : "");
		build(st, tree);
		dev = device(st, "card0");
		snprintf(value, sizeof(value), "32 assumed (PCI's default): %s", why[i]);
		fact(dev, "dma_mask_bits", value, GPU "/dma_mask_bits");
		constraint(dev, "AddressBits", "32", "PCI's default of 32 bits assumed, and memory reaches 2^33");
		reset(st);
	}
}

/* Where memory ends is unknown (no meminfo, no map): said so, never
 * "memory reaches 2^64", and a 32-bit mask still counts. */
static void test_memory_end_unknown(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;

	build(st, GPU_TREE "file " GPU "/dma_mask_bits 32\\n\n");
	dev = device(st, "card0");
	constraint(dev, "AddressBits", "32", GPU "/dma_mask_bits is 32, and where memory ends is unknown");
	for (int i = 0; i < ion_device_get_constraint_count(dev); i++) {
		const char *k, *v, *s;

		assert_int_equal(ion_device_get_constraint(dev, (unsigned int)i, &k, &v, &s), 0);
		assert_null(strstr(s, "2^64"));
	}
}

/*
 * A platform device without an of_node on a device-tree machine: a child
 * a driver made is judged by its parent's node; one with no node above
 * it is unknown, contiguous assumed.  Off device-tree machines, no rule.
 */
#define CHILD NPU "/npu-child.0"
#define LONER "/sys/devices/platform/loner.0"

static void test_platform_without_of_node(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;

	build(st, NPU_TREE BUS(CHILD, "platform") CARD(CHILD, 1) BUS(LONER, "platform")
		  CARD(LONER, 2));
	dev = device(st, "card1");
	constraint(dev, "Contiguous", "yes", "has no of_node; its parent " NPU "/of_node");
	fact(dev, "of_node", "none of its own: its parent's, no IOMMU", NPU "/of_node");
	assert_int_equal(need_of(st, CHILD), ION_DMA_CONTIGUOUS);

	dev = device(st, "card2");
	constraint(dev, "Contiguous", "yes", LONER ": a platform device on a device-tree machine with no of_node on it or above: unknown, contiguous assumed");
	fact(dev, "of_node", "unknown: contiguous assumed", LONER "/of_node");
	/* A heap is not called contiguous on an assumption. */
	assert_int_equal(need_of(st, LONER), ION_DMA_CONTIGUOUS_ASSUMED);
}

static void test_no_devicetree_no_rule(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;

	build(st, BUS(LONER, "platform") CARD(LONER, 2));
	dev = device(st, "card2");
	constraint(dev, "Contiguous", NULL, NULL);
	assert_int_equal(ion_device_get_fact_count(dev), 0);
	assert_int_equal(need_of(st, LONER), ION_DMA_NOTHING_KNOWN);
}

/* ---- the masters of a virtual subsystem node ---- */

#define DSS "/sys/devices/platform/display-subsystem"
#define BASE "/sys/firmware/devicetree/base"
/* rockchip's display-subsystem: ports names one port of each VOP
 * (phandles 0x10 and 0x11), as rk3399.dtsi does. */
#define DSS_TREE DT \
	"file " BASE "/display-subsystem/compatible rockchip,display-subsystem\\0\n" \
	"file " BASE "/display-subsystem/ports \\x00\\x00\\x00\\x10\\x00\\x00\\x00\\x11\n" \
	"link " DSS "/of_node " BASE "/display-subsystem\n" \
	BUS(DSS, "platform") CARD(DSS, 0) \
	"file " BASE "/vop@ff900000/compatible rockchip,rk3399-vop-big\\0\n" \
	"file " BASE "/vop@ff900000/port/phandle \\x00\\x00\\x00\\x10\n" \
	"file " BASE "/vop@ff8f0000/compatible rockchip,rk3399-vop-lit\\0\n" \
	"file " BASE "/vop@ff8f0000/port/phandle \\x00\\x00\\x00\\x11\n"
#define VOPB "/sys/devices/platform/ff900000.vop"
#define VOPL "/sys/devices/platform/ff8f0000.vop"
#define VOPB_DEV PDEV(VOPB, "ff900000.vop", "/vop@ff900000")
#define VOPL_DEV PDEV(VOPL, "ff8f0000.vop", "/vop@ff8f0000")

/* Both VOPs behind IOMMUs: scattered memory, both named. */
static void test_masters_behind_iommus(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;

	build(st, DSS_TREE VOPB_DEV VOPL_DEV GROUP(VOPB, 0) GROUP(VOPL, 1));
	dev = device(st, "card0");
	constraint(dev, "Contiguous", "no",
		   DSS "/of_node names its DMA masters in ports: ff900000.vop (IOMMU), ff8f0000.vop (IOMMU): all behind an IOMMU");
	fact(dev, "master", "ff900000.vop", VOPB "/iommu_group: behind an IOMMU");
	fact(dev, "master", "ff8f0000.vop", VOPL "/iommu_group: behind an IOMMU");
	/* The GEM heap's dumb buffers are not contiguous either. */
	assert_int_equal(need_of(st, DSS), ION_DMA_SCATTER);
}

/* One VOP without an IOMMU: the AND is contiguous, and it is named. */
static void test_masters_one_without_iommu(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;

	build(st, DSS_TREE VOPB_DEV VOPL_DEV GROUP(VOPB, 0));
	dev = device(st, "card0");
	constraint(dev, "Contiguous", "yes",
		   "ff900000.vop (IOMMU), ff8f0000.vop (no IOMMU): one sees physical addresses");
	fact(dev, "master", "ff8f0000.vop", VOPL ": no IOMMU: sees physical addresses");
	assert_int_equal(need_of(st, DSS), ION_DMA_CONTIGUOUS);
}

/* A master with no platform device (not probed): contiguous assumed; a
 * disabled one is no master at all. */
static void test_masters_missing_and_disabled(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;

	build(st, DSS_TREE VOPB_DEV GROUP(VOPB, 0));
	dev = device(st, "card0");
	constraint(dev, "Contiguous", "yes", "/vop@ff8f0000 (not probed)");
	constraint(dev, "Contiguous", "yes", ": contiguous assumed");
	fact(dev, "master", "/vop@ff8f0000", "not probed, contiguous assumed");
	assert_int_equal(need_of(st, DSS), ION_DMA_CONTIGUOUS_ASSUMED);

	reset(st);
	build(st, DSS_TREE VOPB_DEV GROUP(VOPB, 0)
		  "file " BASE "/vop@ff8f0000/status disabled\\0\n");
	dev = device(st, "card0");
	constraint(dev, "Contiguous", "no", "in ports: ff900000.vop (IOMMU): all behind an IOMMU");
}

/* sun4i-drm's display-engine names its mixers in allwinner,pipelines. */
#define DE "/sys/devices/platform/display-engine"
#define MIXER "/sys/devices/platform/soc/1100000.mixer"

static void test_masters_pipelines(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;

	build(st, DT
	      "file " BASE "/display-engine/compatible allwinner,sun8i-h3-display-engine\\0\n"
	      "file " BASE "/display-engine/allwinner,pipelines \\x00\\x00\\x00\\x2a\n"
	      "link " DE "/of_node " BASE "/display-engine\n"
	      BUS(DE, "platform") CARD(DE, 0)
	      "file " BASE "/soc/mixer@1100000/compatible allwinner,sun8i-h3-de2-mixer-0\\0\n"
	      "file " BASE "/soc/mixer@1100000/phandle \\x00\\x00\\x00\\x2a\n"
	      PDEV(MIXER, "1100000.mixer", "/soc/mixer@1100000"));
	dev = device(st, "card0");
	constraint(dev, "Contiguous", "yes",
		   DE "/of_node names its DMA masters in allwinner,pipelines: 1100000.mixer (no IOMMU)");
	fact(dev, "master", "1100000.mixer", MIXER ": no IOMMU");
}

/* imx-media's capture-subsystem has the same shape on the V4L2 side:
 * its video nodes sit on the virtual node, the IPUs' CSIs do the DMA. */
#define CAPSS "/sys/devices/platform/capture-subsystem"
#define IPU "/sys/devices/platform/soc/2400000.ipu"

static void test_masters_v4l2(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;

	build(st, DT
	      "file " BASE "/capture-subsystem/compatible fsl,imx-capture-subsystem\\0\n"
	      "file " BASE "/capture-subsystem/ports \\x00\\x00\\x00\\x31\n"
	      "link " CAPSS "/of_node " BASE "/capture-subsystem\n"
	      BUS(CAPSS, "platform")
	      "file " CAPSS "/video4linux/video0/uevent MAJOR=81\\nMINOR=0\\nDEVNAME=video0\\n\n"
	      "link " CAPSS "/video4linux/video0/device " CAPSS "\n"
	      "link " CAPSS "/video4linux/video0/subsystem /sys/class/video4linux\n"
	      "link /sys/class/video4linux/video0 " CAPSS "/video4linux/video0\n"
	      "file " BASE "/soc/ipu@2400000/compatible fsl,imx6q-ipu\\0\n"
	      "file " BASE "/soc/ipu@2400000/port@0/phandle \\x00\\x00\\x00\\x31\n"
	      PDEV(IPU, "2400000.ipu", "/soc/ipu@2400000"));
	dev = device(st, "video0");
	constraint(dev, "Contiguous", "yes",
		   CAPSS "/of_node names its DMA masters in ports: 2400000.ipu (no IOMMU)");
	fact(dev, "master", "2400000.ipu", IPU ": no IOMMU: sees physical addresses");
}

/* ---- which nodes reading opens ---- */

#define CAM "/sys/devices/platform/cam.0"

/* Whether the watched node was opened since the last call. */
static bool opened(int fd)
{
	char buf[4096];
	bool seen = false;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;

			seen |= (e->mask & IN_OPEN) != 0;
			p += sizeof(*e) + e->len;
		}
	return seen;
}

/*
 * A V4L2 node is opened for its card name only when a heaps.d section
 * matches on MatchV4L2Card: a driver's open() may power its block up.
 * The node is a character device of the number its uevent gives (made
 * with mknod, so root only), watched with inotify.
 */
static void test_v4l2_node_opened_only_when_asked(void **state)
{
	struct state *st = *state;
	char node[128], conf[128];
	int fd;

	build(st, BUS(CAM, "platform") "file " CAM "/video4linux/video0/uevent MAJOR=1\\nMINOR=3\\nDEVNAME=video0\\n\n"
		  "link " CAM "/video4linux/video0/device " CAM "\n"
		  "link " CAM "/video4linux/video0/subsystem /sys/class/video4linux\n"
		  "link /sys/class/video4linux/video0 " CAM "/video4linux/video0\n"
		  "dir /dev\n");
	snprintf(node, sizeof(node), "%s/dev/video0", st->root);
	if (mknod(node, S_IFCHR | 0666, makedev(1, 3)) < 0)
		skip();
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	assert_true(fd >= 0);
	assert_true(inotify_add_watch(fd, node, IN_OPEN) >= 0);

	device(st, "video0");
	assert_false(opened(fd));

	snprintf(conf, sizeof(conf), "%s/heaps.d/50-cam.conf", st->root);
	{
		FILE *f = fopen(conf, "we");

		assert_non_null(f);
		fputs("[Device cam]\nMatchV4L2Card = *\nAlignment = 4K\n", f);
		assert_int_equal(fclose(f), 0);
	}
	device(st, "video0");
	assert_true(opened(fd));
	close(fd);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	static const struct CMUnitTest tests[] = {
		T(test_dangling_iommu_group),
		T(test_unreadable_dma_mask),
		T(test_memory_end_unknown),
		T(test_platform_without_of_node),
		T(test_no_devicetree_no_rule),
		T(test_masters_behind_iommus),
		T(test_masters_one_without_iommu),
		T(test_masters_missing_and_disabled),
		T(test_masters_pipelines),
		T(test_masters_v4l2),
		T(test_v4l2_node_opened_only_when_asked),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
