// SPDX-License-Identifier: MIT
/*
 * The board's identity, for matching heaps.d [Board] sections: the device
 * tree's compatible list and model, and DMI strings on ACPI machines.
 * Anything missing or unreadable is "not known", never an error: a board
 * file that needs it simply does not match.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <dirent.h>

#include "heaps-conf.h"
#include "sysfs.h"
#include "util.h"

/* A compatible list is a few hundred bytes; anything far larger is not one. */
#define BOARD_FILE_MAX (64 * 1024)

/*
 * sysroot + rel, read whole; *ret_text NULL when the file is missing or
 * not a readable regular file.
 */
static int read_under(const char *sysroot, const char *rel, char **ret_text,
		      size_t *ret_len)
{
	_cleanup_free_ char *path = NULL;
	int r;

	if (asprintf(&path, "%s%s", sysroot, rel) < 0)
		return -ENOMEM;
	r = ion_read_file(path, BOARD_FILE_MAX, ret_text, ret_len);
	if (r < 0 && ion_errno_transient(r))
		return r;
	if (r < 0) {
		*ret_text = NULL;
		*ret_len = 0;
	}
	return 0;
}

/* /proc/device-tree is a symlink to the sysfs copy, absent in chroots. */
static int read_dt(const char *sysroot, const char *name, char **ret_text,
		   size_t *ret_len)
{
	char rel[64];
	int r;

	snprintf(rel, sizeof(rel), "/proc/device-tree/%s", name);
	r = read_under(sysroot, rel, ret_text, ret_len);
	if (r < 0 || *ret_text)
		return r;
	snprintf(rel, sizeof(rel), "/sys/firmware/devicetree/base/%s", name);
	return read_under(sysroot, rel, ret_text, ret_len);
}

/* The first string of a file (DT model, DMI attribute), newline stripped;
 * NULL when the file is missing or the string empty. */
static int first_string(char *text, char **ret)
{
	size_t len;

	if (!text) {
		*ret = NULL;
		return 0;
	}
	len = strlen(text);
	if (len && text[len - 1] == '\n')
		text[--len] = '\0';
	if (!len) {
		*ret = NULL;
		return 0;
	}
	*ret = strdup(text);
	return *ret ? 0 : -ENOMEM;
}

void ion_board_facts_clear(struct ion_board_facts *facts)
{
	if (!facts)
		return;
	ion_strv_free(facts->compatible);
	free(facts->model);
	free(facts->dmi_vendor);
	free(facts->dmi_product);
	free(facts->dmi_board);
	memset(facts, 0, sizeof(*facts));
}

int ion_board_read(const char *sysroot, struct ion_board_facts *ret)
{
	static const char *const dmi[] = {
		"/sys/class/dmi/id/sys_vendor",
		"/sys/class/dmi/id/product_name",
		"/sys/class/dmi/id/board_name",
	};
	struct ion_board_facts f = { 0 };
	char **dmi_fields[] = { &f.dmi_vendor, &f.dmi_product, &f.dmi_board };
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	if (!ret)
		return -EINVAL;
	if (!sysroot || strcmp(sysroot, "/") == 0)
		sysroot = "";

	r = read_dt(sysroot, "compatible", &text, &len);
	if (r < 0)
		goto fail;
	f.compatible = ion_split_nul_list(text ? text : "", text ? len : 0);
	if (!f.compatible) {
		r = -ENOMEM;
		goto fail;
	}
	free(steal_ptr(&text));

	r = read_dt(sysroot, "model", &text, &len);
	if (r == 0)
		r = first_string(text, &f.model);
	if (r < 0)
		goto fail;
	free(steal_ptr(&text));

	for (size_t i = 0; i < sizeof(dmi) / sizeof(dmi[0]); i++) {
		r = read_under(sysroot, dmi[i], &text, &len);
		if (r == 0)
			r = first_string(text, dmi_fields[i]);
		if (r < 0)
			goto fail;
		free(steal_ptr(&text));
	}
	*ret = f;
	return 0;
fail:
	ion_board_facts_clear(&f);
	return r;
}

/* ---- where memory ends ---- */

/* A root's #address-cells or #size-cells: 1 and 2 are what memory nodes
 * use, 3 and 4 still fit a reg (their upper cells must be 0). */
#define DT_CELLS_MAX 4

/* The device tree being read, and where to say what of it is ignored. */
struct dt_reader {
	const char *sysroot;
	ion_conf_error_fn log_fn;	/* or NULL */
	void *userdata;
};

