/* SPDX-License-Identifier: MIT */
/*
 * libion's own API: contexts, heaps, allocation requests and their
 * solutions, and calls on buffer fds.  <ion/ion.h> includes this header
 * beside Android's calls; include either.
 *
 * Rules every call keeps, unless its entry says otherwise:
 *
 *  - Errors: a call that can fail returns 0 (or a count) on success and
 *    a negative errno on failure, and writes its out-parameters (named
 *    ret_*) only on success.  A NULL object or out-pointer is -EINVAL.
 *  - File descriptors: every fd the library opens or returns is
 *    close-on-exec; no failing call leaves an fd behind.
 *  - Ownership: "returns a reference" means the caller drops it with the
 *    matching _unref(); _unref() and _free() accept NULL and return NULL
 *    (p = ion_x_unref(p)).  Objects got from another object without a
 *    reference (heaps) live as long as that object.  Heaps and strings
 *    got from the context itself live until a rescan replaces the set
 *    (ion_ctx_rescan() returns 1).
 *  - Threads: a context and everything immutable it hands out (heaps,
 *    solutions) may be used from any number of threads at once.  Builders
 *    (struct ion_alloc_config) belong to one thread at a time.
 *  - Environment: ION_LOG sets the default log priority; it is read with
 *    secure_getenv(), so set-user-id programs ignore it.
 */
#ifndef LIBION_LIBION_H
#define LIBION_LIBION_H

#include <stdarg.h>
#include <stddef.h>

/*
 * The version of these headers, which is the version of the library they
 * were installed with (meson.build's project() version; the build checks
 * that the two agree).  LIBION_CHECK_VERSION(1, 1, 0) is true when the
 * headers are 1.1.0 or later, for code that must build against several
 * releases.  Since: 1.0
 */
#define LIBION_VERSION_MAJOR 1
#define LIBION_VERSION_MINOR 0
#define LIBION_VERSION_MICRO 0
#define LIBION_CHECK_VERSION(major, minor, micro)                              \
	(LIBION_VERSION_MAJOR > (major) ||                                     \
	 (LIBION_VERSION_MAJOR == (major) && LIBION_VERSION_MINOR > (minor)) || \
	 (LIBION_VERSION_MAJOR == (major) && LIBION_VERSION_MINOR == (minor) && \
	  LIBION_VERSION_MICRO >= (micro)))

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Calls on any buffer fd                                              */
/* ------------------------------------------------------------------ */

#define ION_SYNC_READ (1U << 0)
#define ION_SYNC_WRITE (1U << 1)
#define ION_SYNC_RW (ION_SYNC_READ | ION_SYNC_WRITE)
#define ION_SYNC_START (1U << 4)
#define ION_SYNC_END (1U << 5)

/*
 * ion_sync: brackets CPU access to a mapped buffer: ION_SYNC_START before
 * the CPU touches it, ION_SYNC_END after, each with READ and/or WRITE.
 *
 * DMA_BUF_IOCTL_SYNC on a dma-buf, retried on EINTR and EAGAIN; a no-op
 * that succeeds on a memfd buffer (no device sees it).  A memfd is a file
 * memfd_create() made (its /proc/self/fd link reads "/memfd:"); other
 * tmpfs files (/dev/shm) are not buffers.  Where /proc is not mounted the
 * link cannot be read, and any tmpfs file that takes seals counts as a
 * memfd.
 *
 * Errors: -EINVAL unless flags hold exactly one of START and END, at least
 * one of READ and WRITE, and nothing else; -EBADF for a negative fd;
 * -ENOTTY for an fd that is neither a dma-buf nor a memfd.
 * Threads: any.  Since: 1.0
 */
int ion_sync(int buf_fd, unsigned int flags);

/*
 * ion_fd_set_name: names a dma-buf (DMA_BUF_SET_NAME), as shown in
 * /proc/PID/fdinfo and debugfs; names of 32 bytes or more are truncated
 * to 31.
 *
 * Errors: -EINVAL for a NULL name; -ENOTTY for a memfd buffer (its name is
 * fixed at creation) or any other fd that is not a dma-buf; -EBADF.
 * Since: 1.0
 */
int ion_fd_set_name(int buf_fd, const char *name);

/*
 * ion_fd_get_size: the size of a buffer fd in bytes.  Leaves a memfd's
 * file offset alone.
 *
 * Errors: -EINVAL for a NULL ret_size, and for an fd that is neither a
 * dma-buf nor a memfd (a directory, a pipe, a plain file, a /dev/shm
 * file); -EBADF; what fstat() or lseek() answer.  Since: 1.0
 */
int ion_fd_get_size(int buf_fd, size_t *ret_size);

/* ------------------------------------------------------------------ */
/* Contexts                                                            */
/* ------------------------------------------------------------------ */

struct ion_ctx;
struct ion_heap;
struct ion_device;
struct ion_alloc_config;
struct ion_solution;
struct ion_pool;
struct ion_buffer;

/*
 * ion_ctx_new: creates a context and returns a reference.  sysroot
 * prefixes every path the library reads (/dev, /sys, /proc); NULL or "/"
 * means the real root.  Discovery of the heaps runs once, lazily, on the
 * first call that needs it, under the context's lock; afterwards the
 * heaps are immutable and read without locks.
 *
 * Errors: -EINVAL for a NULL ret_ctx or a relative sysroot; -ENOMEM.
 * Since: 1.0
 */
int ion_ctx_new(const char *sysroot, struct ion_ctx **ret_ctx);
/* Takes a reference; returns ctx.  Since: 1.0 */
struct ion_ctx *ion_ctx_ref(struct ion_ctx *ctx);
/* Drops a reference; the last one frees the context and its heaps.
 * Returns NULL.  Since: 1.0 */
