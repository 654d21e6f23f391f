// SPDX-License-Identifier: MIT
/*
 * udev properties as a source of device constraints, through umockdev:
 * the library reads the udev database only on the real root, so this
 * program runs under umockdev-wrapper, whose preload redirects /sys (and
 * what libudev reads) into a testbed of fake devices with properties.
 * ION_* properties become constraints with "udev property ..." sources,
 * win over heaps.d sections and derived facts key by key and yield to the
 * board's cookie, and a malformed one is logged and ignored.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <iconv.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <umockdev.h>

#include "src/device.h"
#include "testlib.h"

#define GPU_SYS "/sys/devices/0000:00:02.0"
#define CARD_SYS GPU_SYS "/card0"
#define UDEV(key) "udev property " key " of " CARD_SYS

struct state {
	UMockdevTestbed *tb;
	char heaps_d[64];		/* outside the testbed: read as it is */
	char conf[96];
	struct fd_table fds;
	bool have_fds;
};

static char log_text[8192];

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

/*
 * The fd table without sockets: umockdev's preload connects a socket to
 * its testbed for every /dev node opened, even when the open fails (as
 * discovery's of /dev/ion and /dev/udmabuf do here), and keeps it.  The
 * library itself opens no socket, so leaving them out hides none of its
 * fds.
 */
static void fds_without_sockets(struct fd_table *t)
{
	int n = 0;

	fd_table_read(t);
	for (int i = 0; i < t->n; i++) {
		char path[64], target[64];
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", t->fds[i]);
		len = readlink(path, target, sizeof(target) - 1);
		target[len < 0 ? 0 : len] = '\0';
		if (strncmp(target, "socket:", 7) != 0)
			t->fds[n++] = t->fds[i];
	}
	t->n = n;
}

/* The fds of now that before lacks, or -1. */
static int fd_new_since(const struct fd_table *before, const struct fd_table *now)
{
	for (int i = 0; i < now->n; i++) {
		bool known = false;

		for (int k = 0; k < before->n && !known; k++)
			known = before->fds[k] == now->fds[i];
		if (!known)
			return now->fds[i];
	}
	return -1;
}

/*
 * The table as it was before, else a failure naming the fd.  umockdev's
 * threads open and close fds of their own at any time (GIO answering the
 * preload's socket), so a difference counts only if it is still there a
 * second later: a leak of the library's stays, since its context is gone.
 */
static void fds_assert_same(const struct fd_table *before)
{
	struct fd_table now;
	int leaked = -1;

	for (int tries = 0; tries < 20; tries++) {
		if (tries)
			usleep(50 * 1000);
		fds_without_sockets(&now);
		leaked = fd_new_since(before, &now);
		if (leaked < 0 && now.n == before->n)
			return;
	}
	if (leaked >= 0) {
		char path[64], target[256];
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", leaked);
		len = readlink(path, target, sizeof(target) - 1);
		target[len < 0 ? 0 : len] = '\0';
		fail_msg("fd %d leaked (%s)", leaked, target);
	}
	/* None new, so as many means none closed. */
	assert_int_equal(now.n, before->n);
}

static int setup(void **state)
{
	struct state *st = calloc(1, sizeof(*st));

	assert_non_null(st);
	st->tb = umockdev_testbed_new();
	assert_non_null(st->tb);
	/* Without the preload the testbed is invisible, and every test here
	 * would test the machine instead (the testbed says so once made). */
	if (!umockdev_in_mock_environment())
		fail_msg("run this under umockdev-wrapper");
	strcpy(st->heaps_d, "/tmp/libion-udev-XXXXXX");
	assert_non_null(mkdtemp(st->heaps_d));
	snprintf(st->conf, sizeof(st->conf), "%s/50-test.conf", st->heaps_d);
	*state = st;
	return 0;
}

