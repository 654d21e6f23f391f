// SPDX-License-Identifier: MIT
/*
 * The solver (src/solver.c), row by row: registries and device
 * constraints built by hand, each row a request and the exact answer:
 * the candidates in order, the error when there are none, and every
 * rejection with its heap, the device that made it and its words.  Then
 * fallback within a solution through the public allocation calls, on a
 * registry whose heaps a test backend serves; and the registry's merge
 * of names (two dma-heap nodes for one CMA area, heaps.d Memory=,
 * Aliases=, AndroidId=) through discovery under a fake root.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/backends/backend.h"
#include "src/context.h"
#include "src/device.h"
#include "src/heaps-conf.h"
#include "src/registry.h"
#include "src/solver.h"
#include "testlib.h"

/* The hand-built boards' memory ends below 2^40: a heap that says nothing
 * else may hand out any address up to there. */
#define RAM_BITS 40
#define PAGE 4096

#define MAX_HEAPS 12
#define MAX_DEVICES 4
#define MAX_KEYS 6
#define MAX_REJECTIONS 20

/* An id for heap_spec: 0 means none, so that unset rows have none. */
#define ID(n) ((n) + 1)

struct heap_spec {
	const char *name;
	const char *kernel_name;	/* NULL: the name */
	const char *aliases[3];
	unsigned int props;
	unsigned int address_bits;	/* 0: RAM_BITS */
	size_t alignment;		/* 0: one page */
	int preference;
	int error;
	const char *reason;
	int id;				/* ID(n), or 0 for none */
	const char *uncached;		/* the name of its uncached variant */
};

/* One key of a device's constraint, as a file would write it. */
struct kv {
	const char *key;
	const char *value;
	const char *file;
	unsigned int line;
};

struct dev_spec {
	const char *name;
	const char *own_heap;
	bool prefer_uncached;
	struct kv keys[MAX_KEYS];
};

struct rejection_spec {
	const char *heap;
	const char *by;			/* the device's name, or NULL: the request */
	const char *reason;
};

struct solve_row {
	const char *what;
	const struct heap_spec *board;
	struct dev_spec devs[MAX_DEVICES];
	unsigned int flags;
	unsigned int mask;
	const char *name;
	bool no_cpu_access;
	const char *want[MAX_HEAPS];	/* the candidates, best first */
	int error;			/* *ret_error when there are none */
	struct rejection_spec rejected[MAX_REJECTIONS]; /* all, in order */
};

/* ---- building registries and constraints ---- */

static const struct ion_backend test_backend = { .name = "test" };

struct board {
	struct ion_registry reg;
	struct ion_heap heaps[MAX_HEAPS];
	struct ion_heap *list[MAX_HEAPS];
	char *aliases[MAX_HEAPS][4];
};

static struct ion_heap *board_heap(struct board *b, const char *name)
{
	for (unsigned int i = 0; i < b->reg.n_heaps; i++)
		if (strcmp(b->heaps[i].name, name) == 0)
			return &b->heaps[i];
	fail_msg("no heap %s on the board", name);
	return NULL;
}

/* Nothing is allocated: the board points at the spec's strings. */
static void board_build(struct board *b, const struct heap_spec *spec)
{
	unsigned int n;

	memset(b, 0, sizeof(*b));
	for (n = 0; spec[n].name; n++) {
		const struct heap_spec *s = &spec[n];
		struct ion_heap *h = &b->heaps[n];

		assert_true(n < MAX_HEAPS);
		h->name = (char *)s->name;
		h->kernel_name = (char *)(s->kernel_name ? s->kernel_name : s->name);
		for (unsigned int k = 0; k < 3 && s->aliases[k]; k++)
			b->aliases[n][k] = (char *)s->aliases[k];
		h->aliases = b->aliases[n][0] ? b->aliases[n] : NULL;
		h->backend = &test_backend;
		h->props = s->props;
		h->address_bits = s->address_bits ? s->address_bits : RAM_BITS;
		/* No size limit: the rows' requests are a page. */
		h->max_len = UINT64_MAX;
		h->alignment = s->alignment ? s->alignment : PAGE;
		h->preference = s->preference;
		h->error = s->error;
		h->reason = (char *)s->reason;
		h->id = s->id ? s->id - 1 : -1;
		if (h->id >= 0)
			b->reg.by_id[h->id] = h;
		h->index = n;
		b->list[n] = h;
	}
	b->reg.heaps = b->list;
	b->reg.n_heaps = n;
	b->reg.ram_bits = RAM_BITS;
	for (unsigned int i = 0; i < n; i++)
		if (spec[i].uncached)
			b->heaps[i].uncached = board_heap(b, spec[i].uncached);
}

struct constraint_set {
	struct ion_constraint c[MAX_DEVICES];
	const struct ion_constraint *ptrs[MAX_DEVICES];
	size_t n;
};

/* Each key through the parser a udev property or a cookie goes through. */
static void parse_keys(struct ion_conf_props *props, const struct kv *keys)
{
	for (unsigned int k = 0; k < MAX_KEYS && keys[k].key; k++) {
		int key = ion_conf_key_from_name(keys[k].key);
		const char *message = NULL;

		assert_true(key >= 0);
		if (ion_conf_field_parse((enum ion_conf_key)key, keys[k].value,
					 (struct ion_conf_src){ keys[k].file, keys[k].line },
					 &props->f[key], &message) != 0)
			fail_msg("%s = %s: %s", keys[k].key, keys[k].value, message);
	}
}

static void constraints_build(struct constraint_set *s, const struct dev_spec *devs)
{
	memset(s, 0, sizeof(*s));
	for (; s->n < MAX_DEVICES && devs[s->n].name; s->n++) {
		struct ion_constraint *c = &s->c[s->n];

		c->device = (char *)devs[s->n].name;
		c->own_heap = (char *)devs[s->n].own_heap;
		c->prefer_uncached = devs[s->n].prefer_uncached;
		parse_keys(&c->props, devs[s->n].keys);
		s->ptrs[s->n] = c;
	}
}

static void constraints_clear(struct constraint_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		ion_conf_props_clear(&s->c[i].props);
}

/* ---- the boards ---- */

#define SOC "50-soc.conf"
#define CAM "60-cam.conf"
#define GPU "60-gpu.conf"

/*
 * An SoC: a system heap with its uncached variant, the CMA area (below
 * 4 GiB, 1 MiB-aligned, also called vidbuf_cached), the display's own
 * GEM heap (contiguous: a DT device without IOMMU), a protected heap,
 * memfd, and a node that cannot be opened.
 */
static const struct heap_spec soc[] = {
	{ .name = "system", .props = ION_HEAP_PROP_CACHED | ION_HEAP_PROP_KERNEL_MAP,
	  .id = ID(ION_HEAP_TYPE_SYSTEM), .uncached = "system-uncached" },
	{ .name = "system-uncached", .props = ION_HEAP_PROP_UNCACHED | ION_HEAP_PROP_KERNEL_MAP },
	{ .name = "reserved", .aliases = { "vidbuf_cached" },
	  .props = ION_HEAP_PROP_CONTIGUOUS | ION_HEAP_PROP_CACHED | ION_HEAP_PROP_KERNEL_MAP,
	  .address_bits = 32, .alignment = 1 << 20, .id = ID(ION_HEAP_TYPE_DMA) },
	{ .name = "gem-vc4", .kernel_name = "vc4",
	  .props = ION_HEAP_PROP_CONTIGUOUS | ION_HEAP_PROP_CACHED | ION_HEAP_PROP_KERNEL_MAP,
	  .id = ID(16) },
	{ .name = "protected,secure-video", .props = ION_HEAP_PROP_PROTECTED, .id = ID(17) },
	{ .name = "memfd", .props = ION_HEAP_PROP_CACHED | ION_HEAP_PROP_CPU_ONLY, .id = ID(18) },
	{ .name = "broken", .error = -EACCES,
	  .reason = "open /dev/dma_heap/broken: Permission denied" },
	{ 0 }
};

/* What the SoC's rows say again and again. */
#define R_PROTECTED { "protected,secure-video", NULL, "protected: the CPU cannot map its buffers" }
#define R_BROKEN { "broken", NULL, "unavailable: open /dev/dma_heap/broken: Permission denied" }
#define R_MEMFD(dev) { "memfd", dev, dev " cannot import it: a memfd is no dma-buf" }
#define R_NOT_ASKED(heap, name) { heap, NULL, "not the heap asked for (" name ")" }

/* Heaps alike but for preference, caching and contiguity, for the order. */
static const struct heap_spec order[] = {
	{ .name = "cma-a", .props = ION_HEAP_PROP_CONTIGUOUS | ION_HEAP_PROP_CACHED },
	{ .name = "sys-a", .props = ION_HEAP_PROP_CACHED },
	{ .name = "sys-u", .props = ION_HEAP_PROP_UNCACHED },
	{ .name = "cma-u", .props = ION_HEAP_PROP_CONTIGUOUS | ION_HEAP_PROP_UNCACHED },
	{ .name = "sys-b", .props = ION_HEAP_PROP_CACHED },
	{ .name = "fav", .props = ION_HEAP_PROP_CONTIGUOUS | ION_HEAP_PROP_CACHED, .preference = 10 },
	{ .name = "meh", .props = ION_HEAP_PROP_CACHED, .preference = -5 },
	{ 0 }
};

/* A PC: udmabuf that drivers cannot vmap (before 6.2), and a heap whose
 * mappings may be either (Cache = any in its [Heap] section). */
static const struct heap_spec pc[] = {
	{ .name = "system", .props = ION_HEAP_PROP_CACHED | ION_HEAP_PROP_KERNEL_MAP, .id = ID(0) },
	{ .name = "udmabuf", .props = ION_HEAP_PROP_CACHED, .id = ID(16) },
	{ .name = "wc", .props = ION_HEAP_PROP_CACHED | ION_HEAP_PROP_UNCACHED | ION_HEAP_PROP_KERNEL_MAP,
	  .id = ID(17) },
	{ .name = "memfd", .props = ION_HEAP_PROP_CACHED | ION_HEAP_PROP_CPU_ONLY, .id = ID(18) },
	{ 0 }
};

/*
 * The rows.  Candidates: the board's preference, then (for a device that
 * is not DMA-coherent) uncached memory, then scattered before contiguous,
 * then registry order.  Rejections: registry order; a heap the request
 * rules out has one (by NULL), and any other heap one per device that
 * rules it out, with that device's first failing key.
 */
