// SPDX-License-Identifier: MIT
/*
 * The platform's DMA facts of a device and the rule over them
 * (platform.h).  Read by path, once per device, at discovery or when a
 * device object is made; never on the allocation path.
 */
#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform.h"
#include "sysfs.h"
#include "util.h"

#define DT_BASE "/sys/firmware/devicetree/base"
/* Deeper than any device tree or sysfs nesting seen; a loop guard. */
#define MAX_DEPTH 32
/* The most masters one subsystem node names (imx6q: 2 IPUs, 4 ports). */
#define MAX_PHANDLES 32

/* ---- small path helpers ---- */

__attribute__((format(printf, 3, 4)))
static int at(const char *root, char **ret, const char *format, ...)
{
	_cleanup_free_ char *rel = NULL;
	va_list args;
	int r;

	va_start(args, format);
	r = vasprintf(&rel, format, args);
	va_end(args);
	if (r < 0 || asprintf(ret, "%s%s", root, rel) < 0)
		return -ENOMEM;
	return 0;
}

/* 1 when path resolves (links followed), 0 when not: then *ret_dangles
 * says whether a link is there all the same.  Or a transient errno. */
static int resolves(const char *path, bool *ret_dangles)
{
	struct stat st;

	if (stat(path, &st) == 0)
		return 1;
	if (ion_errno_transient(-errno))
		return -errno;
	*ret_dangles = lstat(path, &st) == 0;
	return 0;
}

/* The parent folder of an unrooted sysfs path in place; false at
 * /sys/devices, where devices end. */
static bool up(char *path)
{
	char *slash = strrchr(path, '/');

	if (!slash || slash == path || strcmp(path, "/sys/devices") == 0)
		return false;
	*slash = '\0';
	return strcmp(path, "/sys/devices") != 0;
}

