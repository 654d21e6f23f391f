/* SPDX-License-Identifier: MIT */
/*
 * The constraint vocabulary: every key a heaps.d file, a udev property, a
 * sysfs cookie or an ionc1 text may say, in one table (vocabulary.c):
 * its name, which sections take it, its udev name, how its value parses
 * and is written back, how two devices' values AND and how a heap meets
 * a value (vocabulary-rules.c).  Whoever stores a
 * value goes through ion_conf_field_parse(); whoever reads one goes
 * through the typed getters below, never the storage.
 *
 * A new key: its enum value here, its table entry in vocabulary.c, its
 * test, its docs (heaps.d/README.md, man/libion-heaps.d.5).
 */
#ifndef LIBION_VOCABULARY_H
#define LIBION_VOCABULARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ion_conf_kind {
	ION_CONF_BOARD,
	ION_CONF_HEAP,
	ION_CONF_DEVICE,
};

/* Every key of every section kind; the table says which kind takes which. */
enum ion_conf_key {
	/* [Board]: all Match keys of a section must match (a repeated key:
	 * any of its values); globs through fnmatch(). */
	ION_KEY_MATCH_COMPATIBLE,	/* MatchCompatible: any DT compatible entry */
	ION_KEY_MATCH_MODEL,		/* MatchModel: DT model */
	ION_KEY_MATCH_DMI_VENDOR,	/* MatchDMIVendor: sys_vendor */
	ION_KEY_MATCH_DMI_PRODUCT,	/* MatchDMIProduct: product_name */
	ION_KEY_MATCH_DMI_BOARD,	/* MatchDMIBoard: board_name */
	ION_KEY_COOKIE_ATTRIBUTE,	/* CookieAttribute: sysfs attribute name */

	/* [Device] matches */
	ION_KEY_MATCH_SYSFS_PATH,	/* MatchSysfsPath */
	ION_KEY_MATCH_SUBSYSTEM,	/* MatchSubsystem */
	ION_KEY_MATCH_DRIVER,		/* MatchDriver */
	ION_KEY_MATCH_OF_COMPATIBLE,	/* MatchOFCompatible */
	ION_KEY_MATCH_UDEV_PROPERTY,	/* MatchUdevProperty: KEY=GLOB */
	ION_KEY_MATCH_DRM_DRIVER,	/* MatchDRMDriver */
	ION_KEY_MATCH_V4L2_CARD,	/* MatchV4L2Card */
	ION_KEY_MATCH_NAME,		/* MatchName: the sysfs "name" attribute */

	/* [Heap] properties */
	ION_KEY_ALIASES,		/* Aliases: list of names */
	ION_KEY_MEMORY,			/* Memory: identity of the memory behind */
	ION_KEY_CPU_ACCESS,		/* CPUAccess: bool (no: protected heap) */
	ION_KEY_PREFERENCE,		/* Preference: integer, higher first */
	ION_KEY_ANDROID_ID,		/* AndroidId: 0..31 */
	ION_KEY_MAX_SIZE,		/* MaxSize: size */

	/* [Device] requirements */
	ION_KEY_HEAPS,			/* Heaps: list of acceptable heap names */
	ION_KEY_OWN_BUFFERS_ONLY,	/* OwnBuffersOnly: bool */
	ION_KEY_PITCH_ALIGNMENT,	/* PitchAlignment: an image's rows, required */
	ION_KEY_PREFERRED_PITCH_ALIGNMENT, /* PreferredPitchAlignment: ... wished */

	/* Both: on a heap what it is, on a device what it needs */
	ION_KEY_CONTIGUOUS,		/* Contiguous: bool */
	ION_KEY_CACHE,			/* Cache: cached | uncached | any */
	ION_KEY_ADDRESS_BITS,		/* AddressBits: 1..64 */
	ION_KEY_ALIGNMENT,		/* Alignment: size, a power of two */
	ION_KEY_KERNEL_MAP,		/* KernelMap: bool */
	ION_KEY_POOL,			/* Pool: list of COUNTxSIZE */

	ION_KEY_COUNT
};

