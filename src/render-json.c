/* The status facts as JSON (docs/json-schema.md). Memory in bytes; null where unknown. */
#include <json-c/json.h>
#include <string.h>
#include <time.h>

#include "gpureap/basic.h"
#include "gpureap-config.h"
#include "gpureap.h"
#include "basic/names.h"

static json_object *j_u64(uint64_t v)
{
        if (v == GR_UNKNOWN_U64)
                return NULL;
        /* a driver's wrapped number stays the number it gave, never a negative one */
        return v > INT64_MAX ? json_object_new_uint64(v) : json_object_new_int64((int64_t)v);
}

/* Every string as valid UTF-8 without control characters: what came from other processes was
 * made safe where it was read, and this also covers text cut mid-character since (a finding's
 * explanation is bounded) and paths from our own environment */
static json_object *j_text(const char *s)
{
        if (!s)
                return NULL;
        if (gr_text_is_clean(s))
                return json_object_new_string(s);
        char *c = strdup(s);
        if (!c)
                return NULL;
        gr_text_sanitize(c);
        json_object *o = json_object_new_string(c);
        free(c);
        return o;
}

static json_object *j_str(const char *s)
{
        return s && *s ? j_text(s) : NULL;
}

static void add(json_object *o, const char *k, json_object *v)
{
        json_object_object_add(o, k, v);
}

static GR_NAME_TABLE(driver_status_name, gr_gpu_status, GR_GPU_TIMEOUT, "unknown",
              [GR_GPU_OK] = "ok", [GR_GPU_NO_LIBRARY] = "no_library", [GR_GPU_INIT_FAILED] = "init_failed", [GR_GPU_FAILED] = "failed", [GR_GPU_TIMEOUT] = "timeout")

static json_object *evidence_json(const gr_evidence_list *ev, pid_t pid)
{
        json_object *a = json_object_new_array();
        for (unsigned i = 0; i < ev->n; i++) {
                json_object *e = json_object_new_object();
                if (pid > 0)
                        add(e, "pid", json_object_new_int(pid));
                add(e, "key", json_object_new_string(gr_evidence_key_name(ev->items[i].key)));
                add(e, "value", json_object_new_string(ev->items[i].value));
                add(e, "lean", json_object_new_string(gr_lean_name(ev->items[i].lean)));
                json_object_array_add(a, e);
        }
        return a;
}

static json_object *verdict_json(const gr_holder_verdict *v)
{
        if (!v)
                return NULL;
        json_object *o = json_object_new_object();
        add(o, "role", json_object_new_string(gr_role_name(v->role)));
        add(o, "judgement", json_object_new_string(gr_judgement_name(v->judgement)));
        add(o, "confidence", json_object_new_string(gr_confidence_name(v->confidence)));
        add(o, "reason", j_str(v->reason));
        add(o, "evidence", evidence_json(&v->evidence, 0));
        json_object *c = json_object_new_array();
        static const struct { unsigned bit; const char *name; } conds[] = {
                { GR_COND_ZOMBIE, "zombie" }, { GR_COND_STOPPED, "stopped" },
                { GR_COND_UNINTERRUPTIBLE, "uninterruptible" }, { GR_COND_OTHER_NS, "other_namespace" },
                { GR_COND_OTHER_USER, "other_user" }, { GR_COND_LISTENING, "listening" },
        };
        for (size_t i = 0; i < GR_ELEMENTSOF(conds); i++)
                if (v->conditions & conds[i].bit)
                        json_object_array_add(c, json_object_new_string(conds[i].name));
        add(o, "conditions", c);
        char job[96];
        add(o, "job", json_object_new_string(gr_job_text(&v->job, job, sizeof(job))));
        add(o, "root", json_object_new_int(v->root));
        add(o, "launcher", v->launcher > 0 ? json_object_new_int(v->launcher) : NULL);
        add(o, "launcher_alive", json_object_new_boolean(v->launcher_alive));
        add(o, "ghost", v->ghost ? json_object_new_int(v->ghost) : NULL);
        return o;
}