static const struct solve_row rows[] = {
	/* ---- no device ---- */
	{ "no device, no restriction: every available heap the CPU can map",
	  soc, .want = { "system", "system-uncached", "memfd", "reserved", "gem-vc4" },
	  .rejected = { R_PROTECTED, R_BROKEN } },
	{ "ION_FLAG_CACHED leaves out the uncached heap",
	  soc, .flags = ION_FLAG_CACHED,
	  .want = { "system", "memfd", "reserved", "gem-vc4" },
	  .rejected = {
		  { "system-uncached", NULL,
		    "the request asks for cached CPU mappings, and system-uncached maps uncached" },
		  R_PROTECTED, R_BROKEN } },
	{ "ION_FLAG_CACHED_NEEDS_SYNC asks for cached mappings too",
	  soc, .flags = ION_FLAG_CACHED_NEEDS_SYNC,
	  .want = { "system", "memfd", "reserved", "gem-vc4" },
	  .rejected = {
		  { "system-uncached", NULL,
		    "the request asks for cached CPU mappings, and system-uncached maps uncached" },
		  R_PROTECTED, R_BROKEN } },
	{ "a buffer the CPU never maps may come from the protected heap (scattered: with the others)",
	  soc, .no_cpu_access = true,
	  .want = { "system", "system-uncached", "protected,secure-video", "memfd", "reserved", "gem-vc4" },
	  .rejected = { R_BROKEN } },

	/* ---- one device, key by key ---- */
	{ "Contiguous = yes: the contiguous heaps; memfd is no dma-buf at all",
	  soc, .devs = { { "video0", .keys = { { "Contiguous", "yes", SOC, 3 } } } },
	  .want = { "reserved", "gem-vc4" },
	  .rejected = {
		  { "system", "video0",
		    "video0 needs physically contiguous memory, and system is scattered (Contiguous, 50-soc.conf:3)" },
		  { "system-uncached", "video0",
		    "video0 needs physically contiguous memory, and system-uncached is scattered (Contiguous, 50-soc.conf:3)" },
		  R_PROTECTED, R_MEMFD("video0"), R_BROKEN } },
	{ "Contiguous = no says scattered memory is fine: no requirement",
	  soc, .devs = { { "video0", .keys = { { "Contiguous", "no", SOC, 3 } } } },
	  .want = { "system", "system-uncached", "reserved", "gem-vc4" },
	  .rejected = { R_PROTECTED, R_MEMFD("video0"), R_BROKEN } },
	{ "AddressBits = 40: every heap lies below 2^40",
	  soc, .devs = { { "card0", .keys = { { "AddressBits", "40", SOC, 8 } } } },
	  .want = { "system", "system-uncached", "reserved", "gem-vc4" },
	  .rejected = { R_PROTECTED, R_MEMFD("card0"), R_BROKEN } },
	{ "AddressBits = 31: even the CMA area below 2^32 is too high",
	  soc, .devs = { { "card0", .keys = { { "AddressBits", "31", SOC, 8 } } } },
	  .error = -ENODEV,
	  .rejected = {
		  { "system", "card0",
		    "card0 reaches only addresses below 2^31, and system may hand out memory up to 2^40 (AddressBits, 50-soc.conf:8)" },
		  { "system-uncached", "card0",
		    "card0 reaches only addresses below 2^31, and system-uncached may hand out memory up to 2^40 (AddressBits, 50-soc.conf:8)" },
		  { "reserved", "card0",
		    "card0 reaches only addresses below 2^31, and reserved may hand out memory up to 2^32 (AddressBits, 50-soc.conf:8)" },
		  { "gem-vc4", "card0",
		    "card0 reaches only addresses below 2^31, and gem-vc4 may hand out memory up to 2^40 (AddressBits, 50-soc.conf:8)" },
		  R_PROTECTED, R_MEMFD("card0"), R_BROKEN } },
	{ "Cache = uncached: only the heap that maps uncached",
	  soc, .devs = { { "dsi0", .keys = { { "Cache", "uncached", SOC, 12 } } } },
	  .want = { "system-uncached" },
	  .rejected = {
		  { "system", "dsi0",
		    "dsi0 needs uncached CPU mappings, and system maps cached (Cache, 50-soc.conf:12)" },
		  { "reserved", "dsi0",
		    "dsi0 needs uncached CPU mappings, and reserved maps cached (Cache, 50-soc.conf:12)" },
		  { "gem-vc4", "dsi0",
		    "dsi0 needs uncached CPU mappings, and gem-vc4 maps cached (Cache, 50-soc.conf:12)" },
		  R_PROTECTED, R_MEMFD("dsi0"), R_BROKEN } },
	{ "Cache = cached: the uncached heap is out",
	  soc, .devs = { { "dsi0", .keys = { { "Cache", "cached", SOC, 12 } } } },
	  .want = { "system", "reserved", "gem-vc4" },
	  .rejected = {
		  { "system-uncached", "dsi0",
		    "dsi0 needs cached CPU mappings, and system-uncached maps uncached (Cache, 50-soc.conf:12)" },
		  R_PROTECTED, R_MEMFD("dsi0"), R_BROKEN } },
	{ "Cache = any: no requirement",
	  soc, .devs = { { "dsi0", .keys = { { "Cache", "any", SOC, 12 } } } },
	  .want = { "system", "system-uncached", "reserved", "gem-vc4" },
	  .rejected = { R_PROTECTED, R_MEMFD("dsi0"), R_BROKEN } },
	{ "Alignment = 1M: the CMA area aligns so (1 MiB), the page-aligned heaps do not",
	  soc, .devs = { { "isp0", .keys = { { "Alignment", "1M", SOC, 15 } } } },
	  .want = { "reserved" },
	  .rejected = {
		  { "system", "isp0",
		    "isp0 needs buffers aligned to 1048576 bytes, and system aligns to 4096 (Alignment, 50-soc.conf:15)" },
		  { "system-uncached", "isp0",
		    "isp0 needs buffers aligned to 1048576 bytes, and system-uncached aligns to 4096 (Alignment, 50-soc.conf:15)" },
		  { "gem-vc4", "isp0",
		    "isp0 needs buffers aligned to 1048576 bytes, and gem-vc4 aligns to 4096 (Alignment, 50-soc.conf:15)" },
		  R_PROTECTED, R_MEMFD("isp0"), R_BROKEN } },

	/* ---- Heaps lists ---- */
	{ "Heaps by name",
	  soc, .devs = { { "cam0", .keys = { { "Heaps", "reserved", CAM, 4 } } } },
	  .want = { "reserved" },
	  .rejected = {
		  { "system", "cam0", "cam0 takes only the heaps reserved (Heaps, 60-cam.conf:4)" },
		  { "system-uncached", "cam0", "cam0 takes only the heaps reserved (Heaps, 60-cam.conf:4)" },
		  { "gem-vc4", "cam0", "cam0 takes only the heaps reserved (Heaps, 60-cam.conf:4)" },
		  R_PROTECTED, R_MEMFD("cam0"), R_BROKEN } },
	{ "Heaps by alias",
	  soc, .devs = { { "cam0", .keys = { { "Heaps", "vidbuf_cached", CAM, 4 } } } },
	  .want = { "reserved" },
	  .rejected = {
		  { "system", "cam0", "cam0 takes only the heaps vidbuf_cached (Heaps, 60-cam.conf:4)" },
		  { "system-uncached", "cam0", "cam0 takes only the heaps vidbuf_cached (Heaps, 60-cam.conf:4)" },
		  { "gem-vc4", "cam0", "cam0 takes only the heaps vidbuf_cached (Heaps, 60-cam.conf:4)" },
		  R_PROTECTED, R_MEMFD("cam0"), R_BROKEN } },
	{ "Heaps = cma: the CMA heap under its kernel name (reserved)",
	  soc, .devs = { { "cam0", .keys = { { "Heaps", "cma", CAM, 4 } } } },
	  .want = { "reserved" },
	  .rejected = {
		  { "system", "cam0", "cam0 takes only the heaps cma (Heaps, 60-cam.conf:4)" },
		  { "system-uncached", "cam0", "cam0 takes only the heaps cma (Heaps, 60-cam.conf:4)" },
		  { "gem-vc4", "cam0", "cam0 takes only the heaps cma (Heaps, 60-cam.conf:4)" },
		  R_PROTECTED, R_MEMFD("cam0"), R_BROKEN } },
	{ "Heaps is a set: the solver's order stands (scattered first), not the list's",
	  soc, .devs = { { "cam0", .keys = { { "Heaps", "gem-vc4 system", CAM, 4 } } } },
	  .want = { "system", "gem-vc4" },
	  .rejected = {
		  { "system-uncached", "cam0", "cam0 takes only the heaps gem-vc4 system (Heaps, 60-cam.conf:4)" },
		  { "reserved", "cam0", "cam0 takes only the heaps gem-vc4 system (Heaps, 60-cam.conf:4)" },
		  R_PROTECTED, R_MEMFD("cam0"), R_BROKEN } },
	{ "Heaps naming memfd: a device still cannot import it",
	  soc, .devs = { { "cam0", .keys = { { "Heaps", "memfd", CAM, 4 } } } },
	  .error = -ENODEV,
	  .rejected = {
		  { "system", "cam0", "cam0 takes only the heaps memfd (Heaps, 60-cam.conf:4)" },
		  { "system-uncached", "cam0", "cam0 takes only the heaps memfd (Heaps, 60-cam.conf:4)" },
		  { "reserved", "cam0", "cam0 takes only the heaps memfd (Heaps, 60-cam.conf:4)" },
		  { "gem-vc4", "cam0", "cam0 takes only the heaps memfd (Heaps, 60-cam.conf:4)" },
		  R_PROTECTED, R_MEMFD("cam0"), R_BROKEN } },
	{ "Heaps naming only an unavailable heap: -ENODEV (the request named no heap)",
	  soc, .devs = { { "cam0", .keys = { { "Heaps", "broken", CAM, 4 } } } },
	  .error = -ENODEV,
	  .rejected = {
		  { "system", "cam0", "cam0 takes only the heaps broken (Heaps, 60-cam.conf:4)" },
		  { "system-uncached", "cam0", "cam0 takes only the heaps broken (Heaps, 60-cam.conf:4)" },
		  { "reserved", "cam0", "cam0 takes only the heaps broken (Heaps, 60-cam.conf:4)" },
		  { "gem-vc4", "cam0", "cam0 takes only the heaps broken (Heaps, 60-cam.conf:4)" },
		  R_PROTECTED, R_MEMFD("cam0"), R_BROKEN } },
	{ "Heaps naming the protected heap, for a buffer the CPU never maps",
	  soc, .devs = { { "vdec0", .keys = { { "Heaps", "protected,secure-video", CAM, 9 } } } },
	  .no_cpu_access = true,
	  .want = { "protected,secure-video" },
	  .rejected = {
		  { "system", "vdec0", "vdec0 takes only the heaps protected,secure-video (Heaps, 60-cam.conf:9)" },
		  { "system-uncached", "vdec0", "vdec0 takes only the heaps protected,secure-video (Heaps, 60-cam.conf:9)" },
		  { "reserved", "vdec0", "vdec0 takes only the heaps protected,secure-video (Heaps, 60-cam.conf:9)" },
		  { "gem-vc4", "vdec0", "vdec0 takes only the heaps protected,secure-video (Heaps, 60-cam.conf:9)" },
		  R_MEMFD("vdec0"), R_BROKEN } },

	/* ---- OwnBuffersOnly and the own heap ---- */
	{ "OwnBuffersOnly without an own heap: nothing fits",
	  soc, .devs = { { "card0", .keys = { { "OwnBuffersOnly", "yes", GPU, 2 } } } },
	  .error = -ENODEV,
	  .rejected = {
		  { "system", "card0", "card0 takes only buffers of its own DRM device (OwnBuffersOnly, 60-gpu.conf:2)" },
		  { "system-uncached", "card0", "card0 takes only buffers of its own DRM device (OwnBuffersOnly, 60-gpu.conf:2)" },
		  { "reserved", "card0", "card0 takes only buffers of its own DRM device (OwnBuffersOnly, 60-gpu.conf:2)" },
		  { "gem-vc4", "card0", "card0 takes only buffers of its own DRM device (OwnBuffersOnly, 60-gpu.conf:2)" },
		  R_PROTECTED, R_MEMFD("card0"), R_BROKEN } },
	{ "OwnBuffersOnly with its own heap: that heap alone, named in the reason",
	  soc, .devs = { { "card0", .own_heap = "gem-vc4",
			   .keys = { { "OwnBuffersOnly", "yes", GPU, 2 } } } },
	  .want = { "gem-vc4" },
	  .rejected = {
		  { "system", "card0",
		    "card0 takes only buffers of its own DRM device, heap gem-vc4 (OwnBuffersOnly, 60-gpu.conf:2)" },
		  { "system-uncached", "card0",
		    "card0 takes only buffers of its own DRM device, heap gem-vc4 (OwnBuffersOnly, 60-gpu.conf:2)" },
		  { "reserved", "card0",
		    "card0 takes only buffers of its own DRM device, heap gem-vc4 (OwnBuffersOnly, 60-gpu.conf:2)" },
		  R_PROTECTED, R_MEMFD("card0"), R_BROKEN } },
	{ "the own heap fits its device whatever the rest of the constraint says",
	  soc, .devs = { { "card0", .own_heap = "gem-vc4",
			   .keys = { { "Heaps", "reserved", GPU, 3 }, { "AddressBits", "30", GPU, 4 } } } },
	  .want = { "gem-vc4" },
	  .rejected = {
		  { "system", "card0", "card0 takes only the heaps reserved (Heaps, 60-gpu.conf:3)" },
		  { "system-uncached", "card0", "card0 takes only the heaps reserved (Heaps, 60-gpu.conf:3)" },
		  { "reserved", "card0",
		    "card0 reaches only addresses below 2^30, and reserved may hand out memory up to 2^32 (AddressBits, 60-gpu.conf:4)" },
		  R_PROTECTED, R_MEMFD("card0"), R_BROKEN } },
	{ "the exception is the owner's: another device still judges the GEM heap",
	  soc, .devs = { { "card0", .own_heap = "gem-vc4" },
			 { "video0", .keys = { { "AddressBits", "32", CAM, 6 } } } },
	  .want = { "reserved" },
	  .rejected = {
		  { "system", "video0",
		    "video0 reaches only addresses below 2^32, and system may hand out memory up to 2^40 (AddressBits, 60-cam.conf:6)" },
		  { "system-uncached", "video0",
		    "video0 reaches only addresses below 2^32, and system-uncached may hand out memory up to 2^40 (AddressBits, 60-cam.conf:6)" },
		  { "gem-vc4", "video0",
		    "video0 reaches only addresses below 2^32, and gem-vc4 may hand out memory up to 2^40 (AddressBits, 60-cam.conf:6)" },
		  R_PROTECTED, R_MEMFD("card0"), R_MEMFD("video0"), R_BROKEN } },
	{ "the own heap is exempt from its device's constraint, not from the request",
	  soc, .devs = { { "card0", .own_heap = "gem-vc4",
			   .keys = { { "OwnBuffersOnly", "yes", GPU, 2 } } } },
	  .name = "system", .error = -ENODEV,
	  .rejected = {
		  { "system", "card0",
		    "card0 takes only buffers of its own DRM device, heap gem-vc4 (OwnBuffersOnly, 60-gpu.conf:2)" },
		  R_NOT_ASKED("system-uncached", "system"), R_NOT_ASKED("reserved", "system"),
		  R_NOT_ASKED("gem-vc4", "system"), R_NOT_ASKED("protected,secure-video", "system"),
		  R_NOT_ASKED("memfd", "system"), R_NOT_ASKED("broken", "system") } },

	/* ---- intersections ---- */
	{ "two devices: contiguous and below 2^32; each one that excludes a heap says so",
	  soc, .devs = { { "video0", .keys = { { "Contiguous", "yes", SOC, 3 } } },
			 { "card0", .keys = { { "AddressBits", "32", SOC, 8 } } } },
	  .want = { "reserved" },
	  .rejected = {
		  { "system", "video0",
		    "video0 needs physically contiguous memory, and system is scattered (Contiguous, 50-soc.conf:3)" },
		  { "system", "card0",
		    "card0 reaches only addresses below 2^32, and system may hand out memory up to 2^40 (AddressBits, 50-soc.conf:8)" },
		  { "system-uncached", "video0",
		    "video0 needs physically contiguous memory, and system-uncached is scattered (Contiguous, 50-soc.conf:3)" },
		  { "system-uncached", "card0",
		    "card0 reaches only addresses below 2^32, and system-uncached may hand out memory up to 2^40 (AddressBits, 50-soc.conf:8)" },
		  { "gem-vc4", "card0",
		    "card0 reaches only addresses below 2^32, and gem-vc4 may hand out memory up to 2^40 (AddressBits, 50-soc.conf:8)" },
		  R_PROTECTED, R_MEMFD("video0"), R_MEMFD("card0"), R_BROKEN } },
	{ "three devices: no heap fits them all",
	  soc, .devs = { { "video0", .keys = { { "Contiguous", "yes", SOC, 3 } } },
			 { "card0", .keys = { { "AddressBits", "32", SOC, 8 } } },
			 { "dsi0", .keys = { { "Alignment", "2M", SOC, 12 } } } },
	  .error = -ENODEV,
	  .rejected = {
		  { "system", "video0",
		    "video0 needs physically contiguous memory, and system is scattered (Contiguous, 50-soc.conf:3)" },
		  { "system", "card0",
		    "card0 reaches only addresses below 2^32, and system may hand out memory up to 2^40 (AddressBits, 50-soc.conf:8)" },
		  { "system", "dsi0",
		    "dsi0 needs buffers aligned to 2097152 bytes, and system aligns to 4096 (Alignment, 50-soc.conf:12)" },
		  { "system-uncached", "video0",
		    "video0 needs physically contiguous memory, and system-uncached is scattered (Contiguous, 50-soc.conf:3)" },
		  { "system-uncached", "card0",
		    "card0 reaches only addresses below 2^32, and system-uncached may hand out memory up to 2^40 (AddressBits, 50-soc.conf:8)" },
		  { "system-uncached", "dsi0",
		    "dsi0 needs buffers aligned to 2097152 bytes, and system-uncached aligns to 4096 (Alignment, 50-soc.conf:12)" },
		  { "reserved", "dsi0",
		    "dsi0 needs buffers aligned to 2097152 bytes, and reserved aligns to 1048576 (Alignment, 50-soc.conf:12)" },
		  { "gem-vc4", "card0",
		    "card0 reaches only addresses below 2^32, and gem-vc4 may hand out memory up to 2^40 (AddressBits, 50-soc.conf:8)" },
		  { "gem-vc4", "dsi0",
		    "dsi0 needs buffers aligned to 2097152 bytes, and gem-vc4 aligns to 4096 (Alignment, 50-soc.conf:12)" },
		  R_PROTECTED, R_MEMFD("video0"), R_MEMFD("card0"), R_MEMFD("dsi0"), R_BROKEN } },
	{ "four devices: the CMA area fits them all; a device a heap satisfies adds nothing",
	  soc, .devs = { { "video0", .keys = { { "Contiguous", "yes", SOC, 3 } } },
			 { "card0", .keys = { { "AddressBits", "32", SOC, 8 } } },
			 { "dsi0", .keys = { { "Alignment", "64K", SOC, 12 } } },
			 { "isp0", .keys = { { "KernelMap", "yes", SOC, 15 } } } },
	  .want = { "reserved" },
	  .rejected = {
		  { "system", "video0",
		    "video0 needs physically contiguous memory, and system is scattered (Contiguous, 50-soc.conf:3)" },
		  { "system", "card0",
		    "card0 reaches only addresses below 2^32, and system may hand out memory up to 2^40 (AddressBits, 50-soc.conf:8)" },
		  { "system", "dsi0",
		    "dsi0 needs buffers aligned to 65536 bytes, and system aligns to 4096 (Alignment, 50-soc.conf:12)" },
		  { "system-uncached", "video0",
		    "video0 needs physically contiguous memory, and system-uncached is scattered (Contiguous, 50-soc.conf:3)" },
		  { "system-uncached", "card0",
		    "card0 reaches only addresses below 2^32, and system-uncached may hand out memory up to 2^40 (AddressBits, 50-soc.conf:8)" },
		  { "system-uncached", "dsi0",
		    "dsi0 needs buffers aligned to 65536 bytes, and system-uncached aligns to 4096 (Alignment, 50-soc.conf:12)" },
		  { "gem-vc4", "card0",
		    "card0 reaches only addresses below 2^32, and gem-vc4 may hand out memory up to 2^40 (AddressBits, 50-soc.conf:8)" },
		  { "gem-vc4", "dsi0",
		    "dsi0 needs buffers aligned to 65536 bytes, and gem-vc4 aligns to 4096 (Alignment, 50-soc.conf:12)" },
		  R_PROTECTED, R_MEMFD("video0"), R_MEMFD("card0"), R_MEMFD("dsi0"), R_MEMFD("isp0"),
		  R_BROKEN } },
	{ "a source without a line (a udev property) is shown alone, one without a file as ?",
	  soc, .devs = { { "video0", .keys = { { "Contiguous", "yes",
						 "udev property ION_CONTIGUOUS of /sys/devices/platform/vivid.0/video4linux/video0", 0 } } },
			 { "card0", .keys = { { "AddressBits", "32", NULL, 0 } } } },
	  .want = { "reserved" },
	  .rejected = {
		  { "system", "video0",
		    "video0 needs physically contiguous memory, and system is scattered (Contiguous, udev property ION_CONTIGUOUS of /sys/devices/platform/vivid.0/video4linux/video0)" },
		  { "system", "card0",
		    "card0 reaches only addresses below 2^32, and system may hand out memory up to 2^40 (AddressBits, ?)" },
		  { "system-uncached", "video0",
		    "video0 needs physically contiguous memory, and system-uncached is scattered (Contiguous, udev property ION_CONTIGUOUS of /sys/devices/platform/vivid.0/video4linux/video0)" },
		  { "system-uncached", "card0",
		    "card0 reaches only addresses below 2^32, and system-uncached may hand out memory up to 2^40 (AddressBits, ?)" },
		  { "gem-vc4", "card0",
		    "card0 reaches only addresses below 2^32, and gem-vc4 may hand out memory up to 2^40 (AddressBits, ?)" },
		  R_PROTECTED, R_MEMFD("video0"), R_MEMFD("card0"), R_BROKEN } },

	/* ---- requests by name ---- */
	{ "by name: that heap alone",
	  soc, .name = "reserved", .want = { "reserved" },
	  .rejected = { R_NOT_ASKED("system", "reserved"), R_NOT_ASKED("system-uncached", "reserved"),
			R_NOT_ASKED("gem-vc4", "reserved"), R_NOT_ASKED("protected,secure-video", "reserved"),
			R_NOT_ASKED("memfd", "reserved"), R_NOT_ASKED("broken", "reserved") } },
	{ "by alias",
	  soc, .name = "vidbuf_cached", .want = { "reserved" },
	  .rejected = { R_NOT_ASKED("system", "vidbuf_cached"), R_NOT_ASKED("system-uncached", "vidbuf_cached"),
			R_NOT_ASKED("gem-vc4", "vidbuf_cached"),
			R_NOT_ASKED("protected,secure-video", "vidbuf_cached"),
			R_NOT_ASKED("memfd", "vidbuf_cached"), R_NOT_ASKED("broken", "vidbuf_cached") } },
	{ "cma: the CMA heap under whatever name the kernel gave it",
	  soc, .name = "cma", .want = { "reserved" },
	  .rejected = { R_NOT_ASKED("system", "cma"), R_NOT_ASKED("system-uncached", "cma"),
			R_NOT_ASKED("gem-vc4", "cma"), R_NOT_ASKED("protected,secure-video", "cma"),
			R_NOT_ASKED("memfd", "cma"), R_NOT_ASKED("broken", "cma") } },
	{ "a named heap that is unavailable: its own error",
	  soc, .name = "broken", .error = -EACCES,
	  .rejected = { R_NOT_ASKED("system", "broken"), R_NOT_ASKED("system-uncached", "broken"),
			R_NOT_ASKED("reserved", "broken"), R_NOT_ASKED("gem-vc4", "broken"),
			R_NOT_ASKED("protected,secure-video", "broken"), R_NOT_ASKED("memfd", "broken"),
			R_BROKEN } },
	/* ion_ctx_alloc() has no CPU-access switch: a name must reach a
	 * protected heap, and an uncached one with ION_FLAG_CACHED. */
	{ "a name is the caller's choice: the protected heap, CPU access or not",
	  soc, .name = "protected,secure-video", .want = { "protected,secure-video" },
	  .rejected = { R_NOT_ASKED("system", "protected,secure-video"),
			R_NOT_ASKED("system-uncached", "protected,secure-video"),
			R_NOT_ASKED("reserved", "protected,secure-video"),
			R_NOT_ASKED("gem-vc4", "protected,secure-video"),
			R_NOT_ASKED("memfd", "protected,secure-video"),
			R_NOT_ASKED("broken", "protected,secure-video") } },
	{ "a name is the caller's choice: an uncached heap despite ION_FLAG_CACHED",
	  soc, .name = "system-uncached", .flags = ION_FLAG_CACHED, .want = { "system-uncached" },
	  .rejected = { R_NOT_ASKED("system", "system-uncached"), R_NOT_ASKED("reserved", "system-uncached"),
			R_NOT_ASKED("gem-vc4", "system-uncached"),
			R_NOT_ASKED("protected,secure-video", "system-uncached"),
			R_NOT_ASKED("memfd", "system-uncached"), R_NOT_ASKED("broken", "system-uncached") } },
	{ "a name and a device: the device still judges; -ENODEV, the heap being available",
	  soc, .name = "system", .devs = { { "video0", .keys = { { "Contiguous", "yes", SOC, 3 } } } },
	  .error = -ENODEV,
	  .rejected = {
		  { "system", "video0",
		    "video0 needs physically contiguous memory, and system is scattered (Contiguous, 50-soc.conf:3)" },
		  R_NOT_ASKED("system-uncached", "system"), R_NOT_ASKED("reserved", "system"),
		  R_NOT_ASKED("gem-vc4", "system"), R_NOT_ASKED("protected,secure-video", "system"),
		  R_NOT_ASKED("memfd", "system"), R_NOT_ASKED("broken", "system") } },
	{ "a name and a mask that does not hold its id",
	  soc, .name = "reserved", .mask = ION_HEAP_SYSTEM_MASK, .error = -ENODEV,
	  .rejected = { R_NOT_ASKED("system", "reserved"), R_NOT_ASKED("system-uncached", "reserved"),
			{ "reserved", NULL, "not in the id mask 0x1" },
			R_NOT_ASKED("gem-vc4", "reserved"), R_NOT_ASKED("protected,secure-video", "reserved"),
			R_NOT_ASKED("memfd", "reserved"), R_NOT_ASKED("broken", "reserved") } },

	/* ---- requests by id mask: ION's order, highest id first ---- */
	{ "a mask with ION_FLAG_CACHED: the CMA heap (id 4) before system (id 0)",
	  soc, .mask = ION_HEAP_SYSTEM_MASK | ION_HEAP_TYPE_DMA_MASK, .flags = ION_FLAG_CACHED,
	  .want = { "reserved", "system" },
	  .rejected = {
		  { "system-uncached", NULL, "has no Android id: no mask reaches it" },
		  { "gem-vc4", NULL, "id 16 is not in the mask 0x11" },
		  { "protected,secure-video", NULL, "id 17 is not in the mask 0x11" },
		  { "memfd", NULL, "id 18 is not in the mask 0x11" },
		  R_BROKEN } },
	{ "a mask without ION_FLAG_CACHED: system's uncached variant serves in its place",
	  soc, .mask = ION_HEAP_SYSTEM_MASK | ION_HEAP_TYPE_DMA_MASK,
	  .want = { "reserved", "system-uncached" },
	  .rejected = {
		  { "system", NULL,
		    "id 0 is in the mask, but its uncached variant system-uncached serves requests without ION_FLAG_CACHED" },
		  { "gem-vc4", NULL, "id 16 is not in the mask 0x11" },
		  { "protected,secure-video", NULL, "id 17 is not in the mask 0x11" },
		  { "memfd", NULL, "id 18 is not in the mask 0x11" },
		  R_BROKEN } },
	{ "a mask of three ids: 16, 4, 0, whatever contiguity says",
	  soc, .mask = (1U << 16) | ION_HEAP_SYSTEM_MASK | ION_HEAP_TYPE_DMA_MASK,
	  .flags = ION_FLAG_CACHED, .want = { "gem-vc4", "reserved", "system" },
	  .rejected = {
		  { "system-uncached", NULL, "has no Android id: no mask reaches it" },
		  { "protected,secure-video", NULL, "id 17 is not in the mask 0x10011" },
		  { "memfd", NULL, "id 18 is not in the mask 0x10011" },
		  R_BROKEN } },
	{ "a mask that reaches no heap: -ENODEV",
	  soc, .mask = 1U << 7, .error = -ENODEV,
	  .rejected = {
		  { "system", NULL, "id 0 is not in the mask 0x80" },
		  { "system-uncached", NULL, "has no Android id: no mask reaches it" },
		  { "reserved", NULL, "id 4 is not in the mask 0x80" },
		  { "gem-vc4", NULL, "id 16 is not in the mask 0x80" },
		  { "protected,secure-video", NULL, "id 17 is not in the mask 0x80" },
		  { "memfd", NULL, "id 18 is not in the mask 0x80" },
		  R_BROKEN } },
	{ "mask 0 lifts the restriction: the solver's order",
	  soc, .mask = 0, .want = { "system", "system-uncached", "memfd", "reserved", "gem-vc4" },
	  .rejected = { R_PROTECTED, R_BROKEN } },

	/* ---- order ---- */
	{ "Preference first, then scattered before contiguous, then registry order",
	  order, .want = { "fav", "sys-a", "sys-u", "sys-b", "cma-a", "cma-u", "meh" } },
	{ "a device that is not DMA-coherent: uncached first, within one preference",
	  order, .devs = { { "npu0", .prefer_uncached = true } },
	  .want = { "fav", "sys-u", "cma-u", "sys-a", "sys-b", "cma-a", "meh" } },
	{ "one device that is not DMA-coherent is enough",
	  order, .devs = { { .name = "gpu0" }, { "npu0", .prefer_uncached = true } },
	  .want = { "fav", "sys-u", "cma-u", "sys-a", "sys-b", "cma-a", "meh" } },
	{ "ION_FLAG_CACHED outranks the preference for uncached memory",
	  order, .devs = { { "npu0", .prefer_uncached = true } }, .flags = ION_FLAG_CACHED,
	  .want = { "fav", "sys-a", "sys-b", "cma-a", "meh" },
	  .rejected = {
		  { "sys-u", NULL, "the request asks for cached CPU mappings, and sys-u maps uncached" },
		  { "cma-u", NULL, "the request asks for cached CPU mappings, and cma-u maps uncached" } } },

	/* ---- KernelMap, and a heap that maps either way ---- */
	{ "KernelMap = yes: udmabuf before 6.2 cannot be vmapped",
	  pc, .devs = { { "vkms0", .keys = { { "KernelMap", "yes", "60-pc.conf", 9 } } } },
	  .want = { "system", "wc" },
	  .rejected = {
		  { "udmabuf", "vkms0",
		    "vkms0 maps buffers in the kernel, and udmabuf buffers cannot be (KernelMap, 60-pc.conf:9)" },
		  R_MEMFD("vkms0") } },
	{ "KernelMap = no: no requirement",
	  pc, .devs = { { "vkms0", .keys = { { "KernelMap", "no", "60-pc.conf", 9 } } } },
	  .want = { "system", "udmabuf", "wc" }, .rejected = { R_MEMFD("vkms0") } },
	{ "Cache = uncached: a heap that maps either way fits",
	  pc, .devs = { { "dsi0", .keys = { { "Cache", "uncached", "60-pc.conf", 2 } } } },
	  .want = { "wc" },
	  .rejected = {
		  { "system", "dsi0", "dsi0 needs uncached CPU mappings, and system maps cached (Cache, 60-pc.conf:2)" },
		  { "udmabuf", "dsi0", "dsi0 needs uncached CPU mappings, and udmabuf maps cached (Cache, 60-pc.conf:2)" },
		  R_MEMFD("dsi0") } },
	{ "Cache = cached: so does it here",
	  pc, .devs = { { "dsi0", .keys = { { "Cache", "cached", "60-pc.conf", 2 } } } },
	  .want = { "system", "udmabuf", "wc" }, .rejected = { R_MEMFD("dsi0") } },
	{ "devices without requirements: only memfd is out, once per device",
	  pc, .devs = { { .name = "card0" }, { .name = "video0" } },
	  .want = { "system", "udmabuf", "wc" }, .rejected = { R_MEMFD("card0"), R_MEMFD("video0") } },
};

