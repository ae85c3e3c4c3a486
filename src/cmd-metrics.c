/* gpureap metrics: the snapshot and its diagnosis in the Prometheus text format, for
 * node_exporter's textfile collector (--textfile, written atomically) or a scrape of stdout;
 * serve's /metrics is the same text. The GPU labels are dcgm-exporter's, named and spelt as it
 * writes them, so that the two join in PromQL. No label is named job or instance: a scrape
 * would rename them (exported_job), those are the target's. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpureap-config.h"
#include "gpureap/basic.h"
#include "gpureap.h"

#define PROCESS_SERIES_MAX 64 /* per GPU: the biggest holders only, so a node never floods */

static void metrics_usage(FILE *f)
{
        fprintf(f,
                "usage: gpureap metrics [--textfile FILE] [--gpu SEL] [--nvml-timeout DUR]\n"
                "                       [--direct | --replay FILE]\n"
                "                       [--job ID | --cgroup PATH | --container ID | --pod UID]\n"
                "                       [--kubelet-socket PATH]\n"
                "\n"
                "The GPUs' memory, holders by role, leftovers by kind, per-process memory and the last\n"
                "reap's result, in the Prometheus text format (docs/integrations.md).\n"
                "\n"
                "  --textfile FILE  write FILE atomically (for node_exporter --collector.textfile.directory)\n"
                "  --gpu SEL        only these GPUs\n"
                "  --nvml-timeout   how long the driver gets (default 5s)\n"
                "  --direct         read the driver and /proc here, not through a running\n"
                "                   'gpureap serve'\n"
                "  --replay FILE    the metrics of a snapshot recorded with 'gpureap status --json'\n"
                "  --kubelet-socket PATH\n"
                "                   the kubelet's pod-resources socket, for the pod, namespace\n"
                "                   and container labels of the process series (default\n"
                "                   " GR_KUBELET_SOCKET_DEFAULT ", also $GPUREAP_KUBELET_SOCKET)\n"
                SCOPE_USAGE
                "                   (without --gpu: the GPUs its processes hold; the states,\n"
                "                   holders, leftovers and processes are the scope's)\n");
}

/* A label value: backslash, double quote and newline escaped, other control bytes dropped */
static void label(FILE *f, const char *s)
{
        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;
                if (c == '\\' || c == '"')
                        fprintf(f, "\\%c", c);
                else if (c == '\n')
                        fputs("\\n", f);
                else if (c >= 0x20 && c != 0x7f)
                        fputc(c, f);
        }
}

static void help(FILE *f, const char *name, const char *text)
{
        fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, text, name);
}

/* dcgm-exporter's labels of a GPU, in its order: gpu, UUID, pci_bus_id (NVML's form,
 * 00000000:1A:00.0), device, modelName, Hostname (the node name, uname -n: the snapshot's,
 * so a replay names the machine it recorded). An unknown value is "", which Prometheus
 * stores as no label. The GPU series carry no pod, namespace or container: a GPU's pod is not
 * one fact (time-sliced replicas, a deleted pod's leftover beside the pod that has the GPU
 * now), and a series whose labels change with each pod breaks the state series' history;
 * dcgm-exporter's series carry them, joined on UUID. The process series carry them (below). */
static void gpu_labels(FILE *f, const gr_snapshot *s, const gr_gpu *g)
{
        fprintf(f, "gpu=\"%u\",UUID=\"", g->index);
        label(f, g->uuid);
        fputs("\",pci_bus_id=\"", f);
        label(f, g->pci_bus_id);
        fputs("\",device=\"", f);
        if (g->minor >= 0)
                fprintf(f, "nvidia%d", g->minor);
        fputs("\",modelName=\"", f);
        label(f, g->name);
        fputs("\",Hostname=\"", f);
        label(f, s->hostname);
        fputc('"', f);
}

static void value(FILE *f, uint64_t v)
{
        if (v == GR_UNKNOWN_U64)
                fputs("NaN\n", f);
        else
                fprintf(f, "%llu\n", (unsigned long long)v);
}