/* Where it runs, as its cgroup path (and for escapees of a job, SLURM_JOB_ID) shows it */
static json_object *placement_json(const gr_process *p)
{
        if (!p->has_details)
                return NULL;
        json_object *o = json_object_new_object();
        char name[128], id[80];
        gr_cgroup_kind k = p->cgroup ? gr_cgroup_manager(p->cgroup, name, sizeof(name)) : GR_CG_NONE;
        add(o, "manager", k == GR_CG_NONE ? NULL : json_object_new_string(gr_cgroup_kind_name(k)));
        add(o, "systemd_unit", k == GR_CG_SERVICE ? json_object_new_string(name) : NULL);
        const char *job = p->cgroup && gr_cgroup_slurm_job(p->cgroup, id, sizeof(id)) == 0 ? id :
                          p->env_read && p->env.slurm_job_id[0] ? p->env.slurm_job_id : NULL;
        add(o, "slurm_job", j_str(job));
        add(o, "kubernetes_pod", k == GR_CG_POD ? json_object_new_string(name) : NULL);
        add(o, "container", p->cgroup && gr_cgroup_container_id(p->cgroup, id, sizeof(id)) == 0 ? json_object_new_string(id) : NULL);
        return o;
}

/* Its pod: the UID and container ID its cgroup names, and the kubelet's names where the
 * devices join them (docs/architecture.md, "The kubelet") */
static json_object *kubernetes_json(const gr_pod *pod)
{
        if (!pod)
                return NULL;
        json_object *o = json_object_new_object();
        add(o, "pod_uid", j_str(pod->uid));
        add(o, "container_id", j_str(pod->container_id));
        add(o, "pod", j_str(pod->name));
        add(o, "namespace", j_str(pod->ns));
        add(o, "container", j_str(pod->container));
        add(o, "naming", json_object_new_string(gr_pod_naming_name(pod->naming)));
        add(o, "container_naming", json_object_new_string(gr_pod_naming_name(pod->container_naming)));
        /* who gave the names: the kubelet's devices, or the container runtime's labels */
        add(o, "named_by", json_object_new_string(pod->runtime_named ? "runtime" : pod->naming == GR_POD_NAMED ? "kubelet" : "none"));
        if (pod->assigned_known) { /* the GPUs the checkpoint gave its pod UID */
                json_object *g = json_object_new_array();
                for (int i = 0; i < 64; i++)
                        if (pod->gpus_assigned >> i & 1)
                                json_object_array_add(g, json_object_new_int(i));
                add(o, "gpus_assigned", g);
        }
        if (pod->gone != GR_POD_GONE_NOT_ASKED) { /* is its pod gone: the runtime's names, the kubelet's Get */
                json_object *g = json_object_new_object();
                add(g, "state", json_object_new_string(gr_pod_gone_name(pod->gone)));
                add(g, "pod", pod->gone_name[0] ? j_str(pod->gone_name) : NULL);
                add(g, "namespace", pod->gone_ns[0] ? j_str(pod->gone_ns) : NULL);
                add(g, "why", pod->gone_why[0] ? j_str(pod->gone_why) : NULL);
                add(o, "gone", g);
        }
        return o;
}

static json_object *kubelet_json(const gr_snapshot_kubelet *k)
{
        json_object *o = json_object_new_object();
        add(o, "state", json_object_new_string(gr_kubelet_state_name(k->state)));
        add(o, "socket", j_str(k->socket));
        add(o, "error", j_str(k->error));
        add(o, "asked_at_unix_ms", k->asked_at_ms ? json_object_new_int64((int64_t)k->asked_at_ms) : NULL);
        add(o, "elapsed_ms", k->asked_at_ms ? json_object_new_int64((int64_t)k->elapsed_ms) : NULL);
        add(o, "pods", k->state == GR_KUBELET_OK ? json_object_new_int64(k->n_pods) : NULL);
        add(o, "devices", k->state == GR_KUBELET_OK ? json_object_new_int64(k->n_devices) : NULL);
        json_object *assigned = NULL;
        if (k->state == GR_KUBELET_OK) {
                assigned = json_object_new_array();
                for (int i = 0; i < 64; i++)
                        if (k->gpus_assigned >> i & 1)
                                json_object_array_add(assigned, json_object_new_int(i));
        }
        add(o, "gpus_assigned", assigned);
        add(o, "devices_unmapped", k->state == GR_KUBELET_OK ? json_object_new_boolean(k->devices_unmapped) : NULL);
        if (k->checkpoint_state != GR_CHECKPOINT_NOT_READ) {
                json_object *c = json_object_new_object();
                add(c, "state", json_object_new_string(gr_checkpoint_state_name(k->checkpoint_state)));
                add(c, "path", j_str(k->checkpoint));
                add(c, "error", j_str(k->checkpoint_error));
                add(c, "devices", k->checkpoint_state == GR_CHECKPOINT_OK ? json_object_new_int64(k->n_assigned) : NULL);
                add(o, "checkpoint", c);
        }
        return o;
}

