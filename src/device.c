// SPDX-License-Identifier: MIT
/*
 * Devices and their constraints.  A device object is made once, from a
 * /dev node, a sysfs path or a heaps.d name; it reads what sysfs and the
 * udev database say of the device then, and never again.
 *
 * Its constraint comes from, in this order of precedence, key by key:
 *  1. a sysfs attribute that the board names (CookieAttribute): the
 *     2013 proposal's "heap cookie", which a vendor kernel can export;
 *  2. udev properties (ION_HEAPS, ION_CONTIGUOUS, ...) set by rules or
 *     hwdb;
 *  3. heaps.d [Device] sections that match the device;
 *  4. facts derived from sysfs, only for a device no source above gives
 *     a Heaps list: behind an IOMMU, scattered memory is fine; a
 *     device-tree DMA master outside any IOMMU needs contiguous memory;
 *     a DMA mask narrower than the machine's memory needs a heap whose
 *     addresses fit.
 * A DRM device's own dumb-buffer heap fits it whatever the rest says.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "config.h"

#if HAVE_LIBUDEV
#include <libudev.h>
#endif

#include <ion/ion.h>

#include "device.h"
#include "registry.h"
#include "sysfs.h"
#include "uapi/drm.h"
#include "uapi/videodev2.h"

/* A string the device owns, for a constraint's source to point at. */
__attribute__((format(printf, 2, 3)))
static const char *own_string(struct ion_device *dev, const char *format, ...)
{
	size_t n = 0;
	char **grown, *s;
	va_list args;
	int r;

	va_start(args, format);
	r = vasprintf(&s, format, args);
	va_end(args);
	if (r < 0)
		return NULL;
	while (dev->strings && dev->strings[n])
		n++;
	grown = realloc(dev->strings, (n + 2) * sizeof(*grown));
	if (!grown) {
		free(s);
		return NULL;
	}
	grown[n] = s;
	grown[n + 1] = NULL;
	dev->strings = grown;
	return s;
}

static void device_free(struct ion_device *dev)
{
	free(dev->name);
	free(dev->devnode);
	free(dev->syspath);
	free(dev->parent);
	free(dev->subsystem);
	free(dev->bus);
	free(dev->driver);
	free(dev->label);
	free(dev->drm_driver);
	free(dev->v4l2_card);
	ion_strv_free(dev->of_compatible);
	ion_strv_free(dev->udev_properties);
	ion_strv_free(dev->sections);
	free(dev->constraint.own_heap);
	ion_conf_props_clear(&dev->constraint.props);
	ion_attrs_clear(&dev->facts);
	if (dev->view) {
		struct ion_attrs *view = atomic_load_explicit(dev->view, memory_order_acquire);

		if (view)
			ion_attrs_clear(view);
		free(view);
		free(dev->view);
	}
	ion_strv_free(dev->strings);
	free(dev);
}

void ion_device_release(struct ion_device *dev)
{
	if (dev && atomic_fetch_sub_explicit(&dev->refcount, 1, memory_order_acq_rel) == 1)
		device_free(dev);
}

/* ---- reading sysfs ---- */

char *ion_device_canonical(struct ion_ctx *ctx, const struct ion_registry *reg,
			   const char *path, int *ret_error)
{
	_cleanup_free_ char *full = ion_ctx_path(ctx, path), *real = NULL;
	char *p;

	*ret_error = -ENOMEM;
	if (!full)
		return NULL;
	real = realpath(full, NULL);
	p = real ? ion_ctx_unroot(ctx, reg->root, real) : NULL;
	if (!p)
		*ret_error = ion_errno_transient(-errno) ? -errno : -ENODEV;
	return p;
}

/* Removes "." and "name/.." from an absolute path, in place. */
static void normalize(char *path)
{
	char *out = path, *in = path;

	while (*in) {
		while (*in == '/')
			in++;
		if (!*in)
			break;
		if (in[0] == '.' && (in[1] == '/' || !in[1])) {
			in++;
		} else if (in[0] == '.' && in[1] == '.' && (in[2] == '/' || !in[2])) {
			in += 2;
			while (out > path && *--out != '/')
				;
		} else {
			*out++ = '/';
			while (*in && *in != '/')
				*out++ = *in++;
		}
	}
	if (out == path)
		*out++ = '/';
	*out = '\0';
}

