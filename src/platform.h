/* SPDX-License-Identifier: MIT */
/*
 * What the platform says of a device's DMA, and the one rule that turns
 * it into a need: behind an IOMMU, scattered memory is fine; a
 * device-tree DMA master outside any IOMMU sees physical addresses and
 * needs contiguous memory; a PCI device drives only the address bits of
 * its DMA mask.  Both the device reader (device.c, what a device needs)
 * and the GEM backend (gem.c, whether a DRM driver's dumb buffers are
 * contiguous) ask here, so the two can never disagree.
 *
 * Facts that cannot be read, dangle or are garbage lead to the stricter
 * answer, and the facts say what was missing and what was assumed:
 *  - an iommu_group link that dangles is no IOMMU;
 *  - a platform device without an of_node on a device-tree machine (a
 *    child device a driver made) is judged by its nearest ancestor's
 *    node, and with none, "unknown: contiguous assumed";
 *  - a PCI device whose dma_mask_bits cannot be read or is no number of
 *    bits drives 32 (the PCI default mask).
 * "Stricter" depends on the asker: a device is given the stricter need
 * (contiguous), while a heap is claimed contiguous only when that is
 * known (ion_dma_need() says which it is).
 *
 * A device whose device-tree node is a virtual subsystem (rockchip's
 * and imx-drm's display-subsystem, sun4i-drm's display-engine, on the
 * V4L2 side imx-media's capture-subsystem) does no DMA itself: the
 * masters its node names (ports, allwinner,pipelines) do, each behind
 * its own IOMMU or none.  Its need is theirs, ANDed.
 *
 * Paths: root is the sysroot ("" for "/"), devpath and every path
 * returned are without it ("/sys/devices/...").
 */
#ifndef LIBION_PLATFORM_H
#define LIBION_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>

enum ion_iommu {
	ION_IOMMU_NONE,		/* no iommu_group on the device or above */
	ION_IOMMU_BEHIND,	/* an iommu_group that resolves */
	ION_IOMMU_DANGLING,	/* only links that dangle: counted as none */
};

enum ion_dt_node {
	ION_DT_NONE,		/* no node, and no rule wants one */
	ION_DT_OWN,		/* the device's own of_node */
	ION_DT_PARENT,		/* none of its own: an ancestor's speaks for it */
	ION_DT_UNKNOWN,		/* a platform device on a device-tree machine
				 * with no node on it or above */
};

enum ion_dma_need {
	ION_DMA_NOTHING_KNOWN,	/* no rule applies */
	ION_DMA_SCATTER,	/* behind an IOMMU: scattered memory is fine */
	ION_DMA_CONTIGUOUS,	/* physical addresses: contiguous memory */
	ION_DMA_CONTIGUOUS_ASSUMED, /* a fact is missing: contiguous assumed */
};

/* A device that does a DRM device's DMA, found through its node's graph. */
struct ion_dma_master {
	char *node;		/* its device-tree node, "/vop@fdd90000" */
	char *device;		/* its platform device, or NULL: not probed */
	enum ion_iommu iommu;
	char *iommu_at;		/* the device whose iommu_group resolved or dangled */
};

struct ion_dma_facts {
	char *bus;		/* "platform", "pci", or NULL */
	enum ion_iommu iommu;
	char *iommu_at;		/* the device (itself or an ancestor) whose
				 * iommu_group resolved, or the first that dangled */
	enum ion_dt_node node;
	char *node_at;		/* the device whose of_node speaks (OWN, PARENT) */
	bool coherent;		/* that of_node has dma-coherent */
	/* PCI only: the address bits it drives (0: not PCI), and, when
	 * dma_mask_bits could not be read or made no sense, why (32 then). */
	unsigned int mask_bits;
	char *mask_problem;
	/* The masters of a virtual subsystem node; graph names the property
	 * they were found through ("ports"), else NULL. */
	const char *graph;
	struct ion_dma_master *masters;
	size_t n_masters;
};

/* Reads the facts of the bus device at devpath: 0, or a transient errno
 * (-ENOMEM, -EMFILE) with *ret untouched.  Missing facts are no error. */
int ion_platform_read(const char *root, const char *devpath, struct ion_dma_facts *ret);
void ion_dma_facts_clear(struct ion_dma_facts *f);
/* What the facts demand, masters included. */
enum ion_dma_need ion_dma_need(const struct ion_dma_facts *f);
/* The same for one master. */
enum ion_dma_need ion_dma_master_need(const struct ion_dma_master *m);
/* Whether root is a device-tree machine. */
bool ion_platform_is_devicetree(const char *root);

#endif