static json_object *env_json(const gr_process *p)
{
        if (!p->has_details || !p->env_read)
                return NULL;
        json_object *e = json_object_new_object();
        const gr_env_marks *m = &p->env;
        add(e, "GPUREAP_RUN_PID", m->run_pid ? json_object_new_int(m->run_pid) : NULL);
        char ref[48];
        snprintf(ref, sizeof(ref), "%d@%llu", (int)m->run_pid, (unsigned long long)m->run_start);
        add(e, "GPUREAP_RUN_REF", m->run_pid && m->run_start ? json_object_new_string(ref) : NULL);
        add(e, "TORCHELASTIC_RUN_ID", j_str(m->torchelastic_run_id));
        add(e, "LOCAL_RANK", m->local_rank >= 0 ? json_object_new_int(m->local_rank) : NULL);
        add(e, "RANK", m->rank >= 0 ? json_object_new_int(m->rank) : NULL);
        add(e, "GROUP_RANK", m->group_rank >= 0 ? json_object_new_int(m->group_rank) : NULL);
        add(e, "SLURM_JOB_ID", j_str(m->slurm_job_id));
        return e;
}

static json_object *net_json(const gr_net *n)
{
        if (!n)
                return NULL;
        json_object *o = json_object_new_object();
        json_object *ports = json_object_new_array(), *inodes = json_object_new_array();
        for (unsigned i = 0; i < n->n_listen; i++) {
                json_object_array_add(ports, json_object_new_int(n->listen_ports[i]));
                json_object_array_add(inodes, json_object_new_int64((int64_t)n->listen_inodes[i]));
        }
        add(o, "listen_ports", ports);
        add(o, "listen_inodes", inodes);
        add(o, "serving", json_object_new_int64(n->n_serving));
        add(o, "established", json_object_new_int64(n->n_established));
        add(o, "truncated", json_object_new_boolean(n->truncated));
        return o;
}

static const char *const launcher_end_names[] = { "alive", "signal", "exit", "unknown" };

/* serve's memory of a holder (docs/json-schema.md) */
static json_object *seen_json(const gr_seen *h)
{
        if (!h)
                return NULL;
        json_object *o = json_object_new_object();
        add(o, "since_unix_ms", json_object_new_int64((int64_t)h->since_ms));
        json_object *l = NULL;
        if (h->launcher > 0) {
                l = json_object_new_object();
                add(l, "pid", json_object_new_int(h->launcher));
                add(l, "start_time_ticks", json_object_new_int64((int64_t)h->launcher_start));
                add(l, "comm", j_text(h->launcher_comm));
                add(l, "same_exe", json_object_new_boolean(h->same_exe));
                add(l, "end", json_object_new_string(launcher_end_names[h->end]));
                add(l, "end_status", h->end == GR_END_SIGNAL || h->end == GR_END_EXIT ? json_object_new_int(h->end_status) : NULL);
                add(l, "end_unix_ms", h->end != GR_END_ALIVE && h->end_ms ? json_object_new_int64((int64_t)h->end_ms) : NULL);
        }
        add(o, "launcher", l);
        add(o, "state_since_unix_ms", h->state_since_ms ? json_object_new_int64((int64_t)h->state_since_ms) : NULL);
        return o;
}