struct ion_ctx *ion_ctx_unref(struct ion_ctx *ctx);

/*
 * ion_ctx_set_heaps_path: the heaps.d folders (or files) to read,
 * ':'-separated, highest priority first, instead of the defaults:
 * $sysconfdir/libion/heaps.d then $datadir/libion/heaps.d under the
 * sysroot, or ION_HEAPS_PATH where set (read with secure_getenv()).
 * Paths given here or in ION_HEAPS_PATH are taken as they are, not under
 * the sysroot.  "" reads no file at all; NULL restores the defaults.
 * The first 16 paths are read; any after them are not, which discovery
 * logs at error priority.
 *
 * Errors: -EINVAL; -EBUSY once discovery has run; -ENOMEM.  Since: 1.0
 */
int ion_ctx_set_heaps_path(struct ion_ctx *ctx, const char *path);
/*
 * ion_ctx_set_heaps_paths: the same, as an array (as kmod_new() takes its
 * configuration folders): paths is NULL-terminated, highest priority
 * first, each a folder or a file taken as it is (not under the sysroot).
 * An empty array (paths[0] == NULL) reads no file; NULL restores the
 * defaults.  At most ION_HEAPS_PATHS_MAX paths.
 *
 * Errors: -EINVAL for a NULL ctx or an empty path; -E2BIG for more than
 * ION_HEAPS_PATHS_MAX paths; -EBUSY once discovery has run; -ENOMEM.
 * Nothing changes on an error.  Since: 1.0
 */
#define ION_HEAPS_PATHS_MAX 16
int ion_ctx_set_heaps_paths(struct ion_ctx *ctx, const char *const *paths);

/*
 * ion_ctx_set_service: where allocations go when this process may not
 * open a heap's node.  When the library's own allocation finds no heap
 * for a request and discovery was refused a heap's node (EACCES, EPERM),
 * the request (its size, flags, heap name or Android id mask, and its
 * devices' constraints as ionc1 text) goes to iond(8), the allocation
 * service, at path, if a socket is there: the caller gets the service's
 * buffer (charged to its uid, within its quota) or its refusal (-EDQUOT,
 * -EACCES, what the service's policy and solver said, logged at info
 * priority with the service's reason).  "" (or ION_SERVICE=0) turns the
 * service off; NULL restores the default: ION_SERVICE (read with
 * secure_getenv()) where set, else $runstatedir/libion/iond.sock.
 * The path is copied.  Set it before sharing the context between
 * threads, as the log handler.
 * Errors: -EINVAL; -ENOMEM.  Since: 1.0
 */
int ion_ctx_set_service(struct ion_ctx *ctx, const char *path);

/*
 * Heaps and devices that come and go (heaps loaded as modules, TEE heaps,
 * a camera unbound and bound again).  ion_ctx_get_monitor_fd(): an fd
 * (the context's; do not close it) that polls readable (POLLIN) when the
 * set may have changed: inotify on /dev, /dev/dma_heap and /dev/dri under
 * the sysroot, and a udev monitor where libion was built with libudev,
 * the root is the real one and udevd runs.  ion_ctx_rescan() then drains
 * it and runs discovery again: when heaps or devices differ, new calls see
 * the new set.  Every device, solution, pool and buffer got before stays
 * valid and keeps the set it came from (with the heaps it reaches) alive;
 * buffers already allocated are untouched.  The old set itself is freed,
 * with its fds, once nothing holds it: a heap or string got from the
 * context directly (ion_ctx_get_heap(), ion_ctx_find_heap(),
 * ion_ctx_get_board()) is valid until the rescan that returns 1, so a
 * program that keeps one across rescans keeps a solution instead.
 * A forked child gets a monitor of its own on first use (the parent's
 * queue is the parent's).
 * Returns: the fd, or a negative errno; ion_ctx_rescan(): 1 when the set
 * changed, 0 when not, or discovery's negative errno.
 * Threads: any.  Since: 1.0
 */
int ion_ctx_get_monitor_fd(struct ion_ctx *ctx);
int ion_ctx_rescan(struct ion_ctx *ctx);

/*
 * What heaps.d gave discovery: the [Board] sections that matched this
 * machine (name, and "file:line" of the section), the files read in the
 * order they were read, and the problems the files had (each was also
 * logged as "file:line: message" at LOG_ERR; a broken section is skipped
 * and the rest stands).  ion_ctx_get_config_error() gives the index-th
 * problem: its file, its 1-based line (0: the file as a whole, e.g. one
 * that could not be read) and its words, without the "file:line: "; it
 * returns 0, -ENOENT past the last, -ENOMEM for a problem there was no
 * memory to keep, or discovery's negative errno, and writes its
 * out-parameters only on success.  Counts are negative errnos on failure,
 * from discovery.  Strings live until a rescan replaces the set (see
 * ion_ctx_rescan()).  Since: 1.0
 */
int ion_ctx_get_board_count(struct ion_ctx *ctx);
int ion_ctx_get_board(struct ion_ctx *ctx, unsigned int index,
		      const char **ret_name, const char **ret_source);
int ion_ctx_get_config_file_count(struct ion_ctx *ctx);
const char *ion_ctx_get_config_file(struct ion_ctx *ctx, unsigned int index);
int ion_ctx_get_config_error_count(struct ion_ctx *ctx);
int ion_ctx_get_config_error(struct ion_ctx *ctx, unsigned int index,
			     const char **ret_file, unsigned int *ret_line,
			     const char **ret_message);

