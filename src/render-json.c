/* The status facts as JSON (docs/json-schema.md). Memory in bytes; null where unknown. */
#include <json-c/json.h>
#include <string.h>
#include <time.h>

#include "gpureap/basic.h"
#include "gpureap-config.h"
#include "gpureap.h"

static json_object *j_u64(uint64_t v)
{
        return v == GR_UNKNOWN_U64 ? NULL : json_object_new_int64((int64_t)v);
}

static json_object *j_str(const char *s)
{
        return s && *s ? json_object_new_string(s) : NULL;
}

static void add(json_object *o, const char *k, json_object *v)
{
        json_object_object_add(o, k, v);
}

static const char *driver_status_name(gr_gpu_status st)
{
        switch (st) {
        case GR_GPU_OK: return "ok";
        case GR_GPU_NO_LIBRARY: return "no_library";
        case GR_GPU_INIT_FAILED: return "init_failed";
        case GR_GPU_FAILED: return "failed";
        case GR_GPU_TIMEOUT: return "timeout";
        }
        return "unknown";
}

static json_object *process_json(const gr_snapshot *s, const gr_process *p)
{
        json_object *o = json_object_new_object();
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
        add(o, "uid", p->has_uid ? json_object_new_int64(p->uid) : NULL);
        add(o, "comm", json_object_new_string(p->comm));
        add(o, "cmdline", j_str(p->cmdline));
        json_object *ns = json_object_new_array();
        for (unsigned i = 0; i < p->n_nspid; i++)
                json_object_array_add(ns, json_object_new_int(p->nspid[i]));
        add(o, "nspid", ns);
        add(o, "cgroup", j_str(p->cgroup));
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
                add(dev, "maps", json_object_new_int64(h->n_maps));
        }
        add(o, "devices", dev);
        return o;
}

static json_object *gpu_json(const gr_snapshot *s, const gr_gpu *g)
{
        json_object *o = json_object_new_object();
        add(o, "index", json_object_new_int64(g->index));
        add(o, "minor", g->minor >= 0 ? json_object_new_int(g->minor) : NULL);
        add(o, "uuid", j_str(g->uuid));
        add(o, "pci_bus_id", j_str(g->pci_bus_id));
        add(o, "name", j_str(g->name));
        if (g->minor >= 0) {
                char path[1100];
                snprintf(path, sizeof(path), "%s/nvidia%d", s->dev_dir, g->minor);
                add(o, "device_file", json_object_new_string(path));
        } else {
                add(o, "device_file", NULL);
        }
        json_object *m = json_object_new_object();
        add(m, "total", j_u64(g->mem_total));
        add(m, "reserved", j_u64(g->mem_reserved));
        add(m, "used", j_u64(g->mem_used));
        add(m, "free", j_u64(g->mem_free));
        add(m, "api", g->mem_api ? json_object_new_string(g->mem_api == 2 ? "v2" : "v1") : NULL);
        add(o, "memory", m);

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
                                gr_owner_state_name(gr_snapshot_owner_state(s, (pid_t)p->pid))));
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

static bool wanted_process(const gr_snapshot *s, const gr_process *p)
{
        if (p->hold)
                return true;
        for (unsigned i = 0; i < s->gpu->n_gpus; i++)
                for (unsigned j = 0; j < s->gpu->gpus[i].n_procs; j++)
                        if ((pid_t)s->gpu->gpus[i].procs[j].pid == p->pid)
                                return true;
        return false;
}

int render_status_json(FILE *f, const gr_snapshot *s, const struct gpu_selection *sel)
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

        const gr_gpu_report *rep = s->gpu;
        json_object *d = json_object_new_object();
        add(d, "status", json_object_new_string(driver_status_name(rep->status)));
        add(d, "error", j_str(rep->error));
        add(d, "stuck_call", j_str(rep->stuck_call));
        add(d, "library", j_str(rep->library));
        add(d, "driver_version", j_str(rep->driver_version));
        add(d, "nvml_version", j_str(rep->nvml_version));
        add(d, "elapsed_ms", json_object_new_int64((int64_t)rep->elapsed_ms));
        add(root, "driver", d);

        json_object *pr = json_object_new_object();
        add(pr, "root", json_object_new_string(s->proc_root));
        add(pr, "dev_dir", json_object_new_string(s->dev_dir));
        add(pr, "error", s->proc_error < 0 ? json_object_new_string(strerror(-s->proc_error)) : NULL);
        add(pr, "processes_scanned", json_object_new_int64(s->procs ? (int64_t)s->procs->n : 0));
        add(pr, "vanished", json_object_new_int64(s->procs ? s->procs->n_vanished : 0));
        add(pr, "unreadable", json_object_new_int64(s->procs ? s->procs->n_unreadable : 0));
        add(root, "proc", pr);

        json_object *gpus = json_object_new_array();
        for (unsigned i = 0; i < rep->n_gpus; i++)
                if (gpu_selected(sel, &rep->gpus[i]))
                        json_object_array_add(gpus, gpu_json(s, &rep->gpus[i]));
        add(root, "gpus", gpus);

        json_object *procs = json_object_new_array();
        for (size_t i = 0; s->procs && i < s->procs->n; i++)
                if (wanted_process(s, &s->procs->procs[i]))
                        json_object_array_add(procs, process_json(s, &s->procs->procs[i]));
        add(root, "processes", procs);

        fputs(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                           JSON_C_TO_STRING_NOSLASHESCAPE), f);
        fputc('\n', f);
        json_object_put(root);
        return 0;
}