/* ---- checking a row ---- */

static const char *name_or_null(const char *s)
{
	return s ? s : "(request)";
}

/* Says what differs, row by row; false when anything does. */
static bool check_row(const struct solve_row *row)
{
	const struct ion_heap *heaps[MAX_HEAPS], *plain[MAX_HEAPS];
	struct ion_rejections rej = { 0 };
	struct constraint_set cs;
	struct board b;
	struct ion_request req;
	int error = 1, plain_error = 1, n, m;
	unsigned int want_n = 0, want_rej = 0;
	bool ok = true;

	board_build(&b, row->board);
	constraints_build(&cs, row->devs);
	req = (struct ion_request){
		.len = PAGE,
		.flags = row->flags,
		.heap_mask = row->mask,
		.heap_name = row->name,
		.fallback = true,
		.no_cpu_access = row->no_cpu_access,
		.constraints = cs.ptrs,
		.n_constraints = cs.n,
	};
	n = ion_solve(&b.reg, &req, heaps, &error, &rej);
	/* Without anyone to read the reasons, the same answer. */
	m = ion_solve(&b.reg, &req, plain, &plain_error, NULL);

	while (want_n < MAX_HEAPS && row->want[want_n])
		want_n++;
	while (want_rej < MAX_REJECTIONS && row->rejected[want_rej].heap)
		want_rej++;
	if (n != (int)want_n) {
		print_error("%s: %d candidates, want %u\n", row->what, n, want_n);
		ok = false;
	}
	for (int i = 0; i < n; i++)
		if (i >= (int)want_n || strcmp(heaps[i]->name, row->want[i]) != 0) {
			print_error("%s: candidate %d is %s, want %s\n", row->what, i, heaps[i]->name,
				    i < (int)want_n ? row->want[i] : "none");
			ok = false;
		}
	if (m != n || (n > 0 && memcmp(plain, heaps, (size_t)n * sizeof(*heaps)) != 0)) {
		print_error("%s: without rejections, another answer (%d)\n", row->what, m);
		ok = false;
	}
	if (n == 0 && (error != row->error || plain_error != row->error)) {
		print_error("%s: error %d (%d without reasons), want %d\n", row->what, error,
			    plain_error, row->error);
		ok = false;
	}
	if (rej.n != want_rej) {
		print_error("%s: %u rejections, want %u\n", row->what, rej.n, want_rej);
		ok = false;
	}
	for (unsigned int i = 0; i < rej.n; i++) {
		const struct rejection_spec *w = i < want_rej ? &row->rejected[i] : NULL;
		const char *by = rej.v[i].by ? rej.v[i].by->device : NULL;

		if (!w || strcmp(rej.v[i].heap->name, w->heap) != 0 ||
		    (by == NULL) != (w->by == NULL) || (by && strcmp(by, w->by) != 0) ||
		    strcmp(rej.v[i].reason, w->reason) != 0) {
			print_error("%s: rejection %u is %s by %s: \"%s\"\n", row->what, i,
				    rej.v[i].heap->name, name_or_null(by), rej.v[i].reason);
			if (w)
				print_error("%*swant %s by %s: \"%s\"\n", (int)strlen(row->what) + 2, "",
					    w->heap, name_or_null(w->by), w->reason);
			ok = false;
		}
	}
	ion_rejections_clear(&rej);
	constraints_clear(&cs);
	return ok;
}

