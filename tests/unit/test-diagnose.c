/* The diagnosis on snapshots: built here case by case (each with a negative control: the same
 * snapshot without the defect gives no such finding), and recorded on an H200 (replayed). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gpureap/act.h"
#include "gpureap/basic.h"
#include "gpureap/diagnose.h"
#include "gpureap.h" /* src/words.c: the findings in words */

/* from src/snapshot-json.c */
int snapshot_from_json(const char *path, gr_snapshot **ret, char *err, size_t err_size);

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

/* A finding in words, as the faces write them (src/words.c): the diagnosis hands facts */
static const struct finding_words *words_of(const gr_snapshot *s, const gr_diagnosis *d, const gr_finding *f)
{
        static struct finding_words ring[4];
        static unsigned next;
        struct finding_words *w = &ring[next++ % 4];
        finding_words(s, d, f, w);
        return w;
}
#define W(f) words_of(s, d, (f))

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
        s->pidns = GR_PIDNS_HOST;
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
        p->tpgid = -1;
        p->env = (gr_env_marks){ .local_rank = -1, .rank = -1, .group_rank = -1 };
        snprintf(p->comm, sizeof(p->comm), "%s", comm);
        return p;
}

static void cmdline(gr_process *p, const char *cmd)
{
        free(p->cmdline);
        p->cmdline = strdup(cmd);
}

/* listening on port with a socket of this inode (shared inodes model an inherited socket) */
static void listen_on(gr_process *p, uint16_t port, uint64_t inode)
{
        if (!p->net)
                p->net = calloc(1, sizeof(gr_net));
        p->net->listen_ports[p->net->n_listen] = port;
        p->net->listen_inodes[p->net->n_listen++] = inode;
}

static void torchelastic(gr_process *p, const char *run_id, int local_rank)
{
        p->env_read = true;
        snprintf(p->env.torchelastic_run_id, sizeof(p->env.torchelastic_run_id), "%s", run_id);
        p->env.local_rank = local_rank;
        p->env.rank = local_rank;
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
        assert_int_equal(gr_diagnosis_holder(d, 21)->judgement, GR_JUDGE_LIVE);
        assert_int_equal(gr_diagnosis_holder(d, 21)->confidence, GR_SURE);
        assert_non_null(strstr(gr_diagnosis_holder(d, 21)->reason, "parent 20 (python3) is alive"));
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
        assert_string_equal(W(f)->next_step, "gpureap reap --gpu 0 --pid 31");
        assert_non_null(strstr(W(f)->explanation, "PID 30"));
        const gr_holder_verdict *v = gr_diagnosis_holder(d, 31);
        assert_int_equal(v->role, GR_ROLE_HIDDEN_HOLDER);
        assert_int_equal(v->ghost, 30);
        assert_int_equal(v->judgement, GR_JUDGE_LEFTOVER);
        assert_int_equal(v->confidence, GR_SURE);
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
                assert_int_equal(f->confidence, GR_UNSURE);
                assert_true(has_pid(f, 61) && has_pid(f, 71));
                assert_non_null(strstr(W(f)->explanation, "unsure"));
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

static gr_snapshot *workers_snapshot(bool launcher_alive, const char *worker_cmdline)
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
                gr_process *p = proc(s, w, w == 81 ? 1 : parent, 80, 10, 'S', "scheduler");
                if (worker_cmdline)
                        cmdline(p, worker_cmdline);
                hold_cuda(p, 0);
                owner(s, 0, w, 16 * GIB);
        }
        return s;
}

static const char *spawn_cmdline =
        "python3 -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=6, pipe_handle=8) --multiprocessing-fork";