struct last_reap {
        bool known;
        uint64_t time, targets, failed;
        int exit_code;
        pid_t survived[64];
        uint64_t survived_start[64];
        unsigned n_survived;
};

static void read_last_reap(struct last_reap *lr)
{
        FILE *f = state_fopen("last-reap");
        if (!f)
                return;
        char line[256];
        while (fgets(line, sizeof(line), f)) {
                unsigned long long a, b;
                int e;
                if (sscanf(line, "time %llu", &a) == 1)
                        lr->time = a;
                else if (sscanf(line, "exit %d", &e) == 1)
                        lr->exit_code = e;
                else if (sscanf(line, "targets %llu", &a) == 1)
                        lr->targets = a;
                else if (sscanf(line, "failed %llu", &a) == 1)
                        lr->failed = a;
                else if (sscanf(line, "survived %llu %llu", &a, &b) == 2 && lr->n_survived < 64) {
                        lr->survived[lr->n_survived] = (pid_t)a;
                        lr->survived_start[lr->n_survived++] = b;
                }
        }
        fclose(f);
        lr->known = lr->time > 0;
}

enum { K_GHOST, K_ORPHAN, K_STALE, K_STOPPED, K_UNKILLABLE, K_COUNT };
static const char *const kind_names[] = { "ghost", "orphan", "stale", "stopped", "unkillable" };

static uint64_t listed_bytes(const gr_gpu *g, pid_t pid)
{
        for (unsigned j = 0; j < g->n_procs; j++)
                if ((pid_t)g->procs[j].pid == pid && g->procs[j].used_bytes != GR_UNKNOWN_U64)
                        return g->procs[j].used_bytes;
        return 0;
}

/* With a scope, only its processes count (its findings are already the scope's: the diagnosis
 * was narrowed); a process the table lacks (gone) belongs to no scope */
static bool in_scope(const struct gpu_selection *sel, const gr_process *p)
{
        if (!sel || !sel->scope || sel->scope->kind == GR_SCOPE_NONE)
                return true;
        return p && gr_scope_contains(sel->scope, p) != GR_SCOPE_OUT;
}

static void leftovers(const gr_snapshot *s, const gr_diagnosis *d, const struct gpu_selection *sel,
                      const struct last_reap *lr, unsigned gi, uint64_t *count, uint64_t *bytes)
{
        const gr_gpu *g = &s->gpu->gpus[gi];
        for (size_t k = 0; k < d->n_findings; k++) {
                const gr_finding *f = &d->findings[k];
                if (!gr_finding_on_gpu(f, gi))
                        continue;
                /* a finding is about a job on all its GPUs: this GPU's part of it */
                uint64_t mem = gr_finding_memory_on(f, gi);
                mem = mem == GR_UNKNOWN_U64 ? 0 : mem;
                if (f->kind == GR_FIND_GHOST) {
                        count[K_GHOST]++;
                        bytes[K_GHOST] += mem;
                } else if (f->kind == GR_FIND_ORPHAN) {
                        count[K_ORPHAN] += gr_finding_pids_on(d, f, g);
                        bytes[K_ORPHAN] += mem;
                } else if (f->kind == GR_FIND_STALE || f->kind == GR_FIND_TEARDOWN) {
                        count[K_STALE]++;
                        bytes[K_STALE] += mem;
                }
        }
        for (size_t k = 0; k < d->n_holders; k++) {
                const gr_holder_verdict *v = &d->holders[k];
                if (v->judgement != GR_JUDGE_LEFTOVER || gr_process_fds_on_minor(v->process, g->minor) == 0 ||
                    !in_scope(sel, v->process))
                        continue;
                if (v->conditions & GR_COND_STOPPED) {
                        count[K_STOPPED]++;
                        bytes[K_STOPPED] += listed_bytes(g, v->pid);
                }
                for (unsigned i = 0; i < lr->n_survived; i++)
                        if (lr->survived[i] == v->pid && lr->survived_start[i] == v->process->start_time) {
                                count[K_UNKILLABLE]++; /* a SIGKILL of the last reap did not end it */
                                bytes[K_UNKILLABLE] += listed_bytes(g, v->pid);
                        }
        }
}