static json_object *process_json(const gr_snapshot *s, const gr_diagnosis *d, const gr_process *p,
                                 const struct gpu_selection *sel)
{
        json_object *o = json_object_new_object();
        if (sel && sel->scope && sel->scope->kind != GR_SCOPE_NONE) {
                static const char *const m[] = { "out", "in", "escaped" };
                add(o, "in_scope", json_object_new_string(m[gr_scope_contains(sel->scope, p)]));
        }
        add(o, "pid", json_object_new_int(p->pid));
        add(o, "start_time_ticks", json_object_new_int64((int64_t)p->start_time));
        if (s->procs->boot_time && s->procs->clock_ticks > 0)
                add(o, "started_at_unix", json_object_new_int64(
                        (int64_t)(s->procs->boot_time + p->start_time / (uint64_t)s->procs->clock_ticks)));
        char st[2] = { p->state, 0 };
        add(o, "state", json_object_new_string(st));
        add(o, "ppid", json_object_new_int(p->ppid));
        add(o, "pgid", json_object_new_int(p->pgrp));
        add(o, "sid", json_object_new_int(p->session));
        add(o, "tty_nr", json_object_new_int(p->tty_nr));
        add(o, "tpgid", json_object_new_int(p->tpgid));
        add(o, "uid", p->has_uid ? json_object_new_int64(p->uid) : NULL);
        add(o, "comm", j_text(p->comm));
        add(o, "cmdline", j_str(p->cmdline));
        json_object *ns = json_object_new_array();
        for (unsigned i = 0; i < p->n_nspid; i++)
                json_object_array_add(ns, json_object_new_int(p->nspid[i]));
        add(o, "nspid", ns);
        add(o, "cgroup", j_str(p->cgroup));
        add(o, "run_leaf_lock", p->run_leaf == GR_LEAF_HELD ? json_object_new_string("held")
                                : p->run_leaf == GR_LEAF_FREE ? json_object_new_string("free") : NULL);
        if (p->has_details) /* absent where not read: unknown, not unreadable */
                add(o, "exe", p->exe_state == GR_EXE_READ ? j_text(p->exe) : NULL);
        add(o, "run_pid", p->run_pid ? json_object_new_int(p->run_pid) : NULL);
        char sig[24];
        snprintf(sig, sizeof(sig), "%016llx", (unsigned long long)p->sig_ignored);
        add(o, "sig_ignored", p->has_details ? json_object_new_string(sig) : NULL);
        add(o, "environ", env_json(p));
        add(o, "placement", placement_json(p));
        add(o, "kubernetes", kubernetes_json(p->pod));
        add(o, "net", net_json(p->net));
        json_object *dev = NULL;
        if (p->hold) {
                const gr_holding *h = p->hold;
                dev = json_object_new_object();
                add(dev, "fds", json_object_new_int64(h->n_fds));
                json_object *gpus = json_object_new_array();
                for (unsigned i = 0; i < h->n_gpus; i++) {
                        json_object *g = json_object_new_object();
                        add(g, "minor", json_object_new_int64(h->gpus[i].minor));
                        add(g, "fds", json_object_new_int64(h->gpus[i].n_fds));
                        json_object_array_add(gpus, g);
                }
                add(dev, "gpus", gpus);
                add(dev, "ctl", json_object_new_int64(h->n_ctl));
                add(dev, "uvm", json_object_new_int64(h->n_uvm));
                add(dev, "caps", json_object_new_int64(h->n_caps));
                add(dev, "other", json_object_new_int64(h->n_other));
                add(dev, "maps", h->maps_read ? json_object_new_int64(h->n_maps) : NULL);
        }
        add(o, "devices", dev);
        add(o, "seen", seen_json(p->seen));
        add(o, "verdict", d ? verdict_json(gr_diagnosis_holder(d, p->pid)) : NULL);
        return o;
}

