/* gpureap snapshot: one consistent read of the driver and of /proc, taken once and then only
 * read. Diagnosis and planning are pure functions of it. */
#ifndef GPUREAP_SNAPSHOT_H
#define GPUREAP_SNAPSHOT_H

#include "gpureap/drm.h"
#include "gpureap/gpu.h"
#include "gpureap/kubelet.h"
#include "gpureap/proc.h"

#pragma GCC visibility push(default)

/* Whose PIDs the /proc of the snapshot shows. The driver reports host PIDs: in a container's
 * PID namespace (no hostPID) they name nothing local, so a missing PID is not a dead one. */
typedef enum gr_pidns {
        GR_PIDNS_UNKNOWN,         /* could not tell (a recorded tree, or not allowed to look) */
        GR_PIDNS_HOST,            /* the initial PID namespace */
        GR_PIDNS_OTHER,           /* a container's */
} gr_pidns;

#define GR_PIDNS_INIT_INO 0xEFFFFFFCULL /* PROC_PID_INIT_INO: fixed since Linux 3.8 */

/* What the kubelet said for this snapshot (its answer's devices are joined into the processes'
 * pods, gr_snapshot_name_pods, and not kept) */
typedef struct gr_snapshot_kubelet {
        gr_kubelet_state state;   /* GR_KUBELET_OFF: not asked */
        char socket[1024];
        char error[256];          /* why not asked, or what failed; "" with OK */
        uint64_t asked_at_ms;     /* wall clock; 0 never asked */
        uint64_t elapsed_ms;
        unsigned n_pods;          /* pods List gave */
        unsigned n_devices;       /* devices assigned to them */
        uint64_t gpus_assigned;   /* bit i: the report's GPU i is assigned to a listed pod */
        bool devices_unmapped;    /* a GPU device whose GPU the report does not name (MIG):
                                     which GPUs are assigned is then not known */
        gr_checkpoint_state checkpoint_state; /* the device manager's checkpoint */
        char checkpoint[1024];
        char checkpoint_error[200];
        unsigned n_assigned;      /* its entries (device IDs) */
} gr_snapshot_kubelet;

typedef struct gr_snapshot {
        uint64_t taken_at_ms;     /* wall clock, ms since the epoch */
        char hostname[256];
        char proc_root[1024];
        char dev_dir[1024];
        pid_t self;
        gr_gpu_report *gpu;       /* never NULL after a successful take */
        gr_proc_table *procs;     /* NULL when /proc could not be read: see proc_error */
        int proc_error;           /* -errno */
        uint64_t proc_elapsed_ms; /* how long the /proc scan took (GR_UNKNOWN_U64 unknown) */
        bool proc_slow;           /* longer than its bound: a slow host, reported, never a
                                     failure (the scan is not cut short: a partial scan could
                                     call a held GPU clean) */
        bool procs_partial;       /* a recorded table without lineage (schema 1): a PID that is
                                     missing may have been alive, so it is not taken as dead */
        uid_t uid;                /* who took it: root sees every process's files */
        gr_pidns pidns;
        bool hidepid;             /* /proc hides other users' processes from this (non-root) view */
        bool replayed;            /* loaded from a recording, not taken here */
        /* the memory of a resident 'gpureap serve' (docs/serve.md), 0/false in a one-shot
         * snapshot: what its processes' seen records can claim starts at history_since_ms */
        uint64_t history_since_ms;
        bool history_events;      /* serve had the kernel's process events (exit causes) */
        bool history_events_lost; /* some were lost (a fork storm): exit causes may be missing */
        pid_t served_by;          /* the serve process that answered, 0 taken here */
        uint64_t *gpu_state_since_ms; /* per GPU of the report: its state unchanged since (NULL none) */
        gr_snapshot_kubelet kubelet;
        gr_drm_report *drm;       /* AMD and Intel GPUs, DRM clients, KFD (docs/drm.md); NULL where
                                     none of them is seen (an NVIDIA machine's snapshot is as it was) */
} gr_snapshot;

/* What a resident caller (serve) keeps between looks, so that a pod asked about once is not
 * asked about at every look (docs/architecture.md, "The kubelet"): an exited container's labels
 * and a pod proved gone for good (a container does not run again, a UID never comes back); a
 * running container's state, the runtime's "not known" and the kubelet's Get answers for 30 s.
 * Bounded (1,024 containers, the oldest entry goes first); one look at a time uses it */
typedef struct gr_pod_memory gr_pod_memory;
/* 0 or -ENOMEM */
int gr_pod_memory_new(gr_pod_memory **ret);
void gr_pod_memory_free(gr_pod_memory *m);

