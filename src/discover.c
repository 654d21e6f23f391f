// SPDX-License-Identifier: MIT
/*
 * Discovery, once per context, lazily, under the context's lock, and again
 * on a rescan: the board, heaps.d, the backend probes, then the merge (one
 * memory counts once), unique names, uncached variants, Android ids, the
 * heaps' annotations from heaps.d, and the devices.  What it builds is
 * published as the context's registry (registry.c), which nothing writes
 * afterwards.
 */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <ion/ion.h>

#include "backends/backend.h"
#include "config.h"
#include "device.h"
#include "registry.h"
#include "sysfs.h"

static const struct ion_backend *const backends[] = {
	&ion_backend_dmaheap,
	&ion_backend_ion,
	&ion_backend_udmabuf,
	&ion_backend_gem,
	&ion_backend_memfd,
};

static int strv_add(char ***strv, const char *s)
{
	size_t n = 0;
	char **grown;

	while (*strv && (*strv)[n])
		n++;
	grown = realloc(*strv, (n + 2) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	*strv = grown;
	grown[n] = strdup(s);
	grown[n + 1] = NULL;
	return grown[n] ? 0 : -ENOMEM;
}

static int add_alias(struct ion_heap *heap, const char *alias)
{
	return strv_add(&heap->aliases, alias);
}

/*
 * One memory counts once.  Of the heaps with one memory key, the first
 * available one (backends probe in order of preference) stays; with none
 * available, the first stays, to say why.  A heap of the same backend
 * under another name (6.17 lists the default CMA area twice) leaves its
 * name behind as an alias; another provider's copy (ION's system heap
 * beside the DMA-BUF one on 5.10) simply goes.
 */
static int merge_same_memory(struct ion_ctx *ctx, struct ion_registry *reg)
{
	for (unsigned int i = 0; i < reg->n_heaps; i++) {
		struct ion_heap *keep = reg->heaps[i];

		if (!keep->memory_key)
			continue;
		for (unsigned int j = i + 1; j < reg->n_heaps; j++) {
			struct ion_heap *h = reg->heaps[j];

			if (!h->memory_key || strcmp(h->memory_key, keep->memory_key))
				continue;
			if (keep->error && !h->error) {
				/* The available one stays, in the first one's place. */
				reg->heaps[i] = h;
				reg->heaps[j] = keep;
				keep = h;
				h = reg->heaps[j];
			}
			ion_dbg(ctx, "%s heap %s left out: %s heap %s has the same memory",
				h->backend->name, h->kernel_name, keep->backend->name,
				keep->kernel_name);
			if (h->backend == keep->backend && add_alias(keep, h->kernel_name) < 0)
				return -ENOMEM;
			/* What board files say of the name that goes still holds. */
			if (strv_add(&keep->merged, h->kernel_name) < 0)
				return -ENOMEM;
			for (char **m = h->merged; m && *m; m++)
				if (strv_add(&keep->merged, *m) < 0)
					return -ENOMEM;
			ion_registry_remove_heap(reg, j--);
		}
	}
	return 0;
}

/* A name two heaps share gets a "-N" suffix on the later one. */
static int unique_names(struct ion_registry *reg)
{
	for (unsigned int i = 0; i < reg->n_heaps; i++) {
		struct ion_heap *h = reg->heaps[i];
		bool taken = true;

		for (unsigned int n = 2; taken; n++) {
			taken = false;
			for (unsigned int k = 0; k < i && !taken; k++)
				taken = strcmp(reg->heaps[k]->name, h->name) == 0;
			if (!taken)
				break;
			free(h->name);
			if (asprintf(&h->name, "%s-%u", h->kernel_name, n) < 0) {
				h->name = NULL;
				return -ENOMEM;
			}
		}
		h->index = i;
	}
	return 0;
}

/* system-uncached for system, and so on: the uncached variant of a
 * memory, named after it, serves Android masks without ION_FLAG_CACHED. */
static void link_uncached(struct ion_registry *reg)
{
	for (unsigned int i = 0; i < reg->n_heaps; i++) {
		struct ion_heap *h = reg->heaps[i];
		size_t len = strlen(h->kernel_name);

		if (h->error || len <= 9 || strcmp(h->kernel_name + len - 9, "-uncached") ||
		    (h->props & ION_HEAP_PROP_CACHED))
			continue;
		for (unsigned int k = 0; k < reg->n_heaps; k++) {
			struct ion_heap *cached = reg->heaps[k];

			if (!cached->error && cached->backend == h->backend &&
			    strlen(cached->kernel_name) == len - 9 &&
			    strncmp(cached->kernel_name, h->kernel_name, len - 9) == 0)
				cached->uncached = h;
		}
	}
}

static bool is_uncached_variant(const struct ion_registry *reg,
				const struct ion_heap *h)
{
	for (unsigned int i = 0; i < reg->n_heaps; i++)
		if (reg->heaps[i]->uncached == h)
			return true;
	return false;
}

/*
 * The first available heap of each ION type (backends probe in order of
 * preference) takes the type's id, so Android masks keep their meaning;
 * the rest get ids from 31 down to ION_EXTRA_ID_FIRST, while they last.
 * An uncached variant is reached through its cached heap's id.
 */
static void assign_ids(struct ion_registry *reg)
{
	/* Extra ids from the top down, in order of preference: ION tries a
	 * mask's highest id first, so a wide mask meets memfd (CPU-only,
	 * probed last) last. */
	int next_extra = ION_MAX_IDS - 1;

	/* The board's AndroidId first: vendor code hard-codes its ids. */
	for (unsigned int i = 0; i < reg->n_heaps; i++) {
		struct ion_heap *h = reg->heaps[i];

		if (h->id >= 0 && !h->error && !reg->by_id[h->id] &&
		    !h->backend->mmap_ignores_offset)
			reg->by_id[h->id] = h;
		else
			h->id = -1;
	}
	for (unsigned int i = 0; i < reg->n_heaps; i++) {
		struct ion_heap *h = reg->heaps[i];

		/* No mask may reach a protected heap (Android's calls cannot
		 * say that the CPU will never map the buffer), nor one whose
		 * mappings at an offset show the wrong pages (Android's own
		 * Map.MapOffset test maps every heap it is offered so). */
		if (h->error || h->id >= 0 || is_uncached_variant(reg, h) ||
		    (h->props & ION_HEAP_PROP_PROTECTED) || h->backend->mmap_ignores_offset)
			continue;
		while (next_extra >= ION_EXTRA_ID_FIRST && reg->by_id[next_extra])
			next_extra--;
		if (h->type < ION_HEAP_TYPE_CUSTOM && !reg->by_id[h->type])
			h->id = (int)h->type;
		else if (next_extra >= ION_EXTRA_ID_FIRST)
			h->id = next_extra;
		if (h->id >= 0)
			reg->by_id[h->id] = h;
	}
}

/*
 * heaps.d: the folders the context was given, else ION_HEAPS_PATH, else
 * $sysconfdir/libion/heaps.d then $datadir/libion/heaps.d under the
 * sysroot.  Given paths are taken as they are, not under the sysroot.
 */
static int load_conf(struct ion_ctx *ctx, struct ion_registry *reg)
{
	const char *env = ion_ctx_heaps_paths(ctx) ? NULL : secure_getenv("ION_HEAPS_PATH");
	_cleanup_free_ char *etc = NULL, *share = NULL;
	_cleanup_strv_ char **from_env = NULL;
	const char *const *paths;
	const char *defaults[2];
	size_t n;
	int r;

	if (env && !(from_env = ion_strv_split(env, ':')))
		return -ENOMEM;
	paths = (const char *const *)(ion_ctx_heaps_paths(ctx) ? ion_ctx_heaps_paths(ctx) : from_env);
	if (paths) {
		n = ion_strv_len(paths);
		/* Error priority, as the files' own problems: a folder left
		 * out is a board file silently not applied. */
		if (n > ION_HEAPS_PATHS_MAX) {
			ion_err(ctx, "%s names more than %d folders: %s and every one after it are not read",
				env ? "ION_HEAPS_PATH" : "the heaps path", ION_HEAPS_PATHS_MAX,
				paths[ION_HEAPS_PATHS_MAX]);
			n = ION_HEAPS_PATHS_MAX;
		}
	} else {
		etc = ion_ctx_path(ctx, LIBION_SYSCONFDIR "/libion/heaps.d");
		share = ion_ctx_path(ctx, LIBION_DATADIR "/libion/heaps.d");
		if (!etc || !share)
			return -ENOMEM;
		defaults[0] = etc;
		defaults[1] = share;
		paths = defaults;
		n = 2;
	}
	r = ion_conf_load(paths, n, &reg->board, ion_ctx_log_conf_error, ctx, &reg->conf);
	for (size_t i = 0; r == 0 && i < ion_conf_board_count(reg->conf); i++) {
		struct ion_conf_src src;
		const char *name = ion_conf_board(reg->conf, i, &src);

		r = ion_attrs_add(&reg->boards, "board", name, "%s:%u", src.file, src.line);
		if (r == 0)
			ion_dbg(ctx, "board %s matches (%s:%u)", name, src.file, src.line);
	}
	return r;
}

static unsigned int bits_for(uint64_t end)
{
	unsigned int bits = 1;

	while (bits < 64 && (end - 1) >> bits)
		bits++;
	return bits;
}

/* What board.c ignored of the device tree: the firmware's, not the
 * caller's nor a board file's problem, so info, not error. */
static void log_board_info(void *userdata, const char *file, unsigned int line,
			   const char *message)
{
	(void)line;
	ion_info((struct ion_ctx *)userdata, "%s: %s", file, message);
}

/*
 * Where memory ends, for address limits (board.c).  Without a map, the
 * size of RAM stands in for its end: too low where RAM does not start at
 * 0, which the board's AddressBits on its heaps then must say.
 */
static int read_ram_bits(struct ion_ctx *ctx, struct ion_registry *reg)
{
	struct ion_board_memory m;
	int r = ion_board_read_memory(ion_ctx_sysroot(ctx), log_board_info, ctx, &m);

	if (r < 0)
		return r;
	reg->mem_total = m.total;
	reg->cma_total = m.cma_total;
	if (!m.end)
		m.end = m.total;
	reg->ram_bits = m.end ? bits_for(m.end) : 64;
	return 0;
}

/*
 * The longest buffer a heap can ever give, so that a request for more is
 * -ENOMEM at once instead of the OOM killer or a SIGBUS later: what its
 * backend knows (udmabuf's module limit, ION's contiguous heap), else the
 * CMA area for a CMA heap, else half of memory, the rule of Android ION's
 * system heap.  A board file's MaxSize has the last word.
 */
static uint64_t default_max_len(const struct ion_registry *reg, const struct ion_heap *h,
				const char **ret_why)
{
	uint64_t half = reg->mem_total ? reg->mem_total / 2 : UINT64_MAX;

	*ret_why = "half of memory, Android ION's rule";
	if (h->max_len && h->max_len < half) {
		*ret_why = "the kernel's limit";
		return h->max_len;
	}
	if (h->max_len)
		return half;
	if ((h->type == ION_HEAP_TYPE_DMA || ion_is_cma_name(h->kernel_name)) && reg->cma_total) {
		*ret_why = "the CMA area, CmaTotal";
		return reg->cma_total;
	}
	return half;
}

/*
 * The [Heap] sections for a heap: those of the kernel names of the heaps
 * merged into it, then of its own kernel name and its name, which so have
 * the last word.  0 or -ENOMEM.
 */
static int heap_sections(const struct ion_registry *reg, const struct ion_heap *h,
			 struct ion_conf_props *props)
{
	int r = 0;

	for (char **m = h->merged; r >= 0 && m && *m; m++)
		r = ion_conf_apply_heap(reg->conf, *m, props);
	if (r >= 0)
		r = ion_conf_apply_heap(reg->conf, h->kernel_name, props);
	if (r >= 0 && strcmp(h->name, h->kernel_name))
		r = ion_conf_apply_heap(reg->conf, h->name, props);
	return r < 0 ? r : 0;
}

/* Before the merge: the board's Memory, which decides what merges. */
static int heap_memory(const struct ion_registry *reg, struct ion_heap *h)
{
	struct ion_conf_props props = { 0 };
	int r = reg->conf ? heap_sections(reg, h, &props) : 0;
	const char *memory;

	if (r == 0 && ion_props_get_string(&props, ION_KEY_MEMORY, &memory)) {
		free(h->memory_key);
		h->memory_key = strdup(memory);
		if (!h->memory_key)
			r = -ENOMEM;
	}
	ion_conf_props_clear(&props);
	return r;
}

/* flags with bit set or cleared as props' bool key says, if it says. */
static unsigned int heap_flag(const struct ion_conf_props *props, enum ion_conf_key key,
			      unsigned int flags, unsigned int bit)
{
	bool v;

	if (!ion_props_get_bool(props, key, &v))
		return flags;
	return v ? flags | bit : flags & ~bit;
}

/* What the files said of the heap, key by key, for the tools. */
static int heap_attrs(struct ion_heap *h, const struct ion_conf_props *props)
{
	int r = 0;

	for (int k = 0; r == 0 && k < ION_KEY_COUNT; k++) {
		_cleanup_free_ char *value = NULL;
		struct ion_conf_src src;

		if (!ion_props_get_src(props, (enum ion_conf_key)k, &src))
			continue;
		value = ion_conf_field_format((enum ion_conf_key)k, &props->f[k]);
		r = value ? ion_attrs_add(&h->attrs, ion_conf_key_name((enum ion_conf_key)k),
					  value, "%s:%u", src.file, src.line)
			  : -ENOMEM;
	}
	return r;
}

/* After it: what the heap is, by the board's word. */
static int annotate_heap(const struct ion_registry *reg, struct ion_heap *h)
{
	const struct ion_pool_hint *hints;
	struct ion_conf_props props = { 0 };
	enum ion_cache_mode cache;
	const char *why;
	char *const *aliases;
	bool cpu_access;
	size_t n;
	uint64_t u;
	int64_t i;
	int r = 0;

	/* A heap may lie anywhere in memory unless its backend knows better. */
	if (!h->address_bits || h->address_bits > reg->ram_bits)
		h->address_bits = reg->ram_bits;
	h->alignment = ion_page_size();
	h->max_len = default_max_len(reg, h, &why);
	h->max_len_why = strdup(why); /* NULL without memory: the words go */
	if (!reg->conf)
		return 0;
	if (heap_sections(reg, h, &props) < 0) {
		ion_conf_props_clear(&props);
		return -ENOMEM;
	}
	if (ion_props_get_list(&props, ION_KEY_ALIASES, &aliases, &n))
		for (size_t a = 0; r == 0 && a < n; a++)
			r = add_alias(h, aliases[a]);
	h->props = heap_flag(&props, ION_KEY_CONTIGUOUS, h->props, ION_HEAP_PROP_CONTIGUOUS);
	if (ion_props_get_cache(&props, ION_KEY_CACHE, &cache)) {
		h->props &= ~(ION_HEAP_PROP_CACHED | ION_HEAP_PROP_UNCACHED);
		if (cache != ION_CACHE_UNCACHED)
			h->props |= ION_HEAP_PROP_CACHED;
		if (cache != ION_CACHE_CACHED)
			h->props |= ION_HEAP_PROP_UNCACHED;
	}
	if (ion_props_get_bool(&props, ION_KEY_CPU_ACCESS, &cpu_access))
		h->props = cpu_access ? h->props & ~ION_HEAP_PROP_PROTECTED
				      : h->props | ION_HEAP_PROP_PROTECTED;
	h->props = heap_flag(&props, ION_KEY_KERNEL_MAP, h->props, ION_HEAP_PROP_KERNEL_MAP);
	/* Below the end of memory whatever a file says: nothing lies above. */
	if (ion_props_get_uint(&props, ION_KEY_ADDRESS_BITS, &u) && u < h->address_bits)
		h->address_bits = (unsigned int)u;
	if (ion_props_get_uint(&props, ION_KEY_ALIGNMENT, &u) && u > h->alignment)
		h->alignment = (size_t)u;
	if (ion_props_get_int(&props, ION_KEY_PREFERENCE, &i))
		h->preference = (int)i;
	if (ion_props_get_uint(&props, ION_KEY_MAX_SIZE, &u)) {
		struct ion_conf_src src = { 0 };

		h->max_len = u;
		ion_props_get_src(&props, ION_KEY_MAX_SIZE, &src);
		free(h->max_len_why);
		if (asprintf(&h->max_len_why, "MaxSize, %s:%u", src.file ? src.file : "?", src.line) < 0)
			h->max_len_why = NULL;
	}
	if (ion_props_get_pool(&props, ION_KEY_POOL, &hints, &n) && n) {
		h->pool_hints = malloc(n * sizeof(*h->pool_hints));
		if (!h->pool_hints)
			r = -ENOMEM;
		else
			memcpy(h->pool_hints, hints, (h->n_pool_hints = n) * sizeof(*h->pool_hints));
	}
	if (ion_props_get_uint(&props, ION_KEY_ANDROID_ID, &u))
		h->id = (int)u;
	if (r == 0)
		r = heap_attrs(h, &props);
	ion_conf_props_clear(&props);
	return r;
}

static int discover(struct ion_ctx *ctx, struct ion_registry **ret)
{
	struct ion_registry *reg = calloc(1, sizeof(*reg));
	int r;

	if (!reg)
		return -ENOMEM;
	atomic_init(&reg->refcount, 1);
	if (ion_ctx_sysroot(ctx)[0] && !(reg->root = realpath(ion_ctx_sysroot(ctx), NULL))) {
		r = errno == ENOMEM ? -ENOMEM : 0;
		ion_dbg(ctx, "sysroot %s: %m", ion_ctx_sysroot(ctx));
		if (r < 0) {
			free(reg);
			return r;
		}
	}
	r = ion_board_read(ion_ctx_sysroot(ctx), &reg->board);
	if (r == 0)
		r = load_conf(ctx, reg);
	if (r == 0)
		r = read_ram_bits(ctx, reg);
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]) && r == 0; i++)
		r = backends[i]->probe(ctx, reg);
	/* No heap is remembered unavailable for a passing reason (out of
	 * memory or fds), nor without its reason for want of memory to say
	 * it: discovery fails instead, and runs again. */
	for (unsigned int i = 0; i < reg->n_heaps && r == 0; i++) {
		const struct ion_heap *h = reg->heaps[i];

		if (h->error && ion_errno_transient(h->error))
			r = h->error;
		else if (h->error && !h->reason)
			r = -ENOMEM;
	}
	for (unsigned int i = 0; i < reg->n_heaps && r == 0; i++)
		r = heap_memory(reg, reg->heaps[i]);
	if (r == 0)
		r = merge_same_memory(ctx, reg);
	for (unsigned int i = 0; i < reg->n_heaps && r == 0; i++)
		r = annotate_heap(reg, reg->heaps[i]);
	if (r == 0)
		r = unique_names(reg);
	if (r == 0) {
		link_uncached(reg);
		assign_ids(reg);
		r = ion_devices_enumerate(ctx, reg);
	}
	if (r == 0 && !(reg->heap_pools = ion_heap_pools_new(reg->n_heaps)))
		r = -ENOMEM;
	if (r < 0) {
		ion_registry_unref(reg);
		return r;
	}
	for (unsigned int i = 0; i < reg->n_heaps; i++) {
		const struct ion_heap *h = reg->heaps[i];

		ion_dbg(ctx, "heap %s (%s, %s): id %d%s%s", h->name,
			h->backend->name, h->node ? h->node : "no node", h->id,
			h->error ? ", unavailable: " : "",
			h->error ? (h->reason ? h->reason : strerror(-h->error)) : "");
	}
	*ret = reg;
	return 0;
}