static json_object *gpu_json(const gr_snapshot *s, const gr_diagnosis *d, unsigned gi)
{
        const gr_gpu *g = &s->gpu->gpus[gi];
        json_object *o = json_object_new_object();
        add(o, "index", json_object_new_int64(g->index));
        add(o, "vendor", json_object_new_string("nvidia")); /* NVML's; AMD and Intel: "drm" */
        const gr_gpu_verdict *v = d && gi < d->n_gpus ? &d->gpus[gi] : NULL;
        add(o, "state", v ? json_object_new_string(gr_gpu_state_name(v->state)) : NULL);
        add(o, "unaccounted_memory", v ? j_u64(v->unaccounted) : NULL);
        add(o, "minor", g->minor >= 0 ? json_object_new_int(g->minor) : NULL);
        add(o, "uuid", j_str(g->uuid));
        add(o, "pci_bus_id", j_str(g->pci_bus_id));
        add(o, "name", j_str(g->name));
        if (g->minor >= 0) {
                char path[1100];
                snprintf(path, sizeof(path), "%s/nvidia%d", s->dev_dir, g->minor);
                add(o, "device_file", j_text(path));
        } else {
                add(o, "device_file", NULL);
        }
        json_object *m = json_object_new_object();
        add(m, "total", j_u64(g->mem_total));
        add(m, "reserved", j_u64(g->mem_reserved));
        add(m, "used", j_u64(g->mem_used));
        add(m, "free", j_u64(g->mem_free));
        add(m, "api", g->mem_api ? json_object_new_string(g->mem_api == 2 ? "v2" : "v1") : NULL);
        add(m, "consistent", g->mem_api ? json_object_new_boolean(!g->mem_inconsistent) : NULL);
        add(o, "memory", m);
        add(o, "state_since_unix_ms", s->gpu_state_since_ms && s->gpu_state_since_ms[gi]
                                              ? json_object_new_int64((int64_t)s->gpu_state_since_ms[gi]) : NULL);

        json_object *owners = NULL;
        if (g->procs_ok) {
                owners = json_object_new_array();
                for (unsigned i = 0; i < g->n_procs; i++) {
                        const gr_gpu_proc *p = &g->procs[i];
                        json_object *c = json_object_new_object();
                        add(c, "pid", json_object_new_int64(p->pid));
                        add(c, "type", json_object_new_string(gr_ctx_kind_name((gr_ctx_kind)p->kind)));
                        add(c, "used_memory", j_u64(p->used_bytes));
                        add(c, "process", json_object_new_string(
                                gr_owner_state_name(v ? gr_gpu_verdict_owner(v, g->n_procs, i)
                                                      : gr_diagnosis_owner_state(s, gi, (pid_t)p->pid))));
                        json_object_array_add(owners, c);
                }
        }
        add(o, "context_owners", owners);
        add(o, "context_owners_truncated", json_object_new_boolean(g->procs_truncated));
        add(o, "process_entry_bytes", g->proc_stride ? json_object_new_int64(g->proc_stride) : NULL);

        json_object *holders = json_object_new_array();
        for (size_t i = 0; s->procs && i < s->procs->n; i++) {
                unsigned k = gr_process_fds_on_minor(&s->procs->procs[i], g->minor);
                if (k == 0)
                        continue;
                json_object *h = json_object_new_object();
                add(h, "pid", json_object_new_int(s->procs->procs[i].pid));
                add(h, "fds", json_object_new_int64(k));
                json_object_array_add(holders, h);
        }
        add(o, "holders", holders);
        add(o, "error", j_str(g->error));
        return o;
}

/* The processes the JSON lists: every holder and every context owner found in /proc, and, so
 * that a recorded snapshot can be diagnosed again (--replay), their ancestors and the leaders
 * of their process groups and sessions. Marks indices of s->procs in want. */
static void mark(const gr_snapshot *s, bool *want, pid_t pid, int depth)
{
        for (; pid > 0 && depth < 64; depth++) {
                const gr_process *p = gr_proc_table_find(s->procs, pid);
                if (!p)
                        return;
                size_t idx = (size_t)(p - s->procs->procs);
                if (want[idx])
                        return;
                want[idx] = true;
                mark(s, want, p->pgrp, depth + 1);
                mark(s, want, p->session, depth + 1);
                pid = p->ppid;
        }
}

bool *snapshot_wanted_processes(const gr_snapshot *s)
{
        size_t n = s->procs ? s->procs->n : 0;
        bool *want = calloc(n ? n : 1, sizeof(bool));
        if (!want)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (s->procs->procs[i].hold || s->procs->procs[i].drm)
                        mark(s, want, s->procs->procs[i].pid, 0);
        for (unsigned i = 0; i < s->gpu->n_gpus; i++)
                for (unsigned j = 0; j < s->gpu->gpus[i].n_procs; j++)
                        mark(s, want, (pid_t)s->gpu->gpus[i].procs[j].pid, 0);
        return want;
}

