/* gpureap act: plan (pure), signals through pidfds, and the drain wait. Everything signalled is
 * in the plan, re-verified (PID + start time) through a pidfd just before each signal. */
#ifndef GPUREAP_ACT_H
#define GPUREAP_ACT_H

#include "gpureap/diagnose.h"
#include "gpureap/tree.h"

#pragma GCC visibility push(default)

#define GR_PLAN_MAX 4096

typedef enum gr_plan_why {
        GR_WHY_LEFTOVER,      /* a finding calls it a leftover */
        GR_WHY_ASKED_PID,     /* --pid */
        GR_WHY_ASKED_ALL,     /* --all: every holder of the selected GPUs */
        GR_WHY_TREE,          /* --tree: a member of a target's process group */
        GR_WHY_ENDED,         /* a holder of the scope (job, pod) that has ended */
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
        GR_REFUSE_LIVE,       /* judged a live job */
        GR_REFUSE_UNSURE,     /* the evidence conflicts: only --pid names it */
        GR_REFUSE_LIKELY,     /* a likely leftover: only with --likely (or --pid) */
        GR_REFUSE_NO_UID,     /* its owner could not be read */
        GR_REFUSE_OUT_OF_SCOPE, /* not a process of the --job, --cgroup, --container or --pod */
        GR_REFUSE_NOT_ON_GPU, /* named with --pid, but it holds none of the --gpu GPUs (a reused PID?) */
        GR_REFUSE_NOT_HOLDING, /* listed by the driver, alive, but holds no device file: maybe
                                 another process with the PID of one that is gone */
        GR_REFUSE_NOT_ONLY,   /* not among the processes given with --only (PID and start time) */
        GR_REFUSE_DRM,        /* holds an AMD or Intel GPU's file that cannot be tied to a client
                                 (its fdinfo unreadable), or an NVIDIA GPU's besides (docs/drm.md) */
        GR_REFUSE_DRM_SHARED, /* shares an AMD or Intel GPU's open file (a DRM client) with a
                                 process the plan does not signal: ending it frees nothing, and
                                 the sharing ties it to that one */
        GR_REFUSE_DRM_UNREAD, /* holds an AMD or Intel GPU's file, and another process's files
                                 (related, where one is named) could not all be read just before
                                 the plan was shown: that it shares none of them is not known */
} gr_refusal;

/* A process as a caller saw it: its PID and its start time (clock ticks after boot, as
 * /proc/PID/stat and 'status --json' give it) */
typedef struct gr_pid_start {
        pid_t pid;
        uint64_t start_time;
} gr_pid_start;

typedef struct gr_target {
        pid_t pid;
        uint64_t start_time;
        uid_t uid;
        char comm[GR_COMM_MAX];
        gr_plan_why why;
        uint64_t gpus;        /* bit i: holds GPU index i of the report */
        gr_refusal refused;   /* GR_REFUSE_NONE for a target that will be signalled */
        pid_t related;        /* for a zombie: its parent; for GR_REFUSE_DRM_UNREAD: the process
                                 whose files could not be read (0: not one) */
        bool judged;          /* a holder: judgement and confidence below are the diagnosis' */
        gr_judgement judgement;
        gr_confidence confidence;
        char reason[240];     /* the diagnosis' reason, "" for a process that holds nothing */
        char job[96];         /* what it belongs to ("process group 700", "torchelastic run r1") */
} gr_target;

typedef struct gr_plan_options {
        const char *gpus;     /* --gpu list (index, UUID prefix, bus id), NULL all */
        const pid_t *pids;    /* --pid */
        size_t n_pids;
        bool all;             /* every holder of the selected GPUs, live owners too */
        bool likely;          /* leftovers judged likely too, not only sure ones */
        const gr_scope *scope; /* only the processes of this job, cgroup, container or pod */
        bool scope_ended;     /* the scope is over (a job's epilog): each of its holders is a target */
        bool tree;            /* add the whole process group of each target */
        bool user_set;        /* --user */
        uid_t user;
        bool all_users;       /* may act on other users' processes (only as root) */
        bool monitors_ok;     /* monitors may be targets (reset --stop-monitors) */
        uid_t my_uid;
        pid_t self;           /* gpureap: never it, nor its children (its helpers) */
        pid_t self_pgrp;      /* --tree never extends into gpureap's own process group */
        const pid_t *ancestors; /* gpureap's ancestors, never touched */
        size_t n_ancestors;
        const gr_pid_start *only; /* n_only > 0: of the plan's targets only these, each with the
                                     start time it had when it was looked at (a PID reused since
                                     names another process: spared) */
        size_t n_only;
} gr_plan_options;