static bool same_strings(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Whether two discoveries found the same heaps and devices. */
static bool same_registry(const struct ion_registry *a, const struct ion_registry *b)
{
	if (a->n_heaps != b->n_heaps || a->n_devices != b->n_devices)
		return false;
	for (unsigned int i = 0; i < a->n_heaps; i++) {
		const struct ion_heap *x = a->heaps[i], *y = b->heaps[i];

		if (!same_strings(x->name, y->name) || x->backend != y->backend ||
		    x->error != y->error || !same_strings(x->node, y->node))
			return false;
	}
	for (unsigned int i = 0; i < a->n_devices; i++)
		if (!same_strings(ion_device_get_syspath(a->devices[i]),
				  ion_device_get_syspath(b->devices[i])) ||
		    !same_strings(ion_device_get_devnode(a->devices[i]),
				  ion_device_get_devnode(b->devices[i])))
			return false;
	return true;
}

/* This thread's calls with a registry borrowed, and its cancel state
 * from before the first. */
static __thread unsigned int borrows;
static __thread int borrow_cancel_state;

static int discover_ref(struct ion_ctx *ctx, struct ion_registry **ret)
{
	struct ion_registry *reg;
	int r = 0, state;

	/* Not cancellable halfway, and never held across a fork(). */
	ion_ctx_lock(ctx, &state);
	reg = atomic_load_explicit(ion_ctx_registry_slot(ctx), memory_order_relaxed);
	if (!reg) {
		r = discover(ctx, &reg);
		if (r == 0)
			atomic_store_explicit(ion_ctx_registry_slot(ctx), reg, memory_order_release);
	}
	if (r == 0)
		*ret = ion_registry_ref(reg);
	ion_ctx_unlock(ctx, state);
	return r;
}

int ion_ctx_registry(struct ion_ctx *ctx, struct ion_registry **ret)
{
	struct ion_registry *reg;
	int r = 0, state;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
	reg = ion_registry_current(ctx);
	if (!reg)
		r = discover_ref(ctx, &reg);
	if (r < 0) {
		pthread_setcancelstate(state, NULL);
		return r;
	}
	if (borrows++ == 0)
		borrow_cancel_state = state;
	*ret = reg;
	return 0;
}

void ion_registry_put(struct ion_registry *reg)
{
	ion_registry_unref(reg);
	if (--borrows == 0)
		pthread_setcancelstate(borrow_cancel_state, NULL);
}

int ion_registry_rediscover(struct ion_ctx *ctx, struct ion_registry **ret_old)
{
	struct ion_registry *old = atomic_load_explicit(ion_ctx_registry_slot(ctx), memory_order_relaxed);
	struct ion_registry *reg;
	int r = discover(ctx, &reg);

	if (r < 0)
		return r;
	if (old && same_registry(old, reg)) {
		ion_registry_unref(reg);
		return 0;
	}
	*ret_old = atomic_exchange(ion_ctx_registry_slot(ctx), reg);
	ion_dbg(ctx, "rescan: %u heaps and %u devices now", reg->n_heaps, reg->n_devices);
	return 1;
}