typedef struct gr_snapshot_options {
        gr_context *ctx;          /* the settings of every part below that names none (gpu,
                                     proc, kubelet, the DRM readers); NULL: gr_context_default() */
        gr_gpu_options gpu;
        gr_proc_options proc;
        uint64_t proc_slow_ms;    /* the scan's own bound; 0: as long as gpu.timeout_ms (5 s).
                                     The driver's deadline does not count the scan, nor the
                                     scan's the driver */
        const char *gpu_down;     /* non-NULL: do not touch the driver (a previous call of ours
                                     is still stuck in it); the report says this, timed out */
        /* The kubelet: asked once during the look (while the driver's helper runs) when
         * kubelet_ask, with kubelet.timeout_ms (1 s) cut to what is left of gpu.deadline_ms;
         * or, given kubelet_answer (a resident caller's cached one), that answer joined. Neither:
         * not asked (GR_KUBELET_OFF), the pods' UIDs still read from the cgroups */
        bool kubelet_ask;
        gr_kubelet_options kubelet;
        const gr_kubelet_answer *kubelet_answer;
        gr_pod_memory *pod_memory;      /* what earlier looks learnt of pods (serve's); NULL: this
                                           look asks as if it were the first */
} gr_snapshot_options;

int gr_snapshot_take(const gr_snapshot_options *opts, gr_snapshot **ret);
/* The join of the kubelet's answer (NULL: none) with the processes in pods' cgroups: each one
 * gets its pod (UID and container ID from its cgroup; name, namespace and container where the
 * devices join them unambiguously, else why not), and s->kubelet the answer's summary. Pure:
 * reads only s and a. 0 or -ENOMEM */
int gr_snapshot_name_pods(gr_snapshot *s, const gr_kubelet_answer *a);
const char *gr_pod_naming_name(gr_pod_naming n);
/* For each pod whose processes hold a GPU and that the kubelet's devices do not name
 * (GR_POD_UNASSIGNED, _AMBIGUOUS: time-sliced replicas, _UNMAPPED: MIG devices), where the
 * kubelet's List answered: the container runtime's labels of the container its cgroup names
 * (its pod's name, namespace and UID, its container's name) name it where the UID is the
 * cgroup's (gr_pod.runtime_named), and the kubelet's Get by that name says whether it is gone
 * (gr_pod_gone). A container asked about in memory's earlier looks is not asked again, nor Get
 * about a pod proved gone; memory NULL: a memory of this call only. All within deadline_ms
 * (gr_now_ms()'s clock). 0 or -ENOMEM */
int gr_snapshot_confirm_gone(gr_snapshot *s, const gr_kubelet_options *ko, gr_pod_memory *memory, uint64_t deadline_ms);
const char *gr_pod_gone_name(gr_pod_gone g);
/* No NVIDIA GPU to read (no NVML library, one whose start fails or that lists none, and no
 * /dev/nvidiaN: one there is an NVIDIA GPU that cannot be read), and AMD or Intel GPUs: theirs
 * is the node's answer for every command (docs/drm.md). A recording's device files are not
 * looked for: there only no library, or none listed, counts */
bool gr_snapshot_drm_only(const gr_snapshot *s);
/* The first /dev/nvidiaN (in dev_dir, NULL "/dev") into buf (may be NULL); false when there is
 * none: no NVIDIA GPU on this node (nvidiactl alone is a loaded driver without GPUs) */
bool gr_nvidia_device_file(const char *dev_dir, char *buf, size_t size);
void gr_snapshot_free(gr_snapshot *s);
/* The GPUs (bit i: NVML index i < 64) that processes of the scope hold a device file of */
uint64_t gr_scope_gpus(const gr_snapshot *s, const gr_scope *sc);

typedef enum gr_owner_state {
        GR_OWNER_ALIVE,
        GR_OWNER_ZOMBIE,          /* state Z or X: it has already released what it held */
        GR_OWNER_NOT_FOUND,       /* dead */
        GR_OWNER_UNMAPPED,        /* not visible here (a container's PID namespace, hidepid): maybe alive */
} gr_owner_state;

const char *gr_owner_state_name(gr_owner_state s);
const char *gr_pidns_name(gr_pidns ns);
gr_owner_state gr_snapshot_owner_state(const gr_snapshot *s, pid_t pid);

/* Number of fds the process holds on the GPU with this minor number (0 when none). */
unsigned gr_process_fds_on_minor(const gr_process *p, int minor);

/* Does the GPU pass a selector: its index in the report, its device file (nvidiaN: the minor),
 * its UUID or 8+ characters of it, or its PCI bus id in NVML's spelling (00000000:1A:00.0),
 * lspci's (0000:1a:00.0) or without the domain (1a:00.0), in either case? */
bool gr_gpu_matches(const gr_gpu *g, const char *selector);
/* Call cb for each item of a comma-separated selector list until it returns true; true then */
bool gr_gpu_list_each(const char *list, bool (*cb)(const char *selector, void *userdata), void *userdata);
/* Does the GPU match any selector of the list? (a NULL list matches every GPU) */
bool gr_gpu_matches_list(const gr_gpu *g, const char *list);
/* An AMD or Intel GPU by its PCI address (docs/drm.md): lspci's spelling with the domain
 * (0000:03:00.0), or without it (03:00.0, any domain), in either case */
bool gr_drm_gpu_matches(const gr_drm_gpu *g, const char *selector);
bool gr_drm_gpu_matches_list(const gr_drm_gpu *g, const char *list);

#pragma GCC visibility pop

#endif
