/* The diagnosis on snapshots: built here case by case (each with a negative control: the same
 * snapshot without the defect gives no such finding), and recorded on an H200 (replayed). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gpureap/basic.h"
#include "gpureap/diagnose.h"

/* from src/snapshot-json.c */
int snapshot_from_json(const char *path, gr_snapshot **ret, char *err, size_t err_size);

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

static gr_snapshot *snap_new(unsigned n_gpus)
{
        gr_snapshot *s = calloc(1, sizeof(*s));
        s->gpu = calloc(1, sizeof(*s->gpu));
        s->procs = calloc(1, sizeof(*s->procs));
        s->procs->cap = 64;
        s->procs->procs = calloc(64, sizeof(gr_process));
        s->gpu->n_gpus = n_gpus;
        s->gpu->gpus = calloc(n_gpus, sizeof(gr_gpu));
        for (unsigned i = 0; i < n_gpus; i++) {
                gr_gpu *g = &s->gpu->gpus[i];
                g->index = i;
                g->minor = (int)i;
                g->mem_api = 2;
                g->mem_total = 140 * GIB;
                g->mem_reserved = 615 * MIB;
                g->mem_used = 0;
                g->mem_free = g->mem_total - g->mem_reserved;
                g->procs_ok = true;
                g->procs = calloc(16, sizeof(gr_gpu_proc));
        }
        snprintf(s->dev_dir, sizeof(s->dev_dir), "/dev");
        return s;
}

static void owner(gr_snapshot *s, unsigned gpu, pid_t pid, uint64_t bytes)
{
        gr_gpu *g = &s->gpu->gpus[gpu];
        g->procs[g->n_procs++] = (gr_gpu_proc){ .pid = (uint32_t)pid, .kind = GR_CTX_COMPUTE, .used_bytes = bytes };
        g->mem_used += bytes;
}

static void stale(gr_snapshot *s, unsigned gpu, uint64_t bytes)
{
        s->gpu->gpus[gpu].mem_used += bytes;
}

static gr_process *proc(gr_snapshot *s, pid_t pid, pid_t ppid, pid_t pgrp, pid_t sid, char state,
                        const char *comm)
{
        gr_process *p = &s->procs->procs[s->procs->n++];
        p->pid = pid;
        p->ppid = ppid;
        p->pgrp = pgrp;
        p->session = sid;
        p->state = state;
        p->has_uid = true;
        p->uid = 0;
        p->nspid[0] = pid;
        p->n_nspid = 1;
        p->has_details = true;
        snprintf(p->comm, sizeof(p->comm), "%s", comm);
        return p;
}

static void hold(gr_process *p, unsigned minor, unsigned gpu_fds, unsigned maps)
{
        p->hold = calloc(1, sizeof(gr_holding));
        p->hold->n_gpus = 1;
        p->hold->gpus[0].minor = minor;
        p->hold->gpus[0].n_fds = gpu_fds;
        p->hold->n_ctl = 2;
        p->hold->n_uvm = gpu_fds > 10 ? 4 : 2;
        p->hold->n_fds = gpu_fds + p->hold->n_ctl + p->hold->n_uvm;
        p->hold->n_maps = maps;
        p->hold->maps_read = gpu_fds < 10; /* as the scan does */
}

/* as measured on the H200: a CUDA process or its forked child; nvidia-smi -l */
static void hold_cuda(gr_process *p, unsigned minor) { hold(p, minor, 23, 30); }
static void hold_monitor(gr_process *p, unsigned minor) { hold(p, minor, 4, 1); }

static int cmp(const void *a, const void *b)
{
        return ((const gr_process *)a)->pid - ((const gr_process *)b)->pid;
}

static gr_diagnosis *diagnose(gr_snapshot *s)
{
        qsort(s->procs->procs, s->procs->n, sizeof(gr_process), cmp);
        s->procs->n_holders = 0;
        for (size_t i = 0; i < s->procs->n; i++)
                s->procs->n_holders += s->procs->procs[i].hold != NULL;
        gr_diagnosis *d = NULL;
        assert_int_equal(gr_diagnose(s, 0, &d), 0);
        return d;
}