enum ion_cache_mode {
	ION_CACHE_ANY,
	ION_CACHE_CACHED,
	ION_CACHE_UNCACHED,
};

/* Where a value came from: a file and its 1-based line.  file is owned
 * by the struct ion_conf it came from (or is a static string). */
struct ion_conf_src {
	const char *file;
	unsigned int line;
};

struct ion_pool_hint {
	uint32_t count;
	uint64_t size;
};

/* One key's value with where it was set: the vocabulary's storage, which
 * only vocabulary.c reads and writes (pool.c and alloc.c still hand a
 * Pool list through it). */
struct ion_conf_field {
	bool set;
	struct ion_conf_src src;	/* the last setting that changed it */
	union {
		bool b;			/* bool keys */
		int64_t i;		/* Preference */
		uint64_t u;		/* AddressBits, AndroidId, sizes, Cache */
		char *s;		/* Memory, CookieAttribute, Match globs */
		struct {
			char **v;	/* NULL-terminated; Aliases, Heaps */
			size_t n;
		} list;
		struct {
			struct ion_pool_hint *v;
			size_t n;
		} pool;
	} v;
};

/* What applies to one heap or one device: a field per key. */
struct ion_conf_props {
	struct ion_conf_field f[ION_KEY_COUNT];
};

/* ---- the keys ---- */

/* "Contiguous" -> ION_KEY_CONTIGUOUS, or -1. */
int ion_conf_key_from_name(const char *name);
const char *ion_conf_key_name(enum ion_conf_key key);
/* "ION_CONTIGUOUS" (a udev property) -> ION_KEY_CONTIGUOUS, or -1;
 * only device requirement keys have a udev name. */
int ion_conf_key_from_udev(const char *property);
/* Whether a [kind] section takes the key. */
bool ion_conf_key_in(enum ion_conf_key key, enum ion_conf_kind kind);
/* A Match key (a glob; repeats are alternatives, no "+=", no clearing). */
bool ion_conf_key_is_match(enum ion_conf_key key);
/* A list key: "+=" appends to it. */
bool ion_conf_key_is_list(enum ion_conf_key key);
/* A device requirement: what cookies and udev properties may say. */
bool ion_conf_key_is_requirement(enum ion_conf_key key);
/* A requirement another process may send (ionc1): all but hints. */
bool ion_conf_key_is_remote(enum ion_conf_key key);
/* The device requirement keys in the order they are shown and written
 * (ionctl devices, ionc1): the i-th, or -1 past the last. */
int ion_conf_requirement(size_t i);

/* ---- values ---- */

/*
 * Parses a value for key as a file would ("yes", "64K", ...) and sets
 * *field (replacing what it held) with src; 0, -EINVAL with *ret_message
 * (static) saying why, or -ENOMEM.
 */
int ion_conf_field_parse(enum ion_conf_key key, const char *value,
			 struct ion_conf_src src, struct ion_conf_field *field,
			 const char **ret_message);
/* The value of a field as text, the way a file would say it (malloc'ed);
 * NULL on ENOMEM or when unset. */
char *ion_conf_field_format(enum ion_conf_key key,
			    const struct ion_conf_field *field);
/* Frees what the field holds; it is unset afterwards. */
void ion_conf_field_clear(enum ion_conf_key key, struct ion_conf_field *f);
/* *dst = a deep copy of *src; 0 or -ENOMEM (*dst untouched). */
int ion_conf_field_copy(enum ion_conf_key key, struct ion_conf_field *dst,
			const struct ion_conf_field *src);
/* "Key += value": appends add's items to the list f holds (both set). */
int ion_conf_field_append(enum ion_conf_key key, struct ion_conf_field *f,
			  const struct ion_conf_field *add);
/*
 * ANDs add into *acc: what two devices need together (the larger
 * Alignment, the fewer AddressBits, Contiguous if either needs it, the
 * heaps both list).  The source follows the value that decides.  0,
 * -ENOMEM, -EINVAL when no value satisfies both (Cache cached and
 * uncached), or -EOPNOTSUPP for a key that does not AND (Pool hints are
 * per device); *acc is untouched on failure.
 */