static int teardown(void **state)
{
	struct state *st = *state;

	if (st->have_fds)
		fds_assert_same(&st->fds);
	test_remove_tree(st->heaps_d);
	g_object_unref(st->tb);
	free(st);
	return 0;
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/*
 * A GPU on PCI (in the device tree, no IOMMU, not DMA-coherent: derived
 * Contiguous = yes and PreferUncached) and its card0, which carries the
 * given udev properties ("KEY", "VALUE", ..., NULL).
 */
static void add_card(struct state *st, const char *const *props)
{
	char *root = umockdev_testbed_get_root_dir(st->tb);
	char path[512];
	gchar *gpu, *card;
	char **p = (char **)props;

	/* A 64-bit DMA mask, as PCI devices show one (without it, 32 bits
	 * would be assumed). */
	gpu = umockdev_testbed_add_device(st->tb, "pci", "0000:00:02.0", NULL,
					  "dma_mask_bits", "64", NULL, NULL);
	assert_non_null(gpu);
	assert_string_equal(gpu, GPU_SYS);
	umockdev_testbed_set_attribute_link(st->tb, gpu, "driver", "../../bus/pci/drivers/i915");
	/* The of_node a real directory in the testbed, with a compatible. */
	snprintf(path, sizeof(path), "%s/sys/firmware", root);
	assert_int_equal(mkdir(path, 0755), 0);
	strcat(path, "/gpu");
	assert_int_equal(mkdir(path, 0755), 0);
	strcat(path, "/compatible");
	put(path, "vendor,gpu");
	umockdev_testbed_set_attribute_link(st->tb, gpu, "of_node", "../../firmware/gpu");

	card = umockdev_testbed_add_devicev(st->tb, "drm", "card0", gpu,
					    (char *[]){ "dev", "226:0", NULL }, p);
	assert_non_null(card);
	assert_string_equal(card, CARD_SYS);
	/* umockdev nests the child; the kernel also links it to its parent. */
	umockdev_testbed_set_attribute_link(st->tb, card, "device", "..");
	g_free(card);
	g_free(gpu);
	g_free(root);
}

/* The fd table is taken here, once the testbed has its devices; the
 * group setup made GLib's worker, so no fd of GLib's comes late. */
static struct ion_ctx *new_ctx(struct state *st)
{
	struct ion_ctx *ctx;

	fds_without_sockets(&st->fds);
	st->have_fds = true;

	/* The real root: the only one whose udev database the library reads. */
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, st->heaps_d), 0);
	log_text[0] = '\0';
	ion_ctx_set_log_fn(ctx, log_capture);
	ion_ctx_set_log_priority(ctx, LOG_ERR);
	return ctx;
}

/* The device, and proof that it is the testbed's: what only its sysfs
 * says (subsystem link, parent's driver link, of_node). */
static struct ion_device *get_card(struct ion_ctx *ctx)
{
	struct ion_device *dev = NULL;

	assert_int_equal(ion_ctx_get_device(ctx, CARD_SYS, &dev), 0);
	assert_string_equal(ion_device_get_syspath(dev), CARD_SYS);
	assert_string_equal(ion_device_get_subsystem(dev), "drm");
	assert_string_equal(ion_device_get_driver(dev), "i915");
	assert_non_null(dev->of_compatible);
	assert_string_equal(dev->of_compatible[0], "vendor,gpu");
	return dev;
}

static const char *conf_at(const struct state *st, unsigned int line)
{
	static char text[4][160];
	static unsigned int next;
	char *s = text[next++ % 4];

	snprintf(s, sizeof(text[0]), "%s:%u", st->conf, line);
	return s;
}

/* The constraint exactly: key, value, source triples, NULL-terminated. */
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
			print_error("constraint %d is %s = %s (%s)\n", i, key, value, source);
			if (i < want_n)
				print_error("   want %s = %s (%s)\n", want[i * 3], want[i * 3 + 1],
					    want[i * 3 + 2]);
			ok = false;
		}
	}
	if (n != want_n)
		print_error("%d constraints, want %d\n", n, want_n);
	assert_true(ok && n == want_n);
}

#define CONTIGUOUS_DERIVED "derived: " GPU_SYS "/of_node, no iommu_group: a device-tree DMA master outside any IOMMU"
#define UNCACHED_DERIVED "derived: " GPU_SYS "/of_node has no dma-coherent"

/* Every ION_* property, each a constraint from udev, in the getters'
 * order; ION_CONTIGUOUS = no wins over the derived yes. */