/* AMD and Intel GPUs (docs/drm.md): series of their own, labelled by PCI address, vendor and
 * driver; NVML's series above keep their labels (dcgm-exporter's). Only without a --gpu
 * selection, which names NVML's GPUs */
static void drm_series(FILE *f, const gr_snapshot *s, const gr_diagnosis *d, const struct gpu_selection *sel)
{
        const gr_drm_report *r = s->drm;
        if (!r || !d || !d->drm || (sel && sel->list))
                return;
        static const char *const names[] = { "gpureap_drm_gpu_state", "gpureap_drm_gpu_leftover_bytes",
                                             "gpureap_drm_gpu_memory_used_bytes", "gpureap_drm_gpu_clients" };
        static const char *const helps[] = {
                "1 for an AMD or Intel GPU's state: clean, busy or dirty",
                "VRAM its leftover DRM clients and AMD ghosts keep",
                "VRAM used as its driver reports it (amdgpu's mem_info_vram_used)",
                "DRM clients (open files, however many processes share each) by judgement",
        };
        for (size_t m = 0; m < GR_ELEMENTSOF(names); m++) {
                help(f, names[m], helps[m]);
                for (unsigned i = 0; i < r->n_gpus; i++) {
                        const gr_drm_gpu *g = &r->gpus[i];
                        char lb[160];
                        snprintf(lb, sizeof(lb), "pci_bus_id=\"%s\",vendor=\"%s\",driver=\"%s\"", g->pdev,
                                 gr_vendor_name(g->vendor), g->driver);
                        if (m == 0) {
                                for (int st = GR_GPU_CLEAN; st <= GR_GPU_DIRTY; st++)
                                        fprintf(f, "%s{%s,state=\"%s\"} %d\n", names[m], lb, gr_gpu_state_name((gr_gpu_state)st),
                                                d->drm->gpus[i].state == (gr_gpu_state)st);
                        } else if (m == 1) {
                                fprintf(f, "%s{%s} %llu\n", names[m], lb, (unsigned long long)d->drm->gpus[i].leftover_bytes);
                        } else if (m == 2 && g->vram_used != GR_UNKNOWN_U64) {
                                fprintf(f, "%s{%s} %llu\n", names[m], lb, (unsigned long long)g->vram_used);
                        } else if (m == 3) {
                                for (int j = GR_JUDGE_LIVE; j <= GR_JUDGE_LEFTOVER; j++) {
                                        unsigned n = 0;
                                        for (size_t c = 0; c < r->n_clients; c++)
                                                n += r->clients[c].gpu == (int)i && d->drm->clients[c].judgement == (gr_judgement)j;
                                        fprintf(f, "%s{%s,judgement=\"%s\"} %u\n", names[m], lb,
                                                gr_judgement_name((gr_judgement)j), n);
                                }
                        }
                }
        }
}

static void process_series(FILE *f, const gr_snapshot *s, const gr_diagnosis *d, const struct gpu_selection *sel,
                           unsigned gi)
{
        const gr_gpu *g = &s->gpu->gpus[gi];
        bool shown[GR_GPU_PROCS_MAX] = { false };
        for (unsigned n = 0; n < PROCESS_SERIES_MAX && n < g->n_procs; n++) {
                unsigned best = g->n_procs;
                for (unsigned j = 0; j < g->n_procs; j++)
                        if (!shown[j] && (best == g->n_procs ||
                                          (g->procs[j].used_bytes != GR_UNKNOWN_U64 &&
                                           (g->procs[best].used_bytes == GR_UNKNOWN_U64 ||
                                            g->procs[j].used_bytes > g->procs[best].used_bytes))))
                                best = j;
                shown[best] = true;
                const gr_gpu_proc *o = &g->procs[best];
                const gr_holder_verdict *v = gr_diagnosis_holder(d, (pid_t)o->pid);
                const gr_process *p = gr_proc_table_find(s->procs, (pid_t)o->pid);
                if (!in_scope(sel, p))
                        continue;
                char job[96] = "";
                if (v)
                        gr_job_text(&v->job, job, sizeof(job));
                fputs("gpureap_process_gpu_memory_bytes{", f);
                gpu_labels(f, s, g);
                fprintf(f, ",pid=\"%u\",comm=\"", o->pid);
                label(f, p ? p->comm : "");
                /* gpureap's grouping ("process group N"), not the scrape's job */
                fputs("\",gpureap_job=\"", f);
                label(f, job);
                fprintf(f, "\",judgement=\"%s", v ? gr_judgement_name(v->judgement) : "gone");
                /* dcgm-exporter's names, where the kubelet's devices or the runtime named its pod
                 * (docs/architecture.md, "The kubelet"); "" (no label) where none did */
                const gr_pod *pod = p && p->pod && p->pod->name[0] ? p->pod : NULL;
                fputs("\",pod=\"", f);
                label(f, pod ? pod->name : "");
                fputs("\",namespace=\"", f);
                label(f, pod ? pod->ns : "");
                fputs("\",container=\"", f);
                label(f, pod ? pod->container : "");
                fputs("\"} ", f);
                value(f, o->used_bytes);
        }
}

