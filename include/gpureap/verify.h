/* gpureap verify: after the signals, until the driver has given the memory back and a look says
 * the GPUs are free of leftovers. The drain watch (gr_drain_*, gpureap/gpu.h) sees the memory
 * fall within 0.2 ms; the wait loop below confirms with whole looks (a snapshot, a diagnosis). */
#ifndef GPUREAP_VERIFY_H
#define GPUREAP_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpureap/act.h"
#include "gpureap/diagnose.h"
#include "gpureap/snapshot.h"

#pragma GCC visibility push(default)

/* The wait loop: take a snapshot, diagnose it, test a condition; if it does not hold, sleep
 * until a holder exits (pidfds) or a backoff delay passes (never a fixed sleep), and look again
 * until the timeout. A driver that cannot be read ends the wait at once (waiting does not make
 * it answer). The last look is returned, met or not. */
typedef bool (*gr_wait_cond_fn)(const gr_snapshot *s, const gr_diagnosis *d, void *userdata);
typedef void (*gr_wait_progress_fn)(const gr_snapshot *s, const gr_diagnosis *d, uint64_t elapsed_ms,
                                    void *userdata);
typedef struct gr_wait_options {
        const gr_snapshot_options *so;
        uint64_t timeout_ms;          /* 0: one look. Otherwise each look's driver read is
                                         abandoned at the wait's end, or 1 s (twice the last
                                         look's time, where longer) after it began where it
                                         began then (so->gpu.deadline_ms where sooner) */
        gr_wait_progress_fn progress; /* each look that does not end the wait; may be NULL */
        /* each look, where the caller has a view of its own (serve's memory joined); NULL:
         * gr_snapshot_take(so). 0 or -errno */
        int (*take)(const gr_snapshot_options *so, gr_snapshot **ret, void *userdata);
        void *take_userdata;
        /* each look's diagnosis narrowed to this scope (gr_diagnosis_narrow): the condition sees
         * the scope's findings and states; NULL: the whole machine's */
        const gr_scope *scope;
        /* a look without NVML (no library) that has AMD or Intel GPUs (gr_snapshot.drm) is read,
         * and the condition decides; false: every look without NVML ends the wait at once */
        bool drm;
} gr_wait_options;
int gr_wait_until(const gr_wait_options *w, gr_wait_cond_fn cond, void *userdata, gr_snapshot **ret_s,
                  gr_diagnosis **ret_d, bool *ret_met);

/* What each GPU of the plan uses once drained (targets[i], GPU index i; GR_UNKNOWN_U64 for a
 * GPU the plan does not drain): the diagnosis's allowance (the slack a clean GPU shows) plus
 * what the live holders that the plan leaves alone use */
void gr_drain_targets(const gr_snapshot *s, const gr_diagnosis *d, const gr_plan *plan, uint64_t *targets,
                      size_t n);

/* Are these GPUs (bit i: index i) free of leftovers: clean, or busy with holders that were not
 * to be touched? *ret_unknown set when one of them cannot be read (then true: nothing to wait
 * for, and nothing verified) */
bool gr_gpus_free_of_leftovers(const gr_snapshot *s, const gr_diagnosis *d, uint64_t gpus, bool *ret_unknown);

/* Are these AMD and Intel GPUs of the snapshot (bit i: s->drm->gpus[i]; UINT64_MAX every one)
 * clean (no DRM client, no KFD ghost)? true where the snapshot has none; with busy_ok, a GPU with
 * live or unsure clients only counts as free too */
bool gr_drm_gpus_free(const gr_snapshot *s, const gr_diagnosis *d, uint64_t gpus, bool busy_ok);

/* The device's own count of used VRAM (amdgpu's mem_info_vram_used) back, on each GPU where
 * one of the ended clients was or where KFD counted VRAM of one of kfd_pids at the look
 * before: down from before's by what the ended clients held alone, or by those PIDs' KFD VRAM
 * where that is more (the two count the same memory), less what the clients still there have
 * grown by since, within 64 MiB. The count is relative, so the unknown clean baseline does not
 * matter; where the driver keeps no count (i915, xe), true */
bool gr_drm_usage_back(const gr_snapshot *before, const gr_snapshot *s, const gr_drm_key *ended, size_t n_ended,
                       const pid_t *kfd_pids, size_t n_kfd_pids);

#pragma GCC visibility pop

#endif