bool ion_platform_is_devicetree(const char *root)
{
	_cleanup_free_ char *base = NULL;
	struct stat st;

	return at(root, &base, DT_BASE) == 0 && stat(base, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- the IOMMU ---- */

/*
 * The nearest of devpath and its ancestors whose iommu_group resolves:
 * virtio-gpu's DRM device is a virtio device, whose DMA goes through the
 * PCI function above it.  One that dangles (a group being torn down, a
 * broken copy of sysfs) is no IOMMU, remembered in case no other is found.
 */
static int read_iommu(const char *root, const char *devpath, enum ion_iommu *ret,
		      char **ret_at)
{
	_cleanup_free_ char *path = strdup(devpath), *dangling = NULL;

	if (!path)
		return -ENOMEM;
	do {
		_cleanup_free_ char *group = NULL;
		bool dangles = false;
		int r = at(root, &group, "%s/iommu_group", path);

		if (r == 0)
			r = resolves(group, &dangles);
		if (r < 0)
			return r;
		if (r > 0) {
			*ret = ION_IOMMU_BEHIND;
			*ret_at = steal_ptr(&path);
			return 0;
		}
		if (dangles && !dangling && !(dangling = strdup(path)))
			return -ENOMEM;
	} while (up(path));
	*ret = dangling ? ION_IOMMU_DANGLING : ION_IOMMU_NONE;
	*ret_at = steal_ptr(&dangling);
	return 0;
}

/* ---- the device-tree node ---- */

static int has_of_node(const char *root, const char *devpath)
{
	_cleanup_free_ char *node = NULL;
	bool dangles;

	if (at(root, &node, "%s/of_node", devpath) < 0)
		return -ENOMEM;
	return resolves(node, &dangles);
}

/* The device whose of_node speaks for devpath: its own, else (for a
 * platform device on a device-tree machine) its nearest ancestor's. */
static int read_node(const char *root, const char *devpath, struct ion_dma_facts *f)
{
	_cleanup_free_ char *path = strdup(devpath);
	int r;

	if (!path)
		return -ENOMEM;
	r = has_of_node(root, path);
	if (r != 0) {
		f->node = ION_DT_OWN;
		f->node_at = steal_ptr(&path);
		return r < 0 ? r : 0;
	}
	if (!f->bus || strcmp(f->bus, "platform") != 0 || !ion_platform_is_devicetree(root))
		return 0;
	while (up(path)) {
		r = has_of_node(root, path);
		if (r < 0)
			return r;
		if (r > 0) {
			f->node = ION_DT_PARENT;
			f->node_at = steal_ptr(&path);
			return 0;
		}
	}
	f->node = ION_DT_UNKNOWN;
	return 0;
}

/* ---- PCI's DMA mask ---- */

/* PCI's default mask is 32 bits (pci_setup_device()); a mask that cannot
 * be read or is garbage is taken as that, and the problem said. */
static int read_mask(const char *root, const char *devpath, struct ion_dma_facts *f)
{
	_cleanup_free_ char *dir = NULL, *text = NULL;
	_cleanup_close_ int fd = -1;
	uint64_t bits = 0;
	int r;

	if (at(root, &dir, "%s", devpath) < 0)
		return -ENOMEM;
	fd = ion_sysfs_open_dir(AT_FDCWD, dir);
	r = fd < 0 ? fd : ion_sysfs_read_at(fd, "dma_mask_bits", &text, NULL);
	if (ion_errno_transient(r))
		return r;
	if (r == 0 && ion_parse_u64(text, 10, &bits) == 0 && bits >= 1 && bits <= 64) {
		f->mask_bits = (unsigned int)bits;
		return 0;
	}
	f->mask_bits = 32;
	if (r < 0)
		r = asprintf(&f->mask_problem, "unreadable (%s)",
			     r == -EINVAL ? "not a regular file" : strerror(-r));
	else
		r = asprintf(&f->mask_problem, "\"%.16s\", no number of bits", text);
	if (r < 0) {
		f->mask_problem = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* ---- the masters of a virtual subsystem node ---- */

/* The phandles a property holds (big-endian cells); 0 when it has none. */
static size_t read_phandles(const char *node, const char *prop, uint32_t *out, size_t max)
{
	_cleanup_free_ char *path = NULL, *text = NULL;
	size_t len = 0, n = 0;

	if (asprintf(&path, "%s/%s", node, prop) < 0)
		return 0;
	if (ion_read_file(path, 4096, &text, &len) < 0)
		return 0;
	for (size_t i = 0; i + 4 <= len && n < max; i += 4) {
		const unsigned char *c = (const unsigned char *)text + i;

		out[n++] = (uint32_t)c[0] << 24 | (uint32_t)c[1] << 16 | (uint32_t)c[2] << 8 | c[3];
	}
	return n;
}

/* Finds the nodes under dir with the phandles wanted, into found[]. */
static void find_phandles(const char *dir, const uint32_t *want, char **found, size_t n,
			  int depth)
{
	DIR *d;
	struct dirent *e;
	uint32_t ph;

	if (depth > MAX_DEPTH || read_phandles(dir, "phandle", &ph, 1) == 0)
		ph = 0;
	for (size_t i = 0; ph && i < n; i++)
		if (want[i] == ph && !found[i])
			found[i] = strdup(dir);
	d = depth > MAX_DEPTH ? NULL : opendir(dir);
	while (d && (e = readdir(d))) {
		_cleanup_free_ char *sub = NULL;

		/* Folders are nodes; a file system that does not say which
		 * is which costs an opendir() that fails on each property. */
		if ((e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) || e->d_name[0] == '.')
			continue;
		if (asprintf(&sub, "%s/%s", dir, e->d_name) >= 0)
			find_phandles(sub, want, found, n, depth + 1);
	}
	if (d)
		closedir(d);
}

/* The node itself or its nearest ancestor with a compatible: the device
 * a port or endpoint belongs to.  In place; false when there is none. */
static bool owning_device(char *node, size_t base_len)
{
	for (;;) {
		_cleanup_free_ char *compat = NULL;
		char *slash = strrchr(node, '/');
		struct stat st;

		if (asprintf(&compat, "%s/compatible", node) >= 0 && stat(compat, &st) == 0)
			return true;
		if (!slash || (size_t)(slash - node) < base_len)
			return false;
		*slash = '\0';
	}
}

/* Whether the node is enabled (no status, or "okay"/"ok"). */
static bool node_enabled(const char *node)
{
	_cleanup_free_ char *path = NULL, *status = NULL;
	size_t len;

	if (asprintf(&path, "%s/status", node) < 0 || ion_read_file(path, 64, &status, &len) < 0)
		return true;
	return strcmp(status, "okay") == 0 || strcmp(status, "ok") == 0;
}

/* The platform device whose of_node is the node (real path, rooted). */
static int device_of_node(const char *root, const char *node, char **ret)
{
	_cleanup_free_ char *bus = NULL;
	struct dirent *e;
	DIR *d;
	int r = 0;

	if (at(root, &bus, "/sys/bus/platform/devices") < 0)
		return -ENOMEM;
	d = opendir(bus);
	if (!d)
		return ion_errno_transient(-errno) ? -errno : 0;
	while (r == 0 && !*ret && (e = readdir(d))) {
		_cleanup_free_ char *link = NULL, *real = NULL, *dev = NULL;

		if (e->d_name[0] == '.')
			continue;
		if (asprintf(&link, "%s/%s/of_node", bus, e->d_name) < 0 ||
		    asprintf(&dev, "%s/%s", bus, e->d_name) < 0) {
			r = -ENOMEM;
			break;
		}
		real = realpath(link, NULL);
		if (real && strcmp(real, node) == 0) {
			*ret = realpath(dev, NULL);
			if (!*ret && errno == ENOMEM)
				r = -ENOMEM;
		}
	}
	closedir(d);
	return r;
}

static int add_master(const char *root, size_t root_len, struct ion_dma_facts *f,
		      char *node, size_t base_len)
{
	_cleanup_free_ char *dev = NULL;
	struct ion_dma_master *m, *grown;
	int r;

	for (size_t i = 0; i < f->n_masters; i++)
		if (strcmp(f->masters[i].node, node + base_len) == 0)
			return 0;
	r = device_of_node(root, node, &dev);
	if (r < 0)
		return r;
	grown = realloc(f->masters, (f->n_masters + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	f->masters = grown;
	m = &f->masters[f->n_masters];
	*m = (struct ion_dma_master){ .node = strdup(node + base_len) };
	if (!m->node)
		return -ENOMEM;
	f->n_masters++;
	if (!dev || strncmp(dev, root, root_len) != 0)
		return 0; /* no platform device: not probed */
	m->device = strdup(dev + root_len);
	if (!m->device)
		return -ENOMEM;
	return read_iommu(root, m->device, &m->iommu, &m->iommu_at);
}

/*
 * The DMA masters that a device's own node names: rockchip's and
 * imx-drm's display-subsystem list the ports of their VOPs and IPUs in
 * "ports", sun4i-drm's display-engine its mixers or backends in
 * "allwinner,pipelines" (Documentation/devicetree/bindings/display/
 * rockchip/rockchip-drm.yaml, imx/fsl-imx-drm.txt and
 * allwinner,sun4i-a10-display-engine.yaml); imx-media's
 * capture-subsystem lists its CSIs' ports the same way (bindings/media/
 * imx.txt).  A node that names neither does its own DMA.
 */
static int read_masters(const char *root, struct ion_dma_facts *f)
{
	static const char *const props[] = { "ports", "allwinner,pipelines" };
	_cleanup_free_ char *link = NULL, *node = NULL, *base = NULL, *real_root = NULL;
	uint32_t ph[MAX_PHANDLES];
	char *found[MAX_PHANDLES] = { 0 };
	size_t n = 0, base_len;
	int r = 0;

	if (f->node != ION_DT_OWN)
		return 0;
	if (at(root, &link, "%s/of_node", f->node_at) < 0)
		return -ENOMEM;
	node = realpath(link, NULL);
	real_root = root[0] ? realpath(root, NULL) : strdup("");
	if (!node || !real_root)
		return errno == ENOMEM ? -ENOMEM : 0;
	for (size_t p = 0; p < 2 && !n; p++) {
		n = read_phandles(node, props[p], ph, MAX_PHANDLES);
		if (n)
			f->graph = props[p];
	}
	if (!n)
		return 0;
	if (asprintf(&base, "%s" DT_BASE, real_root) < 0)
		return -ENOMEM;
	base_len = strlen(base);
	find_phandles(base, ph, found, n, 0);
	for (size_t i = 0; i < n; i++) {
		if (r == 0 && found[i] && owning_device(found[i], base_len) &&
		    node_enabled(found[i]))
			r = add_master(real_root, strlen(real_root), f, found[i], base_len);
		free(found[i]);
	}
	return r;
}

/* ---- the facts and the rule ---- */

void ion_dma_facts_clear(struct ion_dma_facts *f)
{
	free(f->bus);
	free(f->iommu_at);
	free(f->node_at);
	free(f->mask_problem);
	for (size_t i = 0; i < f->n_masters; i++) {
		free(f->masters[i].node);
		free(f->masters[i].device);
		free(f->masters[i].iommu_at);
	}
	free(f->masters);
	*f = (struct ion_dma_facts){ 0 };
}

int ion_platform_read(const char *root, const char *devpath, struct ion_dma_facts *ret)
{
	struct ion_dma_facts f = { 0 };
	_cleanup_free_ char *dir = NULL;
	_cleanup_close_ int fd = -1;
	int r;

	if (at(root, &dir, "%s", devpath) < 0)
		return -ENOMEM;
	fd = ion_sysfs_open_dir(AT_FDCWD, dir);
	r = fd < 0 ? fd : ion_sysfs_link_name_at(fd, "subsystem", &f.bus);
	r = ion_errno_transient(r) ? r : 0;
	if (r == 0)
		r = read_iommu(root, devpath, &f.iommu, &f.iommu_at);
	if (r == 0)
		r = read_node(root, devpath, &f);
	if (r == 0 && f.node_at) {
		_cleanup_free_ char *coherent = NULL;
		bool dangles;

		r = at(root, &coherent, "%s/of_node/dma-coherent", f.node_at);
		if (r == 0)
			r = resolves(coherent, &dangles);
		f.coherent = r > 0;
		r = r > 0 ? 0 : r;
	}
	if (r == 0 && f.bus && strcmp(f.bus, "pci") == 0)
		r = read_mask(root, devpath, &f);
	if (r == 0 && f.iommu != ION_IOMMU_BEHIND)
		r = read_masters(root, &f);
	if (r < 0) {
		ion_dma_facts_clear(&f);
		return r;
	}
	*ret = f;
	return 0;
}

enum ion_dma_need ion_dma_master_need(const struct ion_dma_master *m)
{
	if (!m->device)
		return ION_DMA_CONTIGUOUS_ASSUMED; /* not probed: nothing to ask */
	if (m->iommu == ION_IOMMU_BEHIND)
		return ION_DMA_SCATTER;
	return m->iommu == ION_IOMMU_DANGLING ? ION_DMA_CONTIGUOUS_ASSUMED : ION_DMA_CONTIGUOUS;
}

enum ion_dma_need ion_dma_need(const struct ion_dma_facts *f)
{
	bool contiguous = false, assumed = false;

	if (f->iommu == ION_IOMMU_BEHIND)
		return ION_DMA_SCATTER;
	/* The AND of the masters: one that sees physical addresses decides,
	 * then one whose facts are missing. */
	for (size_t i = 0; i < f->n_masters; i++) {
		enum ion_dma_need m = ion_dma_master_need(&f->masters[i]);

		contiguous |= m == ION_DMA_CONTIGUOUS;
		assumed |= m == ION_DMA_CONTIGUOUS_ASSUMED;
	}
	if (f->n_masters)
		return contiguous ? ION_DMA_CONTIGUOUS
		       : assumed ? ION_DMA_CONTIGUOUS_ASSUMED : ION_DMA_SCATTER;
	switch (f->node) {
	case ION_DT_OWN:
	case ION_DT_PARENT:
		/* A group that dangles is counted as none, but not known. */
		return f->iommu == ION_IOMMU_DANGLING ? ION_DMA_CONTIGUOUS_ASSUMED
						      : ION_DMA_CONTIGUOUS;
	case ION_DT_UNKNOWN:
		return ION_DMA_CONTIGUOUS_ASSUMED;
	case ION_DT_NONE:
		break;
	}
	return ION_DMA_NOTHING_KNOWN;
}