/* each GPU's memory, state and holders by role */
static void gpu_series(FILE *f, const gr_snapshot *s, const gr_diagnosis *d, const struct gpu_selection *sel)
{
        const gr_gpu_report *rep = s->gpu;
        static const struct { const char *name, *text; size_t off; } mem[] = {
                { "gpureap_gpu_memory_total_bytes", "total memory", offsetof(gr_gpu, mem_total) },
                { "gpureap_gpu_memory_used_bytes", "used memory (v2: without the driver's reserve)", offsetof(gr_gpu, mem_used) },
                { "gpureap_gpu_memory_reserved_bytes", "memory the driver reserves (v2 only)", offsetof(gr_gpu, mem_reserved) },
                { "gpureap_gpu_memory_free_bytes", "free memory", offsetof(gr_gpu, mem_free) },
        };
        for (size_t m = 0; m < GR_ELEMENTSOF(mem); m++) {
                help(f, mem[m].name, mem[m].text);
                for (unsigned i = 0; i < rep->n_gpus; i++) {
                        if (!gpu_selected(sel, &rep->gpus[i]))
                                continue;
                        fprintf(f, "%s{", mem[m].name);
                        gpu_labels(f, s, &rep->gpus[i]);
                        fputs("} ", f);
                        value(f, *(const uint64_t *)((const char *)&rep->gpus[i] + mem[m].off));
                }
        }
        help(f, "gpureap_gpu_unaccounted_memory_bytes", "used memory that no live listed process accounts for");
        for (unsigned i = 0; i < rep->n_gpus; i++) {
                if (!gpu_selected(sel, &rep->gpus[i]))
                        continue;
                fputs("gpureap_gpu_unaccounted_memory_bytes{", f);
                gpu_labels(f, s, &rep->gpus[i]);
                fputs("} ", f);
                value(f, d->gpus[i].unaccounted);
        }
        help(f, "gpureap_gpu_state", "1 for the GPU's state: clean, busy, dirty, stale or unknown");
        for (unsigned i = 0; i < rep->n_gpus; i++)
                for (int st = GR_GPU_CLEAN; gpu_selected(sel, &rep->gpus[i]) && st <= GR_GPU_UNKNOWN; st++) {
                        fputs("gpureap_gpu_state{", f);
                        gpu_labels(f, s, &rep->gpus[i]);
                        fprintf(f, ",state=\"%s\"} %d\n", gr_gpu_state_name((gr_gpu_state)st), d->gpus[i].state == (gr_gpu_state)st);
                }
        help(f, "gpureap_gpu_holders", "processes with the GPU's device file open, by role");
        for (unsigned i = 0; i < rep->n_gpus; i++)
                for (int role = GR_ROLE_OWNER; gpu_selected(sel, &rep->gpus[i]) && role <= GR_ROLE_MONITOR; role++) {
                        unsigned n = 0;
                        for (size_t k = 0; k < d->n_holders; k++)
                                n += d->holders[k].role == (gr_role)role &&
                                     gr_process_fds_on_minor(d->holders[k].process, rep->gpus[i].minor) > 0 &&
                                     in_scope(sel, d->holders[k].process);
                        fputs("gpureap_gpu_holders{", f);
                        gpu_labels(f, s, &rep->gpus[i]);
                        fprintf(f, ",role=\"%s\"} %u\n", gr_role_name((gr_role)role), n);
                }
}