/* An AMD or Intel GPU's DRM client: its GPU's PCI address and its drm-client-id */
typedef struct gr_drm_key {
        char pdev[32];
        uint64_t client_id;
} gr_drm_key;

typedef struct gr_plan {
        gr_target *targets;   /* the ones to signal and the refused ones, by PID */
        size_t n;
        uint64_t gpus;        /* GPUs whose drain is awaited */
        /* AMD and Intel (docs/drm.md): the DRM clients of the targets that will be signalled,
         * each a leftover as a whole (every holder judged one); the KFD entries (PIDs) that end
         * with them: the targets' own and those of the ghosts they keep. What the ladder lets a
         * member hold at its signal, and what the verification waits to see gone */
        gr_drm_key *drm_clients;
        size_t n_drm_clients;
        pid_t *drm_kfd;
        size_t n_drm_kfd;
} gr_plan;

int gr_plan_make(const gr_snapshot *s, const gr_diagnosis *d, const gr_plan_options *o,
                 gr_plan **ret);
/* In a scope that has ended (a job's epilog), is this holder (its place in the scope, its
 * verdict, NULL unknown) one to end? In the scope: yes, by definition. Of it only by its
 * environment (GR_SCOPE_ESCAPED): unless it is judged live, or cannot be judged at all */
bool gr_plan_ended_scope_takes(gr_scope_match m, const gr_holder_verdict *v);
void gr_plan_free(gr_plan *p);
const char *gr_refusal_text(gr_refusal r);
size_t gr_plan_count(const gr_plan *p); /* targets that will be signalled */

/* Would the plan's safety rules refuse this process? (for processes found after the plan was
 * made: forks into a target's group during the kill) */
gr_refusal gr_plan_refusal(const gr_snapshot *s, const gr_diagnosis *d, const gr_plan_options *o,
                           const gr_process *p);
/* Was process group pgrp the plan's targets' alone at the snapshot (every live process of it a
 * target that is signalled), and not the group of gpureap or of one of its callers? Only then
 * may a newcomer in it be taken for one of theirs */
bool gr_plan_group_targets_alone(const gr_snapshot *s, const gr_plan *plan, const gr_plan_options *o, pid_t pgrp);

typedef enum gr_kill_result {
        GR_KILL_ENDED,        /* it ended after SIGTERM */
        GR_KILL_KILLED,       /* it needed SIGKILL */
        GR_KILL_GONE,         /* gone before the first signal */
        GR_KILL_CHANGED,      /* the PID names another process now (or its owner changed): skipped */
        GR_KILL_SURVIVED,     /* still there at the deadline (state D) */
        GR_KILL_DENIED,       /* EPERM */
        GR_KILL_ERROR,        /* the signal could not be sent or checked (error holds -errno) */
        GR_KILL_SPARED,       /* not signalled (any more): it holds an AMD or Intel GPU's file
                                 now that the plan did not find a leftover, or its files could not
                                 be read (gr_ladder_options.refuse_drm, gr_plan_drm_allows) */
} gr_kill_result;

const char *gr_kill_result_name(gr_kill_result r);
/* survived, denied or error: the process may still be there */
bool gr_kill_result_failed(gr_kill_result r);

/* ---- the signal ladder (lib/act/ladder.c): the one way processes are ended ---- */

typedef struct gr_ladder gr_ladder;

typedef struct gr_ladder_options {
        const char *proc_root;
        uint64_t grace_ms;        /* SIGTERM and SIGCONT, then this long, then SIGKILL */
        uint64_t deadline_ms;     /* from the first signal: what is left then survived */
        /* each round: add what appeared since (gr_ladder_add), reap zombies, and before the
         * SIGKILL rung anything else that kills (cgroup.kill); each may be NULL */
        void (*refresh)(gr_ladder *l, void *userdata);
        void (*tick)(gr_ladder *l, void *userdata);
        void (*before_kill)(void *userdata);
        void *userdata;
        /* just before each signal, a member that holds a DRM or KFD file (its threads' own
         * tables too), or whose files cannot be read, is spared (GR_KILL_SPARED): the plan
         * refuses such holders as they were at its look, and a file can come later (opened,
         * passed over a socket). dev_dir: as the scan's (NULL: the default) */
        bool refuse_drm;
        const char *dev_dir;
        const gr_plan *drm_plan;  /* with refuse_drm: the plan whose AMD and Intel files a member
                                     may hold (gr_plan_drm_allows); NULL: none */
} gr_ladder_options;