/*
 * Logging.  Priorities are syslog's: LOG_ERR 3 ... LOG_DEBUG 7; messages
 * above the context's priority are not formatted at all.  ION_LOG (a
 * number or err, warning, info, debug) sets the default, else LOG_ERR.
 * The default handler writes to stderr.  A problem in a heaps.d file (or
 * a device's cookie) comes at LOG_ERR with fn ION_LOG_CONF_FN
 * ("heaps.d"), file and line the file's own (line 0: the whole file) and
 * the message "file:line: what"; ion_ctx_get_config_error() gives the
 * heaps.d ones again afterwards.  Set the handler and priority before
 * sharing the context between threads; a handler must not call back into
 * its context.  Since: 1.0
 */
#define ION_LOG_CONF_FN "heaps.d"
typedef void (*ion_log_fn)(struct ion_ctx *ctx, int priority,
			   const char *file, int line, const char *fn,
			   const char *format, va_list args);
/* NULL restores the default handler. */
void ion_ctx_set_log_fn(struct ion_ctx *ctx, ion_log_fn log_fn);
void ion_ctx_set_log_priority(struct ion_ctx *ctx, int priority);
/* The priority, or -EINVAL for a NULL ctx. */
int ion_ctx_get_log_priority(const struct ion_ctx *ctx);
void ion_ctx_set_userdata(struct ion_ctx *ctx, void *userdata);
void *ion_ctx_get_userdata(const struct ion_ctx *ctx);

/*
 * ion_ctx_sync_for_device: makes the CPU's writes to a buffer visible to
 * devices, whatever made it: a full CPU-access bracket (start and end,
 * read and write) on a dma-buf; ION_IOC_SYNC on a buffer of the legacy
 * ION ABI, whose kernels predate DMA_BUF_IOCTL_SYNC; nothing on a memfd
 * buffer.
 *
 * Errors: -EINVAL for a NULL ctx; -EBADF; -ENOTTY for an fd that no heap
 * of the context can sync.  Since: 1.0
 */
int ion_ctx_sync_for_device(struct ion_ctx *ctx, int buf_fd);

/* ------------------------------------------------------------------ */
/* Heaps                                                               */
/* ------------------------------------------------------------------ */

/* Heap properties, a bit set (ion_heap_get_properties()). */
#define ION_HEAP_PROP_CONTIGUOUS (1U << 0) /* physically contiguous */
#define ION_HEAP_PROP_CACHED (1U << 1)     /* CPU mappings can be cached */
#define ION_HEAP_PROP_UNCACHED (1U << 2)   /* CPU mappings can be uncached */
#define ION_HEAP_PROP_CPU_ONLY (1U << 3)   /* not a dma-buf: no device sees it */
/* The kernel's ION speaks its pre-4.12 handle ABI for this heap. */
#define ION_HEAP_PROP_ION_LEGACY (1U << 4)
/* An importing driver can map its buffers in the kernel (dma_buf_vmap). */
#define ION_HEAP_PROP_KERNEL_MAP (1U << 5)
/* No CPU access at all (a protected heap): buffers cannot be mapped. */
#define ION_HEAP_PROP_PROTECTED (1U << 6)

/*
 * ion_ctx_get_heap_count: how many heaps discovery found, available or
 * not.  Runs discovery if it has not run.
 *
 * Errors: -EINVAL for a NULL ctx; -ENOMEM from discovery (which then runs
 * again on the next call).  Since: 1.0
 */
int ion_ctx_get_heap_count(struct ion_ctx *ctx);
/*
 * ion_ctx_get_heap: the heap at index (0 to count - 1), in discovery order
 * (the order of preference between backends).  The heap lives until a
 * rescan replaces the set (see ion_ctx_rescan()); one reached through a
 * solution, buffer or rejection lives as long as that object.
 *
 * Errors: -EINVAL; -ENOENT past the last heap; discovery's.  Since: 1.0
 */
int ion_ctx_get_heap(struct ion_ctx *ctx, unsigned int index,
		     const struct ion_heap **ret_heap);
/*
 * ion_ctx_find_heap: the heap with this name or alias.  "cma" also finds
 * the CMA heap under whatever name the kernel gave it ("linux,cma",
 * "reserved", "default-pool", "default_cma_region").
 *
 * Errors: -EINVAL; -ENOENT when no heap has that name; discovery's.
 * Since: 1.0
 */
int ion_ctx_find_heap(struct ion_ctx *ctx, const char *name,
		      const struct ion_heap **ret_heap);

/* The heap's getters accept NULL (and answer NULL, -1 or 0 then).  Since: 1.0 */
const char *ion_heap_get_name(const struct ion_heap *heap);
/* What the kernel calls the heap (a dma-heap node, an ION heap, a DRM
 * driver); differs from the name when two heaps share a kernel name. */
const char *ion_heap_get_kernel_name(const struct ion_heap *heap);
/* The Android-convention id (what ION_HEAP_*_MASK bits reach), or -1 when
 * the heap has none (or is unavailable). */
int ion_heap_get_id(const struct ion_heap *heap);
/* One of enum ion_heap_type (<ion/ion.h>). */
unsigned int ion_heap_get_type(const struct ion_heap *heap);
/* "dma-heap", "ion", "gem", "udmabuf" or "memfd". */
const char *ion_heap_get_backend(const struct ion_heap *heap);
/* The device node, or NULL (memfd). */
const char *ion_heap_get_node(const struct ion_heap *heap);
/* ION_HEAP_PROP_* bits. */
unsigned int ion_heap_get_properties(const struct ion_heap *heap);
/* 0 when the heap can allocate, else the negative errno that stops it ... */
int ion_heap_get_error(const struct ion_heap *heap);
/* ... and why, in words (NULL when available). */
const char *ion_heap_get_reason(const struct ion_heap *heap);
/* Every buffer of the heap lies below 2^bits (the end of memory unless a
 * board file says less); 0 for NULL. */