/* the leftovers by kind, their memory, and the memory per process */
static void leftover_series(FILE *f, const gr_snapshot *s, const gr_diagnosis *d, const struct gpu_selection *sel,
                            const struct last_reap *lr)
{
        const gr_gpu_report *rep = s->gpu;
        uint64_t count[GR_GPUS_MAX][K_COUNT] = { { 0 } }, bytes[GR_GPUS_MAX][K_COUNT] = { { 0 } };
        for (unsigned i = 0; i < rep->n_gpus && i < GR_GPUS_MAX; i++)
                leftovers(s, d, sel, lr, i, count[i], bytes[i]);
        help(f, "gpureap_gpu_leftovers", "leftovers by kind: ghost, orphan, stale, stopped, unkillable (survived the last reap)");
        for (unsigned i = 0; i < rep->n_gpus && i < GR_GPUS_MAX; i++)
                for (int k = 0; gpu_selected(sel, &rep->gpus[i]) && k < K_COUNT; k++) {
                        fputs("gpureap_gpu_leftovers{", f);
                        gpu_labels(f, s, &rep->gpus[i]);
                        fprintf(f, ",kind=\"%s\"} %llu\n", kind_names[k], (unsigned long long)count[i][k]);
                }
        help(f, "gpureap_gpu_leftover_bytes", "GPU memory that leftovers keep, by kind");
        for (unsigned i = 0; i < rep->n_gpus && i < GR_GPUS_MAX; i++)
                for (int k = 0; gpu_selected(sel, &rep->gpus[i]) && k < K_COUNT; k++) {
                        fputs("gpureap_gpu_leftover_bytes{", f);
                        gpu_labels(f, s, &rep->gpus[i]);
                        fprintf(f, ",kind=\"%s\"} %llu\n", kind_names[k], (unsigned long long)bytes[i][k]);
                }
        help(f, "gpureap_process_gpu_memory_bytes", "memory the driver lists per process (the biggest 64 per GPU)");
        for (unsigned i = 0; i < rep->n_gpus; i++)
                if (gpu_selected(sel, &rep->gpus[i]))
                        process_series(f, s, d, sel, i);
}

/* what a resident 'gpureap serve' remembers: never more than it watched */
static void serve_series(FILE *f, const gr_snapshot *s, const gr_diagnosis *d, const struct gpu_selection *sel)
{
        const gr_gpu_report *rep = s->gpu;
        uint64_t now = s->taken_at_ms;
        help(f, "gpureap_serve_watched_seconds", "how long gpureap serve has been watching: no duration claims more");
        fprintf(f, "gpureap_serve_watched_seconds %.3f\n",
                (double)(now > s->history_since_ms ? now - s->history_since_ms : 0) / 1000);
        help(f, "gpureap_serve_process_events", "1 when serve gets the kernel's process events (how launchers ended)");
        fprintf(f, "gpureap_serve_process_events %d\n", s->history_events && !s->history_events_lost);
        if (rep->status != GR_GPU_OK || !d || !s->gpu_state_since_ms)
                return;
        help(f, "gpureap_gpu_state_duration_seconds",
             "how long the GPU has been in its present state (at most as long as serve watched)");
        for (unsigned i = 0; i < rep->n_gpus && i < d->n_gpus; i++) {
                uint64_t since = s->gpu_state_since_ms[i];
                if (!gpu_selected(sel, &rep->gpus[i]) || !since)
                        continue;
                fputs("gpureap_gpu_state_duration_seconds{", f);
                gpu_labels(f, s, &rep->gpus[i]);
                fprintf(f, ",state=\"%s\"} %.3f\n", gr_gpu_state_name(d->gpus[i].state),
                        (double)(now > since ? now - since : 0) / 1000);
        }
}

