/* gpureap diagnose: a verdict for every GPU and every holder, as a pure function of a
 * snapshot (no I/O), with findings that carry a one-line explanation and a next step. */
#ifndef GPUREAP_DIAGNOSE_H
#define GPUREAP_DIAGNOSE_H

#include "gpureap/snapshot.h"

#pragma GCC visibility push(default)

/* A finding is about one job (or one dead PID, one process) on every GPU it touches: a
 * tensor-parallel job of 8 ranks on 8 GPUs is one finding, its next step one command */
#define GR_FINDING_PIDS_MAX 64
#define GR_FINDING_GPUS_MAX 64
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

/* Facts about a holder; none of them is a verdict (docs/verdicts.md) */
enum {
        GR_COND_ZOMBIE = 1 << 1,
        GR_COND_STOPPED = 1 << 2,         /* state T/t: ignores SIGTERM until SIGCONT */
        GR_COND_UNINTERRUPTIBLE = 1 << 3, /* state D: a signal waits until the kernel call returns */
        GR_COND_OTHER_NS = 1 << 4,        /* in another PID namespace (container) */
        GR_COND_OTHER_USER = 1 << 5,      /* not the user running gpureap */
        GR_COND_LISTENING = 1 << 6,       /* listens on a TCP port */
};

typedef enum gr_judgement {
        GR_JUDGE_LIVE,      /* a job in use: leave it */
        GR_JUDGE_UNSURE,    /* the evidence conflicts or is missing */
        GR_JUDGE_LEFTOVER,  /* nothing will use it again */
} gr_judgement;

typedef enum gr_confidence {
        GR_SURE,      /* the evidence leaves one reading */
        GR_LIKELY,    /* it leans one way */
        GR_UNSURE,    /* it conflicts */
} gr_confidence;

typedef enum gr_lean {
        GR_LEAN_NEUTRAL,
        GR_LEAN_LIVE,
        GR_LEAN_LEFTOVER,
} gr_lean;

/* Stable keys of the evidence (names in gr_evidence_key_name, documented in docs/verdicts.md) */
typedef enum gr_evidence_key {
        GR_EV_RUN_SUPERVISOR,
        GR_EV_GHOST,
        GR_EV_PARENT,
        GR_EV_REPARENTED,
        GR_EV_ANCESTOR,
        GR_EV_WORKER,
        GR_EV_GROUP_LEADER,
        GR_EV_SESSION_LEADER,
        GR_EV_LISTENING,
        GR_EV_SERVING,
        GR_EV_TERMINAL,
        GR_EV_CGROUP,
        GR_EV_SIGNALS,
        GR_EV_STATE,
        GR_EV_VIEW,
        GR_EV_SEEN,               /* what 'gpureap serve' saw: its launcher, and how it ended */
        GR_EV_KUBELET,            /* the kubelet's List, answered after it started, has no pod
                                     assigned the GPUs its pod holds */
        GR_EV_KEY_COUNT,
} gr_evidence_key;

#define GR_EVIDENCE_MAX 16
#define GR_EVIDENCE_TEXT 112

typedef struct gr_evidence {
        gr_evidence_key key;
        gr_lean lean;
        char value[GR_EVIDENCE_TEXT];
} gr_evidence;

typedef struct gr_evidence_list {
        gr_evidence items[GR_EVIDENCE_MAX];
        unsigned n;
} gr_evidence_list;