/* May the process (pid, started at start_time) be signalled for what it holds of AMD and Intel
 * GPUs now (docs/drm.md)? 0 where every DRM fd it holds, in every file table of it, is of a
 * client the plan ends (its fdinfo's drm-pdev and drm-client-id, read now) and every /dev/kfd
 * fd is a target's that held one at the plan's look (plan NULL: none is); 1 where one is not;
 * -errno where they cannot all be read. A file opened or passed to it since the plan is spared
 * that way, and so is one that cannot be read */
/* What a look at every process's files found beyond the snapshot (lib/act/reap.c): clients of
 * the plan that a process it does not signal holds too (in a thread's own file table, past
 * the fds the scan lists), or with all, that such a look could not be made whole: the targets
 * that hold one are spared (GR_REFUSE_DRM_SHARED; all: every AMD and Intel target,
 * GR_REFUSE_DRM_UNREAD), and so on to a fixed point, and the plan's clients and KFD entries made
 * again. 0 or -ENOMEM */
int gr_plan_drm_held_outside(const gr_snapshot *s, const gr_diagnosis *d, gr_plan *p, const gr_drm_key *held,
                             size_t n_held, bool all);
/* Will the plan signal this PID (a target not refused)? */
bool gr_plan_signals(const gr_plan *p, pid_t pid);
/* Does this PID hold a DRM client on one of the AMD or Intel GPUs gpus (bit i: s->drm->gpus[i]),
 * or keep the memory of a KFD ghost there? */
bool gr_drm_holder_on(const gr_snapshot *s, const gr_diagnosis *d, pid_t pid, uint64_t gpus);
/* Is this DRM client one of those the plan ends? */
bool gr_plan_ends_client(const gr_plan *p, const char *pdev, uint64_t client_id);
/* Is the client (pdev, client_id) one of keys? */
bool gr_drm_key_listed(const gr_drm_key *keys, size_t n, const char *pdev, uint64_t client_id);
/* The client of one DRM fd, by the fdinfo/FD of its file table's directory: 1 (*ret), 0 none
 * named there (not a client), -errno where it cannot be read */
int gr_drm_fd_client(int table_dir, int fd, gr_drm_key *ret);
/* The AMD and Intel GPUs of s (bit i: s->drm->gpus[i]) that the plan's DRM clients are on */
uint64_t gr_plan_drm_gpus(const gr_plan *p, const gr_snapshot *s);
int gr_plan_drm_allows(const gr_plan *plan, const char *proc_root, const char *dev_dir, pid_t pid, uint64_t start_time);

typedef struct gr_ladder_member {
        gr_pidref ref;
        char comm[GR_COMM_MAX];   /* for the record; set by whoever added it */
        gr_kill_result result;
        int error;                /* -errno with GR_KILL_ERROR and GR_KILL_DENIED */
        bool done, signalled;
        bool reaped;              /* the caller's: a parent that waited for it says so */
} gr_ladder_member;

struct gr_ladder {
        gr_ladder_options o;
        gr_ladder_member *m;
        size_t n, cap;
        unsigned fds_left;        /* pidfds it may still take: then /proc checks instead */
        int rung;                 /* 0 not started, 1 SIGTERM, 2 SIGKILL */
        bool final_look;          /* every member ended: refresh now, whatever its own pace */
};

int gr_ladder_init(gr_ladder *l, const gr_ladder_options *o);
/* Pin a process (its owner checked when uid is given) and, once the ladder runs, give it the
 * current rung. 1 added, 0 already there, -ENOMEM. A process that cannot be pinned is added
 * with its outcome (gone, changed, error). */
int gr_ladder_add(gr_ladder *l, pid_t pid, uint64_t start_time, const uid_t *uid);
/* The same for a process that has had its SIGTERM and SIGCONT another way (its process
 * group's): the SIGTERM rung passes it by (one TERM each), SIGKILL does not; gone already, it
 * counts as ended */
int gr_ladder_add_signalled(gr_ladder *l, pid_t pid, uint64_t start_time, const uid_t *uid);
/* Until every member ended, or the deadline */
int gr_ladder_run(gr_ladder *l);
void gr_ladder_done(gr_ladder *l);

/* The ladder over the plan's targets, each checked to still be the planned process and owner */
typedef struct gr_kill_outcome {
        pid_t pid;
        uint64_t start_time;
        char comm[GR_COMM_MAX];
        gr_kill_result result;
        int error;
} gr_kill_outcome;

