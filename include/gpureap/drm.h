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
#include "gpureap/context.h"

#pragma GCC visibility push(default)

#ifndef GR_DRM_MAJOR
#define GR_DRM_MAJOR 226               /* /dev/dri/card*, /dev/dri/renderD* (fixed: devices.txt) */
#endif
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

/* The sysfs root of the DRM and KFD readers is the context's (gr_context_set_sys_root: the
 * gpureap command sets it from GPUREAP_SYS_ROOT, so that tests point it at a recorded tree) */

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
/* How many of these PIDs KFD still has an entry for (the context's sysfs root:
 * class/kfd/kfd/proc/PID): a process's KFD process and its VRAM outlive it while anything still
 * holds what it opened, and go once that is released. 0 where there is no KFD; -errno where
 * its directory cannot be read */
int gr_kfd_entries_left(gr_context *ctx, const pid_t *pids, size_t n);

/* ---- the vendor-neutral view of AMD and Intel GPUs (lib/gpu/drm.c) ---- */

typedef enum gr_vendor {
        GR_VENDOR_UNKNOWN,
        GR_VENDOR_NVIDIA,
        GR_VENDOR_AMD,
        GR_VENDOR_INTEL,
} gr_vendor;
const char *gr_vendor_name(gr_vendor v);       /* "unknown", "nvidia", "amd", "intel" */
gr_vendor gr_vendor_of_pci(uint32_t vendor_id); /* 0x10de, 0x1002, 0x8086 */

/* The sources, each a backend of the one interface below: DRM (sysfs's render and card nodes,
 * the fdinfo of every DRM fd held) and KFD (its topology and per-process VRAM). NVIDIA's GPUs
 * are read by NVML (gr_gpu_query_start, in a helper process, with its deadline) and are left
 * out of this view: a GPU whose PCI vendor is NVIDIA's is NVML's, whatever nvidia-drm shows;
 * so is every other DRM device that is neither AMD's nor Intel's (a server's BMC display) */
typedef enum gr_drm_source {
        GR_SOURCE_DRM,
        GR_SOURCE_KFD,
        GR_SOURCE_COUNT,
} gr_drm_source;
const char *gr_drm_source_name(gr_drm_source s); /* "drm", "kfd" */

#define GR_DRM_GPUS_MAX 64
typedef struct gr_drm_gpu {
        char pdev[GR_DRM_NAME_MAX];    /* PCI address, lspci's spelling (0000:03:00.0): its identity */
        gr_vendor vendor;
        char driver[GR_DRM_NAME_MAX];  /* amdgpu, i915, xe; "" unknown */
        int card_minor, render_minor;  /* -1 none seen */
        uint32_t kfd_gpu_id;           /* KFD's id of it, 0 none (not AMD, or no KFD) */
        uint64_t vram_total, vram_used; /* amdgpu's mem_info_vram_*, GR_UNKNOWN_U64 unknown */
        unsigned sources;              /* bit per gr_drm_source that saw it */
} gr_drm_gpu;

typedef struct gr_drm_holder {
        pid_t pid;
        int fd;
} gr_drm_holder;

/* One DRM client: one open() of a DRM node, shared by every fd and process that inherited or
 * was passed it. Its memory is counted once, whoever holds it (nvtop counts it in each) */
#define GR_DRM_CLIENT_HOLDERS_MAX 64
typedef struct gr_drm_client {
        char pdev[GR_DRM_NAME_MAX];
        uint64_t client_id;            /* drm-client-id */
        char driver[GR_DRM_NAME_MAX];
        int gpu;                       /* index in gr_drm_report.gpus, -1 none */
        uint64_t device_bytes;         /* gr_drm_fdinfo_device_bytes: VRAM, GR_UNKNOWN_U64 unknown */
        uint64_t shared_bytes;         /* the part of it shared with other clients (dma-buf) */
        unsigned n_regions;
        gr_drm_region regions[GR_DRM_REGIONS_MAX];
        unsigned n_holders;            /* every holder, also those past the table */
        gr_drm_holder holders[GR_DRM_CLIENT_HOLDERS_MAX]; /* by PID, then fd */
} gr_drm_client;

/* One process's VRAM on one GPU as KFD counts it (/sys/class/kfd/kfd/proc/PID/vram_<gpu_id>).
 * The entry lasts as long as the KFD process: a dead PID's entry is kept by whoever still holds
 * what it opened (the AMD ghost, judged in lib/diagnose/drm-verdict.c) */
typedef struct gr_kfd_usage {
        pid_t pid;
        uint32_t gpu_id;
        int gpu;                       /* index in gr_drm_report.gpus, -1 none */
        uint64_t vram;                 /* bytes */
} gr_kfd_usage;

typedef struct gr_drm_report {
        unsigned n_gpus;
        gr_drm_gpu gpus[GR_DRM_GPUS_MAX];
        bool gpus_truncated;
        size_t n_clients;
        gr_drm_client *clients;        /* by (pdev, client id) */
        size_t n_kfd;
        gr_kfd_usage *kfd;             /* by (PID, gpu id) */
        bool kfd_present;              /* KFD's sysfs is there (amdgpu with ROCm's compute) */
        unsigned n_unreadable;         /* fdinfo files that could not be read (another user's) */
        unsigned n_not_client;         /* DRM fds whose fdinfo names no client (a KMS-only node) */
} gr_drm_report;

/* One DRM or KFD fd a process holds, as the /proc scan found it (gr_drm_holding) */
typedef struct gr_drm_fd_ref {
        pid_t pid;
        int fd;
        pid_t tid;                     /* 0: in the process's own file table; else the thread
                                          whose own table it is in (/proc/PID/task/TID/fdinfo/FD) */
        uint8_t node;                  /* gr_drm_node: 0 card, 1 render, 2 kfd */
        unsigned minor;
} gr_drm_fd_ref;

typedef struct gr_drm_input {
        gr_context *ctx;               /* NULL: gr_context_default() */
        const char *proc_root;         /* NULL: the context's */
        const char *sys_root;          /* NULL: the context's */
        const gr_drm_fd_ref *fds;
        size_t n_fds;
} gr_drm_input;

/* The one interface: each backend adds what its source says to the report */
typedef struct gr_gpu_backend {
        gr_drm_source source;
        int (*read)(const gr_drm_input *in, gr_drm_report *r); /* 0, or -ENOMEM */
} gr_gpu_backend;
extern const gr_gpu_backend gr_drm_backend, gr_kfd_backend;

/* Every backend read into a new report; *ret NULL (and 0) when no source saw anything (no AMD
 * or Intel GPU, no DRM client, no KFD): an NVIDIA machine's snapshot stays as it was */
int gr_drm_report_read(const gr_drm_input *in, gr_drm_report **ret);
void gr_drm_report_free(gr_drm_report *r);
/* The GPU of a PCI address, -1 none */
int gr_drm_report_gpu(const gr_drm_report *r, const char *pdev);

#pragma GCC visibility pop

#endif
