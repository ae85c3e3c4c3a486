/* gpureap reap: the whole cycle in one call. See (a snapshot), judge (the diagnosis), plan (the
 * safety rules), act (the signal ladder, following what the targets fork), verify (the drain
 * watch, then looks until the GPUs are free of leftovers). Every face that ends processes uses
 * it: 'gpureap reap', the Slurm epilog, serve's policy. It writes nothing: the caller renders
 * the result (and its audit trail) from the facts it is handed. */
#ifndef GPUREAP_REAP_H
#define GPUREAP_REAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpureap/act.h"
#include "gpureap/diagnose.h"
#include "gpureap/snapshot.h"
#include "gpureap/verify.h"

#pragma GCC visibility push(default)

/* ---- following forks (lib/act/follow.c): the ladder's refresh while a plan is carried out ---- */
typedef struct gr_follow gr_follow;
/* After the plan, before its first signal. events_fd: the kernel's process events opened before
 * the snapshot (gr_procev_open), or -1 for the rules without them */
int gr_follow_new(const gr_snapshot *s, const gr_plan *plan, const gr_plan_options *po, int events_fd,
                  gr_follow **ret);
void gr_follow_refresh(gr_ladder *l, void *follow); /* a gr_kill_options.refresh */
void gr_follow_free(gr_follow *f);

/* ---- the cycle (lib/act/reap.c) ---- */
typedef enum gr_reap_status {
        GR_REAP_VERIFIED,   /* every target ended, and the GPUs are free of leftovers */
        GR_REAP_NOT_CLEAN,  /* a target may still be alive, or a GPU is not clean by the deadline */
        GR_REAP_DRIVER,     /* the driver cannot be read (or a GPU): nothing verified */
        GR_REAP_BLIND,      /* the driver cannot be read: the named processes were ended anyway,
                               each verified as ever; their GPUs were not */
        GR_REAP_PLANNED,    /* options.dry: the plan only, and the review agreed */
        GR_REAP_DECLINED,   /* the review said no: nothing signalled */
        GR_REAP_FAILED,     /* error and stage say what could not be done */
} gr_reap_status;

typedef enum gr_reap_stage {
        GR_REAP_AT_LOOK,    /* the first snapshot */
        GR_REAP_AT_PLAN,    /* the diagnosis or the plan */
        GR_REAP_AT_SIGNAL,  /* the ladder */
        GR_REAP_AT_VERIFY,  /* a look of the verify */
} gr_reap_stage;

typedef struct gr_reap_outcome {
        pid_t pid;
        uint64_t start_time;
        char comm[GR_COMM_MAX];
        gr_kill_result result;
        int error;          /* -errno with GR_KILL_ERROR and GR_KILL_DENIED */
        bool forked;        /* not in the plan: forked by a target while the ladder ran */
} gr_reap_outcome;

typedef struct gr_reap_result gr_reap_result;

typedef struct gr_reap_options {
        const gr_snapshot_options *so; /* every look: the first (unless take) and the verify's */
        const gr_plan_options *po;
        uint64_t grace_ms;             /* between SIGTERM and SIGKILL (cut to fit the deadline) */
        uint64_t deadline_ms;          /* on gr_now_ms()'s clock: bounds the signals, the drain and
                                          the verify (the first look is never cut short) */
        uid_t uid;                     /* whose view the diagnosis takes (getuid()) */
        bool dry;                      /* plan, review, stop */
        bool follow_events;            /* follow forks by the kernel's process events where they
                                          name what /proc shows (root, the initial PID namespace) */
        /* the first look, where the caller has a view of its own (serve's memory joined); NULL:
         * gr_snapshot_take(so). 0 or -errno */
        int (*take)(const gr_snapshot_options *so, gr_snapshot **ret, void *userdata);
        /* after the plan, before any signal (with dry too): false declines (no consent, a
         * selection the caller refuses). NULL: go */
        bool (*review)(const gr_snapshot *s, const gr_diagnosis *d, const gr_plan *p, void *userdata);
        /* once the ladder is done, before the drain wait and the verify: the outcomes are in r.
         * NULL: nothing */
        void (*acted)(const gr_reap_result *r, void *userdata);
        gr_wait_progress_fn progress;  /* each look of the verify that does not end it; its
                                          userdata is the gr_reap_result being filled */
        void *userdata;
} gr_reap_options;

struct gr_reap_result {
        gr_reap_status status;
        int error;                     /* GR_REAP_FAILED: -errno, at stage */
        gr_reap_stage stage;
        gr_snapshot *before;           /* the first look: what was judged and planned */
        gr_diagnosis *before_d;        /* NULL where the driver could not be read at all */
        gr_plan *plan;
        size_t n_signalled;            /* targets the plan signals (gr_plan_count) */
        uint64_t mem_before[GR_GPUS_MAX]; /* each GPU's used memory at the first look */
        gr_reap_outcome *outcomes;     /* one per process the ladder had, forks included */
        size_t n_outcomes;
        bool all_ended;                /* no outcome that may have left its process alive */
        bool drain_watched, drained;   /* the drain watch was armed; it saw every GPU drained */
        uint64_t drain_us;             /* from the first signal to the memory back (drained) */
        uint64_t gpus;                 /* bit i: GPU index i verified (--gpu, else the targets',
                                          else every selected one) */
        bool drm_only;                 /* no NVIDIA driver, AMD or Intel GPUs (docs/drm.md): theirs
                                          were reaped and verified (the plan's drm_clients gone) */
        const char *drm_gpus;          /* --gpu: the AMD and Intel GPUs it names (by PCI
                                          address) are looked at where nothing was signalled */
        gr_snapshot *after;            /* the verify's last look, and its diagnosis */
        gr_diagnosis *after_d;
        bool met;                      /* the GPUs were free of leftovers at that look */
        bool unknown;                  /* one of them could not be read */
};

int gr_reap(const gr_reap_options *o, gr_reap_result *ret);
void gr_reap_result_release(gr_reap_result *r);
const char *gr_reap_status_name(gr_reap_status s);

#pragma GCC visibility pop

#endif