static void test_rows(void **state)
{
	unsigned int failed = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		failed += !check_row(&rows[i]);
	assert_int_equal(failed, 0);
}

/*
 * "The heaps that can serve the request ... and every other heap with the
 * reason it cannot" (ion_ctx_solve): a name that no heap has leaves every
 * heap out, and the solution should say so for each.
 */
static void test_unknown_name_says_why(void **state)
{
	const struct ion_heap *heaps[MAX_HEAPS];
	struct ion_rejections rej = { 0 };
	struct ion_request req = { .len = PAGE, .heap_name = "nosuch", .fallback = true };
	unsigned int n, bad = 0;
	struct board b;
	int error = 1;

	(void)state;
	board_build(&b, soc);
	assert_int_equal(ion_solve(&b.reg, &req, heaps, &error, &rej), 0);
	assert_int_equal(error, -ENODEV);
	/* Seven heaps on the board, none of them called nosuch: each out, by
	 * the request, and the reason names what was asked for. */
	n = rej.n;
	for (unsigned int i = 0; i < rej.n; i++)
		if (rej.v[i].by || !strstr(rej.v[i].reason, "nosuch"))
			bad++;
	ion_rejections_clear(&rej);
	assert_int_equal(bad, 0);
	assert_int_equal(n, b.reg.n_heaps);
}

