/* The AMD and Intel view in words: its part of the status table and of the JSON ("drm",
 * docs/json-schema.md). The facts are the library's (gr_drm_report, gr_drm_diagnosis). */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "gpureap.h"
#include "gpureap/basic.h"
#include "gpureap/diagnose.h"

static json_object *j_bytes(uint64_t v)
{
        return v == GR_UNKNOWN_U64 ? NULL : json_object_new_int64((int64_t)(v > INT64_MAX ? INT64_MAX : v));
}

static json_object *j_name(const char *s)
{
        char buf[GR_DRM_NAME_MAX];
        gr_strlcpy(buf, s, sizeof(buf));
        gr_text_sanitize(buf);
        return buf[0] ? json_object_new_string(buf) : NULL;
}

static void put(json_object *o, const char *k, json_object *v)
{
        json_object_object_add(o, k, v);
}

static json_object *gpu_json(const gr_drm_report *r, const gr_drm_diagnosis *dd, unsigned i)
{
        const gr_drm_gpu *g = &r->gpus[i];
        json_object *o = json_object_new_object();
        put(o, "pci_bus_id", j_name(g->pdev));
        put(o, "vendor", json_object_new_string(gr_vendor_name(g->vendor)));
        put(o, "driver", j_name(g->driver));
        put(o, "state", dd ? json_object_new_string(gr_gpu_state_name(dd->gpus[i].state)) : NULL);
        put(o, "leftover_memory", dd ? j_bytes(dd->gpus[i].leftover_bytes) : NULL);
        put(o, "card_minor", g->card_minor >= 0 ? json_object_new_int(g->card_minor) : NULL);
        put(o, "render_minor", g->render_minor >= 0 ? json_object_new_int(g->render_minor) : NULL);
        put(o, "kfd_gpu_id", g->kfd_gpu_id ? json_object_new_int64(g->kfd_gpu_id) : NULL);
        put(o, "memory_total", j_bytes(g->vram_total));
        put(o, "memory_used", j_bytes(g->vram_used));
        json_object *src = json_object_new_array();
        for (unsigned k = 0; k < GR_SOURCE_COUNT; k++)
                if (g->sources & 1u << k)
                        json_object_array_add(src, json_object_new_string(gr_drm_source_name((gr_drm_source)k)));
        put(o, "sources", src);
        return o;
}

static json_object *client_json(const gr_drm_report *r, const gr_drm_diagnosis *dd, size_t i)
{
        const gr_drm_client *c = &r->clients[i];
        json_object *o = json_object_new_object();
        put(o, "pci_bus_id", j_name(c->pdev));
        put(o, "client_id", json_object_new_int64((int64_t)(c->client_id > INT64_MAX ? INT64_MAX : c->client_id)));
        put(o, "driver", j_name(c->driver));
        put(o, "memory", j_bytes(c->device_bytes));
        put(o, "memory_shared", c->device_bytes == GR_UNKNOWN_U64 ? NULL : j_bytes(c->shared_bytes));
        json_object *regions = json_object_new_object();
        for (unsigned k = 0; k < c->n_regions; k++) {
                const gr_drm_region *g = &c->regions[k];
                json_object *ro = json_object_new_object();
                put(ro, "total", j_bytes(g->total != GR_UNKNOWN_U64 ? g->total : g->memory));
                put(ro, "shared", j_bytes(g->shared));
                put(ro, "resident", j_bytes(g->resident));
                put(ro, "device", json_object_new_boolean(gr_drm_region_is_device(g->name)));
                char name[GR_DRM_NAME_MAX];
                gr_strlcpy(name, g->name, sizeof(name));
                gr_text_sanitize(name);
                put(regions, name, ro);
        }
        put(o, "regions", regions);
        json_object *hs = json_object_new_array();
        for (unsigned k = 0; k < c->n_holders && k < GR_DRM_CLIENT_HOLDERS_MAX; k++) {
                json_object *h = json_object_new_object();
                put(h, "pid", json_object_new_int(c->holders[k].pid));
                put(h, "fd", json_object_new_int(c->holders[k].fd));
                json_object_array_add(hs, h);
        }
        put(o, "holders", hs);
        put(o, "holders_truncated", json_object_new_boolean(c->n_holders > GR_DRM_CLIENT_HOLDERS_MAX));
        if (dd) {
                const gr_drm_client_verdict *v = &dd->clients[i];
                json_object *vo = json_object_new_object();
                put(vo, "judgement", json_object_new_string(gr_judgement_name(v->judgement)));
                put(vo, "confidence", json_object_new_string(gr_confidence_name(v->confidence)));
                put(vo, "holders_leftover", json_object_new_int((int)v->n_leftover));
                put(vo, "holders_live", json_object_new_int((int)v->n_live));
                put(vo, "holders_unsure", json_object_new_int((int)v->n_unsure));
                put(o, "verdict", vo);
        } else {
                put(o, "verdict", NULL);
        }
        return o;
}