int ion_conf_field_and(enum ion_conf_key key, struct ion_conf_field *acc,
		       const struct ion_conf_field *add);

void ion_conf_props_clear(struct ion_conf_props *props);
/* *dst = a deep copy of *src; 0 or -ENOMEM (*dst untouched). */
int ion_conf_props_copy(struct ion_conf_props *dst, const struct ion_conf_props *src);

/*
 * What one device needs of a buffer's memory: heaps.d's device keys
 * (Heaps, Contiguous, Cache, AddressBits, Alignment, KernelMap,
 * OwnBuffersOnly, ...), each with the source that set it.  Plain data: a
 * device makes one (device.c), and so does a constraint set that came
 * from another process; the solver reads it through the getters below.
 */
struct ion_constraint {
	char *device;		/* who needs it, for explanations */
	char *own_heap;		/* the device's own GEM heap (it always fits), or NULL */
	bool prefer_uncached;	/* not DMA-coherent: uncached memory first */
	struct ion_conf_src prefer_uncached_src;
	struct ion_conf_props props;
};

/* ---- how a heap meets a device's requirements ---- */

/* A heap as the requirements see it (the solver fills it in from the
 * registry's heap). */
struct ion_heap_view {
	const char *name;
	const char *kernel_name;
	char *const *aliases;		/* NULL-terminated, or NULL */
	bool contiguous, cached, uncached, kernel_map;
	bool default_cma;		/* the kernel's CMA area: answers to "cma" */
	unsigned int address_bits;	/* every address below 2^bits */
	size_t alignment;
};

/* The device that asks: its name in the words, its own DRM heap or NULL. */
struct ion_fit_who {
	const char *device;
	const char *own_heap;
};

/*
 * Whether heap meets every requirement props holds, checked in the
 * table's order: 0, or 1 with *ret_key the first key it fails and, when
 * ret_reason is not NULL, *ret_reason (malloc'ed) saying why in words
 * ending before the key ("video0 needs physically contiguous memory, and
 * system is scattered"); -ENOMEM (nothing written).
 */
int ion_props_fit(const struct ion_conf_props *props, const struct ion_heap_view *heap,
		  const struct ion_fit_who *who, enum ion_conf_key *ret_key,
		  char **ret_reason);

/* ---- typed getters, as libinput's quirks_get_*() ----
 * Each answers whether the key is set and of that type, and writes *ret
 * only then; what they hand out belongs to props. */
bool ion_props_get_bool(const struct ion_conf_props *props, enum ion_conf_key key,
			bool *ret);
bool ion_props_get_uint(const struct ion_conf_props *props, enum ion_conf_key key,
			uint64_t *ret);
bool ion_props_get_int(const struct ion_conf_props *props, enum ion_conf_key key,
		       int64_t *ret);
bool ion_props_get_cache(const struct ion_conf_props *props, enum ion_conf_key key,
			 enum ion_cache_mode *ret);
bool ion_props_get_string(const struct ion_conf_props *props, enum ion_conf_key key,
			  const char **ret);
/* A list (NULL-terminated) and its length. */
bool ion_props_get_list(const struct ion_conf_props *props, enum ion_conf_key key,
			char *const **ret, size_t *ret_n);
bool ion_props_get_pool(const struct ion_conf_props *props, enum ion_conf_key key,
			const struct ion_pool_hint **ret, size_t *ret_n);
/* Where the key was last set (or cleared); false when it is unset. */
bool ion_props_get_src(const struct ion_conf_props *props, enum ion_conf_key key,
		       struct ion_conf_src *ret);
bool ion_props_is_set(const struct ion_conf_props *props, enum ion_conf_key key);

/* ---- typed setters, for facts derived outside any text ---- */
int ion_props_set_bool(struct ion_conf_props *props, enum ion_conf_key key, bool v,
		       struct ion_conf_src src);
int ion_props_set_uint(struct ion_conf_props *props, enum ion_conf_key key, uint64_t v,
		       struct ion_conf_src src);
/* Moves key's field from *from into *to where *to has none. */
void ion_props_fill_unset(struct ion_conf_props *to, struct ion_conf_props *from,
			  enum ion_conf_key key);

#endif