unsigned int ion_heap_get_address_bits(const struct ion_heap *heap);
/*
 * What board files said of the heap, one key at a time: its heaps.d key
 * ("Contiguous"), the value as a file would write it ("yes") and where
 * ("50-rpi4.conf:12").  Strings live as long as the heap.
 * Errors: -EINVAL; -ENOENT past the last.  Since: 1.0
 */
int ion_heap_get_attribute_count(const struct ion_heap *heap);
int ion_heap_get_attribute(const struct ion_heap *heap, unsigned int index,
			   const char **ret_key, const char **ret_value,
			   const char **ret_source);

/* ------------------------------------------------------------------ */
/* Devices                                                             */
/* ------------------------------------------------------------------ */

/*
 * A device is an immutable description of what one device needs of a
 * buffer's memory: its constraint.  It is read once, when the object is
 * made (sysfs, the udev database where libion was built with libudev and
 * the root is the real one, heaps.d), never on the allocation path.  The
 * constraint's keys are heaps.d's device keys (Heaps, Contiguous,
 * AddressBits, Cache, Alignment, KernelMap, OwnBuffersOnly), each taken
 * from the first of these sources that sets it: a sysfs attribute the
 * board names (CookieAttribute), udev properties (ION_HEAPS,
 * ION_CONTIGUOUS, ...), heaps.d [Device] sections, and facts derived from
 * sysfs (behind an IOMMU: scattered memory is fine; a device-tree DMA
 * master outside any IOMMU: contiguous; a PCI DMA mask narrower than
 * memory: AddressBits).  Derived facts are left out for a device that a
 * source gives a Heaps list.  A DRM device's own GEM heap always fits it.
 *
 * ion_ctx_get_device: spec is a /dev node ("/dev/video0"), a sysfs path
 * ("/sys/class/drm/card1", "/sys/devices/platform/vivid.0"), a device's
 * name ("card1") or a heaps.d [Device] section's name.  Returns a
 * reference, which also keeps the context alive.
 *
 * Errors: -EINVAL; -ENODEV when there is no such device (the message at
 * LOG_DEBUG names the path); -ENOMEM; discovery's.
 * Threads: any.  Since: 1.0
 */
int ion_ctx_get_device(struct ion_ctx *ctx, const char *spec,
		       struct ion_device **ret_device);
/* The devices discovery read (DRM cards, video4linux, accel), in order;
 * ion_ctx_get_device_at() returns a reference.  Since: 1.0 */
int ion_ctx_get_device_count(struct ion_ctx *ctx);
int ion_ctx_get_device_at(struct ion_ctx *ctx, unsigned int index,
			  struct ion_device **ret_device);
/* Since: 1.0 */
struct ion_device *ion_device_ref(struct ion_device *device);
struct ion_device *ion_device_unref(struct ion_device *device);
/* "card1", "video0", or the heaps.d name it was made from. */
const char *ion_device_get_name(const struct ion_device *device);
/* "/dev/dri/card1", or NULL. */
const char *ion_device_get_devnode(const struct ion_device *device);
/* "/sys/devices/platform/vkms/drm/card1" (without the sysroot), or NULL. */
const char *ion_device_get_syspath(const struct ion_device *device);
/* "drm", "video4linux", ..., or NULL. */
const char *ion_device_get_subsystem(const struct ion_device *device);
/* The DRM driver's name for a DRM device, else its kernel driver's. */
const char *ion_device_get_driver(const struct ion_device *device);
/*
 * The constraint, one key at a time: the heaps.d key, the value as a file
 * would write it, and its source ("50-qemu.conf:12", "udev property
 * ION_HEAPS of /sys/...", "derived: /sys/.../iommu_group: ...").  Besides
 * the device keys, "OwnHeap" names the device's own GEM heap.
 * Errors: -EINVAL; -ENOENT past the last.  Since: 1.0
 */
int ion_device_get_constraint_count(const struct ion_device *device);
int ion_device_get_constraint(const struct ion_device *device, unsigned int index,
			      const char **ret_key, const char **ret_value,
			      const char **ret_source);
/* What discovery read of the device, used or not ("iommu", "dma_mask_bits",
 * "dma-coherent"), with the sysfs path it came from.  Since: 1.0 */
int ion_device_get_fact_count(const struct ion_device *device);
int ion_device_get_fact(const struct ion_device *device, unsigned int index,
			const char **ret_key, const char **ret_value,
			const char **ret_source);

/* ------------------------------------------------------------------ */
/* Allocation requests                                                 */
/* ------------------------------------------------------------------ */