static void last_reap_series(FILE *f, const struct last_reap *lr)
{
        help(f, "gpureap_last_reap_timestamp_seconds", "when the last reap ended (seconds since the epoch)");
        fprintf(f, "gpureap_last_reap_timestamp_seconds %llu\n", (unsigned long long)lr->time);
        help(f, "gpureap_last_reap_success", "1 when the last reap verified its GPUs and every target ended");
        fprintf(f, "gpureap_last_reap_success %d\n", lr->exit_code == 0);
        help(f, "gpureap_last_reap_targets", "processes the last reap signalled");
        fprintf(f, "gpureap_last_reap_targets %llu\n", (unsigned long long)lr->targets);
        help(f, "gpureap_last_reap_failed_targets", "targets of the last reap that survived, were denied, or could not be signalled");
        fprintf(f, "gpureap_last_reap_failed_targets %llu\n", (unsigned long long)lr->failed);
}

void metrics_render(FILE *f, const gr_snapshot *s, const gr_diagnosis *d, const struct gpu_selection *sel)
{
        const gr_gpu_report *rep = s->gpu;
        help(f, "gpureap_build_info", "1, with the version of gpureap and of the driver it read (\"\" when unknown)");
        fprintf(f, "gpureap_build_info{version=\"%s\",driver=\"", GPUREAP_VERSION);
        label(f, rep->driver_version);
        fputs("\"} 1\n", f);
        help(f, "gpureap_up", "1 when the driver answered, 0 when it failed or did not answer in time");
        fprintf(f, "gpureap_up %d\n", rep->status == GR_GPU_OK);
        help(f, "gpureap_driver_duration_seconds", "time the driver took to answer");
        fprintf(f, "gpureap_driver_duration_seconds %.3f\n", (double)rep->elapsed_ms / 1000);
        if (rep->status == GR_GPU_OK && d)
                gpu_series(f, s, d, sel);
        drm_series(f, s, d, sel);
        struct last_reap lr = { 0 };
        if (!s->replayed)
                read_last_reap(&lr); /* this machine's last reap says nothing about a recording */
        if (rep->status == GR_GPU_OK && d)
                leftover_series(f, s, d, sel, &lr);
        if (s->history_since_ms)
                serve_series(f, s, d, sel);
        if (lr.known)
                last_reap_series(f, &lr);
}

static int write_atomically(const char *path, const gr_snapshot *s, const gr_diagnosis *d,
                            const struct gpu_selection *sel)
{
        char tmp[4096];
        if (snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()) >= (int)sizeof(tmp))
                return -ENAMETOOLONG;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        FILE *f = fdopen(fd, "w");
        if (!f) {
                int r = -errno;
                close(fd);
                unlink(tmp);
                return r;
        }
        metrics_render(f, s, d, sel);
        /* a collector must never read half a file: the whole of it, on disk, then the rename */
        int r = fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : -errno;
        if (fclose(f) != 0 && r == 0)
                r = -errno;
        if (r == 0 && output_path_ok("--textfile", path) < 0) /* replaced since the start */
                r = -EEXIST;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                unlink(tmp);
        return r;
}

struct metrics_args {
        gr_scope scope;
        const char *textfile, *replay;
        bool direct;
        char gpus[1024];
        gr_snapshot_options so;
};