/*
 * A mask with a device: "Only the heaps whose Android-convention ids are
 * in mask, tried from the highest id down" (ion_alloc_config_set_heap_mask)
 * and "the solution keeps only heaps that satisfy every device added"
 * (ion_alloc_config_add_device).  Contiguous = no asks nothing, so the
 * answer is the mask's alone: id 4 (reserved) before id 0 (system).
 */
static void test_mask_with_device_highest_id_first(void **state)
{
	static const struct dev_spec devs[MAX_DEVICES] = {
		{ "video0", .keys = { { "Contiguous", "no", SOC, 3 } } },
	};
	const struct ion_heap *heaps[MAX_HEAPS];
	struct constraint_set cs;
	struct ion_request req;
	struct board b;
	int error = 1, n;

	(void)state;
	board_build(&b, soc);
	constraints_build(&cs, devs);
	req = (struct ion_request){
		.len = PAGE, .flags = ION_FLAG_CACHED, .fallback = true,
		.heap_mask = ION_HEAP_SYSTEM_MASK | ION_HEAP_TYPE_DMA_MASK,
		.constraints = cs.ptrs, .n_constraints = cs.n,
	};
	n = ion_solve(&b.reg, &req, heaps, &error, NULL);
	constraints_clear(&cs);
	assert_int_equal(n, 2);
	assert_string_equal(heaps[0]->name, "reserved");
	assert_string_equal(heaps[1]->name, "system");
}

/*
 * "Without either [flag], a request by id mask is served by a heap's
 * uncached variant where the board has one" (libion.h): with a device
 * that asks nothing, too.
 */
static void test_mask_with_device_uncached_variant(void **state)
{
	static const struct dev_spec devs[MAX_DEVICES] = {
		{ "video0", .keys = { { "Contiguous", "no", SOC, 3 } } },
	};
	const struct ion_heap *heaps[MAX_HEAPS];
	struct constraint_set cs;
	struct ion_request req;
	struct board b;
	int error = 1, n;

	(void)state;
	board_build(&b, soc);
	constraints_build(&cs, devs);
	req = (struct ion_request){
		.len = PAGE, .fallback = true, .heap_mask = ION_HEAP_SYSTEM_MASK,
		.constraints = cs.ptrs, .n_constraints = cs.n,
	};
	n = ion_solve(&b.reg, &req, heaps, &error, NULL);
	constraints_clear(&cs);
	assert_int_equal(n, 1);
	assert_string_equal(heaps[0]->name, "system-uncached");
}

/* ---- fallback within a solution, through alloc.c ---- */

#define MAX_CALLS 8

/* What the test backend was asked, and what it answers. */
static struct {
	int answers[MAX_HEAPS];		/* by heap index: 0 serves, else the error */
	const char *calls[MAX_CALLS];	/* heap names, in call order */
	size_t lens[MAX_CALLS];
	unsigned int flags[MAX_CALLS];
	unsigned int n_calls;
	unsigned int destroyed;
} log_;

static int fake_alloc(const struct ion_heap *heap, size_t len, unsigned int flags,
		      int *ret_fd)
{
	int fd;

	assert_true(log_.n_calls < MAX_CALLS);
	log_.calls[log_.n_calls] = heap->name;
	log_.lens[log_.n_calls] = len;
	log_.flags[log_.n_calls++] = flags;
	if (log_.answers[heap->index])
		return log_.answers[heap->index];
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*ret_fd = fd;
	return 0;
}

