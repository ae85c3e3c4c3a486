/* gpureap act: plan (pure), signals through pidfds, and the drain wait. Everything signalled is
 * in the plan, re-verified (PID + start time) through a pidfd just before each signal. */
#ifndef GPUREAP_ACT_H
#define GPUREAP_ACT_H

#include "gpureap/diagnose.h"

#define GR_PLAN_MAX 4096

typedef enum gr_plan_why {
        GR_WHY_LEFTOVER,      /* a finding calls it a leftover */
        GR_WHY_ASKED_PID,     /* --pid */
        GR_WHY_ASKED_ALL,     /* --all: every holder of the selected GPUs */
        GR_WHY_TREE,          /* --tree: a member of a target's process group */
} gr_plan_why;

typedef enum gr_refusal {
        GR_REFUSE_NONE,
        GR_REFUSE_INIT,       /* PID 1 */
        GR_REFUSE_SELF,       /* gpureap itself or one of its ancestors */
        GR_REFUSE_KERNEL,     /* a kernel thread */
        GR_REFUSE_MONITOR,    /* an NVML-only client */
        GR_REFUSE_OTHER_USER, /* another user's, without --all-users as root */
        GR_REFUSE_ZOMBIE,     /* already dead: its parent must reap it */
        GR_REFUSE_GONE,       /* not in the snapshot */
} gr_refusal;

typedef struct gr_target {
        pid_t pid;
        uint64_t start_time;
        uid_t uid;
        char comm[GR_COMM_MAX];
        gr_plan_why why;
        uint64_t gpus;        /* bit i: holds GPU index i of the report */
        gr_refusal refused;   /* GR_REFUSE_NONE for a target that will be signalled */
        pid_t related;        /* for a zombie: its parent */
} gr_target;

typedef struct gr_plan_options {
        const char *gpus;     /* --gpu list (index, UUID prefix, bus id), NULL all */
        const pid_t *pids;    /* --pid */
        size_t n_pids;
        bool all;             /* every holder of the selected GPUs, live owners too */
        bool tree;            /* add the whole process group of each target */
        bool user_set;        /* --user */
        uid_t user;
        bool all_users;       /* may act on other users' processes (only as root) */
        bool monitors_ok;     /* monitors may be targets (reset --stop-monitors) */
        uid_t my_uid;
        pid_t self;
        const pid_t *ancestors; /* gpureap's ancestors, never touched */
        size_t n_ancestors;
} gr_plan_options;

typedef struct gr_plan {
        gr_target *targets;   /* the ones to signal and the refused ones, by PID */
        size_t n;
        uint64_t gpus;        /* GPUs whose drain is awaited */
} gr_plan;

int gr_plan_make(const gr_snapshot *s, const gr_diagnosis *d, const gr_plan_options *o,
                 gr_plan **ret);
void gr_plan_free(gr_plan *p);
const char *gr_refusal_text(gr_refusal r);
size_t gr_plan_count(const gr_plan *p); /* targets that will be signalled */

/* The signal ladder over the plan's targets: re-verify each through a pidfd, SIGTERM, SIGCONT,
 * wait up to grace_ms, SIGKILL what is left, wait up to deadline_ms for all to end. With tree,
 * process groups are re-read until no new member appears. */
typedef enum gr_kill_result {
        GR_KILL_ENDED,        /* it ended after SIGTERM */
        GR_KILL_KILLED,       /* it needed SIGKILL */
        GR_KILL_GONE,         /* gone before the first signal */
        GR_KILL_CHANGED,      /* the PID names another process now: skipped */
        GR_KILL_SURVIVED,     /* still there at the deadline (state D) */
        GR_KILL_DENIED,       /* EPERM */
} gr_kill_result;

typedef struct gr_kill_outcome {
        pid_t pid;
        gr_kill_result result;
} gr_kill_outcome;

typedef struct gr_kill_options {
        const char *proc_root;
        uint64_t grace_ms;
        uint64_t deadline_ms;
} gr_kill_options;

int gr_kill_plan(const gr_plan *p, const gr_kill_options *o, gr_kill_outcome **ret, size_t *ret_n);
const char *gr_kill_result_name(gr_kill_result r);

#endif
