/* gpureap diagnose: a verdict for every GPU and every holder, as a pure function of a
 * snapshot (no I/O), with findings that carry a one-line explanation and a next step. */
#ifndef GPUREAP_DIAGNOSE_H
#define GPUREAP_DIAGNOSE_H

#include "gpureap/snapshot.h"

#define GR_FINDING_PIDS_MAX 16
/* Memory above the driver's baseline that is still taken as noise (v2 memory reports 0 used
 * on an idle H200; other GPUs may report a little) */
#define GR_BASELINE_SLACK (64ULL << 20)
/* A holder whose mappings of device files reach this is taken to have a CUDA context: a CUDA
 * process and its forked child showed 30 on an H200 (driver 580), nvidia-smi 1, an NVML-only C
 * client 12 */
#define GR_CUDA_MAPS_MIN 20
#define GR_CUDA_GPU_FDS_MIN 10

typedef enum gr_gpu_state {
        GR_GPU_CLEAN,    /* memory at baseline; no holder but monitors */
        GR_GPU_BUSY,     /* live owners whose launcher is alive */
        GR_GPU_DIRTY,    /* leftovers: ghosts' hidden holders, orphans, zombie owners, ... */
        GR_GPU_STALE,    /* memory above baseline and no holder at all */
        GR_GPU_UNKNOWN,  /* the driver could not be read */
} gr_gpu_state;

typedef enum gr_role {
        GR_ROLE_OWNER,          /* NVML lists it and it is alive */
        GR_ROLE_HIDDEN_HOLDER,  /* unlisted, with a CUDA footprint: holds a ghost's memory */
        GR_ROLE_MONITOR,        /* unlisted, NVML-only footprint: never a leftover */
        GR_ROLE_HOLDER,         /* holds only control files (nvidiactl, nvidia-uvm) */
} gr_role;

enum {
        GR_COND_ORPHAN = 1 << 0,          /* its launcher is gone */
        GR_COND_ZOMBIE = 1 << 1,
        GR_COND_STOPPED = 1 << 2,         /* state T/t: ignores SIGTERM until SIGCONT */
        GR_COND_UNINTERRUPTIBLE = 1 << 3, /* state D: cannot be killed */
        GR_COND_OTHER_NS = 1 << 4,        /* in another PID namespace (container) */
        GR_COND_OTHER_USER = 1 << 5,      /* not the user running gpureap */
        GR_COND_LISTENING = 1 << 6,       /* listens on a TCP port */
};

typedef enum gr_confidence {
        GR_SURE,      /* one ghost, one candidate, and the memory adds up */
        GR_LIKELY,    /* lineage ties the holder to the ghost */
        GR_AMBIGUOUS, /* several ghosts or candidates, nothing to tell them apart */
} gr_confidence;

typedef enum gr_finding_kind {
        GR_FIND_GHOST,           /* NVML lists a dead or zombie PID; its hidden holders keep the memory */
        GR_FIND_TEARDOWN,        /* a ghost with no holder: memory being torn down */
        GR_FIND_ORPHAN,          /* holders whose launcher is gone */
        GR_FIND_ZOMBIE,          /* a zombie context owner; its parent does not reap it */
        GR_FIND_STOPPED,
        GR_FIND_UNINTERRUPTIBLE,
        GR_FIND_STALE,           /* memory above baseline with no holder at all */
        GR_FIND_BUSY,            /* live owners with a live launcher: in use, not a leftover */
        GR_FIND_MONITOR,         /* NVML-only clients: information */
        GR_FIND_FOREIGN,         /* holders in another container or of another user: information */
        GR_FIND_KIND_COUNT,
} gr_finding_kind;

typedef struct gr_finding {
        gr_finding_kind kind;
        bool leftover;            /* something to clean up (the GPU is dirty or stale) */
        int gpu;                  /* index in the report, -1 when not tied to one GPU */
        pid_t pids[GR_FINDING_PIDS_MAX]; /* the processes it is about */
        unsigned n_pids;
        pid_t related;            /* ghost PID, non-reaping parent, dead launcher; 0 none */
        uint64_t memory;          /* bytes involved, GR_UNKNOWN_U64 unknown */
        gr_confidence confidence;
        char explanation[320];
        char next_step[320];
} gr_finding;

typedef struct gr_holder_verdict {
        pid_t pid;
        const gr_process *process; /* in the snapshot's table */
        uint64_t minors;          /* bit m: holds /dev/nvidia<m> (m < 64) */
        gr_role role;
        unsigned conditions;      /* GR_COND_* */
        pid_t launcher;           /* grouping key: the process group, or the session */
        bool launcher_alive;
        pid_t ghost;              /* for hidden holders: the ghost it is attributed to */
} gr_holder_verdict;

typedef struct gr_gpu_verdict {
        gr_gpu_state state;
        uint64_t unaccounted;     /* used memory that no live listed owner accounts for */
} gr_gpu_verdict;

typedef struct gr_diagnosis {
        gr_gpu_verdict *gpus;     /* one per GPU of the report, same order */
        unsigned n_gpus;
        gr_holder_verdict *holders; /* one per holder (process with a device fd), by PID */
        size_t n_holders;
        gr_finding *findings;
        size_t n_findings;
        uid_t uid;                /* whose view "another user" is relative to */
} gr_diagnosis;

/* uid: the user gpureap runs as. Returns -ENOMEM or 0. */
int gr_diagnose(const gr_snapshot *s, uid_t uid, gr_diagnosis **ret);
void gr_diagnosis_free(gr_diagnosis *d);

const gr_holder_verdict *gr_diagnosis_holder(const gr_diagnosis *d, pid_t pid);
const char *gr_gpu_state_name(gr_gpu_state s);
const char *gr_role_name(gr_role r);
const char *gr_finding_kind_name(gr_finding_kind k);
const char *gr_confidence_name(gr_confidence c);
bool gr_holding_has_cuda_footprint(const gr_holding *h);

#endif