static void orphaned_workers(void **state)
{
        /* the launcher that led their group is gone: likely leftovers, by lineage alone */
        gr_snapshot *s = workers_snapshot(false, NULL);
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_DIRTY);
        assert_int_equal(count(d, GR_FIND_ORPHAN), 1);
        const gr_finding *f = finding(d, GR_FIND_ORPHAN);
        assert_int_equal(f->n_pids, 4);
        assert_int_equal(f->related, 80);
        assert_int_equal(f->memory, 64 * GIB);
        assert_int_equal(f->confidence, GR_LIKELY);
        assert_string_equal(W(f)->next_step, "gpureap reap --gpu 0 --pid 81,82,83,84");
        assert_null(finding(d, GR_FIND_BUSY));
        for (pid_t w = 81; w <= 84; w++) {
                const gr_holder_verdict *v = gr_diagnosis_holder(d, w);
                assert_int_equal(v->launcher, 80);
                assert_false(v->launcher_alive);
                assert_int_equal(v->judgement, GR_JUDGE_LEFTOVER);
                assert_int_equal(v->confidence, GR_LIKELY);
        }
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* the same with the marker of Python multiprocessing's spawned children: sure */
        s = workers_snapshot(false, spawn_cmdline);
        d = diagnose(s);
        f = finding(d, GR_FIND_ORPHAN);
        assert_int_equal(f->n_pids, 4);
        assert_int_equal(f->confidence, GR_SURE);
        assert_non_null(strstr(W(f)->reason, "multiprocessing spawn"));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* negative control: the launcher is alive. The double-forked worker 81 was reparented;
         * its group leader lives but is another program: unsure, never a leftover; the others
         * are the launcher's children: live */
        s = workers_snapshot(true, NULL);
        d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
        assert_true(has_pid(finding(d, GR_FIND_BUSY), 82));
        assert_true(has_pid(finding(d, GR_FIND_SUSPECT), 81));
        assert_null(finding(d, GR_FIND_ORPHAN));
        assert_int_equal(gr_diagnosis_holder(d, 81)->judgement, GR_JUDGE_UNSURE);
        for (pid_t w = 82; w <= 84; w++)
                assert_int_equal(gr_diagnosis_holder(d, w)->judgement, GR_JUDGE_LIVE);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void double_forked_by_a_live_launcher(void **state)
{
        /* every worker double-forked by a launcher that holds no GPU (issue 8): the leader of
         * their group is alive and of their kind */
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        proc(s, 200, 10, 200, 10, 'S', "python3");
        for (pid_t w = 201; w <= 202; w++) {
                hold_cuda(proc(s, w, 1, 200, 10, 'S', "python3"), 0);
                owner(s, 0, w, GIB);
        }
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
        assert_null(finding(d, GR_FIND_ORPHAN));
        for (pid_t w = 201; w <= 202; w++) {
                assert_int_equal(gr_diagnosis_holder(d, w)->judgement, GR_JUDGE_LIVE);
                assert_int_equal(gr_diagnosis_holder(d, w)->confidence, GR_LIKELY);
        }
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* negative control: the launcher is gone: likely leftovers */
        s = snap_new(1);
        base_tree(s);
        for (pid_t w = 201; w <= 202; w++) {
                hold_cuda(proc(s, w, 1, 200, 10, 'S', "python3"), 0);
                owner(s, 0, w, GIB);
        }
        d = diagnose(s);
        assert_int_equal(finding(d, GR_FIND_ORPHAN)->confidence, GR_LIKELY);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static gr_snapshot *torchrun_snapshot(bool agent_alive)
{
        /* torchrun: each worker in its own session (PGID = SID = PID), child of the agent,
         * which holds NVML files and no memory */
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        if (agent_alive)
                hold_monitor(proc(s, 300, 10, 300, 10, 'S', "torchrun"), 0);
        for (pid_t w = 301; w <= 302; w++) {
                gr_process *p = proc(s, w, agent_alive ? 300 : 1, w, w, 'S', "python3");
                cmdline(p, "/usr/bin/python3 -u train.py");
                torchelastic(p, "r1", w - 301);
                hold_cuda(p, 0);
                owner(s, 0, w, 2 * GIB);
        }
        return s;
}

static void torchrun_workers_of_a_dead_agent(void **state)
{
        gr_snapshot *s = torchrun_snapshot(false);
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_DIRTY);
        const gr_finding *f = finding(d, GR_FIND_ORPHAN);
        assert_non_null(f);
        assert_int_equal(count(d, GR_FIND_ORPHAN), 1); /* one job: the torchelastic run */
        assert_int_equal(f->n_pids, 2);
        assert_int_equal(f->confidence, GR_SURE);
        assert_non_null(strstr(W(f)->explanation, "torchelastic run r1"));
        assert_non_null(strstr(W(f)->reason, "torchelastic run r1, local rank 0"));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* negative control: the agent alive: live, sure */
        s = torchrun_snapshot(true);
        d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
        assert_null(finding(d, GR_FIND_ORPHAN));
        assert_int_equal(gr_diagnosis_holder(d, 301)->judgement, GR_JUDGE_LIVE);
        assert_int_equal(gr_diagnosis_holder(d, 301)->confidence, GR_SURE);
        assert_int_equal(gr_diagnosis_holder(d, 300)->role, GR_ROLE_MONITOR);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* every rank listens (NCCL's bootstrap): torchrun's own workers lead their sessions, and
         * stay sure leftovers */
        s = torchrun_snapshot(false);
        listen_on(gr_proc_table_find(s->procs, 301), 41234, 9001);
        d = diagnose(s);
        assert_int_equal(gr_diagnosis_holder(d, 301)->judgement, GR_JUDGE_LEFTOVER);
        assert_int_equal(gr_diagnosis_holder(d, 301)->confidence, GR_SURE);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* a server that a worker started (it inherited the environment, not the session),
         * listening on a port of its own: unsure */
        s = torchrun_snapshot(false);
        gr_process *srv = proc(s, 310, 1, 301, 301, 'S', "python3");
        torchelastic(srv, "r1", 0);
        listen_on(srv, 8000, 9002);
        hold_cuda(srv, 0);
        owner(s, 0, 310, GIB);
        d = diagnose(s);
        assert_int_equal(gr_diagnosis_holder(d, 310)->judgement, GR_JUDGE_UNSURE);
        assert_int_equal(gr_diagnosis_holder(d, 302)->judgement, GR_JUDGE_LEFTOVER);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void nohup_server_is_not_a_leftover(void **state)
{
        for (int listening = 1; listening >= 0; listening--) {
                /* 'nohup python3 server.py &' from a shell (session 400) that exited */
                gr_snapshot *s = snap_new(1);
                base_tree(s);
                gr_process *p = proc(s, 410, 1, 410, 400, 'S', "python3");
                p->sig_ignored = 1ULL << 0; /* SIGHUP */
                if (listening)
                        listen_on(p, 30000, 777);
                hold_cuda(p, 0);
                owner(s, 0, 410, 3 * GIB);
                gr_diagnosis *d = diagnose(s);
                const gr_holder_verdict *v = gr_diagnosis_holder(d, 410);
                assert_int_not_equal(v->judgement, GR_JUDGE_LEFTOVER);
                assert_null(finding(d, GR_FIND_ORPHAN));
                assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
                if (listening) {
                        assert_int_equal(v->judgement, GR_JUDGE_LIVE);
                        assert_int_equal(v->confidence, GR_LIKELY);
                        assert_non_null(strstr(v->reason, ":30000"));
                } else {
                        assert_int_equal(v->judgement, GR_JUDGE_UNSURE);
                        assert_non_null(finding(d, GR_FIND_SUSPECT));
                }
                gr_diagnosis_free(d);
                gr_snapshot_free(s);
        }
}

static void inherited_socket_is_not_a_server(void **state)
{
        /* the killed launcher's listening socket, kept by its forked workers */
        gr_snapshot *s = workers_snapshot(false, NULL);
        for (pid_t w = 81; w <= 84; w++)
                listen_on(gr_proc_table_find(s->procs, w), 8000, 4242);
        gr_diagnosis *d = diagnose(s);
        const gr_holder_verdict *v = gr_diagnosis_holder(d, 82);
        assert_true(v->conditions & GR_COND_LISTENING);
        assert_int_equal(v->judgement, GR_JUDGE_LEFTOVER);
        bool said = false;
        for (unsigned i = 0; i < v->evidence.n; i++)
                said |= v->evidence.items[i].key == GR_EV_LISTENING && strstr(v->evidence.items[i].value, "inherited");
        assert_true(said);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* negative control: one worker with a socket of its own is a server */
        s = workers_snapshot(false, NULL);
        listen_on(gr_proc_table_find(s->procs, 82), 8000, 4242);
        d = diagnose(s);
        assert_int_equal(gr_diagnosis_holder(d, 82)->judgement, GR_JUDGE_LIVE);
        assert_int_equal(gr_diagnosis_holder(d, 83)->judgement, GR_JUDGE_LEFTOVER);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void child_of_a_leftover_is_a_leftover(void **state)
{
        /* a spawned worker whose launcher died forked a helper that holds the GPU too */
        gr_snapshot *s = workers_snapshot(false, spawn_cmdline);
        hold_cuda(proc(s, 90, 82, 80, 10, 'S', "python3"), 0);
        gr_diagnosis *d = diagnose(s);
        const gr_holder_verdict *v = gr_diagnosis_holder(d, 90);
        assert_int_equal(v->judgement, GR_JUDGE_LEFTOVER);
        assert_int_equal(v->confidence, GR_SURE);
        assert_int_equal(v->root, 82);
        assert_non_null(strstr(v->reason, "ancestor 82"));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void live_job_under_a_detached_script(void **state)
{
        /* '(bash run.sh &)' from a shell: the script (holding no GPU) was handed to PID 1 and
         * its group's leader, the subshell, is gone; its children are a live job, even though
         * the script alone looks like a likely leftover (found by running the suite so) */
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        proc(s, 600, 1, 599, 10, 'S', "bash");
        proc(s, 610, 600, 610, 10, 'S', "python3");
        hold_cuda(proc(s, 611, 610, 610, 10, 'S', "python3"), 0);
        owner(s, 0, 611, GIB);
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(gr_diagnosis_holder(d, 611)->judgement, GR_JUDGE_LIVE);
        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
        assert_null(finding(d, GR_FIND_ORPHAN));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* negative control: the same script as a spawned worker (a marker) is surely one */
        s = snap_new(1);
        base_tree(s);
        cmdline(proc(s, 600, 1, 599, 10, 'S', "python3"), spawn_cmdline);
        hold_cuda(proc(s, 611, 600, 599, 10, 'S', "python3"), 0);
        owner(s, 0, 611, GIB);
        d = diagnose(s);
        assert_int_equal(gr_diagnosis_holder(d, 611)->judgement, GR_JUDGE_LEFTOVER);
        assert_int_equal(gr_diagnosis_holder(d, 611)->confidence, GR_SURE);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

/* serve's memory (docs/verdicts.md, step 4.0): a worker that a launcher started in a session of
 * its own, the launcher gone. The snapshot alone cannot tell it from a daemon. */
struct seen_case {
        gr_launcher_end end;
        int status;
        bool same_exe, listening, serving;
        gr_judgement judgement;
        gr_confidence confidence;
};

static void launcher_seen_by_serve(void **state)
{
        const struct seen_case cases[] = {
                { GR_END_SIGNAL, SIGKILL, true, false, false, GR_JUDGE_LEFTOVER, GR_SURE },
                { GR_END_SIGNAL, SIGTERM, true, false, false, GR_JUDGE_LEFTOVER, GR_LIKELY }, /* it could have ended it */
                { GR_END_SIGNAL, SIGKILL, true, true, false, GR_JUDGE_UNSURE, GR_UNSURE },   /* its port: a server */
                { GR_END_SIGNAL, SIGKILL, true, true, true, GR_JUDGE_UNSURE, GR_UNSURE },    /* it serves */
                { GR_END_SIGNAL, SIGHUP, true, false, false, GR_JUDGE_UNSURE, GR_UNSURE },   /* hung up on */
                { GR_END_SIGNAL, SIGKILL, false, false, false, GR_JUDGE_UNSURE, GR_UNSURE }, /* a shell */
                { GR_END_EXIT, 0, true, false, false, GR_JUDGE_UNSURE, GR_UNSURE },          /* it daemonized */
                { GR_END_EXIT, 1, true, false, false, GR_JUDGE_LEFTOVER, GR_LIKELY },        /* it failed */
                { GR_END_UNKNOWN, 0, true, false, false, GR_JUDGE_LEFTOVER, GR_LIKELY },
                { GR_END_UNKNOWN, 0, true, true, false, GR_JUDGE_LIVE, GR_LIKELY },         /* a server */
                { GR_END_UNKNOWN, 0, false, false, false, GR_JUDGE_UNSURE, GR_UNSURE },
                { GR_END_ALIVE, 0, true, false, false, GR_JUDGE_UNSURE, GR_UNSURE },
        };
        for (size_t c = 0; c <= GR_ELEMENTSOF(cases); c++) {
                const struct seen_case *k = c < GR_ELEMENTSOF(cases) ? &cases[c] : NULL;
                gr_snapshot *s = snap_new(1);
                s->taken_at_ms = 1000000;
                base_tree(s);
                gr_process *w = proc(s, 520, 1, 520, 520, 'S', "python3"); /* setsid'd, reparented */
                hold_cuda(w, 0);
                owner(s, 0, 520, GIB);
                if (k) {
                        w->seen = calloc(1, sizeof(*w->seen));
                        *w->seen = (gr_seen){ .since_ms = 900000, .launcher = 500, .launcher_start = 77,
                                              .same_exe = k->same_exe, .end = k->end, .end_status = k->status,
                                              .end_ms = 990000 };
                        snprintf(w->seen->launcher_comm, sizeof(w->seen->launcher_comm), "python3");
                        if (k->listening)
                                listen_on(w, 30000, 901);
                        if (k->serving)
                                w->net->n_serving = 2;
                }
                gr_diagnosis *d = diagnose(s);
                const gr_holder_verdict *v = gr_diagnosis_holder(d, 520);
                if (!k) { /* negative control: no memory, the snapshot alone */
                        assert_int_equal(v->judgement, GR_JUDGE_UNSURE);
                } else {
                        printf("# case %zu: %s %s\n", c, gr_judgement_name(v->judgement), v->reason);
                        assert_int_equal(v->judgement, k->judgement);
                        assert_int_equal(v->confidence, k->confidence);
                        bool has = false;
                        for (unsigned i = 0; i < v->evidence.n; i++)
                                has |= v->evidence.items[i].key == GR_EV_SEEN;
                        assert_true(has);
                }
                gr_diagnosis_free(d);
                gr_snapshot_free(s);
        }
}

/* PID 501, holding GPU 0, started by run 500 that wrote its start time (40) */
static void marked_holder(gr_snapshot *s)
{
        gr_process *p = proc(s, 501, 1, 501, 501, 'S', "python3");
        p->run_pid = 500;
        p->env.run_start = 40;
        p->start_time = 100;
        hold_cuda(p, 0);
}

static void run_supervisor_marker(void **state)
{
        for (int alive = 1; alive >= 0; alive--) {
                gr_snapshot *s = snap_new(1);
                base_tree(s);
                if (alive)
                        proc(s, 500, 10, 500, 10, 'S', "gpureap");
                gr_process *p = proc(s, 501, 1, 501, 501, 'S', "python3");
                p->run_pid = 500;
                p->start_time = 100;
                hold_cuda(p, 0);
                owner(s, 0, 501, GIB);
                gr_diagnosis *d = diagnose(s);
                const gr_holder_verdict *v = gr_diagnosis_holder(d, 501);
                assert_int_equal(v->judgement, alive ? GR_JUDGE_LIVE : GR_JUDGE_LEFTOVER);
                assert_int_equal(v->confidence, GR_SURE);
                gr_diagnosis_free(d);
                gr_snapshot_free(s);
        }
        /* the PID of the supervisor now names another program, started after the holder (a
         * PID taken again): the supervisor was killed; started before it under another name
         * (a renamed gpureap that started it through srun or docker exec, or a copied marker):
         * unsure, never a sure leftover */
        for (int older = 0; older <= 1; older++) {
                gr_snapshot *s = snap_new(1);
                base_tree(s);
                proc(s, 500, 10, 500, 10, 'S', "bash")->start_time = older ? 50 : 200;
                gr_process *p = proc(s, 501, 1, 501, 501, 'S', "python3");
                p->run_pid = 500;
                p->start_time = 100;
                hold_cuda(p, 0);
                gr_diagnosis *d = diagnose(s);
                assert_int_equal(gr_diagnosis_holder(d, 501)->judgement, older ? GR_JUDGE_UNSURE : GR_JUDGE_LEFTOVER);
                assert_int_equal(gr_diagnosis_holder(d, 501)->confidence, older ? GR_UNSURE : GR_SURE);
                gr_diagnosis_free(d);
                gr_snapshot_free(s);
        }
        /* with the run's start time (GPUREAP_RUN_REF): PID 500 is the run exactly when it
         * started then, whatever its name; another start is another process, the run gone */
        for (int same = 0; same <= 1; same++) {
                gr_snapshot *s = snap_new(1);
                base_tree(s);
                proc(s, 500, 10, 500, 10, 'S', same ? "renamed" : "gpureap")->start_time = same ? 40 : 60;
                marked_holder(s);
                gr_diagnosis *d = diagnose(s);
                assert_int_equal(gr_diagnosis_holder(d, 501)->judgement, same ? GR_JUDGE_LIVE : GR_JUDGE_LEFTOVER);
                assert_int_equal(gr_diagnosis_holder(d, 501)->confidence, GR_SURE);
                gr_diagnosis_free(d);
                gr_snapshot_free(s);
        }
        /* the run not seen: hidden by hidepid (another user's), or from a PID namespace of
         * gpureap's own (its number may be the host's): never a sure leftover */
        for (int view = 0; view <= 1; view++) {
                gr_snapshot *s = snap_new(1);
                base_tree(s);
                if (view == 0)
                        s->hidepid = true;
                else
                        s->pidns = GR_PIDNS_OTHER;
                marked_holder(s);
                gr_diagnosis *d = diagnose(s);
                const gr_holder_verdict *v = gr_diagnosis_holder(d, 501);
                assert_false(v->judgement == GR_JUDGE_LEFTOVER && v->confidence == GR_SURE);
                gr_diagnosis_free(d);
                gr_snapshot_free(s);
        }
}

static void service_daemon_is_not_an_orphan(void **state)
{
        /* a daemon: ppid 1, its own session; nothing else says what it is */
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        gr_process *p = proc(s, 90, 1, 90, 90, 'S', "vllm");
        hold_cuda(p, 0);
        owner(s, 0, 90, 70 * GIB);
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
        assert_int_equal(gr_diagnosis_holder(d, 90)->judgement, GR_JUDGE_UNSURE);
        assert_true(has_pid(finding(d, GR_FIND_SUSPECT), 90));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* in a systemd service's cgroup it is the service's: live */
        s = snap_new(1);
        base_tree(s);
        p = proc(s, 90, 1, 90, 90, 'S', "vllm");
        p->cgroup = strdup("/system.slice/vllm.service");
        hold_cuda(p, 0);
        owner(s, 0, 90, 70 * GIB);
        d = diagnose(s);
        assert_int_equal(gr_diagnosis_holder(d, 90)->judgement, GR_JUDGE_LIVE);
        assert_int_equal(gr_diagnosis_holder(d, 90)->confidence, GR_LIKELY);
        assert_non_null(finding(d, GR_FIND_BUSY));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void application_as_container_init_is_a_launcher(void **state)
{
        /* gpureap inside a container: its PID 1 is the application, whose spawned workers are
         * its children, not orphans handed to an init */
        gr_snapshot *s = snap_new(1);
        s->pidns = GR_PIDNS_OTHER;
        proc(s, 1, 0, 1, 1, 'S', "python3");
        gr_process *w = proc(s, 7, 1, 1, 1, 'S', "python3");
        cmdline(w, spawn_cmdline);
        hold_cuda(w, 0);
        owner(s, 0, 7, GIB); /* the driver would list a host PID; this one collides */
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(gr_diagnosis_holder(d, 7)->judgement, GR_JUDGE_LIVE);
        assert_null(finding(d, GR_FIND_ORPHAN));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* negative control: with a known init as PID 1 the worker was handed to it */
        s = snap_new(1);
        s->pidns = GR_PIDNS_OTHER;
        proc(s, 1, 0, 1, 1, 'S', "tini");
        w = proc(s, 7, 1, 5, 5, 'S', "python3");
        cmdline(w, spawn_cmdline);
        hold_cuda(w, 0);
        d = diagnose(s);
        assert_int_equal(gr_diagnosis_holder(d, 7)->judgement, GR_JUDGE_LEFTOVER);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void container_view_never_calls_the_drivers_pids_dead(void **state)
{
        /* issue 9: inside a container the driver's (host) PIDs name nothing here */
        for (int in_container = 1; in_container >= 0; in_container--) {
                gr_snapshot *s = snap_new(1);
                s->pidns = in_container ? GR_PIDNS_OTHER : GR_PIDNS_HOST;
                proc(s, 1, 0, 1, 1, 'S', "bash");
                gr_process *p = proc(s, 4, 1, 4, 1, 'S', "python3");
                hold_cuda(p, 0);
                owner(s, 0, 123456, 3 * GIB); /* the job's host PID */
                gr_diagnosis *d = diagnose(s);
                if (in_container) {
                        assert_null(finding(d, GR_FIND_GHOST));
                        assert_null(finding(d, GR_FIND_TEARDOWN));
                        assert_non_null(finding(d, GR_FIND_UNMAPPED));
                        assert_int_not_equal(gr_diagnosis_holder(d, 4)->judgement, GR_JUDGE_LEFTOVER);
                        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
                        assert_int_equal(gr_diagnosis_owner_state(s, 0, 123456), GR_OWNER_UNMAPPED);
                } else { /* control: on the host the same snapshot is a ghost */
                        assert_non_null(finding(d, GR_FIND_GHOST));
                        assert_int_equal(d->gpus[0].state, GR_GPU_DIRTY);
                }
                gr_diagnosis_free(d);
                gr_snapshot_free(s);
        }
}

static void partial_view_is_never_sure(void **state)
{
        /* not root: a process gpureap could not inspect may hold the memory */
        for (int partial = 1; partial >= 0; partial--) {
                gr_snapshot *s = snap_new(1);
                base_tree(s);
                owner(s, 0, 160, GIB); /* dead, and no holder seen */
                s->procs->n_unreadable = partial ? 3 : 0;
                gr_diagnosis *d = diagnose(s);
                const gr_finding *t = finding(d, GR_FIND_TEARDOWN);
                assert_non_null(t);
                if (partial) {
                        assert_int_equal(t->confidence, GR_UNSURE);
                        assert_non_null(strstr(W(t)->next_step, "sudo gpureap status"));
                } else {
                        assert_int_equal(t->confidence, GR_SURE);
                }
                gr_diagnosis_free(d);
                gr_snapshot_free(s);
        }
        /* hidepid: a parent not seen is not a parent dead */
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        s->hidepid = true;
        gr_process *w = proc(s, 81, 70, 70, 70, 'S', "python3");
        cmdline(w, spawn_cmdline);
        hold_cuda(w, 0);
        owner(s, 0, 81, GIB);
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(gr_diagnosis_holder(d, 81)->judgement, GR_JUDGE_UNSURE);
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
        assert_non_null(strstr(W(z)->explanation, "99 (runner)"));
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
        /* a live job's holders stopped or in state D: facts, never a verdict (issue 8) */
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
                        assert_non_null(strstr(W(t)->next_step, "kill -CONT 110"));
                        assert_true(has_pid(u, 120));
                        assert_false(u->leftover);
                        assert_string_equal(W(u)->next_step, "cat /proc/120/stack");
                        assert_int_equal(gr_diagnosis_holder(d, 120)->judgement, GR_JUDGE_LIVE);
                        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
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
                                           "cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope");
                }
                gr_diagnosis *d = diagnose(s);
                const gr_finding *f = finding(d, GR_FIND_FOREIGN);
                if (defect) {
                        assert_non_null(f);
                        assert_non_null(strstr(W(f)->explanation, "as PID 7"));
                        assert_non_null(strstr(W(f)->explanation, "container 0123456789ab"));
                        assert_non_null(strstr(W(f)->explanation, "Slurm job 4242"));
                        assert_non_null(strstr(W(f)->explanation, "uid 1234"));
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
        const gr_finding *f = finding(d, GR_FIND_SUSPECT);
        assert_non_null(f);
        assert_true(has_pid(f, 150));
        assert_non_null(strstr(W(f)->explanation, "4.0 GiB used is accounted for by no listed process"));
        assert_null(finding(d, GR_FIND_MONITOR));
        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
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
        assert_string_equal(W(f)->next_step, "gpureap wait --gpu 0 --timeout 30s");
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
        gr_snapshot *s = workers_snapshot(false, NULL);
        listen_on(gr_proc_table_find(s->procs, 82), 8000, 1);
        gr_diagnosis *d = diagnose(s);
        assert_true(gr_diagnosis_holder(d, 82)->conditions & GR_COND_LISTENING);
        assert_false(gr_diagnosis_holder(d, 83)->conditions & GR_COND_LISTENING);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static gr_plan *plan(gr_snapshot *s, gr_diagnosis *d, bool likely)
{
        gr_plan_options o = { .likely = likely, .my_uid = 0, .self = 99999 };
        gr_plan *p = NULL;
        assert_int_equal(gr_plan_make(s, d, &o, &p), 0);
        return p;
}

static const gr_target *target(const gr_plan *p, pid_t pid)
{
        for (size_t i = 0; i < p->n; i++)
                if (p->targets[i].pid == pid)
                        return &p->targets[i];
        return NULL;
}

static void default_plan_kills_only_sure_leftovers(void **state)
{
        /* one snapshot with every judgement: sure leftovers (torchrun workers of a dead agent),
         * likely ones (workers of a dead group leader), an unsure daemon and a live job */
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        for (pid_t w = 301; w <= 302; w++) {
                gr_process *p = proc(s, w, 1, w, w, 'S', "python3");
                torchelastic(p, "r1", w - 301);
                hold_cuda(p, 0);
                owner(s, 0, w, GIB);
        }
        hold_cuda(proc(s, 401, 1, 400, 10, 'S', "python3"), 0);
        owner(s, 0, 401, GIB);
        hold_cuda(proc(s, 501, 1, 501, 501, 'S', "python3"), 0);
        owner(s, 0, 501, GIB);
        proc(s, 600, 10, 600, 10, 'S', "python3");
        hold_cuda(proc(s, 601, 600, 600, 10, 'S', "python3"), 0);
        owner(s, 0, 601, GIB);
        hold_monitor(proc(s, 700, 10, 700, 10, 'S', "nvidia-smi"), 0);
        gr_diagnosis *d = diagnose(s);
        gr_plan *p = plan(s, d, false);
        assert_int_equal(gr_plan_count(p), 2);
        assert_int_equal(target(p, 301)->refused, GR_REFUSE_NONE);
        assert_int_equal(target(p, 302)->refused, GR_REFUSE_NONE);
        assert_int_equal(target(p, 401)->refused, GR_REFUSE_LIKELY);
        assert_int_equal(target(p, 501)->refused, GR_REFUSE_UNSURE);
        assert_int_equal(target(p, 601)->refused, GR_REFUSE_LIVE);
        assert_int_equal(target(p, 700)->refused, GR_REFUSE_MONITOR);
        assert_non_null(strstr(target(p, 601)->reason, "parent 600"));
        gr_plan_free(p);

        p = plan(s, d, true); /* --likely */
        assert_int_equal(gr_plan_count(p), 3);
        assert_int_equal(target(p, 401)->refused, GR_REFUSE_NONE);
        assert_int_equal(target(p, 501)->refused, GR_REFUSE_UNSURE);
        assert_int_equal(target(p, 601)->refused, GR_REFUSE_LIVE);
        gr_plan_free(p);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

/* AMD and Intel (docs/drm.md): a DRM or KFD file of the process at fd, on client id of 0000:03:00.0 */
static void hold_drm(gr_snapshot *s, gr_process *p, int fd, uint64_t client_id, uint64_t bytes)
{
        if (!p->drm)
                p->drm = calloc(1, sizeof(gr_drm_holding));
        p->drm->fds[p->drm->n].fd = fd;
        p->drm->fds[p->drm->n].node = client_id ? GR_DRM_NODE_RENDER : GR_DRM_NODE_KFD;
        p->drm->fds[p->drm->n++].minor = client_id ? 128 : 0;
        p->drm->n_fds++;
        p->drm->n_kfd += client_id == 0;
        if (!s->drm) {
                s->drm = calloc(1, sizeof(gr_drm_report));
                s->drm->n_gpus = 1;
                snprintf(s->drm->gpus[0].pdev, sizeof(s->drm->gpus[0].pdev), "0000:03:00.0");
                s->drm->gpus[0].vendor = GR_VENDOR_AMD;
                s->drm->gpus[0].kfd_gpu_id = 1234;
                s->drm->clients = calloc(8, sizeof(gr_drm_client));
                s->drm->kfd = calloc(8, sizeof(gr_kfd_usage));
                s->drm->kfd_present = true;
        }
        if (!client_id)
                return;
        gr_drm_client *c = NULL;
        for (size_t i = 0; i < s->drm->n_clients; i++)
                if (s->drm->clients[i].client_id == client_id)
                        c = &s->drm->clients[i];
        if (!c) {
                c = &s->drm->clients[s->drm->n_clients++];
                snprintf(c->pdev, sizeof(c->pdev), "0000:03:00.0");
                c->client_id = client_id;
                c->device_bytes = bytes;
        }
        c->holders[c->n_holders++] = (gr_drm_holder){ p->pid, fd };
}

static gr_diagnosis *diagnose_drm(gr_snapshot *s)
{
        gr_diagnosis *d = diagnose(s);
        gr_diagnosis_free(d);
        /* the PIDs sorted now: the DRM holder count as the scan keeps it */
        s->procs->n_drm_holders = 0;
        for (size_t i = 0; i < s->procs->n; i++)
                s->procs->n_drm_holders += s->procs->procs[i].drm != NULL;
        assert_int_equal(gr_diagnose(s, 0, &d), 0);
        return d;
}

static void drm_client_is_a_leftover_only_when_all_its_holders_are(void **state)
{
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        /* 301 and its child 302: workers of a dead agent (leftovers) sharing client 53; 302
         * shares client 54 with the live 601 (its parent 600 alive) */
        gr_process *w = proc(s, 301, 1, 301, 301, 'S', "python3");
        torchelastic(w, "r1", 0);
        hold_drm(s, w, 5, 53, GIB);
        gr_process *c = proc(s, 302, 301, 301, 301, 'S', "python3");
        torchelastic(c, "r1", 0);
        hold_drm(s, c, 5, 53, GIB);
        hold_drm(s, c, 6, 54, GIB);
        proc(s, 600, 10, 600, 10, 'S', "bash");
        hold_drm(s, proc(s, 601, 600, 600, 10, 'S', "python3"), 9, 54, GIB);
        gr_diagnosis *d = diagnose_drm(s);
        assert_non_null(d->drm);
        assert_int_equal(gr_diagnosis_drm_holder(d, 301)->judgement, GR_JUDGE_LEFTOVER);
        assert_int_equal(gr_diagnosis_drm_holder(d, 601)->judgement, GR_JUDGE_LIVE);
        assert_int_equal(d->drm->clients[0].judgement, GR_JUDGE_LEFTOVER); /* 53: both leftovers */
        assert_int_equal(d->drm->clients[0].n_leftover, 2);
        assert_int_equal(d->drm->clients[1].judgement, GR_JUDGE_LIVE);     /* 54: one live holder */
        assert_int_equal(d->drm->gpus[0].state, GR_GPU_DIRTY);
        assert_int_equal(d->drm->gpus[0].leftover_bytes, GIB);
        assert_null(gr_diagnosis_holder(d, 301)); /* NVIDIA's holders are NVIDIA's */
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void amd_ghost_names_its_hidden_holder(void **state)
{
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        /* 700 is gone; KFD keeps its entry; 710 (in 700's group, reparented) holds /dev/kfd */
        gr_process *h = proc(s, 710, 1, 700, 700, 'S', "python3");
        hold_drm(s, h, 5, 0, 0);
        hold_drm(s, h, 6, 41, 8 * GIB);
        s->drm->kfd[s->drm->n_kfd++] = (gr_kfd_usage){ 700, 1234, 0, 8 * GIB };
        /* a live KFD user with its own entry is nobody's hidden holder */
        hold_drm(s, proc(s, 800, 10, 800, 10, 'S', "python3"), 4, 0, 0);
        s->drm->kfd[s->drm->n_kfd++] = (gr_kfd_usage){ 800, 1234, 0, GIB };
        gr_diagnosis *d = diagnose_drm(s);
        assert_int_equal(d->drm->n_ghosts, 1);
        assert_int_equal(d->drm->ghosts[0].pid, 700);
        assert_int_equal(d->drm->ghosts[0].n_holders, 1);
        assert_int_equal(d->drm->ghosts[0].holders[0], 710);
        assert_int_equal(d->drm->ghosts[0].confidence, GR_SURE);
        const gr_holder_verdict *v = gr_diagnosis_drm_holder(d, 710);
        assert_int_equal(v->ghost, 700);
        assert_int_equal(v->judgement, GR_JUDGE_LEFTOVER);
        assert_non_null(strstr(v->reason, "PID 700"));
        assert_int_equal(gr_diagnosis_drm_holder(d, 800)->ghost, 0);
        assert_int_equal(d->drm->gpus[0].leftover_bytes, 8 * GIB); /* one memory, not two */
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void plan_takes_drm_holders_by_verdict_and_client(void **state)
{
        /* sure leftovers all: a CUDA worker of a dead agent (the negative control, killed), the
         * same with a render node besides (refused: both vendors), one with /dev/kfd alone
         * (taken), two sharing client 60 (taken together), one sharing client 50 with a live
         * job (spared: ending it frees nothing), and one sharing client 70 with a likely one,
         * which the default plan does not take (spared with it) */
        gr_snapshot *s = snap_new(1);
        base_tree(s);
        gr_process *w[8];
        for (pid_t pid = 301; pid <= 308; pid++) {
                w[pid - 301] = proc(s, pid, 1, pid, pid, 'S', "python3");
                if (pid != 308)
                        torchelastic(w[pid - 301], "r1", pid - 301);
                if (pid < 303) {
                        hold_cuda(w[pid - 301], 0);
                        owner(s, 0, pid, GIB);
                }
        }
        gr_process *live = proc(s, 320, 10, 320, 10, 'S', "python3"); /* a live job: its shell alive */
        w[7]->pgrp = 330; /* a forked worker whose launcher, its group's leader, is gone: likely */
        w[7]->session = 10;
        hold_drm(s, w[1], 40, 41, GIB);
        hold_drm(s, w[2], 5, 0, 0);
        hold_drm(s, w[3], 6, 60, GIB);
        hold_drm(s, w[4], 6, 60, GIB);
        hold_drm(s, w[5], 7, 50, GIB);
        hold_drm(s, live, 7, 50, GIB);
        hold_drm(s, w[6], 8, 70, GIB);
        hold_drm(s, w[7], 8, 70, GIB);
        gr_diagnosis *d = diagnose_drm(s);
        assert_int_equal(gr_diagnosis_drm_holder(d, 320)->judgement, GR_JUDGE_LIVE);
        gr_plan *p = plan(s, d, false);
        assert_int_equal(target(p, 301)->refused, GR_REFUSE_NONE);
        assert_int_equal(target(p, 302)->refused, GR_REFUSE_DRM);
        assert_int_equal(target(p, 303)->refused, GR_REFUSE_NONE);
        assert_int_equal(target(p, 304)->refused, GR_REFUSE_NONE);
        assert_int_equal(target(p, 305)->refused, GR_REFUSE_NONE);
        assert_int_equal(target(p, 306)->refused, GR_REFUSE_DRM_SHARED);
        assert_int_equal(target(p, 307)->refused, GR_REFUSE_DRM_SHARED);
        assert_null(target(p, 320));
        assert_int_equal(gr_plan_count(p), 4);
        /* what the ladder lets them hold and the verify waits to see gone: client 60 alone, and
         * 303's KFD entry */
        assert_int_equal(p->n_drm_clients, 1);
        assert_int_equal(p->drm_clients[0].client_id, 60);
        assert_string_equal(p->drm_clients[0].pdev, "0000:03:00.0");
        assert_int_equal(p->n_drm_kfd, 1);
        assert_int_equal(p->drm_kfd[0], 303);
        gr_plan_free(p);
        /* with --likely the likely 308 is taken, and with it 307 */
        p = plan(s, d, true);
        assert_int_equal(target(p, 307)->refused, GR_REFUSE_NONE);
        assert_int_equal(target(p, 308)->refused, GR_REFUSE_NONE);
        assert_int_equal(target(p, 306)->refused, GR_REFUSE_DRM_SHARED);
        gr_plan_free(p);
        /* named by PID: both vendors refused all the same; the live job's partner too */
        gr_plan_options o = { .my_uid = 0, .self = 99999, .pids = (pid_t[]){ 302, 306 }, .n_pids = 2 };
        assert_int_equal(gr_plan_make(s, d, &o, &p), 0);
        assert_int_equal(gr_plan_count(p), 0);
        assert_int_equal(target(p, 302)->refused, GR_REFUSE_DRM);
        assert_int_equal(target(p, 306)->refused, GR_REFUSE_DRM_SHARED);
        gr_plan_free(p);
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
        /* schema 1, recorded without lineage: nothing there is sure either way */
        gr_snapshot *s;
        gr_diagnosis *d = replay("orphans.json", &s);
        assert_true(s->procs_partial);
        for (pid_t w = 622; w <= 625; w++) {
                const gr_holder_verdict *v = gr_diagnosis_holder(d, w);
                assert_false(v->judgement == GR_JUDGE_LEFTOVER && v->confidence == GR_SURE);
        }
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

        /* four workers of a killed launcher that ran under 'timeout' (their group's leader,
         * alive): by lineage alone unsure, never sure leftovers, never live for sure */
        d = replay("orphans.json", &s);
        f = finding(d, GR_FIND_SUSPECT);
        assert_int_equal(f->n_pids, 4);
        for (pid_t w = 669; w <= 672; w++) {
                assert_true(has_pid(f, w));
                assert_int_equal(gr_diagnosis_holder(d, w)->judgement, GR_JUDGE_UNSURE);
        }
        assert_non_null(strstr(W(f)->reason, "415 (timeout) is alive"));
        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        d = replay("running.json", &s);
        assert_int_equal(d->gpus[0].state, GR_GPU_BUSY);
        assert_null(finding(d, GR_FIND_ORPHAN));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        recording = "h200-2026-12-02";
}

/* A tensor-parallel job: 8 ranks of one launcher, rank i on GPU i */
static gr_snapshot *tp8_snapshot(bool launcher_alive)
{
        gr_snapshot *s = snap_new(8);
        base_tree(s);
        if (launcher_alive)
                proc(s, 80, 10, 80, 10, 'S', "torchrun");
        for (pid_t w = 81; w <= 88; w++) {
                gr_process *p = proc(s, w, launcher_alive ? 80 : 1, 80, 10, 'S', "python3");
                hold_cuda(p, (unsigned)(w - 81));
                owner(s, (unsigned)(w - 81), w, 70 * GIB);
        }
        return s;
}

static void a_job_across_gpus_is_one_finding(void **state)
{
        /* its launcher gone: one orphan finding for the 8 ranks, naming the 8 GPUs */
        gr_snapshot *s = tp8_snapshot(false);
        gr_diagnosis *d = diagnose(s);
        for (unsigned i = 0; i < 8; i++)
                assert_int_equal(d->gpus[i].state, GR_GPU_DIRTY);
        assert_int_equal(d->n_findings, 1);
        const gr_finding *f = finding(d, GR_FIND_ORPHAN);
        assert_int_equal(f->n_gpus, 8);
        assert_int_equal(f->gpus, 0xff);
        assert_int_equal(f->gpu, 0);
        assert_int_equal(f->n_pids, 8);
        assert_int_equal(f->memory, 8 * 70 * GIB);
        assert_int_equal(f->job.kind, GR_JOB_GROUP);
        assert_int_equal(f->job.pid, 80);
        for (unsigned i = 0; i < 8; i++) {
                assert_true(gr_finding_on_gpu(f, i));
                assert_int_equal(gr_finding_memory_on(f, i), 70 * GIB); /* each GPU's part */
                assert_int_equal(gr_finding_pids_on(d, f, &s->gpu->gpus[i]), 1);
        }
        assert_false(gr_finding_on_gpu(f, 8));
        assert_string_equal(W(f)->next_step, "gpureap reap --gpu 0,1,2,3,4,5,6,7 --pid 81,82,83,84,85,86,87,88");
        assert_non_null(strstr(W(f)->explanation, "GPUs 0-7: 8 processes of process group 80 holding 560.0 GiB"));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* its launcher alive: one busy finding, the same GPUs */
        s = tp8_snapshot(true);
        d = diagnose(s);
        for (unsigned i = 0; i < 8; i++)
                assert_int_equal(d->gpus[i].state, GR_GPU_BUSY);
        assert_int_equal(d->n_findings, 1);
        f = finding(d, GR_FIND_BUSY);
        assert_int_equal(f->gpus, 0xff);
        assert_int_equal(f->n_pids, 8);
        assert_string_equal(W(f)->advice, "none if this is expected; to stop it: gpureap reap --gpu 0,1,2,3,4,5,6,7 --pid 81,82,83,84,85,86,87,88");
        gr_diagnosis_free(d);
        gr_snapshot_free(s);

        /* negative control: two jobs on one GPU are two findings, each about its own GPUs */
        s = snap_new(2);
        base_tree(s);
        proc(s, 80, 10, 80, 10, 'S', "launcher");
        proc(s, 90, 10, 90, 10, 'S', "launcher");
        gr_process *a = proc(s, 81, 80, 80, 10, 'S', "python3");
        gr_process *b = proc(s, 91, 90, 90, 10, 'S', "python3");
        gr_process *c = proc(s, 92, 90, 90, 10, 'S', "python3");
        hold_cuda(a, 0);
        hold_cuda(b, 0);
        hold_cuda(c, 1);
        owner(s, 0, 81, GIB);
        owner(s, 0, 91, GIB);
        owner(s, 1, 92, GIB);
        d = diagnose(s);
        assert_int_equal(count(d, GR_FIND_BUSY), 2);
        for (size_t i = 0; i < d->n_findings; i++) {
                const gr_finding *x = &d->findings[i];
                assert_int_equal(x->gpus, x->job.pid == 80 ? 0x1 : 0x3);
                assert_int_equal(x->n_pids, x->job.pid == 80 ? 1 : 2);
        }
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void a_ghost_on_two_gpus_is_one_finding(void **state)
{
        /* PID 70 had contexts on GPUs 0 and 1; its forked child holds both files */
        gr_snapshot *s = snap_new(2);
        base_tree(s);
        gr_process *c = proc(s, 71, 1, 70, 10, 'S', "python3");
        hold_cuda(c, 0);
        c->hold->n_gpus = 2;
        c->hold->gpus[1] = c->hold->gpus[0];
        c->hold->gpus[1].minor = 1;
        owner(s, 0, 70, 2 * GIB);
        owner(s, 1, 70, 3 * GIB);
        gr_diagnosis *d = diagnose(s);
        assert_int_equal(d->gpus[0].state, GR_GPU_DIRTY);
        assert_int_equal(d->gpus[1].state, GR_GPU_DIRTY);
        assert_int_equal(count(d, GR_FIND_GHOST), 1);
        const gr_finding *f = finding(d, GR_FIND_GHOST);
        assert_int_equal(f->gpus, 0x3);
        assert_int_equal(f->related, 70);
        assert_int_equal(f->memory, 5 * GIB);
        assert_int_equal(gr_finding_memory_on(f, 1), 3 * GIB);
        assert_int_equal(f->confidence, GR_SURE);
        assert_string_equal(W(f)->next_step, "gpureap reap --gpu 0,1 --pid 71");
        assert_true(strncmp(W(f)->explanation, "GPUs 0,1: the driver lists PID 70 with 5.0 GiB", 46) == 0);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
}

static void gpu_lists_in_words(void **state)
{
        gr_snapshot *s = snap_new(8);
        gr_finding f = { .gpu = 0 };
        char buf[64], arg[64];
        static const struct { uint64_t mask; const char *text, *arg; } cases[] = {
                { 0x08, "GPU 3", "3" },
                { 0x03, "GPUs 0,1", "0,1" },
                { 0x07, "GPUs 0-2", "0,1,2" },
                { 0x25, "GPUs 0,2,5", "0,2,5" },
                { 0x4f, "GPUs 0-3,6", "0,1,2,3,6" },
                { 0xff, "GPUs 0-7", "0,1,2,3,4,5,6,7" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                f.gpus = cases[i].mask;
                assert_string_equal(gr_finding_gpus_text(s, &f, buf, sizeof(buf)), cases[i].text);
                assert_string_equal(gr_finding_gpus_arg(s, &f, arg, sizeof(arg)), cases[i].arg);
        }
        gr_snapshot_free(s);
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
                cmocka_unit_test(double_forked_by_a_live_launcher),
                cmocka_unit_test(torchrun_workers_of_a_dead_agent),
                cmocka_unit_test(nohup_server_is_not_a_leftover),
                cmocka_unit_test(inherited_socket_is_not_a_server),
                cmocka_unit_test(child_of_a_leftover_is_a_leftover),
                cmocka_unit_test(live_job_under_a_detached_script),
                cmocka_unit_test(run_supervisor_marker),
                cmocka_unit_test(launcher_seen_by_serve),
                cmocka_unit_test(application_as_container_init_is_a_launcher),
                cmocka_unit_test(container_view_never_calls_the_drivers_pids_dead),
                cmocka_unit_test(partial_view_is_never_sure),
                cmocka_unit_test(default_plan_kills_only_sure_leftovers),
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
                cmocka_unit_test(a_job_across_gpus_is_one_finding),
                cmocka_unit_test(a_ghost_on_two_gpus_is_one_finding),
                cmocka_unit_test(gpu_lists_in_words),
                cmocka_unit_test(drm_client_is_a_leftover_only_when_all_its_holders_are),
                cmocka_unit_test(amd_ghost_names_its_hidden_holder),
                cmocka_unit_test(plan_takes_drm_holders_by_verdict_and_client),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