/*
 * A request is built with a struct ion_alloc_config (a builder, owned by
 * one thread at a time), solved against a context's heaps into an
 * immutable struct ion_solution (the heaps that can serve it, best first,
 * and why every other heap cannot), and allocated from the solution.
 * ion_ctx_allocate() does all three at once; ion_ctx_alloc() and
 * ion_ctx_alloc_mask() are shorthands for the two commonest requests.
 * Every allocation of the library, Android's calls included, takes this
 * one path.
 *
 * Flags are the kernel's ION flags, passed to ION and honoured by heap
 * choice elsewhere:
 *  ION_FLAG_CACHED             CPU mappings cached (<ion/ion.h>, 1)
 *  ION_FLAG_CACHED_NEEDS_SYNC  cached, with explicit maintenance (2)
 * Either one leaves out the heaps that map uncached (unless the request
 * names its heap or gives an id mask, which are taken as they are).
 *
 * Without either, uncached memory is a preference, never a requirement.
 * By id mask, a heap's uncached variant serves where the board has
 * one (system-uncached for system), and the heap itself where it has
 * none, as Android's ION does.  For devices, uncached heaps come before
 * cached ones (after the board's Preference) when a device is a
 * device-tree master without dma-coherent; a cached heap stays a
 * candidate.  Why no flag requires it: ION's flags have no uncached bit
 * (leaving ION_FLAG_CACHED out is all Android says), DMA-BUF heaps take
 * no flags at all (uncached memory is a heap of its own, where a kernel
 * has one), and whether cached CPU mappings are wrong is the device's
 * property, not the request's.  A device that needs uncached memory says
 * so, in heaps.d (Cache = uncached) or udev (ION_CACHE=uncached), and
 * every cached heap is then rejected for it, with the reason.  A caller
 * that brackets its CPU access with ion_sync() gets coherent data from a
 * cached heap as well.
 */

/*
 * ion_alloc_config_new: a new, empty request (no size, every heap).
 * Errors: -EINVAL; -ENOMEM.  Since: 1.0
 */
int ion_alloc_config_new(struct ion_alloc_config **ret_config);
/* Frees the builder; returns NULL.  Since: 1.0 */
struct ion_alloc_config *ion_alloc_config_free(struct ion_alloc_config *config);
/*
 * The buffer's length in bytes, rounded up to whole pages when solved.
 * Errors: -EINVAL for 0.  Since: 1.0
 */
int ion_alloc_config_set_size(struct ion_alloc_config *config, size_t len);
/*
 * Only the heap of this name or alias ("cma" as in ion_ctx_find_heap());
 * NULL lifts the restriction.  Copied.
 * Errors: -EINVAL; -ENOMEM.  Since: 1.0
 */
int ion_alloc_config_set_heap(struct ion_alloc_config *config, const char *name);
/*
 * Only the heaps whose Android-convention ids are in mask, tried from the
 * highest id down, as the kernel's ION does; 0 lifts the restriction.
 * Since: 1.0
 */
int ion_alloc_config_set_heap_mask(struct ion_alloc_config *config,
				   unsigned int heap_id_mask);
/*
 * ION_FLAG_CACHED and/or ION_FLAG_CACHED_NEEDS_SYNC.
 * Errors: -EINVAL for any other bit (vendor flags such as msm's
 * ION_FLAG_SECURE are refused rather than ignored).  Since: 1.0
 */
int ion_alloc_config_set_flags(struct ion_alloc_config *config,
			       unsigned int flags);
/*
 * With fallback on (the default), a heap out of memory passes the request
 * to the next heap of the solution; off, the first heap's answer stands.
 * Since: 1.0
 */
int ion_alloc_config_set_fallback(struct ion_alloc_config *config, int fallback);
/*
 * A device that will touch the buffer: the solution keeps only heaps
 * that satisfy every device added (their constraints are AND-ed).  The
 * config takes a reference.  Adding a device twice is a no-op.
 * Errors: -EINVAL; -ENOMEM.  Since: 1.0
 */
int ion_alloc_config_add_device(struct ion_alloc_config *config,
				struct ion_device *device);
/*
 * Whether the CPU will map the buffer (the default: yes).  Only a buffer
 * the CPU never maps may come from a protected heap.  Since: 1.0
 */
int ion_alloc_config_set_cpu_access(struct ion_alloc_config *config, int cpu_access);

/*
 * ion_ctx_solve: the heaps that can serve the request, best first, and
 * every other heap with the reason it cannot.  Pure: no I/O but
 * discovery, if it has not run.  Returns a reference.
 *
 * Errors: -EINVAL for a NULL argument, no size, or a size that overflows
 * when rounded to pages; -ENOMEM; discovery's.  A request no heap can
 * serve is no error: the solution has no heaps, and says why.
 * Threads: any, on a config no other thread is changing.  Since: 1.0
 */
int ion_ctx_solve(struct ion_ctx *ctx, const struct ion_alloc_config *config,
		  struct ion_solution **ret_solution);
/* Since: 1.0 */
struct ion_solution *ion_solution_ref(struct ion_solution *solution);
struct ion_solution *ion_solution_unref(struct ion_solution *solution);
/* The page-rounded length the solution allocates.  Since: 1.0 */
size_t ion_solution_get_size(const struct ion_solution *solution);
/* How many heaps can serve it (0 or more).  Since: 1.0 */
int ion_solution_get_heap_count(const struct ion_solution *solution);
/* The index-th best heap, or NULL past the end.  Since: 1.0 */
const struct ion_heap *ion_solution_get_heap(const struct ion_solution *solution,
					     unsigned int index);
/*
 * How many rejections there are (see below).  The reasons are worded on
 * the first call, not when solving, so that solving stays cheap: then
 * -ENOMEM is possible (and the next call tries again).  Since: 1.0
 */
int ion_solution_get_rejection_count(const struct ion_solution *solution);
/*
 * The index-th rejection: a heap, the device that excluded it (NULL when
 * the request itself did: "not in the id mask", "unavailable: ..."), and
 * why in words, naming the constraint and its source ("video0 needs
 * physically contiguous memory, and system is scattered (Contiguous,
 * 50-qemu.conf:14)").  A heap several devices exclude appears once per
 * device.  Strings live as long as the solution.
 * Errors: -EINVAL; -ENOENT past the end; -ENOMEM.  Since: 1.0
 */
int ion_solution_get_rejection(const struct ion_solution *solution,
			       unsigned int index,
			       const struct ion_heap **ret_heap,
			       const struct ion_device **ret_device,
			       const char **ret_reason);