typedef enum gr_finding_kind {
        GR_FIND_GHOST,           /* NVML lists a dead or zombie PID; its hidden holders keep the memory */
        GR_FIND_TEARDOWN,        /* a ghost with no holder: memory being torn down */
        GR_FIND_ORPHAN,          /* holders judged leftovers: their launcher is gone */
        GR_FIND_ZOMBIE,          /* a zombie context owner; its parent does not reap it */
        GR_FIND_STOPPED,
        GR_FIND_UNINTERRUPTIBLE,
        GR_FIND_STALE,           /* memory above baseline with no holder at all */
        GR_FIND_BUSY,            /* live owners: in use, not a leftover */
        GR_FIND_MONITOR,         /* NVML-only clients: information */
        GR_FIND_FOREIGN,         /* holders in another container or of another user: information */
        GR_FIND_SUSPECT,         /* holders judged unsure: the evidence conflicts */
        GR_FIND_UNMAPPED,        /* the driver lists PIDs this PID namespace cannot see */
        GR_FIND_NO_POD,          /* on a Kubernetes node, a GPU in use that the kubelet assigned to
                                    no listed pod: the scheduler takes it for free */
        GR_FIND_NOT_ASSIGNED,    /* a process in a pod holds a GPU that the device manager's
                                    checkpoint did not assign to that pod */
        GR_FIND_KIND_COUNT,
} gr_finding_kind;

/* The launcher a holder belongs to, for grouping: a process group, a torchelastic run, a
 * 'gpureap run' supervisor, or the process itself */
typedef enum gr_job_kind {
        GR_JOB_GROUP,
        GR_JOB_TORCHELASTIC,
        GR_JOB_RUN,
        GR_JOB_PROCESS,
        GR_JOB_LAUNCHER,          /* the launcher 'gpureap serve' saw start it (each worker in a
                                     session of its own: no group ties them) */
} gr_job_kind;

typedef struct gr_job {
        gr_job_kind kind;
        pid_t pid;                /* process group, supervisor or process */
        char id[64];              /* torchelastic run id */
} gr_job;

/* What to do about a finding, as a fact: the faces put it in words and command lines
 * (src/words.c). The step acts on the finding's GPUs and processes. */
typedef enum gr_action_kind {
        GR_ACTION_NONE,           /* nothing to do (a monitor; a zombie is its parent's business) */
        GR_ACTION_REAP,           /* end exactly its processes, wait for the memory, verify */
        GR_ACTION_WAIT,           /* the driver is tearing the memory down: wait; a reset if it stays */
        GR_ACTION_WHY,            /* cannot be judged: look at each holder's evidence, then name it */
        GR_ACTION_LOOK_AS_ROOT,   /* this view cannot see every process: look again as root */
        GR_ACTION_FROM_HOST,      /* the driver's PIDs are another PID namespace's: look from there */
        GR_ACTION_RESUME,         /* stopped (state T): SIGCONT */
        GR_ACTION_KERNEL_STACK,   /* state D: what it waits for in the kernel */
        GR_ACTION_KIND_COUNT,
} gr_action_kind;

typedef struct gr_action {
        gr_action_kind kind;
        bool as_root;             /* the step needs a view this one lacks (not root) */
        bool likely;              /* REAP: judged likely, which a plain reap spares (--pid, --likely) */
        bool unsure;              /* REAP: the attribution is unsure: judge each before naming it */
} gr_action;

typedef struct gr_finding {
        gr_finding_kind kind;
        bool leftover;            /* something to clean up (the GPU is dirty or stale) */
        int gpu;                  /* index in the report of its first GPU, -1 when not tied to
                                     a GPU */
        uint64_t gpus;            /* bit i: about the GPU at index i of the report (a GPU past
                                     the 64th is never grouped: its finding is its own) */
        unsigned n_gpus;          /* how many GPUs it is about */
        uint64_t gpu_memory[GR_FINDING_GPUS_MAX]; /* bytes involved on each, by report index */
        gr_job job;               /* orphan, suspect, busy: the job it is about (else zeroes) */
        bool unlisted;            /* suspect: a CUDA-like holder the driver does not list, while
                                     memory is unaccounted */
        pid_t pids[GR_FINDING_PIDS_MAX]; /* the processes it is about */
        unsigned n_pids;
        pid_t related;            /* ghost PID, non-reaping parent, dead launcher; 0 none */
        uint64_t memory;          /* bytes involved, GR_UNKNOWN_U64 unknown */
        gr_confidence confidence;
        gr_action action;         /* the next step, as a fact (the words are the faces') */
} gr_finding;