static void test_properties_become_constraints(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;
	struct ion_ctx *ctx;

	add_card(st, (const char *const[]){
		"DEVNAME", "dri/card0",
		"ION_CONTIGUOUS", "no",
		"ION_ADDRESS_BITS", "36",
		"ION_CACHE", "uncached",
		"ION_ALIGNMENT", "65536",
		"ION_KERNEL_MAP", "yes",
		"ION_OWN_BUFFERS_ONLY", "no",
		"ION_POOL", "4x1M 2x8M",
		"ION_UNKNOWN", "whatever",	/* no key: not read */
		NULL });
	ctx = new_ctx(st);
	dev = get_card(ctx);
	expect_constraint(dev, (const char *const[]){
		"Contiguous", "no", UDEV("ION_CONTIGUOUS"),
		"AddressBits", "36", UDEV("ION_ADDRESS_BITS"),
		"Cache", "uncached", UDEV("ION_CACHE"),
		"Alignment", "64K", UDEV("ION_ALIGNMENT"),
		"KernelMap", "yes", UDEV("ION_KERNEL_MAP"),
		"OwnBuffersOnly", "no", UDEV("ION_OWN_BUFFERS_ONLY"),
		"Pool", "4x1M 2x8M", UDEV("ION_POOL"),
		"PreferUncached", "yes", UNCACHED_DERIVED,
		NULL });
	assert_string_equal(log_text, "");
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
}

/*
 * udev over heaps.d key by key (Alignment), heaps.d where udev says
 * nothing (AddressBits), derived where neither does (Contiguous); a
 * section matched by a udev property (MatchUdevProperty) applies too.
 */
static void test_udev_over_heaps_d(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;
	struct ion_ctx *ctx;

	add_card(st, (const char *const[]){
		"ION_ALIGNMENT", "64K",
		"ID_ION_TAG", "camera-front",
		NULL });
	put(st->conf,
	    "[Device gpu]\n"				/* 1 */
	    "MatchSubsystem = drm\n"			/* 2 */
	    "Alignment = 1M\n"				/* 3 */
	    "AddressBits = 36\n"			/* 4 */
	    "[Device tagged]\n"				/* 5 */
	    "MatchUdevProperty = ID_ION_TAG=camera-*\n"	/* 6 */
	    "KernelMap = yes\n"				/* 7 */
	    "[Device untagged]\n"			/* 8 */
	    "MatchUdevProperty = ID_ION_TAG=display\n"	/* 9 */
	    "Cache = cached\n");			/* 10 */
	ctx = new_ctx(st);
	dev = get_card(ctx);
	expect_constraint(dev, (const char *const[]){
		"Contiguous", "yes", CONTIGUOUS_DERIVED,
		"AddressBits", "36", conf_at(st, 4),
		"Alignment", "64K", UDEV("ION_ALIGNMENT"),
		"KernelMap", "yes", conf_at(st, 7),
		"PreferUncached", "yes", UNCACHED_DERIVED,
		NULL });
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
}

/* ION_HEAPS is a complete answer: no derived key, none of heaps.d's
 * Heaps either; heaps.d's other keys still fill in. */
static void test_udev_heaps(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;
	struct ion_ctx *ctx;

	add_card(st, (const char *const[]){ "ION_HEAPS", "reserved  system", NULL });
	put(st->conf,
	    "[Device gpu]\n"			/* 1 */
	    "MatchDriver = i915\n"		/* 2 */
	    "Heaps = gem-i915\n"		/* 3 */
	    "Alignment = 1M\n");		/* 4 */
	ctx = new_ctx(st);
	dev = get_card(ctx);
	expect_constraint(dev, (const char *const[]){
		"Heaps", "reserved system", UDEV("ION_HEAPS"),
		"Alignment", "1M", conf_at(st, 4),
		NULL });
	assert_false(dev->constraint.prefer_uncached);
	/* The facts are read all the same: of_node, mask, coherence. */
	assert_int_equal(ion_device_get_fact_count(dev), 3);
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
}

/* A malformed property is logged and ignored: the next source fills the
 * key, and the other properties stand. */
static void test_malformed_property(void **state)
{
	struct state *st = *state;
	struct ion_device *dev;
	struct ion_ctx *ctx;

	add_card(st, (const char *const[]){
		"ION_ADDRESS_BITS", "65",
		"ION_KERNEL_MAP", "yes",
		NULL });
	put(st->conf, "[Device gpu]\nMatchSubsystem = drm\nAddressBits = 32\n");
	ctx = new_ctx(st);
	dev = get_card(ctx);
	expect_constraint(dev, (const char *const[]){
		"Contiguous", "yes", CONTIGUOUS_DERIVED,
		"AddressBits", "32", conf_at(st, 3),
		"KernelMap", "yes", UDEV("ION_KERNEL_MAP"),
		"PreferUncached", "yes", UNCACHED_DERIVED,
		NULL });
	assert_string_equal(log_text,
			    UDEV("ION_ADDRESS_BITS") ": expected a number of bits from 1 to 64 (ignored)\n");
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
}