static void fake_destroy(struct ion_heap *heap)
{
	(void)heap;
	log_.destroyed++;
}

static const struct ion_backend fake_backend = {
	.name = "fake",
	.alloc = fake_alloc,
	.destroy = fake_destroy,
};

/*
 * A context whose registry is set directly, never discovered: heaps made
 * by ion_registry_add(), as a backend's probe makes them, so that
 * ion_ctx_unref() frees them the way it frees discovered ones.
 */
static struct ion_ctx *ctx_with_board(const struct heap_spec *spec)
{
	struct ion_registry *reg = calloc(1, sizeof(*reg));
	struct ion_ctx *ctx;

	assert_non_null(reg);
	atomic_init(&reg->refcount, 1);
	assert_int_equal(ion_ctx_new(NULL, &ctx), 0);
	reg->ram_bits = RAM_BITS;
	for (unsigned int i = 0; spec[i].name; i++) {
		struct ion_heap *h = ion_registry_add(reg, &fake_backend, spec[i].name, sizeof(*h));

		assert_non_null(h);
		assert_null(spec[i].aliases[0]);
		h->props = spec[i].props;
		h->address_bits = spec[i].address_bits ? spec[i].address_bits : RAM_BITS;
		h->max_len = UINT64_MAX;
		h->alignment = spec[i].alignment ? spec[i].alignment : PAGE;
		h->preference = spec[i].preference;
		if (spec[i].error)
			ion_heap_set_unavailable(h, spec[i].error, "%s", spec[i].reason);
		h->id = spec[i].id ? spec[i].id - 1 : -1;
		if (h->id >= 0)
			reg->by_id[h->id] = h;
	}
	atomic_store_explicit(ion_ctx_registry_slot(ctx), reg, memory_order_release);
	memset(&log_, 0, sizeof(log_));
	return ctx;
}

/*
 * A device made for the caller, as ion_ctx_get_device() makes one that
 * discovery did not list: the caller's reference holds the context and
 * the registry, and ion_device_unref() frees it.
 */
static struct ion_device *fake_device(struct ion_ctx *ctx, const char *name,
				      const struct kv *keys)
{
	struct ion_device *dev = calloc(1, sizeof(*dev));

	assert_non_null(dev);
	atomic_init(&dev->refcount, 1);
	dev->name = strdup(name);
	assert_non_null(dev->name);
	dev->constraint.device = dev->name;
	parse_keys(&dev->constraint.props, keys);
	dev->ctx = ion_ctx_ref(ctx);
	dev->reg = ion_registry_ref(atomic_load(ion_ctx_registry_slot(ctx)));
	return dev;
}

/*
 * outside is the best heap by preference but scattered, so a device that
 * needs contiguous memory leaves it out of the solution: it must never be
 * asked, though it would serve.  first, second, third: the solution, in
 * preference order.  down: unavailable.
 */
static const struct heap_spec fallback_board[] = {
	{ .name = "outside", .props = ION_HEAP_PROP_CACHED, .preference = 20, .id = ID(0) },
	{ .name = "first", .props = ION_HEAP_PROP_CONTIGUOUS | ION_HEAP_PROP_CACHED,
	  .preference = 10, .id = ID(16) },
	{ .name = "second", .props = ION_HEAP_PROP_CONTIGUOUS | ION_HEAP_PROP_CACHED,
	  .preference = 5, .id = ID(17) },
	{ .name = "third", .props = ION_HEAP_PROP_CONTIGUOUS | ION_HEAP_PROP_CACHED, .id = ID(18) },
	{ .name = "down", .props = ION_HEAP_PROP_CONTIGUOUS | ION_HEAP_PROP_CACHED,
	  .error = -EBUSY, .reason = "held by another process" },
	{ 0 }
};
#define N_FALLBACK_HEAPS 5

static const struct kv needs_contiguous[MAX_KEYS] = { { "Contiguous", "yes", "60-test.conf", 2 } };

static size_t page_round(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (len + page - 1) / page * page;
}

static void expect_calls(const char *what, const char *const *want)
{
	unsigned int n = 0;

	while (n < MAX_CALLS && want[n])
		n++;
	if (log_.n_calls != n)
		print_error("%s: %u calls, want %u\n", what, log_.n_calls, n);
	for (unsigned int i = 0; i < log_.n_calls; i++)
		if (i >= n || strcmp(log_.calls[i], want[i]) != 0) {
			print_error("%s: call %u went to %s, want %s\n", what, i, log_.calls[i],
				    i < n ? want[i] : "none");
			fail();
		}
	assert_int_equal(log_.n_calls, n);
}

static const struct fallback_case {
	const char *what;
	bool fallback;
	int answers[N_FALLBACK_HEAPS];	/* outside, first, second, third, down */
	int want;
	const char *served;
	const char *calls[N_FALLBACK_HEAPS];
} fallback_cases[] = {
	{ "the best heap serves", true, { 0 }, 0, "first", { "first" } },
	{ "out of memory passes to the next heap of the solution", true,
	  { 0, -ENOMEM, -ENOMEM, 0 }, 0, "third", { "first", "second", "third" } },
	{ "all of the solution out of memory: -ENOMEM, and no heap outside it asked", true,
	  { 0, -ENOMEM, -ENOMEM, -ENOMEM }, -ENOMEM, NULL, { "first", "second", "third" } },
	{ "without fallback the first answer stands", false,
	  { 0, -ENOMEM, 0, 0 }, -ENOMEM, NULL, { "first" } },
	{ "without fallback a first success is one", false, { 0 }, 0, "first", { "first" } },
	{ "another error than -ENOMEM stops at once", true,
	  { 0, -EIO, 0, 0 }, -EIO, NULL, { "first" } },
	{ "... after an -ENOMEM too", true,
	  { 0, -ENOMEM, -EACCES, 0 }, -EACCES, NULL, { "first", "second" } },
};

static void check_alloc(const struct fallback_case *c, const char *path, int r, int fd,
			const struct ion_heap *heap, const struct ion_heap *sentinel)
{
	if (r != c->want)
		fail_msg("%s (%s): %d, want %d", c->what, path, r, c->want);
	expect_calls(c->what, c->calls);
	for (unsigned int i = 0; i < log_.n_calls; i++) {
		/* 5000 bytes, rounded once to whole pages; the cache flag as asked. */
		assert_int_equal(log_.lens[i], page_round(5000));
		assert_int_equal(log_.flags[i], ION_FLAG_CACHED);
	}
	if (c->served) {
		assert_true(fd >= 0);
		assert_non_null(heap);
		assert_string_equal(ion_heap_get_name(heap), c->served);
		close(fd);
	} else {
		/* Out-parameters untouched on failure. */
		assert_int_equal(fd, -7);
		assert_ptr_equal(heap, sentinel);
	}
}

static void test_fallback_within_solution(void **state)
{
	const struct ion_heap *sentinel = (const void *)&log_;
	struct ion_ctx *ctx = ctx_with_board(fallback_board);
	struct ion_device *video0 = fake_device(ctx, "video0", needs_contiguous);
	struct ion_alloc_config *config;
	struct ion_solution *sol;
	const struct ion_heap *heap;
	const struct ion_device *by;
	const char *reason;

	(void)state;
	assert_int_equal(ion_alloc_config_new(&config), 0);
	assert_int_equal(ion_alloc_config_set_size(config, 5000), 0);
	assert_int_equal(ion_alloc_config_set_flags(config, ION_FLAG_CACHED), 0);
	assert_int_equal(ion_alloc_config_add_device(config, video0), 0);

	/* The solution: the contiguous heaps by preference; outside and down
	 * are out, each with why. */
	assert_int_equal(ion_ctx_solve(ctx, config, &sol), 0);
	assert_int_equal(ion_solution_get_size(sol), page_round(5000));
	assert_int_equal(ion_solution_get_heap_count(sol), 3);
	assert_string_equal(ion_heap_get_name(ion_solution_get_heap(sol, 0)), "first");
	assert_string_equal(ion_heap_get_name(ion_solution_get_heap(sol, 1)), "second");
	assert_string_equal(ion_heap_get_name(ion_solution_get_heap(sol, 2)), "third");
	assert_null(ion_solution_get_heap(sol, 3));
	assert_int_equal(ion_solution_get_rejection_count(sol), 2);
	assert_int_equal(ion_solution_get_rejection(sol, 0, &heap, &by, &reason), 0);
	assert_string_equal(ion_heap_get_name(heap), "outside");
	assert_ptr_equal(by, video0);
	assert_string_equal(reason, "video0 needs physically contiguous memory, and outside is scattered (Contiguous, 60-test.conf:2)");
	assert_int_equal(ion_solution_get_rejection(sol, 1, &heap, &by, &reason), 0);
	assert_string_equal(ion_heap_get_name(heap), "down");
	assert_null(by);
	assert_string_equal(reason, "unavailable: held by another process");
	assert_int_equal(ion_solution_get_rejection(sol, 2, &heap, &by, &reason), -ENOENT);
	/* Solving asked no heap anything. */
	assert_int_equal(log_.n_calls, 0);

	for (size_t i = 0; i < sizeof(fallback_cases) / sizeof(fallback_cases[0]); i++) {
		const struct fallback_case *c = &fallback_cases[i];
		struct ion_solution *s;
		int fd, r;

		memcpy(log_.answers, c->answers, sizeof(c->answers));
		assert_int_equal(ion_alloc_config_set_fallback(config, c->fallback), 0);

		/* The solution keeps the request's fallback as it was solved. */
		assert_int_equal(ion_ctx_solve(ctx, config, &s), 0);
		log_.n_calls = 0;
		fd = -7;
		heap = sentinel;
		r = ion_solution_alloc(s, &fd, &heap);
		check_alloc(c, "ion_solution_alloc", r, fd, heap, sentinel);
		ion_solution_unref(s);

		log_.n_calls = 0;
		fd = -7;
		heap = sentinel;
		r = ion_ctx_allocate(ctx, config, &fd, &heap);
		check_alloc(c, "ion_ctx_allocate", r, fd, heap, sentinel);
	}

	ion_solution_unref(sol);
	ion_alloc_config_free(config);
	ion_device_unref(video0);
	/* The registry, freed with the last reference: every heap destroyed. */
	assert_int_equal(log_.destroyed, 0);
	ion_ctx_unref(ctx);
	assert_int_equal(log_.destroyed, N_FALLBACK_HEAPS);
}

