/* gpureap gpu layer, AMD and Intel: what the kernel's DRM drivers (amdgpu, i915, xe) say of each
 * open DRM file in /proc/PID/fdinfo/FD, and what AMD's KFD (ROCm compute) says in sysfs. Pure
 * parsers of the documented formats (Linux Documentation/gpu/drm-usage-stats.rst, the drivers'
 * fdinfo code, KFD's /sys/class/kfd/kfd/{proc,topology}); the reading is in lib/gpu/drm.c. */
#ifndef GPUREAP_DRM_H
#define GPUREAP_DRM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#pragma GCC visibility push(default)

#define GR_DRM_MAJOR 226               /* /dev/dri/card*, /dev/dri/renderD* (fixed: devices.txt) */
#define GR_DRM_REGIONS_MAX 16
#define GR_DRM_NAME_MAX 32

/* One memory region of one DRM client, in bytes; GR_UNKNOWN_U64 where the driver printed no
 * such key. memory is amdgpu's deprecated drm-memory-<region> (KiB in the file), which kernels
 * before 6.10 print alone and later ones beside drm-total-<region> */
typedef struct gr_drm_region {
        char name[GR_DRM_NAME_MAX];    /* vram, gtt, cpu (amdgpu); system0, local0, stolen-system0
                                          (i915); system, gtt, vram0, vram1, stolen (xe) */
        uint64_t total, shared, resident, purgeable, active;
        uint64_t memory;
} gr_drm_region;

typedef struct gr_drm_fdinfo {
        char driver[GR_DRM_NAME_MAX];  /* drm-driver: amdgpu, i915, xe, ... */
        bool has_client_id;
        uint64_t client_id;            /* drm-client-id: unique per open() until reboot; every fd
                                          and process that shares the open file shows the same */
        char pdev[GR_DRM_NAME_MAX];    /* drm-pdev: 0000:03:00.0, "" when absent */
        unsigned n_regions;
        gr_drm_region regions[GR_DRM_REGIONS_MAX];
        bool regions_truncated;
        unsigned n_bad;                /* memory keys whose value was not <uint>[ KiB| MiB] */
} gr_drm_fdinfo;

/* A memory value: "<uint>" (bytes), "<uint> KiB" or "<uint> MiB", whitespace around it
 * ignored; -EINVAL for anything else (another unit, a sign, a fraction), -ERANGE past 2^64 */
int gr_drm_parse_size(const char *s, size_t len, uint64_t *ret_bytes);
/* The fdinfo of one fd. -ENOMSG when it has no drm-driver key (not a DRM client: a KMS-only
 * driver, a file of another kind). A malformed drm-client-id or drm-pdev is left unknown and
 * counted in n_bad, as is a memory value that cannot be read: the rest still counts */
int gr_drm_fdinfo_parse(const char *buf, size_t len, gr_drm_fdinfo *ret);
/* Is a region the device's own memory (VRAM: amdgpu vram, xe vram0/vram1, i915 local0), not
 * host memory mapped for it (system, gtt, cpu, stolen)? */
bool gr_drm_region_is_device(const char *name);
/* The client's device memory in bytes: each device region's drm-total, or where a driver gives
 * none its drm-memory (amdgpu before 6.10); GR_UNKNOWN_U64 when no device region has either.
 * With ret_shared: the part of it that drm-shared says is shared with other clients */
uint64_t gr_drm_fdinfo_device_bytes(const gr_drm_fdinfo *f, uint64_t *ret_shared);

/* ---- KFD (lib/gpu/kfd.c) ---- */

/* The sysfs root of the DRM and KFD readers, for the whole process, as gr_proc_root_set_default
 * is for /proc: "/sys" until set (NULL or "" sets it back). The library reads no environment
 * variable: the gpureap command sets it from GPUREAP_SYS_ROOT, so that tests point it at a
 * recorded tree (tests/fixtures). The string is the caller's, not copied. */
void gr_sys_root_set_default(const char *sys_root);
const char *gr_sys_root_default(void);

/* A sysfs number file (vram_<gpu_id>, gpu_id, mem_info_vram_used): one decimal and a newline */
int gr_kfd_parse_number(const char *buf, size_t len, uint64_t *ret);
/* The gpu_id in an entry name of /sys/class/kfd/kfd/proc/PID/: "vram_<gpu_id>"; false else */
bool gr_kfd_vram_entry(const char *name, uint32_t *ret_gpu_id);

/* A KFD topology node's properties file: "key value" lines */
typedef struct gr_kfd_node {
        bool is_gpu;                   /* simd_count > 0 (CPU nodes have none) */
        int drm_render_minor;          /* -1 none: renderD<minor> is this GPU's render node */
        uint32_t vendor_id, device_id; /* 0 unknown */
        uint32_t domain, location_id;  /* PCI: location_id is bus << 8 | device << 3 | function */
        bool has_location;
        uint64_t unique_id;            /* 0 unknown: the ASIC's serial where the firmware gives one */
} gr_kfd_node;
int gr_kfd_parse_properties(const char *buf, size_t len, gr_kfd_node *ret);
/* Its PCI address in lspci's spelling (0000:c1:00.0) into buf; false without a location */
bool gr_kfd_node_pci(const gr_kfd_node *n, char *buf, size_t size);

#pragma GCC visibility pop

#endif