/* 0 to go on, 1 when the help was printed, -1 for a usage error */
static int metrics_parse(struct metrics_args *m, int argc, char **argv)
{
        static const struct option opts[] = {
                { "textfile", required_argument, NULL, 'o' },
                { "gpu", required_argument, NULL, 'g' },
                { "nvml-timeout", required_argument, NULL, 't' },
                { "replay", required_argument, NULL, 'r' },
                { "direct", no_argument, NULL, 'D' },
                { "job", required_argument, NULL, OPT_JOB },
                { "cgroup", required_argument, NULL, OPT_CGROUP },
                { "container", required_argument, NULL, OPT_CONTAINER },
                { "pod", required_argument, NULL, OPT_POD },
                { "kubelet-socket", required_argument, NULL, OPT_KUBELET_SOCKET },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        const char *kubelet_socket = NULL;
        m->scope = (gr_scope){ .kind = GR_SCOPE_NONE };
        if (nvml_timeout_from_env(&m->so.gpu.timeout_ms) < 0)
                return -1;
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "+o:g:t:r:Dh", opts, NULL)) != -1) {
                switch (c) {
                case 'o': m->textfile = optarg; break;
                case 'r': m->replay = optarg; break;
                case 'D': m->direct = true; break;
                case 'g':
                        if (gpu_option_append(m->gpus, sizeof(m->gpus), optarg) < 0)
                                return -1;
                        break;
                case 't':
                        if (parse_duration_option(optarg, &m->so.gpu.timeout_ms, false) < 0)
                                return -1;
                        break;
                case OPT_JOB:
                case OPT_CGROUP:
                case OPT_CONTAINER:
                case OPT_POD:
                        if (scope_option(scope_option_name(c), optarg, &m->scope) < 0)
                                return -1;
                        break;
                case OPT_KUBELET_SOCKET: kubelet_socket = optarg; break;
                case 'h':
                        metrics_usage(stdout);
                        return 1;
                default:
                        unknown_option(argc, argv, opts, "metrics");
                        return -1;
                }
        }
        if (no_stray_arguments(argc, argv, "metrics") < 0 || kubelet_socket_option(&m->so, kubelet_socket) < 0)
                return -1;
        if (m->textfile && !m->textfile[0]) {
                error_msg("--textfile needs a file name");
                return -1;
        }
        if (m->textfile && output_path_ok("--textfile", m->textfile) < 0)
                return -1;
        return 0;
}

int cmd_metrics(int argc, char **argv)
{
        struct metrics_args m = { 0 };
        int pa = metrics_parse(&m, argc, argv);
        if (pa != 0)
                return pa > 0 ? EXIT_CLEAN : EXIT_USAGE;
        const char *textfile = m.textfile, *replay = m.replay, *gpus = m.gpus;
        gr_scope scope = m.scope;
        gr_snapshot_options so = m.so;
        bool direct = m.direct;
        struct gpu_selection sel = { .list = gpus[0] ? gpus : NULL, .scope = &scope };
        gr_snapshot *s = NULL;
        gr_diagnosis *d = NULL;
        int r;
        if (replay) {
                char err[512];
                if (snapshot_from_json(replay, &s, err, sizeof(err)) < 0) {
                        error_msg("%s", err);
                        return EXIT_USAGE;
                }
        } else if ((r = view_take(&so, direct ? VIEW_DIRECT : VIEW_SERVED_OK, &s)) < 0) {
                error_msg("cannot take a snapshot: %s", strerror(-r));
                return EXIT_DRIVER;
        }
        char bad[128];
        if (s->gpu->status == GR_GPU_OK && gpu_selection_unmatched(&sel, s->gpu, bad, sizeof(bad))) {
                gpu_selection_error(&sel, s->gpu);
                gr_snapshot_free(s);
                return EXIT_USAGE;
        }
        /* no NVIDIA driver but AMD or Intel GPUs: their series answer (docs/drm.md) */
        bool drm_only = gr_snapshot_drm_only(s);
        if ((s->gpu->status == GR_GPU_OK || s->drm) && (r = gr_diagnose(s, getuid(), &d)) < 0) {
                error_msg("cannot diagnose: %s", strerror(-r));
                gr_snapshot_free(s);
                return EXIT_DRIVER;
        }
        sel.scope_mask = scope_gpus(s, &scope);
        gr_diagnosis_narrow(d, s, &scope);
        int code = s->gpu->status == GR_GPU_OK || drm_only ? EXIT_CLEAN : EXIT_DRIVER;
        if (textfile) {
                if ((r = write_atomically(textfile, s, d, &sel)) < 0) {
                        error_msg("cannot write '%s': %s", QUOTED(textfile), strerror(-r));
                        code = r == -EEXIST ? EXIT_USAGE : EXIT_OUTPUT; /* replaced by a non-file meanwhile */
                }
        } else {
                metrics_render(stdout, s, d, &sel);
        }
        if (s->gpu->status != GR_GPU_OK && !drm_only)
                error_msg("%s", s->gpu->error); /* the metrics say gpureap_up 0 */
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        return code;
}