/* A solution of one heap has no next heap; none has no heap to ask. */
static void test_fallback_edges(void **state)
{
	static const struct kv below_256[MAX_KEYS] = { { "AddressBits", "8", "60-test.conf", 5 } };
	struct ion_ctx *ctx = ctx_with_board(fallback_board);
	struct ion_device *tiny = fake_device(ctx, "tiny0", below_256);
	const struct ion_heap *heap = NULL;
	struct ion_alloc_config *config;
	struct ion_solution *sol;
	int fd = -7;

	(void)state;
	assert_int_equal(ion_alloc_config_new(&config), 0);
	assert_int_equal(ion_alloc_config_set_size(config, 5000), 0);
	assert_int_equal(ion_alloc_config_set_flags(config, ION_FLAG_CACHED), 0);

	/* By name: first alone, out of memory, and the others are not asked. */
	log_.answers[1] = -ENOMEM;
	assert_int_equal(ion_alloc_config_set_heap(config, "first"), 0);
	assert_int_equal(ion_ctx_allocate(ctx, config, &fd, &heap), -ENOMEM);
	expect_calls("by name", (const char *const[]){ "first", NULL });
	assert_int_equal(fd, -7);

	/* A named heap that is unavailable answers its own error, unasked. */
	log_.n_calls = 0;
	assert_int_equal(ion_alloc_config_set_heap(config, "down"), 0);
	assert_int_equal(ion_ctx_solve(ctx, config, &sol), 0);
	assert_int_equal(ion_solution_get_heap_count(sol), 0);
	assert_int_equal(ion_solution_alloc(sol, &fd, &heap), -EBUSY);
	sol = ion_solution_unref(sol);
	assert_int_equal(ion_ctx_allocate(ctx, config, &fd, &heap), -EBUSY);
	assert_int_equal(log_.n_calls, 0);

	/* A device no heap satisfies: -ENODEV, nobody asked. */
	assert_int_equal(ion_alloc_config_set_heap(config, NULL), 0);
	assert_int_equal(ion_alloc_config_add_device(config, tiny), 0);
	assert_int_equal(ion_ctx_solve(ctx, config, &sol), 0);
	assert_int_equal(ion_solution_get_heap_count(sol), 0);
	assert_int_equal(ion_solution_get_rejection_count(sol), N_FALLBACK_HEAPS);
	assert_int_equal(ion_solution_alloc(sol, &fd, &heap), -ENODEV);
	sol = ion_solution_unref(sol);
	assert_int_equal(ion_ctx_allocate(ctx, config, &fd, &heap), -ENODEV);
	assert_int_equal(log_.n_calls, 0);
	assert_int_equal(fd, -7);

	/* The compat path: ids 18 and 16, highest first; third's -ENOMEM
	 * passes to first, never to outside (id 0, not in the mask). */
	log_.answers[1] = 0;
	log_.answers[3] = -ENOMEM;
	assert_int_equal(ion_ctx_alloc_mask(ctx, (1U << 18) | (1U << 16), 5000, ION_FLAG_CACHED,
					    &fd, &heap), 0);
	expect_calls("by mask", (const char *const[]){ "third", "first", NULL });
	assert_string_equal(ion_heap_get_name(heap), "first");
	close(fd);
	/* Mask 0 asks for no heap at all there. */
	log_.n_calls = 0;
	fd = -7;
	assert_int_equal(ion_ctx_alloc_mask(ctx, 0, 5000, 0, &fd, &heap), -ENODEV);
	assert_int_equal(log_.n_calls, 0);
	assert_int_equal(fd, -7);

	ion_alloc_config_free(config);
	ion_device_unref(tiny);
	ion_ctx_unref(ctx);
	assert_int_equal(log_.destroyed, N_FALLBACK_HEAPS);
}

/* ---- image layouts: PitchAlignment, through a heaps.d file and a device ---- */

#define FOURCC(a, b, c, d)                                                     \
	((unsigned int)(a) | (unsigned int)(b) << 8 | (unsigned int)(c) << 16 |   \
	 (unsigned int)(d) << 24)
#define XRGB8888 FOURCC('X', 'R', '2', '4')
#define NV12 FOURCC('N', 'V', '1', '2')

static const char pitch_conf[] =
	"[Device pitch256]\n"			/* 1 */
	"PitchAlignment = 256\n"		/* 2 */
	"\n"
	"[Device pitch64]\n"			/* 4 */
	"PitchAlignment = 64\n"			/* 5 */
	"PreferredPitchAlignment = 1K\n"	/* 6 */
	"\n"
	"[Device wish1k]\n"			/* 8 */
	"PreferredPitchAlignment = 1K\n";	/* 9 */

/* An image of fourcc, w x h for the devices (NULL-terminated), allocated
 * from the fake board: the layout is fixed then. */
static struct ion_buffer *image_for(struct ion_ctx *ctx, unsigned int fourcc, unsigned int w,
				    unsigned int h, const char *const *devices)
{
	struct ion_buffer *b = NULL;
	int fd = -1;

	assert_int_equal(ion_buffer_new_image(ctx, fourcc, w, h, &b), 0);
	for (; devices && *devices; devices++) {
		struct ion_device *dev = NULL;

		assert_int_equal(ion_ctx_get_device(ctx, *devices, &dev), 0);
		assert_int_equal(ion_buffer_attach(b, dev), 0);
		ion_device_unref(dev);
	}
	log_.n_calls = 0;
	assert_int_equal(ion_buffer_get_fd(b, &fd), 0);
	return b;
}

static void expect_plane(struct ion_buffer *b, unsigned int p, unsigned int stride,
			 size_t offset)
{
	unsigned int s = 0;
	size_t o = 0;

	assert_int_equal(ion_buffer_get_plane(b, p, &s, &o), 0);
	assert_int_equal(s, stride);
	assert_int_equal(o, offset);
}

/* A device's PitchAlignment is kept by every row of an image it shares,
 * a PreferredPitchAlignment too where it is larger; a device that joins
 * an image laid out already is refused only for the required one. */
static void test_pitch_alignment(void **state)
{
	struct ion_ctx *ctx = ctx_with_board(fallback_board);
	struct ion_registry *reg = atomic_load(&ctx->registry);
	struct ion_device *pitch256 = NULL, *wish1k = NULL;
	struct ion_buffer *b;

	(void)state;
	assert_int_equal(ion_conf_load_string("60-pitch.conf", pitch_conf, strlen(pitch_conf),
					      NULL, NULL, NULL, &reg->conf), 0);
	assert_int_equal(ion_conf_error_count(reg->conf), 0);

	/* 101 pixels of XRGB8888 are 404 bytes; rows of 512 for pitch256. */
	b = image_for(ctx, XRGB8888, 101, 11, (const char *const[]){ "pitch256", NULL });
	expect_plane(b, 0, 512, 0);
	assert_int_equal(ion_buffer_get_size(b), page_round(512 * 11));
	ion_buffer_unref(b);
	/* NV12 for pitch64, which prefers 1K: both planes' rows of 1024. */
	b = image_for(ctx, NV12, 101, 11, (const char *const[]){ "pitch64", NULL });
	expect_plane(b, 0, 1024, 0);
	expect_plane(b, 1, 1024, 1024 * 11);
	ion_buffer_unref(b);
	/* Together: the largest of every device's, 256 over 64. */
	b = image_for(ctx, XRGB8888, 33, 2, (const char *const[]){ "pitch64", "pitch256", NULL });
	expect_plane(b, 0, 1024, 0);
	ion_buffer_unref(b);
	b = image_for(ctx, XRGB8888, 33, 2, (const char *const[]){ "pitch256", NULL });
	expect_plane(b, 0, 256, 0);
	ion_buffer_unref(b);

	/* Laid out for no device: rows of 404, which pitch256 cannot take,
	 * with the key and its file:line; a mere preference refuses no one. */
	b = image_for(ctx, XRGB8888, 101, 11, NULL);
	expect_plane(b, 0, 404, 0);
	assert_int_equal(ion_ctx_get_device(ctx, "pitch256", &pitch256), 0);
	assert_int_equal(ion_ctx_get_device(ctx, "wish1k", &wish1k), 0);
	assert_int_equal(ion_buffer_attach(b, pitch256), -EXDEV);
	assert_string_equal(ion_buffer_get_reason(b),
			    "pitch256 joins an image laid out already: it needs rows aligned to 256 bytes, and plane 0 has stride 404 (PitchAlignment, 60-pitch.conf:2)");
	assert_int_equal(ion_buffer_attach(b, wish1k), 0);
	ion_buffer_unref(b);
	b = image_for(ctx, XRGB8888, 64, 11, NULL);
	assert_int_equal(ion_buffer_attach(b, pitch256), 0);
	ion_buffer_unref(b);

	ion_device_unref(wish1k);
	ion_device_unref(pitch256);
	ion_ctx_unref(ctx);
}

/* ---- the registry's merge of names, through discovery under a fake root ---- */

struct fake_root {
	char path[64];
	char heaps_d[96];
	struct fd_table fds;
};

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