/*
 * The same for a sysfs path whose folders are real and whose last
 * component may be a relative link (a class entry, a "device" link): what
 * realpath() would answer, with one readlink per link instead of one per
 * component.  Anything else takes realpath().
 */
static char *resolve(struct ion_ctx *ctx, const struct ion_registry *reg,
		     const char *path, int *ret_error)
{
	_cleanup_free_ char *cur = strdup(path);

	*ret_error = -ENOMEM;
	for (int hops = 0; cur && hops < 8; hops++) {
		_cleanup_free_ char *full = ion_ctx_path(ctx, cur), *joined = NULL;
		char target[PATH_MAX];
		ssize_t n;

		if (!full)
			return NULL;
		n = readlink(full, target, sizeof(target) - 1);
		if (n < 0 && errno == EINVAL)
			return steal_ptr(&cur); /* no link: there it is */
		if (n < 0 || target[0] == '/') {
			if (n < 0 && errno != ENOENT && errno != ENOTDIR)
				break;
			*ret_error = -ENODEV;
			return n < 0 ? NULL : ion_device_canonical(ctx, reg, path, ret_error);
		}
		target[n] = '\0';
		*strrchr(cur, '/') = '\0';
		if (asprintf(&joined, "%s/%s", cur, target) < 0)
			return NULL;
		normalize(joined);
		free(cur);
		cur = steal_ptr(&joined);
	}
	return ion_device_canonical(ctx, reg, path, ret_error);
}

/*
 * While a device is read: its class directory and its parent's, open, so
 * that each attribute costs one lookup of its own name only.
 */
struct dirs {
	int dev;
	int parent;	/* or -1 */
};

static int read_uevent(const struct dirs *d, struct ion_device *dev)
{
	_cleanup_free_ char *text = NULL;
	unsigned int major = 0, minor = 0;
	bool has_major = false, has_minor = false;
	char *save = NULL;
	int r;

	r = ion_sysfs_read_at(d->dev, "uevent", &text, NULL);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return 0;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint64_t v;

		if (strncmp(line, "DEVNAME=", 8) == 0 && line[8] && !dev->devnode) {
			if (asprintf(&dev->devnode, "/dev/%s", line + 8) < 0) {
				dev->devnode = NULL;
				return -ENOMEM;
			}
		} else if (strncmp(line, "MAJOR=", 6) == 0 && ion_parse_u64(line + 6, 10, &v) == 0 &&
			   v <= UINT_MAX) {
			major = (unsigned int)v;
			has_major = true;
		} else if (strncmp(line, "MINOR=", 6) == 0 && ion_parse_u64(line + 6, 10, &v) == 0 &&
			   v <= UINT_MAX) {
			minor = (unsigned int)v;
			has_minor = true;
		}
	}
	if (has_major && has_minor) {
		dev->devnum = makedev(major, minor);
		dev->has_devnum = true;
	}
	return 0;
}

/* Reads an optional attribute: only a transient error counts (out of
 * memory or fds), so that a full fd table never reads as a missing fact. */
static int optional(int r)
{
	return ion_errno_transient(r) ? r : 0;
}