static json_object *ghost_json(const gr_drm_report *r, const gr_kfd_ghost *g)
{
        json_object *o = json_object_new_object();
        put(o, "pid", json_object_new_int(g->pid));
        put(o, "process", json_object_new_string(g->zombie ? "zombie" : "not_found"));
        put(o, "pci_bus_id", g->gpu >= 0 ? j_name(r->gpus[g->gpu].pdev) : NULL);
        put(o, "kfd_gpu_id", json_object_new_int64(g->gpu_id));
        put(o, "memory", j_bytes(g->vram));
        json_object *hs = json_object_new_array();
        for (unsigned k = 0; k < g->n_holders; k++)
                json_object_array_add(hs, json_object_new_int(g->holders[k]));
        put(o, "hidden_holders", hs);
        put(o, "confidence", json_object_new_string(gr_confidence_name(g->confidence)));
        return o;
}

struct json_object *drm_json(const gr_snapshot *s, const gr_diagnosis *d)
{
        const gr_drm_report *r = s->drm;
        const gr_drm_diagnosis *dd = d ? d->drm : NULL;
        json_object *o = json_object_new_object();
        json_object *gpus = json_object_new_array();
        for (unsigned i = 0; i < r->n_gpus; i++)
                json_object_array_add(gpus, gpu_json(r, dd, i));
        put(o, "gpus", gpus);
        json_object *clients = json_object_new_array();
        for (size_t i = 0; i < r->n_clients; i++)
                json_object_array_add(clients, client_json(r, dd, i));
        put(o, "clients", clients);
        json_object *kfd = json_object_new_array();
        for (size_t i = 0; i < r->n_kfd; i++) {
                json_object *k = json_object_new_object();
                put(k, "pid", json_object_new_int(r->kfd[i].pid));
                put(k, "kfd_gpu_id", json_object_new_int64(r->kfd[i].gpu_id));
                put(k, "pci_bus_id", r->kfd[i].gpu >= 0 ? j_name(r->gpus[r->kfd[i].gpu].pdev) : NULL);
                put(k, "memory", j_bytes(r->kfd[i].vram));
                json_object_array_add(kfd, k);
        }
        put(o, "kfd", r->kfd_present ? kfd : NULL);
        if (!r->kfd_present)
                json_object_put(kfd);
        json_object *ghosts = json_object_new_array();
        for (size_t i = 0; dd && i < dd->n_ghosts; i++)
                json_object_array_add(ghosts, ghost_json(r, &dd->ghosts[i]));
        put(o, "ghosts", ghosts);
        put(o, "fdinfo_unreadable", json_object_new_int((int)r->n_unreadable));
        put(o, "reaped", json_object_new_boolean(true)); /* the plan takes them (docs/drm.md) */
        return o;
}

/* ---- the table ---- */

static const char *pid_comm(const gr_snapshot *s, pid_t pid)
{
        const gr_process *p = gr_proc_table_find(s->procs, pid);
        return p ? p->comm : "?";
}

static void holders_text(const gr_snapshot *s, const gr_drm_client *c, char *buf, size_t size)
{
        size_t o = 0;
        buf[0] = '\0';
        pid_t last = 0;
        for (unsigned k = 0; k < c->n_holders && k < GR_DRM_CLIENT_HOLDERS_MAX && o < size; k++) {
                if (c->holders[k].pid == last)
                        continue;
                last = c->holders[k].pid;
                o += (size_t)snprintf(buf + o, size - o, "%s%d (%s)", o ? ", " : "", (int)last, pid_comm(s, last));
        }
        if (c->n_holders > GR_DRM_CLIENT_HOLDERS_MAX && o < size)
                snprintf(buf + o, size - o, ", ...");
}