/* Says that what the device tree's property rel holds is ignored, and why. */
__attribute__((format(printf, 3, 4)))
static void dt_ignored(const struct dt_reader *dt, const char *rel, const char *format, ...)
{
	char path[128], message[256];
	va_list ap;

	if (!dt->log_fn)
		return;
	va_start(ap, format);
	vsnprintf(message, sizeof(message), format, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "/proc/device-tree/%s", rel);
	dt->log_fn(dt->userdata, path, 0, message);
}

/*
 * A big-endian value of cells 32-bit cells, if it fits 64 bits: cells
 * beyond the low two must be 0.  Shifted in regardless, a wider one would
 * keep only its low 64 bits, and a memory range read so could end
 * anywhere.
 */
static bool dt_value(const unsigned char *p, unsigned int cells, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < cells; i++, p += 4) {
		if (i + 2 < cells && (p[0] | p[1] | p[2] | p[3]))
			return false;
		v = v << 32 | (uint64_t)p[0] << 24 | (uint64_t)p[1] << 16 |
		    (uint64_t)p[2] << 8 | p[3];
	}
	*ret = v;
	return true;
}

/*
 * The root's cell count name: dflt when the tree does not say (the
 * device-tree spec's defaults), 0 when it says what no root can have (a
 * count of 0 or past DT_CELLS_MAX, a property not one cell long), logged:
 * its memory nodes cannot be read then (replaced by the default, every
 * range would be read at the wrong offsets).
 */
static int dt_cells(const struct dt_reader *dt, const char *name, unsigned int dflt,
		    unsigned int *ret)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	uint64_t v = 0;
	int r = read_dt(dt->sysroot, name, &text, &len);

	if (r < 0)
		return r;
	if (!text) {
		*ret = dflt;
		return 0;
	}
	if (len == 4)
		dt_value((unsigned char *)text, 1, &v);
	*ret = len == 4 && v >= 1 && v <= DT_CELLS_MAX ? (unsigned int)v : 0;
	if (!*ret)
		dt_ignored(dt, name, "%" PRIu64 " (%zu bytes): no memory node can be read with it; ignored",
			   v, len);
	return 0;
}

/*
 * Where one reg range of a memory node ends, or 0 for one that says the
 * impossible (a value wider than 64 bits, size 0, base + size past 2^64,
 * which would wrap to a low end and put every heap below it), logged:
 * the firmware's mistake is no reason to fail.
 */
static uint64_t dt_range_end(const struct dt_reader *dt, const char *rel,
			     const unsigned char *reg, unsigned int ac, unsigned int sc)
{
	uint64_t base, size;

	if (!dt_value(reg, ac, &base) || !dt_value(reg + 4 * ac, sc, &size)) {
		char cells[2 * DT_CELLS_MAX * 9 + 1] = ""; /* " %08x" a cell */

		for (unsigned int i = 0; i < ac + sc; i++)
			snprintf(cells + 9 * i, sizeof(cells) - 9 * i, " %02x%02x%02x%02x",
				 reg[4 * i], reg[4 * i + 1], reg[4 * i + 2], reg[4 * i + 3]);
		dt_ignored(dt, rel, "a value wider than 64 bits (%u address and %u size cells:%s); range ignored",
			   ac, sc, cells);
		return 0;
	}
	if (size == 0 || size > UINT64_MAX - base) {
		dt_ignored(dt, rel, "base 0x%" PRIx64 " + size 0x%" PRIx64 " %s; range ignored", base,
			   size, size ? "passes 2^64" : "is no memory");
		return 0;
	}
	return base + size;
}

/* A memory node's reg: the highest end of its ranges into *end. */
static int dt_node_end(const struct dt_reader *dt, const char *node, unsigned int ac,
		       unsigned int sc, uint64_t *end)
{
	_cleanup_free_ char *reg = NULL, *rel = NULL;
	size_t len = 0;
	int r;

	if (asprintf(&rel, "%s/reg", node) < 0)
		return -ENOMEM;
	r = read_dt(dt->sysroot, rel, &reg, &len);
	for (size_t off = 0; r == 0 && reg && off + 4 * (ac + sc) <= len; off += 4 * (ac + sc)) {
		uint64_t e = dt_range_end(dt, rel, (unsigned char *)reg + off, ac, sc);

		if (e > *end)
			*end = e;
	}
	return r;
}

static bool is_memory_node(const char *name)
{
	return strncmp(name, "memory", 6) == 0 && (name[6] == '\0' || name[6] == '@');
}