/*
 * ion_solution_alloc: allocates from the solution's heaps, best first,
 * and returns a read-write, close-on-exec buffer fd; ret_heap (may be
 * NULL) tells which heap served.  With fallback, an -ENOMEM passes to
 * the next heap; the last heap's answer is returned.  No I/O but the
 * allocation's own syscalls.
 *
 * Errors: -EINVAL; -ENODEV when the solution has no heap (the heap named
 * does not exist, or no heap is in the mask); a heap's own error when the
 * only heap named is unavailable; what the kernel answers (-ENOMEM ...).
 * Threads: any.  Since: 1.0
 */
int ion_solution_alloc(const struct ion_solution *solution, int *ret_fd,
		       const struct ion_heap **ret_heap);
/*
 * ion_ctx_allocate: solve and allocate in one call, without keeping the
 * solution.  Errors: those of both.  Since: 1.0
 */
int ion_ctx_allocate(struct ion_ctx *ctx, const struct ion_alloc_config *config,
		     int *ret_fd, const struct ion_heap **ret_heap);

/*
 * ion_ctx_alloc: len bytes from the heap of this name or alias.
 * Errors: as ion_ctx_allocate(); -ENODEV when no heap has the name.
 * Since: 1.0
 */
int ion_ctx_alloc(struct ion_ctx *ctx, const char *heap_name, size_t len,
		  unsigned int flags, int *ret_fd);
/*
 * ion_ctx_alloc_mask: len bytes from the heaps of heap_id_mask, highest id
 * first; an -ENOMEM passes to the next heap, as in the kernel's ION.
 * ret_heap (may be NULL) tells which heap served.
 * Errors: as ion_ctx_allocate(); the length is checked before the mask,
 * as ION does.  Since: 1.0
 */
int ion_ctx_alloc_mask(struct ion_ctx *ctx, unsigned int heap_id_mask,
		       size_t len, unsigned int flags, int *ret_fd,
		       const struct ion_heap **ret_heap);

/* ------------------------------------------------------------------ */
/* Constraints across processes                                        */
/* ------------------------------------------------------------------ */

/*
 * ion_alloc_config_serialize: the constraints of the config's devices (and
 * of those it took from other processes) as text that another process
 * gives ion_alloc_config_add_constraints(): one line, printable ASCII,
 * versioned ("ionc1"), each constraint with its device's name and each
 * key with its source, so that the other side can explain a rejection.
 * The format is documented in the README ("Constraints across
 * processes").  Sending it is the caller's business (a socket, a
 * Wayland protocol, a file).  *ret_text is malloc'ed.  A text holds at
 * most 64 constraints and 64 KiB, and the serializer never writes one
 * that the parser would refuse.  It carries what restricts the heaps
 * (Heaps, Contiguous, AddressBits, Cache, Alignment, KernelMap,
 * OwnBuffersOnly, a DRM device's own heap, a preference for uncached
 * memory), and no Pool hint: the hints are the board's word to this
 * process, and a receiver is never made to keep buffers ready by another.
 * Errors: -EINVAL; -E2BIG past either limit (a config with more than 64
 * devices, or sources so long that the text would pass 64 KiB);
 * -ENOMEM.  Since: 1.0
 */
int ion_alloc_config_serialize(const struct ion_alloc_config *config, char **ret_text);
/*
 * ion_alloc_config_add_constraints: AND-s the constraints in text (from
 * ion_alloc_config_serialize(), maybe in another process) with the
 * config's own.  Such a constraint has no struct ion_device here: its
 * rejections name the remote device in their reason, and
 * ion_solution_get_rejection() gives NULL as the device.  What another
 * process sends may restrict the allocation, never make this one spend:
 * each key only leaves heaps out (or, for uncached memory, orders those
 * left), and a pool made of such a solution (ion_pool_new()) takes no
 * hint from it.  A text with a Pool key is refused.  The text's names
 * and sources are kept escaped, so that no reason shows a peer's bytes
 * raw: a control byte (below 0x20, 0x7f, the C1 controls) or a byte of
 * no UTF-8 becomes the four characters \xhh; serialized again, the
 * escapes are text, taken back to themselves.
 * Errors: -EINVAL for an unknown version, an unknown key (Pool too) or
 * anything malformed (the config is then unchanged); -E2BIG when the
 * config would then hold more than 64 constraints (unchanged too);
 * -ENOMEM.  Since: 1.0
 */
int ion_alloc_config_add_constraints(struct ion_alloc_config *config, const char *text);

/* ------------------------------------------------------------------ */
/* Late allocation                                                     */
/* ------------------------------------------------------------------ */

/*
 * A buffer whose memory is chosen as late as possible: devices attach to
 * it, and the first ion_buffer_get_fd() solves for all of them and
 * allocates (the 2013 proposal for dma-buf).  A device attached after
 * that either fits the heap chosen or is refused, with a reason that
 * names the device and the constraint it adds.
 *
 * Threads: a buffer may be used from any number of threads at once; the
 * first ion_buffer_get_fd() allocates once, whoever calls it.
 */

/*
 * ion_buffer_new: a buffer of len bytes (page-rounded when allocated);
 * returns a reference, which also keeps the context alive.
 * Errors: -EINVAL (len 0); -ENOMEM.  Since: 1.0
 */