static void write_file(const char *root, const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	path_in(path, sizeof(path), root, rel);
	f = fopen(path, "we");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static int root_setup(void **state)
{
	struct fake_root *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	strcpy(r->path, "/tmp/libion-solver-XXXXXX");
	assert_non_null(mkdtemp(r->path));
	path_in(r->heaps_d, sizeof(r->heaps_d), r->path, "heaps.d");
	mkdirs(r->path, "heaps.d");
	fd_table_read(&r->fds);
	*state = r;
	return 0;
}

static int root_teardown(void **state)
{
	struct fake_root *r = *state;

	fd_table_assert_same(&r->fds);
	test_remove_tree(r->path);
	free(r);
	return 0;
}

/*
 * dma-heap nodes: each a symlink to /dev/null, and sysfs vouching that
 * /dev/null's char device (1:3) is of the dma_heap class, so the backend
 * takes them all for available heaps.  A name starting with '-' becomes
 * a regular file instead: no char device, unavailable.
 */
static void dma_heap_nodes(const char *root, const char *const *names)
{
	char path[512], rel[128];
	struct stat st;

	assert_int_equal(stat("/dev/null", &st), 0);
	mkdirs(root, "dev/dma_heap");
	for (size_t i = 0; names[i]; i++) {
		if (names[i][0] == '-') {
			snprintf(rel, sizeof(rel), "dev/dma_heap/%s", names[i] + 1);
			write_file(root, rel, "");
			continue;
		}
		snprintf(rel, sizeof(rel), "dev/dma_heap/%s", names[i]);
		path_in(path, sizeof(path), root, rel);
		assert_int_equal(symlink("/dev/null", path), 0);
	}
	snprintf(rel, sizeof(rel), "sys/dev/char/%u:%u", major(st.st_rdev), minor(st.st_rdev));
	mkdirs(root, rel);
	strcat(rel, "/subsystem");
	path_in(path, sizeof(path), root, rel);
	assert_int_equal(symlink("../../../class/dma_heap", path), 0);
}

static struct ion_ctx *root_ctx(const struct fake_root *r)
{
	struct ion_ctx *ctx;

	assert_int_equal(ion_ctx_new(r->path, &ctx), 0);
	assert_int_equal(ion_ctx_set_heaps_path(ctx, r->heaps_d), 0);
	assert_true(ion_ctx_get_heap_count(ctx) > 0);
	assert_int_equal(ion_ctx_get_config_error_count(ctx), 0);
	return ctx;
}

static const struct ion_heap *find(struct ion_ctx *ctx, const char *name)
{
	const struct ion_heap *h = NULL;

	if (ion_ctx_find_heap(ctx, name, &h) != 0)
		fail_msg("no heap answers to %s", name);
	return h;
}

/* The heap's aliases, space-separated, for comparing in one go. */
static const char *aliases_text(const struct ion_heap *h)
{
	static char text[256];

	text[0] = '\0';
	for (char **a = h->aliases; a && *a; a++) {
		if (text[0])
			strcat(text, " ");
		strcat(text, *a);
	}
	return text;
}

/* 6.17 lists the default CMA area under two names: one heap, the other
 * name an alias (default_cma_region sorts first, so it stays). */
static void test_merge_cma_names(void **state)
{
	static const char *const nodes[] = { "default_cma_region", "reserved", NULL };
	struct fake_root *r = *state;
	const struct ion_heap *h;
	struct ion_ctx *ctx;

	dma_heap_nodes(r->path, nodes);
	ctx = root_ctx(r);
	/* The CMA heap and memfd. */
	assert_int_equal(ion_ctx_get_heap_count(ctx), 2);
	h = find(ctx, "default_cma_region");
	assert_string_equal(ion_heap_get_backend(h), "dma-heap");
	assert_string_equal(ion_heap_get_kernel_name(h), "default_cma_region");
	assert_string_equal(aliases_text(h), "reserved");
	assert_ptr_equal(find(ctx, "reserved"), h);
	assert_ptr_equal(find(ctx, "cma"), h);
	assert_int_equal(ion_heap_get_error(h), 0);
	assert_true(ion_heap_get_properties(h) & ION_HEAP_PROP_CONTIGUOUS);
	/* The best (only) heap of the DMA type takes its id. */
	assert_int_equal(ion_heap_get_id(h), ION_HEAP_TYPE_DMA);
	assert_int_equal(ion_heap_get_id(find(ctx, "memfd")), ION_HEAP_TYPE_SYSTEM);
	ion_ctx_unref(ctx);
}

/* heaps.d Memory= makes two names one memory; Aliases= adds names. */
static void test_merge_memory_and_aliases(void **state)
{
	static const char *const nodes[] = { "carveout-a", "carveout-b", "other", NULL };
	struct fake_root *r = *state;
	const char *key, *value, *source;
	const struct ion_heap *a, *other;
	char want_source[160];
	struct ion_ctx *ctx;

	dma_heap_nodes(r->path, nodes);
	write_file(r->path, "heaps.d/50-board.conf",
		   "[Heap carveout-a]\n"		/* 1 */
		   "Memory = carveout0\n"		/* 2 */
		   "Aliases = camera\n"			/* 3 */
		   "[Heap carveout-b]\n"		/* 4 */
		   "Memory = carveout0\n"		/* 5 */
		   "[Heap other]\n"			/* 6 */
		   "Aliases = vidbuf video-in\n");	/* 7 */
	ctx = root_ctx(r);
	/* carveout-a (carveout-b folded in), other, memfd. */
	assert_int_equal(ion_ctx_get_heap_count(ctx), 3);
	a = find(ctx, "carveout-a");
	other = find(ctx, "other");
	assert_ptr_not_equal(a, other);
	/* The board's alias and the name of the same memory's other node,
	 * in no order anything promises. */
	assert_true(strcmp(aliases_text(a), "camera carveout-b") == 0 ||
		    strcmp(aliases_text(a), "carveout-b camera") == 0);
	assert_ptr_equal(find(ctx, "carveout-b"), a);
	assert_ptr_equal(find(ctx, "camera"), a);
	assert_string_equal(aliases_text(other), "vidbuf video-in");
	assert_ptr_equal(find(ctx, "vidbuf"), other);
	assert_ptr_equal(find(ctx, "video-in"), other);

	/* What the board said, key by key, with file:line. */
	assert_int_equal(ion_heap_get_attribute_count(other), 1);
	assert_int_equal(ion_heap_get_attribute(other, 0, &key, &value, &source), 0);
	assert_string_equal(key, "Aliases");
	assert_string_equal(value, "vidbuf video-in");
	snprintf(want_source, sizeof(want_source), "%s/50-board.conf:7", r->heaps_d);
	assert_string_equal(source, want_source);
	ion_ctx_unref(ctx);
}

/* AndroidId pins a heap's id; the first of two claims wins, an
 * unavailable heap takes none, and the types' ids yield to the pins. */
static void test_android_id(void **state)
{
	static const char *const nodes[] = { "vendor-a", "vendor-b", "vendor-c", "-vendor-d", NULL };
	struct fake_root *r = *state;
	struct ion_alloc_config *config;
	struct ion_solution *sol;
	struct ion_ctx *ctx;

	dma_heap_nodes(r->path, nodes);
	write_file(r->path, "heaps.d/50-board.conf",
		   "[Heap vendor-a]\nAndroidId = 9\n"
		   "[Heap vendor-b]\nAndroidId = 0\n"
		   "[Heap vendor-c]\nAndroidId = 9\n"
		   "[Heap vendor-d]\nAndroidId = 3\n");
	ctx = root_ctx(r);
	assert_int_equal(ion_ctx_get_heap_count(ctx), 5);
	assert_int_equal(ion_heap_get_id(find(ctx, "vendor-a")), 9);
	/* vendor-b takes the system id: memfd, the system heap's type,
	 * yields and takes an extra id. */
	assert_int_equal(ion_heap_get_id(find(ctx, "vendor-b")), 0);
	/* vendor-c's 9 was taken: the first extra id, counted from the top
	 * (31) down, so that a wide mask tries the preferred heaps first. */
	assert_int_equal(ion_heap_get_id(find(ctx, "vendor-c")), ION_MAX_IDS - 1);
	/* A regular file, no char device: unavailable, no id. */
	assert_int_equal(ion_heap_get_error(find(ctx, "vendor-d")), -ENOTTY);
	assert_int_equal(ion_heap_get_id(find(ctx, "vendor-d")), -1);
	assert_int_equal(ion_heap_get_id(find(ctx, "memfd")), ION_MAX_IDS - 2);

	/* The Android system mask reaches the pinned heap. */
	assert_int_equal(ion_alloc_config_new(&config), 0);
	assert_int_equal(ion_alloc_config_set_size(config, 4096), 0);
	assert_int_equal(ion_alloc_config_set_heap_mask(config, ION_HEAP_SYSTEM_MASK), 0);
	assert_int_equal(ion_ctx_solve(ctx, config, &sol), 0);
	assert_int_equal(ion_solution_get_heap_count(sol), 1);
	assert_string_equal(ion_heap_get_name(ion_solution_get_heap(sol, 0)), "vendor-b");
	sol = ion_solution_unref(sol);
	/* vendor-d's 3 was not given to anyone. */
	assert_int_equal(ion_alloc_config_set_heap_mask(config, 1U << 3), 0);
	assert_int_equal(ion_ctx_solve(ctx, config, &sol), 0);
	assert_int_equal(ion_solution_get_heap_count(sol), 0);
	ion_solution_unref(sol);
	ion_alloc_config_free(config);
	ion_ctx_unref(ctx);
}

/*
 * A board file written for the CMA heap's older name ("reserved", as
 * every kernel before 6.17 calls it) must keep applying on 6.17, which
 * adds default_cma_region for the same area: heaps.d/README.md's own
 * example board says what the area is (AddressBits, an alias), and the
 * merge must not drop that with the name.
 */
static void test_merge_keeps_sections_of_second_name(void **state)
{
	static const char *const nodes[] = { "default_cma_region", "reserved", NULL };
	struct fake_root *r = *state;
	const struct ion_heap *h;
	struct ion_ctx *ctx;
	unsigned int bits;
	int found;

	dma_heap_nodes(r->path, nodes);
	write_file(r->path, "heaps.d/50-board.conf",
		   "[Heap reserved]\n"
		   "Aliases = vidbuf_cached\n"
		   "AddressBits = 30\n");
	ctx = root_ctx(r);
	assert_int_equal(ion_ctx_get_heap_count(ctx), 2);
	h = find(ctx, "reserved");
	/* Read, then let go, so that a failure leaks nothing. */
	bits = ion_heap_get_address_bits(h);
	found = ion_ctx_find_heap(ctx, "vidbuf_cached", &h);
	ion_ctx_unref(ctx);
	assert_int_equal(bits, 30);
	assert_int_equal(found, 0);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_unknown_name_says_why),
		cmocka_unit_test(test_mask_with_device_highest_id_first),
		cmocka_unit_test(test_mask_with_device_uncached_variant),
		cmocka_unit_test(test_fallback_within_solution),
		cmocka_unit_test(test_fallback_edges),
		cmocka_unit_test(test_pitch_alignment),
		cmocka_unit_test_setup_teardown(test_merge_cma_names, root_setup, root_teardown),
		cmocka_unit_test_setup_teardown(test_merge_memory_and_aliases, root_setup, root_teardown),
		cmocka_unit_test_setup_teardown(test_android_id, root_setup, root_teardown),
		cmocka_unit_test_setup_teardown(test_merge_keeps_sections_of_second_name,
						root_setup, root_teardown),
	};

	return cmocka_run_group_tests_name("solver", tests, NULL, NULL);
}