typedef struct gr_holder_verdict {
        pid_t pid;
        const gr_process *process; /* in the snapshot's table */
        uint64_t minors;          /* bit m: holds /dev/nvidia<m> (m < 64) */
        gr_role role;
        unsigned conditions;      /* GR_COND_* */
        gr_judgement judgement;
        gr_confidence confidence;
        char reason[240];
        gr_evidence_list evidence;
        pid_t root;               /* the top of its chain of live parents (docs/verdicts.md) */
        gr_job job;
        pid_t launcher;           /* the job's launcher: group leader, supervisor; 0 unknown */
        bool launcher_alive;
        pid_t ghost;              /* for hidden holders: the ghost it is attributed to */
        gr_confidence ghost_confidence;
} gr_holder_verdict;

typedef struct gr_gpu_verdict {
        gr_gpu_state state;
        uint64_t unaccounted;     /* used memory that no live listed owner accounts for */
        uint64_t allowance;       /* what a GPU shows with nothing on it, still noise (the slack;
                                     v1 memory counts the driver's reserve in used) */
        gr_owner_state *owners;   /* one per context the driver lists (gr_gpu.procs, same order):
                                     what the diagnosis found of its PID (NULL: none listed) */
} gr_gpu_verdict;

/* AMD and Intel (lib/diagnose/drm-verdict.c, docs/drm.md): every DRM and KFD holder judged by
 * the same lineage as NVIDIA's, then each client as a whole: killing some of the processes that
 * share one open file frees nothing, so a client is a leftover only when all its holders are */
typedef struct gr_drm_client_verdict {
        gr_judgement judgement;
        gr_confidence confidence;  /* of a leftover: its least sure holder's */
        unsigned n_leftover, n_live, n_unsure; /* its holders by their judgement */
} gr_drm_client_verdict;

/* The AMD ghost: KFD keeps the entry (and the VRAM) of a PID that is gone or a zombie, because
 * a process that inherited its files still holds them; that one is its hidden holder */
#define GR_KFD_GHOST_HOLDERS_MAX 16
typedef struct gr_kfd_ghost {
        pid_t pid;
        bool zombie;
        uint32_t gpu_id;
        int gpu;                   /* index in the snapshot's gr_drm_report.gpus, -1 none */
        uint64_t vram;
        pid_t holders[GR_KFD_GHOST_HOLDERS_MAX]; /* live /dev/kfd holders without an entry of
                                                    their own, tied to it */
        unsigned n_holders;
        gr_confidence confidence;  /* sure: in its process group or session, or its child */
} gr_kfd_ghost;

typedef struct gr_drm_gpu_verdict {
        gr_gpu_state state;        /* clean, busy (live or unsure clients), dirty (a leftover
                                      client or a KFD ghost) */
        uint64_t leftover_bytes;   /* VRAM of its leftover clients (known parts), or of its
                                      ghosts where that is more: the two overlap */
} gr_drm_gpu_verdict;

typedef struct gr_drm_diagnosis {
        gr_holder_verdict *holders; /* every DRM or KFD holder, by PID */
        size_t n_holders;
        gr_drm_client_verdict *clients; /* one per client of the report, same order */
        gr_kfd_ghost *ghosts;
        size_t n_ghosts;
        gr_drm_gpu_verdict gpus[GR_DRM_GPUS_MAX]; /* per GPU of the report */
} gr_drm_diagnosis;

typedef struct gr_diagnosis {
        gr_gpu_verdict *gpus;     /* one per GPU of the report, same order */
        unsigned n_gpus;
        gr_holder_verdict *holders; /* one per holder (process with a device fd), by PID */
        size_t n_holders;
        gr_finding *findings;
        size_t n_findings;
        uid_t uid;                /* whose view "another user" is relative to */
        char view[160];           /* what this view cannot see ("" all of it): caps confidences */
        bool partial_view;        /* some processes could not be inspected (not root) */
        bool hidden;              /* processes may be hidden from this view (hidepid, a container) */
        bool foreign_pids;        /* a container's PID namespace: the driver's PIDs are not ours */
        gr_drm_diagnosis *drm;    /* the snapshot's AMD and Intel view judged; NULL without one */
} gr_diagnosis;