int ion_buffer_new(struct ion_ctx *ctx, size_t len, struct ion_buffer **ret_buffer);
/*
 * ion_buffer_new_image: a buffer for an image of a DRM fourcc
 * (<drm/drm_fourcc.h>: XRGB8888, ARGB8888, XBGR8888, ABGR8888, RGB565,
 * YUYV, UYVY, NV12, NV21, YUV420), width x height pixels.  Each plane's
 * stride and offset are rounded up to the largest Alignment of the
 * attached devices (at least 1 byte), so the layout, and the length, is
 * fixed at the first ion_buffer_get_fd().
 * Errors: -EINVAL (a format it does not know, 0 or too large sizes);
 * -ENOMEM.  Since: 1.0
 */
int ion_buffer_new_image(struct ion_ctx *ctx, unsigned int fourcc, unsigned int width,
			 unsigned int height, struct ion_buffer **ret_buffer);
/* Since: 1.0 */
struct ion_buffer *ion_buffer_ref(struct ion_buffer *buffer);
struct ion_buffer *ion_buffer_unref(struct ion_buffer *buffer);
/*
 * ION_FLAG_CACHED / ION_FLAG_CACHED_NEEDS_SYNC, before the allocation.
 * Errors: -EINVAL; -EBUSY once allocated.  Since: 1.0
 */
int ion_buffer_set_flags(struct ion_buffer *buffer, unsigned int flags);
/*
 * ion_buffer_attach: a device that will touch the buffer.  Before the
 * allocation its constraint joins the others; after it, the heap chosen
 * must fit it too, and so must an image's strides and plane offsets (the
 * device's Alignment).
 * Errors: -EINVAL for NULL; -EXDEV when the buffer is allocated and its
 * heap (or an image's layout) does not fit the device (ion_buffer_get_reason() says why:
 * "video0 needs physically contiguous memory, and system is scattered
 * (Contiguous, 50-qemu-q35.conf:23)"); -ENOMEM.  Since: 1.0
 */
int ion_buffer_attach(struct ion_buffer *buffer, struct ion_device *device);
/*
 * ion_buffer_get_fd: the buffer's fd, allocating on the first call (from
 * the best heap that fits every device attached, passing on an -ENOMEM
 * to the next).  The fd is the buffer's: valid while the buffer lives;
 * dup() it to keep it longer.
 * Errors: -ENODEV when no heap fits every device (the reason says which
 * device excluded which heap); -EINVAL for an image whose layout takes
 * more bytes than a size_t counts (a 32-bit machine's); what the kernel
 * answers.  Since: 1.0
 */
int ion_buffer_get_fd(struct ion_buffer *buffer, int *ret_fd);
/* The heap that served, or NULL before the allocation.  Since: 1.0 */
const struct ion_heap *ion_buffer_get_heap(const struct ion_buffer *buffer);
/* The length (page-rounded once allocated); 0 for an image before its
 * allocation, whose layout waits for every device's alignment.
 * Since: 1.0 */
size_t ion_buffer_get_size(const struct ion_buffer *buffer);
/*
 * An image buffer's plane: its stride (bytes per row) and offset, fixed
 * at the allocation.  Errors: -EINVAL (not an image, no such plane);
 * -EBUSY before the allocation.  Since: 1.0
 */
int ion_buffer_get_plane(const struct ion_buffer *buffer, unsigned int plane,
			 unsigned int *ret_stride, size_t *ret_offset);
/* Why the last failing attach or get_fd failed, in words, or NULL.  The
 * buffer keeps only the last reason: the string lives until the next
 * failing attach or get_fd on the buffer (threads that share a buffer
 * copy it under a lock of their own).  Since: 1.0 */
const char *ion_buffer_get_reason(const struct ion_buffer *buffer);

/* ------------------------------------------------------------------ */
/* Pools                                                               */
/* ------------------------------------------------------------------ */

/*
 * A pool keeps buffers of one solution (its heaps, flags and devices)
 * ready in user space, so that a hot path takes a buffer without waiting
 * on the kernel: a hit is one fcntl(F_DUPFD_CLOEXEC).
 *
 * Size classes: a request is rounded up to 4 KiB below 512 KiB, to 64
 * KiB below 8 MiB, and to 1 MiB above (the chunk sizes of the kernel's
 * system heap), and a pooled buffer serves exactly its class: it is at
 * most 4 KiB - 1 larger than asked below 512 KiB, and less than 12.5 %
 * larger above.  ion_fd_get_size() tells the buffer's real size.
 *
 * Safety: a buffer is handed out again only when nothing else holds it:
 * no fd in any process, no mapping, no device import.  For a dma-buf the
 * kernel says so (the "count" of /proc/self/fdinfo, Linux 5.3 and later):
 * a buffer returned while still referenced is kept aside and taken back
 * only once its count says it is free, and a buffer the caller simply
 * closed is found free again the same way.  The pool checks once per heap
 * that the kernel counts a mapping too (5.10's vgem does not); where it
 * does not, and for a memfd, which has no such count, the kernel cannot
 * tell: such a buffer is handed out as the pool's own fd, so that a
 * close() releases it, and goes back into the pool only when the caller
 * vouches for it (ION_POOL_VOUCH); put without, it is closed.  A
 * returned buffer is zeroed (unless turned off) and its CPU access ended
 * (ion_sync END), so that the caches are clean before a device sees it.
 *
 * Limits: a pool holds what comes back, up to its own limit and the
 * context's; a heap's pool (a board's Pool hint) holds at most the
 * hinted count of each hinted size, and serves only those sizes.
 *
 * Fork: the child's pools start empty; it closes the pooled fds it
 * inherited, so that parent and child never share a pooled buffer.
 * Threads: a pool may be used from any number of threads at once; it has
 * a lock of its own.
 */

