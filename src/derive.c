// SPDX-License-Identifier: MIT
/*
 * A device's derived facts and constraint: what platform.c reads of the
 * device that does its DMA, worded for ionctl explain (each fact with
 * where it was read, each assumption said), and what the rule demands:
 *  - behind an IOMMU: Contiguous = no;
 *  - a device-tree DMA master outside any IOMMU, or the masters of a
 *    virtual subsystem node of which one is: Contiguous = yes;
 *  - a fact missing (no of_node on a device-tree machine, a master not
 *    probed): Contiguous = yes, "assumed";
 *  - a PCI DMA mask (32 bits when unreadable) narrower than memory,
 *    without an IOMMU: AddressBits;
 *  - a device-tree node without dma-coherent: PreferUncached.
 * These apply only where no cookie, udev property or heaps.d section
 * gives the device a Heaps list (device.c).
 */
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "platform.h"
#include "registry.h"

static int set_derived(struct ion_conf_props *props, enum ion_conf_key key, uint64_t value,
		       const char *src)
{
	struct ion_conf_src where = { src, 0 };

	if (!src)
		return -ENOMEM;
	if (key == ION_KEY_ADDRESS_BITS)
		return ion_props_set_uint(props, key, value, where);
	return ion_props_set_bool(props, key, value != 0, where);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* One fact per master, and the list for the constraint's source. */
static int name_masters(struct ion_device *dev, const struct ion_dma_facts *f, char **ret)
{
	char *list = strdup("");

	for (size_t i = 0; list && i < f->n_masters; i++) {
		const struct ion_dma_master *m = &f->masters[i];
		const char *name = m->device ? base_name(m->device) : m->node;
		const char *state = !m->device ? "no device: not probed, contiguous assumed"
				    : m->iommu == ION_IOMMU_BEHIND ? "behind an IOMMU"
				    : m->iommu == ION_IOMMU_DANGLING ? "iommu_group dangles: no IOMMU"
				    : "no IOMMU: sees physical addresses";
		char *grown;
		int r;

		if (!m->device)
			r = ion_attrs_add(&dev->facts, "master", name, "%s: %s", m->node, state);
		else if (m->iommu_at)
			r = ion_attrs_add(&dev->facts, "master", name, "%s/iommu_group: %s",
					  m->iommu_at, state);
		else
			r = ion_attrs_add(&dev->facts, "master", name, "%s: %s", m->device, state);
		if (r < 0 || asprintf(&grown, "%s%s%s %s", list, i ? ", " : "", name,
				      m->device && m->iommu == ION_IOMMU_BEHIND ? "(IOMMU)"
				      : m->device ? "(no IOMMU)" : "(not probed)") < 0) {
			free(list);
			return -ENOMEM;
		}
		free(list);
		list = grown;
	}
	*ret = list;
	return list ? 0 : -ENOMEM;
}

static int derive_masters(struct ion_device *dev, const struct ion_dma_facts *f,
			  enum ion_dma_need need, struct ion_conf_props *props)
{
	_cleanup_free_ char *list = NULL;
	int r = name_masters(dev, f, &list);

	if (r < 0)
		return r;
	return set_derived(props, ION_KEY_CONTIGUOUS, need != ION_DMA_SCATTER,
			   ion_device_own_string(dev, "derived: %s/of_node names its DMA masters in %s: %s%s",
						 f->node_at, f->graph, list,
						 need == ION_DMA_SCATTER ? ": all behind an IOMMU"
						 : need == ION_DMA_CONTIGUOUS ? ": one sees physical addresses"
						 : ": contiguous assumed"));
}

/* The rule's answer is platform.c's (ion_dma_need()); here it is only
 * worded, by what it rests on. */
static int derive_iommu(struct ion_device *dev, const struct ion_dma_facts *f,
			struct ion_conf_props *props)
{
	enum ion_dma_need need = ion_dma_need(f);
	const bool contiguous = need != ION_DMA_SCATTER;
	const char *fact = NULL, *fact_value = NULL, *src = NULL;
	int r = 0;

	if (f->iommu == ION_IOMMU_DANGLING)
		r = ion_attrs_add(&dev->facts, "iommu_group", "dangles: counted as no IOMMU",
				  "%s/iommu_group", f->iommu_at);
	if (r < 0 || need == ION_DMA_NOTHING_KNOWN)
		return r;
	if (f->iommu == ION_IOMMU_BEHIND) {
		fact = "iommu";
		fact_value = "behind an IOMMU";
		r = ion_attrs_add(&dev->facts, fact, fact_value, "%s/iommu_group", f->iommu_at);
		src = ion_device_own_string(dev, "derived: %s/iommu_group: behind an IOMMU, scattered memory is fine",
					    f->iommu_at);
	} else if (f->n_masters) {
		return derive_masters(dev, f, need, props);
	} else if (f->node == ION_DT_OWN) {
		r = ion_attrs_add(&dev->facts, "iommu", "none: a device-tree DMA master sees physical addresses",
				  "%s/of_node", f->node_at);
		src = ion_device_own_string(dev, "derived: %s/of_node, no iommu_group: a device-tree DMA master outside any IOMMU",
					    f->node_at);
	} else if (f->node == ION_DT_PARENT) {
		r = ion_attrs_add(&dev->facts, "of_node", "none of its own: its parent's, no IOMMU",
				  "%s/of_node", f->node_at);
		src = ion_device_own_string(dev, "derived: %s has no of_node; its parent %s/of_node, no iommu_group: a device-tree DMA master outside any IOMMU",
					    dev->parent, f->node_at);
	} else {
		r = ion_attrs_add(&dev->facts, "of_node", "unknown: contiguous assumed",
				  "%s/of_node", dev->parent);
		src = ion_device_own_string(dev, "derived: %s: a platform device on a device-tree machine with no of_node on it or above: unknown, contiguous assumed",
					    dev->parent);
	}
	return r < 0 ? r : set_derived(props, ION_KEY_CONTIGUOUS, contiguous, src);
}

/* PCI says how many address bits the device drives; 32 when it cannot. */
static int derive_mask(const struct ion_registry *reg, struct ion_device *dev,
		       const struct ion_dma_facts *f, struct ion_conf_props *props)
{
	_cleanup_free_ char *memory = NULL;
	char value[160];
	int r;

	if (!f->mask_bits)
		return 0;
	if (f->mask_problem)
		snprintf(value, sizeof(value), "32 assumed (PCI's default): %s", f->mask_problem);
	else
		snprintf(value, sizeof(value), "%u", f->mask_bits);
	r = ion_attrs_add(&dev->facts, "dma_mask_bits", value, "%s/dma_mask_bits", dev->parent);
	if (r < 0 || f->iommu == ION_IOMMU_BEHIND || f->mask_bits >= reg->ram_bits)
		return r;
	/* Memory never reaches 2^64: that is where its end is unknown. */
	if (reg->ram_bits >= 64)
		memory = strdup("where memory ends is unknown");
	else if (asprintf(&memory, "memory reaches 2^%u", reg->ram_bits) < 0)
		memory = NULL;
	if (!memory)
		return -ENOMEM;
	if (f->mask_problem)
		return set_derived(props, ION_KEY_ADDRESS_BITS, 32,
				   ion_device_own_string(dev, "derived: %s/dma_mask_bits is %s: PCI's default of 32 bits assumed, and %s",
							 dev->parent, f->mask_problem, memory));
	return set_derived(props, ION_KEY_ADDRESS_BITS, f->mask_bits,
			   ion_device_own_string(dev, "derived: %s/dma_mask_bits is %u, and %s",
						 dev->parent, f->mask_bits, memory));
}

static int derive_coherent(struct ion_device *dev, const struct ion_dma_facts *f)
{
	int r;

	if (!f->node_at)
		return 0;
	r = ion_attrs_add(&dev->facts, "dma-coherent", f->coherent ? "yes" : "no",
			  "%s/of_node/dma-coherent", f->node_at);
	if (r < 0 || f->coherent)
		return r;
	dev->constraint.prefer_uncached = true;
	dev->constraint.prefer_uncached_src = (struct ion_conf_src){
		ion_device_own_string(dev, "derived: %s/of_node has no dma-coherent", f->node_at), 0
	};
	return dev->constraint.prefer_uncached_src.file ? 0 : -ENOMEM;
}

int ion_device_derive(struct ion_ctx *ctx, const struct ion_registry *reg,
		      struct ion_device *dev, struct ion_conf_props *props)
{
	struct ion_dma_facts f;
	int r;

	if (!dev->parent)
		return 0;
	r = ion_platform_read(ion_ctx_sysroot(ctx), dev->parent, &f);
	if (r < 0)
		return r;
	r = derive_iommu(dev, &f, props);
	if (r == 0)
		r = derive_mask(reg, dev, &f, props);
	if (r == 0)
		r = derive_coherent(dev, &f);
	ion_dma_facts_clear(&f);
	return r;
}