typedef struct gr_kill_options {
        const char *proc_root;
        uint64_t grace_ms;
        uint64_t deadline_ms;
        void (*refresh)(gr_ladder *l, void *userdata); /* forks into the targets' groups */
        void *userdata;
        bool refuse_drm;          /* as gr_ladder_options' */
        const char *dev_dir;
} gr_kill_options;

int gr_kill_plan(const gr_plan *p, const gr_kill_options *o, gr_kill_outcome **ret, size_t *ret_n);

/* ---- the end of a supervised tree (lib/act/tree-end.c): gpureap run's teardown ---- */
/* The caller is the tree's child subreaper (PR_SET_CHILD_SUBREAPER: every orphan of the tree
 * comes back to it), and may have put the tree in a leaf cgroup of its own (tree.h). The tree
 * is its descendants and that cgroup's members: nothing else is signalled. First the command's
 * process group gets SIGTERM and SIGCONT at once through group_fd (a pidfd of the group's
 * leader: it names that group whatever process gets the number later); then one ladder over
 * the tree, listed again at every round so that what forks meanwhile gets the current rung,
 * each member checked against its start time through a pidfd just before its signal (who had
 * the group's SIGTERM is passed by: a second TERM means "quit now" to many servers); then
 * rounds of SIGKILL (cgroup.kill first) until no child is left and the cgroup is empty. */
typedef struct gr_tree_end_options {
        gr_context *ctx;             /* its /proc root, for the listings and the ladder alike;
                                        NULL: gr_context_default() */
        uint64_t grace_ms;           /* between SIGTERM and SIGKILL */
        const char *cgroup;          /* the tree's leaf cgroup; NULL or "": none */
        bool cgroup_complete;        /* every member was moved into it: the listings take its
                                        members for the tree without asking them for children */
        int group_fd;                /* the command's pidfd, -1: no group signal */
        pid_t pgid;                  /* the command's process group (its PID) */
        bool pgid_held;              /* the group's leader is our child, not yet reaped: before
                                        Linux 6.9 the group is signalled by kill(-pgid) */
        /* each may be NULL; userdata is theirs */
        void (*reaped)(pid_t pid, int status, void *userdata);     /* every child reaped here */
        void (*group_signalled)(bool done, void *userdata);        /* after the group's try */
        void (*after_term)(void *userdata);   /* once the first round's SIGTERMs went out */
        void (*tick)(void *userdata);         /* every round of the ladder */
        /* every member signalled or failed, once its ladder is done; term: of the SIGTERM
         * round (else a later SIGKILL round). A member whose signal failed (denied, an
         * error) is told once, not at every round */
        void (*member)(const gr_ladder_member *m, bool term, void *userdata);
        void *userdata;
        /* After the group's SIGTERM, first wait while the tree ends by itself, reaping it as it
         * goes: for as long as children keep ending (2 ms without one ends the wait), at most
         * 50 ms and half the grace. Where it is gone then, nothing is listed, pinned or signalled
         * one by one, and after_term and member are not called; else the ladder goes on as
         * without it, and the members outside the group get their SIGTERM that much later.
         * wake_fd is readable when a child may have ended (a signalfd that takes SIGCHLD);
         * tick drains it. Only with a group signal and wake_fd >= 0 */
        bool settle;
        int wake_fd;
        /* With settle: the tree as the caller listed it just before this call (gr_tree_list,
         * sorted by PID), or NULL and gr_tree_end lists it itself before the group's signal.
         * Whether a member had the group's SIGTERM is judged by its group then: one that left
         * the group or joined it while the tree was left to end by itself is judged by where it
         * was at the signal (listed only after it, a member is in the group it is in then) */
        const gr_tree_proc *before;
        size_t n_before;
} gr_tree_end_options;

typedef struct gr_tree_end_result {
        bool group_termed;           /* the group had its SIGTERM */
        unsigned group_ended;        /* its members that ended before the first listing (zombies
                                        in it, or reaped by the settle) */
        unsigned ended;              /* the tree's processes that ended once the end began, each
                                        once: reaped here, signalled by the ladder, or alive at
                                        the listing before the group's signal and gone since */
        unsigned n_left;             /* with false: the members still alive at the end */
        pid_t left[8];               /* the first of them */
} gr_tree_end_result;

/* true once nothing of the tree is left; false after 1000 rounds of SIGKILL with something
 * still there (a member in state D the kernel does not let go) */
bool gr_tree_end(const gr_tree_end_options *o, gr_tree_end_result *ret);

#pragma GCC visibility pop

#endif