/* Pool statistics (ion_pool_get_stat()). */
enum ion_pool_stat {
	ION_POOL_STAT_HITS,		/* ion_pool_get() served from the pool */
	ION_POOL_STAT_MISSES,		/* ... that allocated */
	ION_POOL_STAT_BYTES_HELD,	/* in the pool now, not handed out */
	ION_POOL_STAT_HIGH_WATER,	/* the most bytes held at once */
	ION_POOL_STAT_BUFFERS_OUT,	/* handed out, not back yet */
	ION_POOL_STAT_REFILLS,		/* buffers allocated ahead of need */
	ION_POOL_STAT_RECLAIMS,		/* buffers found free again after use */
	ION_POOL_STAT_TRIMS,		/* buffers released by trim, expiry, limits or pressure */
	ION_POOL_STAT_COUNT
};

/* ion_pool_put() flags. */
/* The caller vouches that nothing else holds the buffer (for memfd,
 * where the kernel cannot tell). */
#define ION_POOL_VOUCH (1U << 0)

/*
 * ion_pool_new: a pool for the solution's buffers; returns a reference.
 * The pool holds a reference to the solution and its context.  A device
 * of the solution with a heaps.d Pool hint gives the pool its hints
 * (ion_pool_set_hints() replaces them).
 * Errors: -EINVAL; -ENOMEM.  Since: 1.0
 */
int ion_pool_new(struct ion_solution *solution, struct ion_pool **ret_pool);
/* Since: 1.0 */
struct ion_pool *ion_pool_ref(struct ion_pool *pool);
struct ion_pool *ion_pool_unref(struct ion_pool *pool);
/*
 * ion_pool_get: a buffer of at least len bytes (see size classes): from
 * the pool if one is ready, else a new one of the solution.  The fd is
 * the caller's (read-write, close-on-exec); give it back with
 * ion_pool_put() or simply close it (a dma-buf then comes back on its
 * own once nothing holds it).
 * Errors: -EINVAL (len 0, or too large to round); the solution's.
 * Threads: any.  Since: 1.0
 */
int ion_pool_get(struct ion_pool *pool, size_t len, int *ret_fd);
/*
 * ion_pool_put: gives back a buffer fd that ion_pool_get() returned; the
 * pool closes fd.  flags: ION_POOL_VOUCH or 0.
 * Errors: -EBADF; -EINVAL for an fd that is not one of this pool's
 * buffers out (another pool's, a foreign fd, one already given back, the
 * number of one given back that the pool's own fd took since, an
 * uncounted buffer that no fd of this process held for a while, which
 * the pool forgot): then fd stays the caller's, untouched.  Since: 1.0
 */
int ion_pool_put(struct ion_pool *pool, int fd, unsigned int flags);
/*
 * Hints: how many buffers of which sizes to keep ready, as in heaps.d
 * ("8x1M 4x8M").  ion_pool_prefill() allocates up to them now; with
 * background refill on, a thread of the context keeps each class at its
 * count of clean buffers (a thread a heap for pools whose hints are all
 * of 256 KiB or less, one for the others, given when refill is first
 * turned on), refilling when it falls to half, and zeroes
 * what comes back, so that a get finding none clean allocates rather
 * than zero one itself (but on a contiguous heap, once the thread lags,
 * or with twice the hint's count of the class out, or when the heap is
 * out of memory); a refill that finds the heap out of memory leaves it alone for
 * a second before trying again.
 * Hints are wishes, capped when set, in the order written: a size larger
 * than the solution's heaps give is left out, and the buffers of all the
 * hints together take at most a quarter of RAM (at most the area of a
 * CMA heap) and, in number, a quarter of the soft RLIMIT_NOFILE at the
 * call (each pooled buffer holds an fd).  A cap is no error: the log says
 * at debug level what was kept (a board's or a device's hint, capped the
 * same when the pool is made, at error level, as heaps.d's problems).
 * Errors: -EINVAL with a malformed hint; -ENOMEM.  Since: 1.0
 */
int ion_pool_set_hints(struct ion_pool *pool, const char *hints);
int ion_pool_prefill(struct ion_pool *pool);
int ion_pool_set_background(struct ion_pool *pool, int background);
/* Zero returned buffers (default on); off for producers that overwrite
 * every byte.  Since: 1.0 */
int ion_pool_set_zeroing(struct ion_pool *pool, int zero);
/* The most bytes the pool holds (not handed out); past it a returned
 * buffer is released.  0: no limit of its own (the default).  Since: 1.0 */
int ion_pool_set_max_bytes(struct ion_pool *pool, unsigned long long bytes);
/* Idle buffers older than this are released (0: never, the default).
 * Since: 1.0 */
int ion_pool_set_expiry_ms(struct ion_pool *pool, unsigned int ms);
/* Releases held buffers until at most keep_bytes remain; returns how many
 * it released.  Since: 1.0 */
int ion_pool_trim(struct ion_pool *pool, unsigned long long keep_bytes);
/* A statistic, or 0 for NULL or an unknown one.  Since: 1.0 */
unsigned long long ion_pool_get_stat(const struct ion_pool *pool, enum ion_pool_stat stat);

/*
 * The most bytes all pools of the context hold together (0: no limit).
 * Where the kernel offers PSI (/proc/pressure/memory), the context's
 * thread also trims every pool when memory runs short, and then refills
 * none for 10 seconds (ion_pool_prefill() still fills).  Since: 1.0
 */
int ion_ctx_set_pool_limit(struct ion_ctx *ctx, unsigned long long bytes);
/* Trims every pool of the context to nothing; returns the buffers
 * released.  Since: 1.0 */
int ion_ctx_trim_pools(struct ion_ctx *ctx);

#ifdef __cplusplus
}
#endif

#endif /* LIBION_LIBION_H */