void render_drm_table(const struct term *t, const gr_snapshot *s, const gr_diagnosis *d)
{
        const gr_drm_report *r = s->drm;
        const gr_drm_diagnosis *dd = d ? d->drm : NULL;
        if (!r)
                return;
        out_linef(t, "\nAMD and Intel GPUs (DRM fdinfo, KFD):");
        for (unsigned i = 0; i < r->n_gpus; i++) {
                const gr_drm_gpu *g = &r->gpus[i];
                char used[32], total[32], mem[96] = "";
                if (g->vram_total != GR_UNKNOWN_U64) {
                        gr_format_bytes(g->vram_used, used, sizeof(used));
                        gr_format_bytes(g->vram_total, total, sizeof(total));
                        snprintf(mem, sizeof(mem), "  %s / %s VRAM", used, total);
                }
                out_linef(t, "  %-13s %-6s %-7s %s%s", g->pdev, gr_vendor_name(g->vendor), g->driver[0] ? g->driver : "?",
                          dd ? gr_gpu_state_name(dd->gpus[i].state) : "?", mem);
        }
        if (r->n_gpus == 0)
                out_linef(t, "  none found in sysfs");
        if (r->n_clients > 0) {
                out_linef(t, "\nDRM clients (one open file each, counted once however many hold it):");
                for (size_t i = 0; i < r->n_clients; i++) {
                        const gr_drm_client *c = &r->clients[i];
                        char mem[32], shared[32], who[400], verdict[48] = "";
                        gr_format_bytes(c->device_bytes, mem, sizeof(mem));
                        gr_format_bytes(c->shared_bytes, shared, sizeof(shared));
                        holders_text(s, c, who, sizeof(who));
                        if (dd)
                                snprintf(verdict, sizeof(verdict), "%s (%s)", gr_judgement_name(dd->clients[i].judgement),
                                         gr_confidence_name(dd->clients[i].confidence));
                        char line[700];
                        snprintf(line, sizeof(line), "  %s client %llu: %s of VRAM%s%s%s, %s; held by %s", c->pdev,
                                 (unsigned long long)c->client_id, mem,
                                 c->shared_bytes && c->shared_bytes != GR_UNKNOWN_U64 ? " (" : "",
                                 c->shared_bytes && c->shared_bytes != GR_UNKNOWN_U64 ? shared : "",
                                 c->shared_bytes && c->shared_bytes != GR_UNKNOWN_U64 ? " shared)" : "", verdict, who);
                        out_wrap(t, 0, 6, line);
                }
        }
        for (size_t i = 0; dd && i < dd->n_ghosts; i++) {
                const gr_kfd_ghost *g = &dd->ghosts[i];
                char mem[32], who[300] = "";
                size_t o = 0;
                gr_format_bytes(g->vram, mem, sizeof(mem));
                for (unsigned k = 0; k < g->n_holders && o < sizeof(who); k++)
                        o += (size_t)snprintf(who + o, sizeof(who) - o, "%s%d (%s)", k ? ", " : "", (int)g->holders[k],
                                              pid_comm(s, g->holders[k]));
                char line[600];
                snprintf(line, sizeof(line), "AMD ghost: PID %d is %s, KFD still counts %s of VRAM for it on %s; %s%s (%s)",
                         (int)g->pid, g->zombie ? "a zombie" : "gone", mem, g->gpu >= 0 ? r->gpus[g->gpu].pdev : "?",
                         g->n_holders ? "kept by " : "no holder found", who, gr_confidence_name(g->confidence));
                fputc('\n', t->f);
                out_wrap(t, 0, 6, line);
        }
        bool any_leftover = dd && dd->n_ghosts > 0;
        for (size_t i = 0; dd && i < r->n_clients; i++)
                any_leftover |= dd->clients[i].judgement == GR_JUDGE_LEFTOVER;
        if (any_leftover) {
                fputc('\n', t->f);
                out_wrap(t, 0, 6, "note: gpureap reap ends a leftover client's holders together (it is freed only when "
                                  "all end) and spares one that shares a client with a process it does not end "
                                  "(docs/drm.md); gpureap check names the command for each GPU");
        }
        if (r->n_unreadable > 0) {
                char line[200];
                snprintf(line, sizeof(line), "note: %u DRM fdinfo files could not be read (another user's): run as root to see every client",
                         r->n_unreadable);
                out_wrap(t, 0, 6, line);
        }
}