/* The device tree's memory nodes: the highest end of their reg ranges. */
static int dt_memory_end(const struct dt_reader *dt, uint64_t *end)
{
	_cleanup_free_ char *dir = NULL;
	unsigned int ac, sc;
	struct dirent **names;
	int n, r;

	r = dt_cells(dt, "#address-cells", 2, &ac);
	if (r == 0)
		r = dt_cells(dt, "#size-cells", 1, &sc);
	if (r < 0 || !ac || !sc)
		return r;
	if (asprintf(&dir, "%s/proc/device-tree", dt->sysroot) < 0)
		return -ENOMEM;
	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0)
		return ion_errno_transient(-errno) ? -errno : 0;
	for (int i = 0; i < n; i++) {
		if (r == 0 && is_memory_node(names[i]->d_name))
			r = dt_node_end(dt, names[i]->d_name, ac, sc, end);
		free(names[i]);
	}
	free(names);
	return r;
}

/* x86: the firmware's map, readable without root. */
static int memmap_end(const char *sysroot, uint64_t *end)
{
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int dir = -1;
	struct dirent **names;
	int n;

	if (asprintf(&path, "%s/sys/firmware/memmap", sysroot) < 0)
		return -ENOMEM;
	dir = ion_sysfs_open_dir(AT_FDCWD, path);
	if (dir < 0)
		return ion_errno_transient(dir) ? dir : 0;
	n = scandir(path, &names, NULL, NULL);
	if (n < 0 && ion_errno_transient(-errno))
		return -errno;
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *type = NULL, *last = NULL;
		_cleanup_close_ int entry = -1;
		uint64_t e;

		if (names[i]->d_name[0] != '.' &&
		    (entry = ion_sysfs_open_dir(dir, names[i]->d_name)) >= 0 &&
		    ion_sysfs_read_at(entry, "type", &type, NULL) == 0 &&
		    strcmp(type, "System RAM") == 0 &&
		    ion_sysfs_read_at(entry, "end", &last, NULL) == 0 &&
		    ion_parse_u64(last, 16, &e) == 0 && e + 1 > *end)
			*end = e + 1;
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	return 0;
}

/* Memory hotplug's blocks: memoryN, each block_size_bytes long. */
static int memory_blocks_end(const char *sysroot, uint64_t *end)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	_cleanup_close_ int dir = -1;
	struct dirent **names;
	uint64_t block, top = 0;
	int n;

	if (asprintf(&path, "%s/sys/devices/system/memory", sysroot) < 0)
		return -ENOMEM;
	dir = ion_sysfs_open_dir(AT_FDCWD, path);
	if (dir < 0)
		return ion_errno_transient(dir) ? dir : 0;
	if (ion_sysfs_read_at(dir, "block_size_bytes", &text, NULL) < 0 ||
	    ion_parse_u64(text, 16, &block) < 0 || !block)
		return 0;
	n = scandir(path, &names, NULL, NULL);
	if (n < 0 && ion_errno_transient(-errno))
		return -errno;
	for (int i = 0; i < n; i++) {
		uint64_t index;

		if (strncmp(names[i]->d_name, "memory", 6) == 0 &&
		    ion_parse_u64(names[i]->d_name + 6, 10, &index) == 0 && index + 1 > top)
			top = index + 1;
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	if (top && top * block > *end)
		*end = top * block;
	return 0;
}

int ion_board_read_memory(const char *sysroot, ion_conf_error_fn log_fn, void *userdata,
			  struct ion_board_memory *ret)
{
	_cleanup_free_ char *text = NULL;
	struct ion_board_memory m = { 0 };
	struct dt_reader dt;
	size_t len;
	int r;

	if (!sysroot || strcmp(sysroot, "/") == 0)
		sysroot = "";
	dt = (struct dt_reader){ sysroot, log_fn, userdata };
	/* Where memory ends, not how much there is: RAM on many SoCs starts
	 * at 2 GiB, and some put part of it above 4 GiB. */
	r = dt_memory_end(&dt, &m.end);
	if (r == 0 && !m.end)
		r = memmap_end(sysroot, &m.end);
	if (r == 0 && !m.end)
		r = memory_blocks_end(sysroot, &m.end);
	if (r == 0)
		r = read_under(sysroot, "/proc/meminfo", &text, &len);
	if (r < 0)
		return r;
	if (text) {
		const char *total = strstr(text, "MemTotal:");
		const char *cma = strstr(text, "CmaTotal:");
		unsigned long long kib;

		if (total && sscanf(total, "MemTotal: %llu kB", &kib) == 1 && kib < (1ULL << 53))
			m.total = (uint64_t)kib << 10;
		if (cma && sscanf(cma, "CmaTotal: %llu kB", &kib) == 1 && kib < (1ULL << 53))
			m.cma_total = (uint64_t)kib << 10;
	}
	*ret = m;
	return 0;
}