static json_object *finding_json(const gr_snapshot *s, const gr_diagnosis *d, const gr_finding *f,
                                 const struct gpu_selection *sel)
{
        json_object *o = json_object_new_object();
        if (sel && sel->scope && sel->scope->kind != GR_SCOPE_NONE)
                add(o, "in_scope", json_object_new_string(gr_finding_scope_name(gr_finding_in_scope(s, sel->scope, f))));
        add(o, "kind", json_object_new_string(gr_finding_kind_name(f->kind)));
        add(o, "leftover", json_object_new_boolean(f->leftover));
        /* one finding per job: "gpu" only when it is about exactly one */
        add(o, "gpu", f->gpu >= 0 && f->n_gpus == 1 ? json_object_new_int64(s->gpu->gpus[f->gpu].index) : NULL);
        json_object *gpus = json_object_new_array();
        for (unsigned i = 0; i < s->gpu->n_gpus; i++)
                if (gr_finding_on_gpu(f, i))
                        json_object_array_add(gpus, json_object_new_int64(s->gpu->gpus[i].index));
        add(o, "gpus", gpus);
        char job[96];
        bool has_job = f->kind == GR_FIND_ORPHAN || f->kind == GR_FIND_SUSPECT || f->kind == GR_FIND_BUSY;
        add(o, "job", has_job ? json_object_new_string(gr_job_text(&f->job, job, sizeof(job))) : NULL);
        json_object *pids = json_object_new_array();
        for (unsigned i = 0; i < f->n_pids; i++)
                json_object_array_add(pids, json_object_new_int(f->pids[i]));
        add(o, "pids", pids);
        add(o, "related_pid", f->related ? json_object_new_int(f->related) : NULL);
        add(o, "memory", j_u64(f->memory));
        add(o, "confidence", json_object_new_string(gr_confidence_name(f->confidence)));
        struct finding_words fw;
        finding_words(s, d, f, &fw);
        add(o, "explanation", j_text(fw.explanation));
        add(o, "reason", j_str(fw.reason));
        add(o, "action", json_object_new_string(gr_action_kind_name(f->action.kind)));
        add(o, "next_step", j_str(fw.next_step));
        add(o, "advice", j_str(fw.advice));
        json_object *ev = json_object_new_array();
        for (unsigned i = 0; i < f->n_pids; i++) {
                const gr_holder_verdict *v = gr_diagnosis_holder(d, f->pids[i]);
                if (!v)
                        continue;
                json_object *one = evidence_json(&v->evidence, v->pid);
                for (size_t k = 0; k < json_object_array_length(one); k++)
                        json_object_array_add(ev, json_object_get(json_object_array_get_idx(one, k)));
                json_object_put(one);
        }
        add(o, "evidence", ev);
        return o;
}