static const gr_finding *finding(const gr_diagnosis *d, gr_finding_kind k)
{
        for (size_t i = 0; i < d->n_findings; i++)
                if (d->findings[i].kind == k)
                        return &d->findings[i];
        return NULL;
}

static unsigned count(const gr_diagnosis *d, gr_finding_kind k)
{
        unsigned n = 0;
        for (size_t i = 0; i < d->n_findings; i++)
                n += d->findings[i].kind == k;
        return n;
}

static bool has_pid(const gr_finding *f, pid_t pid)
{
        for (unsigned i = 0; f && i < f->n_pids; i++)
                if (f->pids[i] == pid)
                        return true;
        return false;
}

/* a shell session that started things: 10 is the session leader, 1 is init */
static void base_tree(gr_snapshot *s)
{
        proc(s, 1, 0, 1, 1, 'S', "systemd");
        proc(s, 10, 1, 10, 10, 'S', "bash");
}

static void clean_gpu(void **state)
{
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_CLEAN);
        assert_int_equal(d->n_findings, 0);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void busy_owner_with_live_launcher(void **state)
{
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        proc(s, 20, 10, 20, 10, 'S', "python3");
        hold_cuda(proc(s, 21, 20, 20, 10, 'S', "python3"), 0);
        owner(s, 0, 21, 20 * GIB);
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
        const gr_finding *f = finding(d, GR_FIND_BUSY);
        assert_non_null(f);
        assert_false(f->leftover);
        assert_true(has_pid(f, 21));
        assert_int_equal(f->memory, 20 * GIB);
        assert_int_equal(gr_diagnosis_holder(d, 21)->role, GR_ROLE_OWNER);
        assert_int_equal(gr_diagnosis_holder(d, 21)->conditions & GR_COND_ORPHAN, 0);
        assert_int_equal(d->gpus[0].unaccounted, 0);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static gr_snapshot *ghost_snapshot(bool with_defect)
{
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        if (with_defect) {
                /* 30 was the owner, led its group, died; 31 is its forked child */
                hold_cuda(proc(s, 31, 1, 30, 10, 'S', "python3"), 0);
                owner(s, 0, 30, 2 * GIB);
        }
        return s;
}

static void ghost_with_hidden_holder(void **state)
{
        gr_snapshot *s = ghost_snapshot(true);
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_DIRTY);
        const gr_finding *f = finding(d, GR_FIND_GHOST);
        assert_non_null(f);
        assert_true(f->leftover);
        assert_int_equal(f->related, 30);
        assert_int_equal(f->n_pids, 1);
        assert_true(has_pid(f, 31));
        assert_int_equal(f->confidence, GR_SURE);
        assert_int_equal(f->memory, 2 * GIB);
        assert_string_equal(f->next_step, "gpureap reap --gpu 0 --pid 31");
        assert_non_null(strstr(f->explanation, "PID 30"));
        const gr_holder_verdict *v = gr_diagnosis_holder(d, 31);
        assert_int_equal(v->role, GR_ROLE_HIDDEN_HOLDER);
        assert_int_equal(v->ghost, 30);
        assert_true(v->conditions & GR_COND_ORPHAN);
        assert_int_equal(count(d, GR_FIND_ORPHAN), 0); /* said once, in the ghost finding */
        assert_int_equal(d->gpus[0].unaccounted, 2 * GIB);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        s = ghost_snapshot(false);
        d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_CLEAN);
        assert_null(finding(d, GR_FIND_GHOST));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void two_ghosts_told_apart_by_lineage(void **state)
{
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        hold_cuda(proc(s, 41, 1, 40, 10, 'S', "python3"), 0);
        hold_cuda(proc(s, 51, 1, 50, 10, 'S', "python3"), 0);
        owner(s, 0, 40, 1 * GIB);
        owner(s, 0, 50, 3 * GIB);
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(count(d, GR_FIND_GHOST), 2);
        for (size_t i = 0; i < d->n_findings; i++) {
                const gr_finding *f = &d->findings[i];
                if (f->kind != GR_FIND_GHOST)
                        continue;
                assert_int_equal(f->n_pids, 1);
                assert_int_equal(f->pids[0], f->related + 1);
                assert_int_equal(f->confidence, GR_LIKELY);
        }
        assert_int_equal(gr_diagnosis_holder(d, 41)->ghost, 40);
        assert_int_equal(gr_diagnosis_holder(d, 51)->ghost, 50);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void two_ghosts_ambiguous(void **state)
{
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        /* both children made themselves leaders: nothing ties them to either ghost */
        hold_cuda(proc(s, 61, 1, 61, 10, 'S', "python3"), 0);
        hold_cuda(proc(s, 71, 1, 71, 10, 'S', "python3"), 0);
        owner(s, 0, 60, 1 * GIB);
        owner(s, 0, 70, 3 * GIB);
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_DIRTY);
        assert_int_equal(count(d, GR_FIND_GHOST), 2);
        for (size_t i = 0; i < d->n_findings; i++) {
                const gr_finding *f = &d->findings[i];
                if (f->kind != GR_FIND_GHOST)
                        continue;
                assert_int_equal(f->confidence, GR_AMBIGUOUS);
                assert_true(has_pid(f, 61) && has_pid(f, 71));
                assert_non_null(strstr(f->explanation, "ambiguous"));
        }
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* negative control: one ghost and its one holder is sure */
        s = snap_new(1);
        base_tree(s);
        hold_cuda(proc(s, 61, 1, 61, 10, 'S', "python3"), 0);
        owner(s, 0, 60, 1 * GIB);
        d = diagnose(s);
        assert_int_equal(finding(d, GR_FIND_GHOST)->confidence, GR_SURE);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static gr_snapshot *workers_snapshot(bool launcher_alive)
{
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        pid_t parent = 1;
        if (launcher_alive) {
                proc(s, 80, 10, 80, 10, 'S', "launch_server");
                parent = 80;
        }
        for (pid_t w = 81; w <= 84; w++) {
                /* worker 81 double-forked: reparented even while the launcher lives */
                hold_cuda(proc(s, w, w == 81 ? 1 : parent, 80, 10, 'S', "scheduler"), 0);
                owner(s, 0, w, 16 * GIB);
        }
        return s;
}

static void orphaned_workers(void **state)
{
        gr_snapshot *s = workers_snapshot(false);
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_DIRTY);
        assert_int_equal(count(d, GR_FIND_ORPHAN), 1);
        const gr_finding *f = finding(d, GR_FIND_ORPHAN);
        assert_int_equal(f->n_pids, 4);
        assert_int_equal(f->related, 80);
        assert_int_equal(f->memory, 64 * GIB);
        assert_string_equal(f->next_step, "gpureap reap --gpu 0 --pid 81,82,83,84");
        assert_null(finding(d, GR_FIND_BUSY));
        for (pid_t w = 81; w <= 84; w++) {
                assert_int_equal(gr_diagnosis_holder(d, w)->launcher, 80);
                assert_false(gr_diagnosis_holder(d, w)->launcher_alive);
        }
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* negative control: the launcher is alive. The double-forked worker 81 was reparented,
         * but its group still runs (82-84 are the launcher's children): busy, no orphan */
        s = workers_snapshot(true);
        d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
        assert_true(has_pid(finding(d, GR_FIND_BUSY), 81));
        assert_null(finding(d, GR_FIND_ORPHAN));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void service_daemon_is_not_an_orphan(void **state)
{
        /* a systemd service: ppid 1, its own session and group leader */
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        hold_cuda(proc(s, 90, 1, 90, 90, 'S', "vllm"), 0);
        owner(s, 0, 90, 70 * GIB);
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
        assert_int_equal(gr_diagnosis_holder(d, 90)->conditions & GR_COND_ORPHAN, 0);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void zombie_owner_names_its_parent(void **state)
{
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        proc(s, 99, 10, 99, 10, 'S', "runner");
        proc(s, 100, 99, 99, 10, 'Z', "python3");
        hold_cuda(proc(s, 101, 1, 99, 10, 'S', "python3"), 0);
        owner(s, 0, 100, 512 * MIB);
        gr_diagnosis *d = diagnose(s);
        const gr_finding *z = finding(d, GR_FIND_ZOMBIE);
        assert_non_null(z);
        assert_int_equal(z->related, 99);
        assert_true(has_pid(z, 100));
        assert_non_null(strstr(z->explanation, "99 (runner)"));
        assert_false(z->leftover);
        const gr_finding *g = finding(d, GR_FIND_GHOST);
        assert_non_null(g);
        assert_true(has_pid(g, 101)); /* tied by the zombie's process group */
        assert_int_equal(d->gpus[0].state, GR_GPU_DIRTY);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* negative control: the owner alive is no zombie */
        s = snap_new(1);
        base_tree(s);
        proc(s, 99, 10, 99, 10, 'S', "runner");
        hold_cuda(proc(s, 100, 99, 99, 10, 'S', "python3"), 0);
        owner(s, 0, 100, 512 * MIB);
        d = diagnose(s);
        assert_null(finding(d, GR_FIND_ZOMBIE));
        assert_null(finding(d, GR_FIND_GHOST));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void stopped_and_uninterruptible(void **state)
{
        for (int defect = 1; defect >= 0; defect--) {
                gr_snapshot *s = snap_new(1);
                base_tree(s);
                hold_cuda(proc(s, 110, 10, 110, 10, defect ? 'T' : 'S', "train"), 0);
                owner(s, 0, 110, GIB);
                hold_cuda(proc(s, 120, 10, 120, 10, defect ? 'D' : 'S', "train"), 0);
                owner(s, 0, 120, GIB);
                gr_diagnosis *d = diagnose(s);
                const gr_finding *t = finding(d, GR_FIND_STOPPED);
                const gr_finding *u = finding(d, GR_FIND_UNINTERRUPTIBLE);
                if (defect) {
                        assert_true(has_pid(t, 110));
                        assert_non_null(strstr(t->next_step, "kill -CONT 110"));
                        assert_true(has_pid(u, 120));
                        assert_non_null(strstr(u->next_step, "reboot required"));
                        assert_int_equal(d->gpus[0].state, GR_GPU_DIRTY);
                } else {
                        assert_null(t);
                        assert_null(u);
                        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
                }
                gr_diagnosis_free(d);
                gr_snapshot_free(s);
        }
}

static void foreign_namespace_user_and_job(void **state)
{
        for (int defect = 1; defect >= 0; defect--) {
                gr_snapshot *s = snap_new(1);
                base_tree(s);
                gr_process *p = proc(s, 130, 10, 130, 10, 'S', "python3");
                hold_cuda(p, 0);
                owner(s, 0, 130, GIB);
                if (defect) {
                        p->nspid[1] = 7;
                        p->n_nspid = 2;
                        p->uid = 1234;
                        p->cgroup = strdup("/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0/"
                                           "cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef.scope");
                }
                gr_diagnosis *d = diagnose(s);
                const gr_finding *f = finding(d, GR_FIND_FOREIGN);
                if (defect) {
                        assert_non_null(f);
                        assert_non_null(strstr(f->explanation, "as PID 7"));
                        assert_non_null(strstr(f->explanation, "container 0123456789ab"));
                        assert_non_null(strstr(f->explanation, "Slurm job 4242"));
                        assert_non_null(strstr(f->explanation, "uid 1234"));
                        const gr_holder_verdict *v = gr_diagnosis_holder(d, 130);
                        assert_true(v->conditions & GR_COND_OTHER_NS);
                        assert_true(v->conditions & GR_COND_OTHER_USER);
                } else {
                        assert_null(f);
                }
                gr_diagnosis_free(d);
                gr_snapshot_free(s);
        }
}

static void monitor_is_never_a_leftover(void **state)
{
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        hold_monitor(proc(s, 140, 1, 140, 140, 'S', "nv-hostengine"), 0);
        hold_monitor(proc(s, 141, 10, 141, 10, 'S', "nvidia-smi"), 0);
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_CLEAN);
        const gr_finding *f = finding(d, GR_FIND_MONITOR);
        assert_non_null(f);
        assert_false(f->leftover);
        assert_true(has_pid(f, 140) && has_pid(f, 141));
        assert_int_equal(gr_diagnosis_holder(d, 141)->role, GR_ROLE_MONITOR);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void spoofed_monitor_name_does_not_hide_a_cuda_holder(void **state)
{
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        hold_cuda(proc(s, 150, 1, 150, 10, 'S', "nvidia-smi"), 0);
        stale(s, 0, 4 * GIB);
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(gr_diagnosis_holder(d, 150)->role, GR_ROLE_HIDDEN_HOLDER);
        const gr_finding *f = finding(d, GR_FIND_GHOST);
        assert_non_null(f);
        assert_true(has_pid(f, 150));
        assert_int_equal(f->memory, 4 * GIB);
        assert_null(finding(d, GR_FIND_MONITOR));
        assert_int_equal(d->gpus[0].state, GR_GPU_DIRTY);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void stale_and_teardown(void **state)
{
        gr_snapshot *s = snap_new(2);
        base_tree(s);
        stale(s, 0, 76 * GIB);  /* the first seed: memory and nobody */
        owner(s, 1, 160, GIB);  /* a dead owner, nothing holds: being torn down */
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_STALE);
        assert_int_equal(d->gpus[1].state, GR_GPU_STALE);
        const gr_finding *f = finding(d, GR_FIND_STALE);
        assert_int_equal(f->gpu, 0);
        assert_int_equal(f->memory, 76 * GIB);
        assert_non_null(strstr(f->next_step, "gpureap status --gpu 0"));
        const gr_finding *t = finding(d, GR_FIND_TEARDOWN);
        assert_int_equal(t->gpu, 1);
        assert_int_equal(t->related, 160);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* negative control: memory within the slack is baseline */
        s = snap_new(1);
        base_tree(s);
        stale(s, 0, GR_BASELINE_SLACK);
        d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_CLEAN);
        assert_null(finding(d, GR_FIND_STALE));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void unknown_when_the_driver_failed(void **state)
{
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        s->gpu->gpus[0].procs_ok = false;
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_UNKNOWN);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void listening_leftover(void **state)
{
        gr_snapshot *s = workers_snapshot(false);
        gr_process *p = gr_proc_table_find(s->procs, 82);
        p->hold->listen_ports[0] = 8000;
        p->hold->n_listen = 1;
        gr_diagnosis *d = diagnose(s);
        assert_true(gr_diagnosis_holder(d, 82)->conditions & GR_COND_LISTENING);
        assert_false(gr_diagnosis_holder(d, 83)->conditions & GR_COND_LISTENING);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static char fixtures[1024];

static const char *recording = "h200-2026-12-02";

static gr_diagnosis *replay(const char *name, gr_snapshot **ret)
{
        char path[1200], err[256];
        snprintf(path, sizeof(path), "%s/%s/%s", fixtures, recording, name);
        assert_int_equal(snapshot_from_json(path, ret, err, sizeof(err)), 0);
        gr_diagnosis *d = NULL;
        assert_int_equal(gr_diagnose(*ret, 0, &d), 0);
        return d;
}

static void recorded_h200_ghost(void **state)
{
        gr_snapshot *s;
        gr_diagnosis *d = replay("ghost.json", &s);
        assert_int_equal(d->gpus[0].state, GR_GPU_DIRTY);
        const gr_finding *f = finding(d, GR_FIND_GHOST);
        assert_int_equal(f->related, 445);
        assert_int_equal(f->n_pids, 1);
        assert_true(has_pid(f, 555));
        assert_int_equal(f->confidence, GR_SURE);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        d = replay("monitor.json", &s); /* the ghost, with nvidia-smi -l beside it */
        assert_true(has_pid(finding(d, GR_FIND_MONITOR), 583));
        assert_int_equal(gr_diagnosis_holder(d, 583)->role, GR_ROLE_MONITOR);
        assert_false(has_pid(finding(d, GR_FIND_GHOST), 583));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        d = replay("live.json", &s); /* before the owner was killed: busy, no ghost */
        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
        assert_null(finding(d, GR_FIND_GHOST));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void recorded_h200_orphans(void **state)
{
        gr_snapshot *s;
        gr_diagnosis *d = replay("orphans.json", &s);
        assert_int_equal(d->gpus[0].state, GR_GPU_DIRTY);
        const gr_finding *f = finding(d, GR_FIND_ORPHAN);
        assert_int_equal(f->n_pids, 4);
        for (pid_t w = 622; w <= 625; w++)
                assert_true(has_pid(f, w));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        d = replay("running.json", &s); /* the same workers before the launcher was killed */
        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
        assert_null(finding(d, GR_FIND_ORPHAN)); /* worker0 double-forked, its group runs */
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

/* schema 2 recordings, with lineage: the same verdicts without leaning on partial tables */
static void recorded_h200_with_lineage(void **state)
{
        recording = "h200-2026-12-02-v2";
        gr_snapshot *s;
        gr_diagnosis *d = replay("monitor.json", &s);
        assert_false(s->procs_partial);
        const gr_finding *f = finding(d, GR_FIND_GHOST);
        assert_int_equal(f->related, 432);
        assert_int_equal(f->n_pids, 1);
        assert_true(has_pid(f, 547));
        assert_int_equal(f->confidence, GR_SURE);
        assert_int_equal(gr_diagnosis_holder(d, 598)->role, GR_ROLE_MONITOR);
        assert_true(has_pid(finding(d, GR_FIND_MONITOR), 598));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        d = replay("orphans.json", &s);
        f = finding(d, GR_FIND_ORPHAN);
        assert_int_equal(f->n_pids, 4);
        for (pid_t w = 669; w <= 672; w++)
                assert_true(has_pid(f, w));
        assert_int_equal(d->gpus[0].state, GR_GPU_DIRTY);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        d = replay("running.json", &s);
        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
        assert_null(finding(d, GR_FIND_ORPHAN));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        recording = "h200-2026-12-02";
}

int main(void)
{
        const char *f = getenv("FIXTURES");
        snprintf(fixtures, sizeof(fixtures), "%s", f ? f : "tests/fixtures");
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(clean_gpu),
                cmocka_unit_test(busy_owner_with_live_launcher),
                cmocka_unit_test(ghost_with_hidden_holder),
                cmocka_unit_test(two_ghosts_told_apart_by_lineage),
                cmocka_unit_test(two_ghosts_ambiguous),
                cmocka_unit_test(orphaned_workers),
                cmocka_unit_test(service_daemon_is_not_an_orphan),
                cmocka_unit_test(zombie_owner_names_its_parent),
                cmocka_unit_test(stopped_and_uninterruptible),
                cmocka_unit_test(foreign_namespace_user_and_job),
                cmocka_unit_test(monitor_is_never_a_leftover),
                cmocka_unit_test(spoofed_monitor_name_does_not_hide_a_cuda_holder),
                cmocka_unit_test(stale_and_teardown),
                cmocka_unit_test(unknown_when_the_driver_failed),
                cmocka_unit_test(listening_leftover),
                cmocka_unit_test(recorded_h200_ghost),
                cmocka_unit_test(recorded_h200_orphans),
                cmocka_unit_test(recorded_h200_with_lineage),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
