/* Internal to the diagnosis: the indexes over one snapshot, shared by the judgement of holders
 * (lineage.c) and the findings per GPU (diagnose.c). */
#ifndef GPUREAP_DX_H
#define GPUREAP_DX_H

#include "gpureap/diagnose.h"

struct owner_ix {
        pid_t pid;
        unsigned gpu, idx;
};

struct listen_ix {
        uint64_t inode;
        pid_t pid;
};

struct dx {
        const gr_snapshot *s;
        gr_diagnosis *d;
        size_t cap_findings;
        struct owner_ix *owners;  /* every NVML-listed PID, sorted: lookups stay O(log n) */
        size_t n_owners;
        const gr_holder_verdict **scratch; /* room for every holder */
        int32_t *slots;           /* open-addressing index pid -> table position, -1 empty */
        size_t slot_mask;
        struct listen_ix *listens; /* listening sockets of the processes whose sockets were read */
        size_t n_listens;
        bool hidden;              /* processes may be hidden from this view: "gone" is not evidence */
        bool partial_view;        /* some processes could not be inspected (not root) */
        bool foreign_pids;        /* a container's PID namespace: the driver's PIDs are not ours */
};

const gr_process *dx_find(const struct dx *x, pid_t pid);
bool dx_alive(const gr_process *p);
/* Is the process with this PID alive? In a partial table (or a view that hides processes) a
 * missing PID is not evidence: that counts as alive */
bool dx_leader_alive(const struct dx *x, pid_t pid);
/* 1 alive, 0 gone, -1 not known to this view */
int dx_leader_state(const struct dx *x, pid_t pid);
/* The NVML entry of pid on GPU gi, or NULL */
const gr_gpu_proc *dx_listed(const struct dx *x, unsigned gi, pid_t pid);
bool dx_listed_anywhere(const struct dx *x, pid_t pid);

/* A finding of one GPU (gpu >= 0) or of none (-1), its texts empty: NULL without memory */
gr_finding *dx_add_finding(struct dx *x, gr_finding_kind kind, int gpu, bool leftover);
void dx_add_pid(gr_finding *f, pid_t pid);

/* describe.c: the findings found GPU by GPU merged into one per subject (a job on every GPU
 * it holds), then each one's next step, as a fact */
void dx_merge_findings(struct dx *x);
void dx_plan_actions(struct dx *x);

/* lineage.c: the judgement of every holder (docs/verdicts.md); ghosts must be attributed first */
int dx_judge_lineage(struct dx *x);
/* One holder judged by its lineage (its role and ghost set first) */
void dx_judge_holder(const struct dx *x, gr_holder_verdict *v);
/* drm-verdict.c: the AMD and Intel view judged (after the lineage index is built) */
int dx_judge_drm(struct dx *x);
void dx_drm_free(gr_drm_diagnosis *dd);
int dx_index_listens(struct dx *x);

#endif