/* The state of context i of GPU gi as the diagnosis found it (GR_OWNER_NOT_FOUND past the list) */
gr_owner_state gr_gpu_verdict_owner(const gr_gpu_verdict *v, unsigned n_procs, unsigned i);

/* Is a finding the scope's (lib/diagnose/scope.c)? IN: it names a process of the scope; OUT:
 * it names processes, none of them the scope's; GPU: it names no process this view has (memory
 * torn down under a PID that is gone, stale memory nobody holds, PIDs of another namespace): a
 * fact about its GPUs, which stays in every scope's report of them. Without a scope: IN. */
typedef enum gr_finding_scope {
        GR_FINDING_OUT,
        GR_FINDING_IN,
        GR_FINDING_GPU,
} gr_finding_scope;

/* uid: the user gpureap runs as. Returns -ENOMEM or 0. */
int gr_diagnose(const gr_snapshot *s, uid_t uid, gr_diagnosis **ret);
void gr_diagnosis_free(gr_diagnosis *d);
/* The diagnosis narrowed to a scope, in place: the findings that are not the scope's dropped,
 * from those that are the processes out of it, and each GPU's state made again from what is
 * left (unknown stays unknown). The holders' verdicts stay whole. No scope: unchanged. */
void gr_diagnosis_narrow(gr_diagnosis *d, const gr_snapshot *s, const gr_scope *sc);
gr_finding_scope gr_finding_in_scope(const gr_snapshot *s, const gr_scope *sc, const gr_finding *f);
const char *gr_finding_scope_name(gr_finding_scope fs); /* "out", "in", "gpu" */

const gr_holder_verdict *gr_diagnosis_holder(const gr_diagnosis *d, pid_t pid);
/* The verdict of a DRM or KFD holder (NULL: not one) */
const gr_holder_verdict *gr_diagnosis_drm_holder(const gr_diagnosis *d, pid_t pid);
const char *gr_gpu_state_name(gr_gpu_state s);
const char *gr_role_name(gr_role r);
const char *gr_finding_kind_name(gr_finding_kind k);
const char *gr_confidence_name(gr_confidence c);
const char *gr_judgement_name(gr_judgement j);
const char *gr_action_kind_name(gr_action_kind k); /* "reap", "wait", "why", "look_as_root"... */
const char *gr_lean_name(gr_lean l);
const char *gr_evidence_key_name(gr_evidence_key k);
/* "process group 700", "torchelastic run r1", "gpureap run 900", "process 812" */
const char *gr_job_text(const gr_job *j, char *buf, size_t size);
bool gr_job_equal(const gr_job *a, const gr_job *b);
/* Is the owner state of a listed PID on GPU gi known to this view? (a container's PID namespace
 * or hidepid hide the driver's PIDs) */
gr_owner_state gr_diagnosis_owner_state(const gr_snapshot *s, unsigned gi, pid_t pid);
bool gr_holding_has_cuda_footprint(const gr_holding *h);
/* Is finding f about the GPU at index gi of the report? */
bool gr_finding_on_gpu(const gr_finding *f, unsigned gi);
/* The bytes f involves on that GPU (GR_UNKNOWN_U64 unknown, 0 when not about it) */
uint64_t gr_finding_memory_on(const gr_finding *f, unsigned gi);
/* How many of f's processes hold GPU g's device file */
unsigned gr_finding_pids_on(const gr_diagnosis *d, const gr_finding *f, const gr_gpu *g);
/* n ascending numbers as "0-7", "0,2,5", "0-3,6" */
const char *gr_index_list_text(const unsigned *idx, unsigned n, char *buf, size_t size);
/* "GPU 3", "GPUs 0-7", "GPUs 0,2,5" (NVML indexes) */
const char *gr_finding_gpus_text(const gr_snapshot *s, const gr_finding *f, char *buf, size_t size);
/* "3", "0,1,2": a --gpu value that selects exactly its GPUs */
const char *gr_finding_gpus_arg(const gr_snapshot *s, const gr_finding *f, char *buf, size_t size);

#pragma GCC visibility pop

#endif