struct json_object *status_json(const gr_snapshot *s, const gr_diagnosis *d, const struct gpu_selection *sel)
{
        json_object *root = json_object_new_object();
        add(root, "schema_version", json_object_new_int(JSON_SCHEMA_VERSION));
        add(root, "gpureap_version", json_object_new_string(GPUREAP_VERSION));
        add(root, "host", j_str(s->hostname));
        char when[64];
        time_t t = (time_t)(s->taken_at_ms / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        add(root, "taken_at", json_object_new_string(when));
        add(root, "taken_at_unix_ms", json_object_new_int64((int64_t)s->taken_at_ms));

        const gr_gpu_report *rep = s->gpu;
        json_object *drv = json_object_new_object();
        add(drv, "status", json_object_new_string(driver_status_name(rep->status)));
        add(drv, "error", j_str(rep->error));
        add(drv, "stuck_call", j_str(rep->stuck_call));
        add(drv, "library", j_str(rep->library));
        add(drv, "driver_version", j_str(rep->driver_version));
        add(drv, "nvml_version", j_str(rep->nvml_version));
        add(drv, "elapsed_ms", json_object_new_int64((int64_t)rep->elapsed_ms));
        add(root, "driver", drv);

        json_object *pr = json_object_new_object();
        add(pr, "root", j_text(s->proc_root));
        add(pr, "dev_dir", j_text(s->dev_dir));
        add(pr, "error", s->proc_error < 0 ? json_object_new_string(strerror(-s->proc_error)) : NULL);
        add(pr, "processes_scanned", json_object_new_int64(s->procs ? (int64_t)s->procs->n : 0));
        add(pr, "vanished", json_object_new_int64(s->procs ? s->procs->n_vanished : 0));
        add(pr, "unreadable", json_object_new_int64(s->procs ? s->procs->n_unreadable : 0));
        add(pr, "boot_time", s->procs && s->procs->boot_time ? json_object_new_int64((int64_t)s->procs->boot_time) : NULL);
        add(pr, "elapsed_ms", s->proc_elapsed_ms != GR_UNKNOWN_U64 ? json_object_new_int64((int64_t)s->proc_elapsed_ms) : NULL);
        add(pr, "slow", json_object_new_boolean(s->proc_slow));
        /* which scan found the holders, and why not the kernel-side one */
        add(pr, "scan", s->procs && s->procs->scan != GR_SCAN_UNKNOWN ? json_object_new_string(gr_scan_kind_name(s->procs->scan)) : NULL);
        add(pr, "scan_fallback", s->procs && s->procs->scan_fallback[0] ? j_text(s->procs->scan_fallback) : NULL);
        add(root, "proc", pr);

        json_object *view = json_object_new_object();
        add(view, "uid", json_object_new_int64(s->uid));
        add(view, "pid_namespace", json_object_new_string(gr_pidns_name(s->pidns)));
        add(view, "hidepid", json_object_new_boolean(s->hidepid));
        add(view, "replayed", json_object_new_boolean(s->replayed));
        add(view, "limits", d ? j_str(d->view) : NULL);
        add(root, "view", view);
        json_object *hist = NULL;
        if (s->history_since_ms) {
                hist = json_object_new_object();
                add(hist, "since_unix_ms", json_object_new_int64((int64_t)s->history_since_ms));
                add(hist, "events", json_object_new_boolean(s->history_events));
                add(hist, "events_lost", json_object_new_boolean(s->history_events_lost));
                add(hist, "served_by", s->served_by > 0 ? json_object_new_int(s->served_by) : NULL);
        }
        add(root, "history", hist);
        add(root, "kubelet", kubelet_json(&s->kubelet));
        if (sel && sel->scope && sel->scope->kind != GR_SCOPE_NONE) {
                json_object *sc = json_object_new_object();
                add(sc, "kind", json_object_new_string(gr_scope_kind_name(sel->scope->kind)));
                add(sc, "id", json_object_new_string(sel->scope->id));
                add(root, "scope", sc);
        }

        json_object *gpus = json_object_new_array();
        for (unsigned i = 0; i < rep->n_gpus; i++)
                if (gpu_selected(sel, &rep->gpus[i]))
                        json_object_array_add(gpus, gpu_json(s, d, i));
        add(root, "gpus", gpus);

        json_object *procs = json_object_new_array();
        bool *want = snapshot_wanted_processes(s);
        for (size_t i = 0; want && s->procs && i < s->procs->n; i++)
                if (want[i])
                        json_object_array_add(procs, process_json(s, d, &s->procs->procs[i], sel));
        free(want);
        add(root, "processes", procs);

        json_object *findings = json_object_new_array();
        for (size_t i = 0; d && i < d->n_findings; i++)
                if (finding_selected(sel, s, &d->findings[i]))
                        json_object_array_add(findings, finding_json(s, d, &d->findings[i], sel));
        add(root, "findings", d ? findings : NULL);
        if (s->drm)
                add(root, "drm", drm_json(s, d));
        if (!d)
                json_object_put(findings);
        return root;
}

int render_status_json(FILE *f, const gr_snapshot *s, const gr_diagnosis *d,
                       const struct gpu_selection *sel)
{
        json_object *root = status_json(s, d, sel);
        fputs(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                           JSON_C_TO_STRING_NOSLASHESCAPE), f);
        fputc('\n', f);
        json_object_put(root);
        return 0;
}