static int read_v4l2_card(struct ion_ctx *ctx, struct ion_device *dev)
{
	_cleanup_free_ char *node = NULL;
	_cleanup_close_ int fd = -1;
	struct v4l2_capability cap;
	struct stat st;

	if (!dev->devnode || !dev->has_devnum)
		return 0;
	node = ion_ctx_path(ctx, dev->devnode);
	if (!node)
		return -ENOMEM;
	/* Only the very node sysfs speaks of: never open a FIFO or a file. */
	if (stat(node, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != dev->devnum)
		return 0;
	fd = open(node, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		/* A full fd table says nothing of the device: fail, so that a
		 * MatchV4L2Card rule is not silently lost for the device's life. */
		return ion_errno_transient(-errno) ? -errno : 0;
	if (ion_ioctl_retry(fd, VIDIOC_QUERYCAP, &cap) < 0)
		return 0;
	cap.card[sizeof(cap.card) - 1] = '\0';
	dev->v4l2_card = strdup((const char *)cap.card);
	return dev->v4l2_card ? 0 : -ENOMEM;
}

/* The GEM heap of the DRM device at parent, if discovery found one. */
static const struct ion_heap *own_gem_heap(const struct ion_registry *reg,
					   const char *parent)
{
	for (unsigned int i = 0; parent && i < reg->n_heaps; i++) {
		const struct ion_heap *h = reg->heaps[i];

		if (h->sysfs_device && strcmp(h->sysfs_device, parent) == 0)
			return h;
	}
	return NULL;
}

/*
 * DRM_IOCTL_VERSION's name.  GEM discovery asked it of a device with
 * dumb buffers; a render-only GPU (v3d, panfrost, etnaviv) is asked here
 * through its render node, which makes no one DRM master.  The kernel
 * driver's name stands in where neither can be asked.
 */
static int read_drm_driver(struct ion_ctx *ctx, const struct ion_registry *reg,
			   struct ion_device *dev)
{
	const struct ion_heap *own = own_gem_heap(reg, dev->parent);
	_cleanup_free_ char *drm_dir = NULL;
	struct dirent **names;
	int n, r = 0;

	/* A GEM heap that could not learn the name carries its node's. */
	if (own && strcmp(own->kernel_name, own->name) != 0)
		return (dev->drm_driver = strdup(own->kernel_name)) ? 0 : -ENOMEM;
	if (dev->parent && asprintf(&drm_dir, "%s%s/drm", ion_ctx_sysroot(ctx), dev->parent) < 0)
		return -ENOMEM;
	errno = ENOENT;
	n = drm_dir ? scandir(drm_dir, &names, NULL, alphasort) : -1;
	if (n < 0 && ion_errno_transient(-errno))
		return -errno;
	for (int i = 0; i < n; i++) {
		char node[64], name[64] = "";
		struct drm_version v = { .name = name, .name_len = sizeof(name) - 1 };
		_cleanup_free_ char *path = NULL;
		const char *why;
		int fd;

		if (!dev->drm_driver && strncmp(names[i]->d_name, "renderD", 7) == 0 &&
		    snprintf(node, sizeof(node), "/dev/dri/%s", names[i]->d_name) > 0 &&
		    (path = ion_ctx_path(ctx, node))) {
			fd = ion_open_device_node(ion_ctx_sysroot(ctx), path, O_RDWR, "drm", NULL, &why);
			if (ion_errno_transient(fd)) {
				r = fd;
				fd = -1;
			}
			if (fd >= 0 && ion_ioctl_retry(fd, DRM_IOCTL_VERSION, &v) == 0 && name[0])
				dev->drm_driver = strndup(name, v.name_len < sizeof(name) ? v.name_len
											: sizeof(name) - 1);
			closep(&fd);
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	if (r < 0)
		return r;
	if (!dev->drm_driver && dev->driver && !(dev->drm_driver = strdup(dev->driver)))
		return -ENOMEM;
	return 0;
}

#if HAVE_LIBUDEV
static int copy_udev_properties(struct udev_device *ud, char ***ret)
{
	struct udev_list_entry *first = udev_device_get_properties_list_entry(ud), *e;
	size_t n = 0;
	char **props;

	udev_list_entry_foreach(e, first)
		n++;
	props = calloc(n + 1, sizeof(*props));
	if (!props)
		return -ENOMEM;
	n = 0;
	udev_list_entry_foreach(e, first) {
		const char *value = udev_list_entry_get_value(e);

		if (asprintf(&props[n], "%s=%s", udev_list_entry_get_name(e),
			     value ? value : "") < 0) {
			props[n] = NULL;
			ion_strv_free(props);
			return -ENOMEM;
		}
		n++;
	}
	*ret = props;
	return 0;
}

/* What the udev database says of the device.  Only on the real root:
 * libudev cannot be pointed at a sysroot. */
static int read_udev(struct ion_ctx *ctx, struct ion_device *dev)
{
	struct udev *udev;
	struct udev_device *ud;
	int r = 0;

	if (ion_ctx_sysroot(ctx)[0])
		return 0;
	udev = udev_new();
	if (!udev)
		return errno == ENOMEM ? -ENOMEM : 0;
	ud = udev_device_new_from_syspath(udev, dev->syspath);
	if (ud) {
		r = copy_udev_properties(ud, &dev->udev_properties);
		udev_device_unref(ud);
	}
	udev_unref(udev);
	return r;
}
#else
static int read_udev(struct ion_ctx *ctx, struct ion_device *dev)
{
	(void)ctx;
	(void)dev;
	return 0;
}
#endif

static int read_facts(struct ion_ctx *ctx, const struct ion_registry *reg,
		      struct ion_device *dev, struct dirs *d)
{
	_cleanup_free_ char *compat = NULL;
	size_t len = 0;
	int r, error;

	r = optional(ion_sysfs_link_name_at(d->dev, "subsystem", &dev->subsystem));
	if (r == 0)
		r = optional(ion_sysfs_read_at(d->dev, "name", &dev->label, NULL));
	if (r == 0)
		r = read_uevent(d, dev);
	if (r < 0)
		return r;
	/* A class device names its bus device with a "device" link; a bus
	 * device given by its path is its own parent. */
	if (ion_sysfs_exists_at(d->dev, "device")) {
		_cleanup_free_ char *link = NULL;

		if (asprintf(&link, "%s/device", dev->syspath) < 0)
			return -ENOMEM;
		dev->parent = resolve(ctx, reg, link, &error);
		if (!dev->parent && error == -ENOMEM)
			return error;
		if (dev->parent) {
			_cleanup_free_ char *pdir = ion_ctx_path(ctx, dev->parent);

			if (!pdir)
				return -ENOMEM;
			d->parent = ion_sysfs_open_dir(AT_FDCWD, pdir);
		}
	} else {
		if (!(dev->parent = strdup(dev->syspath)))
			return -ENOMEM;
		d->parent = fcntl(d->dev, F_DUPFD_CLOEXEC, 3);
	}
	if (d->parent == -ENOMEM)
		return -ENOMEM;
	if (d->parent >= 0) {
		r = optional(ion_sysfs_link_name_at(d->parent, "subsystem", &dev->bus));
		if (r == 0)
			r = optional(ion_sysfs_link_name_at(d->parent, "driver", &dev->driver));
		if (r < 0)
			return r;
		/* A NUL-separated list, hence the length. */
		r = ion_sysfs_read_at(d->parent, "of_node/compatible", &compat, &len);
		if (r == -ENOMEM)
			return r;
		if (r == 0 && !(dev->of_compatible = ion_split_nul_list(compat, len)))
			return -ENOMEM;
	}
	if (dev->subsystem && strcmp(dev->subsystem, "drm") == 0) {
		r = read_drm_driver(ctx, reg, dev);
		if (r < 0)
			return r;
	}
	if (dev->subsystem && strcmp(dev->subsystem, "video4linux") == 0) {
		r = read_v4l2_card(ctx, dev);
		if (r < 0)
			return r;
	}
	return read_udev(ctx, dev);
}

/* ---- the constraint ---- */

static int from_cookie(struct ion_ctx *ctx, const struct ion_registry *reg,
		       struct ion_device *dev, const struct dirs *d,
		       struct ion_conf_props *props)
{
	const char *attr = reg->conf ? ion_conf_cookie_attribute(reg->conf, NULL) : NULL;
	const int fds[] = { d->dev, d->parent };
	const char *dirs[] = { dev->syspath, dev->parent };

	for (size_t i = 0; attr && i < 2; i++) {
		_cleanup_free_ char *text = NULL;
		const char *shown;
		int r;

		if (fds[i] < 0 || (i == 1 && strcmp(dirs[0], dirs[1]) == 0))
			continue;
		r = ion_sysfs_read_at(fds[i], attr, &text, NULL);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			continue;
		shown = own_string(dev, "%s/%s", dirs[i], attr);
		if (!shown)
			return -ENOMEM;
		r = ion_conf_parse_cookie(shown, text, ion_ctx_log_conf_error, ctx, props);
		return r == -ENOMEM ? r : 0;
	}
	return 0;
}

static int from_udev(struct ion_ctx *ctx, struct ion_device *dev,
		     struct ion_conf_props *props)
{
	for (char **p = dev->udev_properties; p && *p; p++) {
		_cleanup_free_ char *name = strndup(*p, strcspn(*p, "="));
		const char *message, *src;
		int key, r;

		if (!name)
			return -ENOMEM;
		key = ion_conf_key_from_udev(name);
		if (key < 0)
			continue;
		src = own_string(dev, "udev property %s of %s", name, dev->syspath);
		if (!src)
			return -ENOMEM;
		r = ion_conf_field_parse((enum ion_conf_key)key, *p + strlen(name) + 1,
					 (struct ion_conf_src){ src, 0 }, &props->f[key], &message);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			ion_err(ctx, "%s: %s (ignored)", src, message);
	}
	return 0;
}

static int from_conf(const struct ion_registry *reg, struct ion_device *dev,
		     struct ion_conf_props *props)
{
	const struct ion_device_facts facts = {
		.syspath = dev->syspath,
		.parent_syspath = dev->parent,
		.subsystem = dev->subsystem,
		.bus = dev->bus,
		.driver = dev->driver,
		.of_compatible = (const char *const *)dev->of_compatible,
		.drm_driver = dev->drm_driver,
		.v4l2_card = dev->v4l2_card,
		.name = dev->label,
		.udev_properties = (const char *const *)dev->udev_properties,
	};
	char **names = NULL;
	int r;

	if (!reg->conf)
		return 0;
	r = ion_conf_apply_device(reg->conf, &facts, props, &names);
	if (r < 0)
		return r;
	/* One block from the parser: copied, so that sections is a strv. */
	dev->sections = calloc((size_t)r + 1, sizeof(char *));
	for (int i = 0; dev->sections && i < r; i++)
		if (!(dev->sections[i] = strdup(names[i]))) {
			ion_strv_free(steal_ptr(&dev->sections));
			break;
		}
	free(names);
	return dev->sections ? 0 : -ENOMEM;
}

static int set_derived(struct ion_device *dev, struct ion_conf_props *props,
		       enum ion_conf_key key, uint64_t value, const char *src)
{
	struct ion_conf_src where = { src, 0 };

	if (!src)
		return -ENOMEM;
	(void)dev;
	if (key == ION_KEY_ADDRESS_BITS)
		return ion_props_set_uint(props, key, value, where);
	return ion_props_set_bool(props, key, value != 0, where);
}

/*
 * The nearest of the parent and its ancestors (up to /sys/devices) that
 * sits in an IOMMU group, or NULL: virtio-gpu's DRM device is a virtio
 * device, whose DMA goes through the PCI function above it.
 */
static char *iommu_group_of(const struct ion_device *dev, const struct dirs *d,
			    int *ret_error)
{
	_cleanup_free_ char *path = strdup(dev->parent);
	_cleanup_close_ int fd = fcntl(d->parent, F_DUPFD_CLOEXEC, 3);
	char *slash;

	*ret_error = !path ? -ENOMEM : fd < 0 ? neg_errno() : 0;
	while (!*ret_error && (slash = strrchr(path, '/')) && slash != path &&
	       strcmp(path, "/sys/devices") != 0) {
		int up;

		if (ion_sysfs_exists_at(fd, "iommu_group"))
			return steal_ptr(&path);
		*slash = '\0';
		up = ion_sysfs_open_dir(fd, "..");
		close(fd);
		fd = up;
		if (fd < 0)
			*ret_error = fd == -ENOMEM ? fd : 0;
		if (fd < 0)
			break;
	}
	return NULL;
}

static int derive(const struct ion_registry *reg, struct ion_device *dev,
		  const struct dirs *d, struct ion_conf_props *props)
{
	_cleanup_free_ char *group = NULL;
	uint64_t bits;
	bool of_node, coherent;
	int r;

	if (!dev->parent || d->parent < 0)
		return 0;
	group = iommu_group_of(dev, d, &r);
	if (r < 0)
		return r;
	of_node = dev->of_compatible || ion_sysfs_exists_at(d->parent, "of_node");
	if (group) {
		r = ion_attrs_add(&dev->facts, "iommu", "behind an IOMMU", "%s/iommu_group", group);
		if (r == 0)
			r = set_derived(dev, props, ION_KEY_CONTIGUOUS, 0,
					own_string(dev, "derived: %s/iommu_group: behind an IOMMU, scattered memory is fine",
						   group));
		if (r < 0)
			return r;
	} else if (of_node) {
		r = ion_attrs_add(&dev->facts, "iommu", "none: a device-tree DMA master sees physical addresses",
				  "%s/of_node", dev->parent);
		if (r == 0)
			r = set_derived(dev, props, ION_KEY_CONTIGUOUS, 1,
					own_string(dev, "derived: %s/of_node, no iommu_group: a device-tree DMA master outside any IOMMU",
						   dev->parent));
		if (r < 0)
			return r;
	}
	/* PCI says how many address bits the device drives. */
	if (dev->bus && strcmp(dev->bus, "pci") == 0 &&
	    ion_sysfs_read_u64_at(d->parent, "dma_mask_bits", &bits) == 0 && bits > 0 && bits < 64) {
		char value[16];

		snprintf(value, sizeof(value), "%u", (unsigned int)bits);
		r = ion_attrs_add(&dev->facts, "dma_mask_bits", value, "%s/dma_mask_bits", dev->parent);
		if (r == 0 && !group && bits < reg->ram_bits)
			r = set_derived(dev, props, ION_KEY_ADDRESS_BITS, bits,
					own_string(dev, "derived: %s/dma_mask_bits is %u, and memory reaches 2^%u",
						   dev->parent, (unsigned int)bits, reg->ram_bits));
		if (r < 0)
			return r;
	}
	if (of_node) {
		coherent = ion_sysfs_exists_at(d->parent, "of_node/dma-coherent");
		r = ion_attrs_add(&dev->facts, "dma-coherent", coherent ? "yes" : "no",
				  "%s/of_node/dma-coherent", dev->parent);
		if (r < 0)
			return r;
		if (!coherent) {
			dev->constraint.prefer_uncached = true;
			dev->constraint.prefer_uncached_src = (struct ion_conf_src){
				own_string(dev, "derived: %s/of_node has no dma-coherent", dev->parent), 0
			};
			if (!dev->constraint.prefer_uncached_src.file)
				return -ENOMEM;
		}
	}
	return 0;
}

/* Moves the set fields of from into to where to has none. */
static void fill_unset(struct ion_conf_props *to, struct ion_conf_props *from)
{
	for (int i = 0, k; (k = ion_conf_requirement((size_t)i)) >= 0; i++)
		ion_props_fill_unset(to, from, (enum ion_conf_key)k);
}

int ion_device_build_view(const struct ion_device *dev, struct ion_attrs *view)
{
	const struct ion_constraint *c = &dev->constraint;
	int r = 0;

	for (int i = 0, k; r == 0 && (k = ion_conf_requirement((size_t)i)) >= 0; i++) {
		_cleanup_free_ char *value = NULL;
		struct ion_conf_src src;

		if (!ion_props_get_src(&c->props, (enum ion_conf_key)k, &src))
			continue;
		value = ion_conf_field_format((enum ion_conf_key)k, &c->props.f[k]);
		if (!value)
			return -ENOMEM;
		if (src.line)
			r = ion_attrs_add(view, ion_conf_key_name((enum ion_conf_key)k), value,
					  "%s:%u", src.file, src.line);
		else
			r = ion_attrs_add(view, ion_conf_key_name((enum ion_conf_key)k), value,
					  "%s", src.file ? src.file : "?");
	}
	if (r == 0 && c->own_heap)
		r = ion_attrs_add(view, "OwnHeap", c->own_heap,
				  "derived: a DRM device's own dumb buffers always fit it");
	if (r == 0 && c->prefer_uncached)
		r = ion_attrs_add(view, "PreferUncached", "yes", "%s",
				  c->prefer_uncached_src.file);
	return r;
}

static int build_constraint(struct ion_ctx *ctx, const struct ion_registry *reg,
			    struct ion_device *dev, const struct dirs *d)
{
	struct ion_conf_props cookie = { 0 }, udev = { 0 }, conf = { 0 }, derived = { 0 };
	struct ion_conf_props *c = &dev->constraint.props;
	const struct ion_heap *own = NULL;
	int r;

	if (dev->subsystem && strcmp(dev->subsystem, "drm") == 0)
		own = own_gem_heap(reg, dev->parent);
	if (own && !(dev->constraint.own_heap = strdup(own->name)))
		return -ENOMEM;
	r = from_cookie(ctx, reg, dev, d, &cookie);
	if (r == 0)
		r = from_udev(ctx, dev, &udev);
	if (r == 0)
		r = from_conf(reg, dev, &conf);
	if (r == 0)
		r = derive(reg, dev, d, &derived);
	if (r == 0) {
		fill_unset(c, &cookie);
		fill_unset(c, &udev);
		fill_unset(c, &conf);
		/* A Heaps list is a complete answer: derived rules stay out. */
		if (!ion_props_is_set(c, ION_KEY_HEAPS))
			fill_unset(c, &derived);
		else
			dev->constraint.prefer_uncached = false;
	}
	ion_conf_props_clear(&cookie);
	ion_conf_props_clear(&udev);
	ion_conf_props_clear(&conf);
	ion_conf_props_clear(&derived);
	return r;
}

struct ion_device *ion_device_new(const char *name)
{
	struct ion_device *dev = calloc(1, sizeof(*dev));

	if (!dev)
		return NULL;
	atomic_init(&dev->refcount, 1);
	dev->view = malloc(sizeof(*dev->view));
	if (dev->view)
		atomic_init(dev->view, NULL);
	dev->name = strdup(name);
	dev->constraint.device = dev->name;
	if (!dev->name || !dev->view) {
		free(dev->view);
		free(dev->name);
		free(dev);
		return NULL;
	}
	return dev;
}

int ion_device_read(struct ion_ctx *ctx, struct ion_registry *reg,
		    const char *syspath, struct ion_device **ret)
{
	_cleanup_free_ char *path = NULL, *full = NULL;
	struct dirs d = { -1, -1 };
	struct ion_device *dev;
	const char *base;
	int r;

	path = resolve(ctx, reg, syspath, &r);
	if (!path)
		return r;
	if (strncmp(path, "/sys/", 5) != 0)
		return -ENODEV;
	base = strrchr(path, '/') + 1;
	dev = ion_device_new(base);
	if (!dev)
		return -ENOMEM;
	/* Not references: the registry's devices have none. */
	dev->ctx = ctx;
	dev->reg = reg;
	dev->syspath = steal_ptr(&path);
	full = ion_ctx_path(ctx, dev->syspath);
	d.dev = full ? ion_sysfs_open_dir(AT_FDCWD, full) : -ENOMEM;
	r = d.dev < 0 ? (ion_errno_transient(d.dev) ? d.dev : -ENODEV) : 0;
	if (r == 0)
		r = read_facts(ctx, reg, dev, &d);
	if (r == 0)
		r = build_constraint(ctx, reg, dev, &d);
	closep(&d.dev);
	closep(&d.parent);
	if (r < 0) {
		device_free(dev);
		return r;
	}
	*ret = dev;
	return 0;
}