/* mkdir -p for a path in the testbed. */
static void testbed_dirs(const struct state *st, const char *rel)
{
	char *root = umockdev_testbed_get_root_dir(st->tb);
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	g_free(root);
	for (char *p = path + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
			*p = '/';
		}
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

/* The whole chain, one key: the board's cookie over udev over heaps.d. */
static void test_cookie_over_udev(void **state)
{
	struct state *st = *state;
	char *root, path[512];
	struct ion_device *dev;
	struct ion_ctx *ctx;

	add_card(st, (const char *const[]){
		"ION_ALIGNMENT", "64K",
		"ION_CACHE", "uncached",
		NULL });
	/* The board, by DMI in the testbed's /sys, names the cookie. */
	testbed_dirs(st, "sys/class/dmi/id");
	root = umockdev_testbed_get_root_dir(st->tb);
	snprintf(path, sizeof(path), "%s/sys/class/dmi/id/sys_vendor", root);
	g_free(root);
	put(path, "LibionTest\n");
	umockdev_testbed_set_attribute(st->tb, CARD_SYS, "ion_constraints", "Alignment = 2M\n");
	put(st->conf,
	    "[Board test]\n"				/* 1 */
	    "MatchDMIVendor = LibionTest\n"		/* 2 */
	    "CookieAttribute = ion_constraints\n"	/* 3 */
	    "[Device gpu]\n"				/* 4 */
	    "MatchSubsystem = drm\n"			/* 5 */
	    "Alignment = 1M\n"				/* 6 */
	    "Cache = cached\n"				/* 7 */
	    "KernelMap = yes\n");			/* 8 */
	ctx = new_ctx(st);
	assert_int_equal(ion_ctx_get_board_count(ctx), 1);
	dev = get_card(ctx);
	expect_constraint(dev, (const char *const[]){
		"Contiguous", "yes", CONTIGUOUS_DERIVED,
		"Cache", "uncached", UDEV("ION_CACHE"),
		"Alignment", "2M", CARD_SYS "/ion_constraints:1",
		"KernelMap", "yes", conf_at(st, 8),
		"PreferUncached", "yes", UNCACHED_DERIVED,
		NULL });
	ion_device_unref(dev);
	ion_ctx_unref(ctx);
}

/* Whether a thread of this process is named name. */
static bool have_thread(const char *name)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;
	bool found = false;

	assert_non_null(dir);
	while (!found && (e = readdir(dir))) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;	/* a thread that just ended */
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
		found = strcmp(comm, name) == 0;
	}
	closedir(dir);
	return found;
}

/*
 * The first testbed's thread starts GLib's worker ("gmain"), whose main
 * context holds an eventfd for the life of the process; it does so on
 * its own time, after umockdev_testbed_new() returns, and under load
 * (valgrind, a busy CI machine) well after.  A test whose fd table was
 * taken before that would see the eventfd as a leak: so a first testbed
 * is made here, and the tests start once the worker exists (the later
 * testbeds open all their fds before umockdev_testbed_new() returns).
 */
static int group_setup(void **state)
{
	UMockdevTestbed *tb;
	iconv_t cd;

	(void)state;
	/* GLib's g_strerror() converts on the testbed's thread, and glibc
	 * opens its gconv cache on the first conversion of the process:
	 * done here, so the tests never see that fd come and go. */
	cd = iconv_open("UTF-8", "ANSI_X3.4-1968");
	assert_true(cd != (iconv_t)-1);
	iconv_close(cd);
	tb = umockdev_testbed_new();
	assert_non_null(tb);
	for (int i = 0; i < 3000 && !have_thread("gmain"); i++)
		usleep(10 * 1000);
	g_object_unref(tb);
	if (!have_thread("gmain"))
		fail_msg("GLib's worker thread did not start within 30 s");
	return 0;
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_properties_become_constraints, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udev_over_heaps_d, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udev_heaps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_property, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cookie_over_udev, setup, teardown),
	};

	return cmocka_run_group_tests_name("udev", tests, group_setup, NULL);
}
