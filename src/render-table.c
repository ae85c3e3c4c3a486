/* The status table, for a person at a terminal */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "gpureap/basic.h"
#include "gpureap-config.h"
#include "gpureap.h"

static void print_process_row(FILE *f, const gr_process *p, unsigned fds_here)
{
        char nspid[64] = "-";
        if (p->n_nspid > 1) {
                size_t o = 0;
                for (unsigned i = 1; i < p->n_nspid && o < sizeof(nspid); i++)
                        o += (size_t)snprintf(nspid + o, sizeof(nspid) - o, "%s%d", i > 1 ? "," : "", (int)p->nspid[i]);
        }
        char uid[16] = "?";
        if (p->has_uid)
                snprintf(uid, sizeof(uid), "%u", (unsigned)p->uid);
        const char *cmd = p->cmdline ? p->cmdline : p->comm;
        fprintf(f, "    %-8d %-7d %-7d %-7d %-6s %-2c %4u %4u %5u  %-8s %.72s\n", (int)p->pid,
                (int)p->ppid, (int)p->pgrp, (int)p->session, uid, p->state, fds_here,
                p->hold ? p->hold->n_uvm : 0, p->hold ? p->hold->n_maps : 0, nspid,
                cmd[0] ? cmd : p->comm);
}

static const char *holder_header =
        "    PID      PPID    PGRP    SESS    UID    ST  FDS  UVM  MAPS  NSPID    COMMAND\n";

static void print_memory(FILE *f, const gr_gpu *g)
{
        char used[32], res[32], total[32], fr[32];
        if (g->mem_api == 0) {
                fprintf(f, "  memory   unknown\n");
                return;
        }
        gr_format_bytes(g->mem_used, used, sizeof(used));
        gr_format_bytes(g->mem_total, total, sizeof(total));
        gr_format_bytes(g->mem_free, fr, sizeof(fr));
        if (g->mem_api == 2) {
                gr_format_bytes(g->mem_reserved, res, sizeof(res));
                fprintf(f, "  memory   %s used of %s, %s free, %s reserved by the driver\n", used,
                        total, fr, res);
        } else {
                fprintf(f, "  memory   %s used of %s (driver reserve included), %s free\n", used,
                        total, fr);
        }
}

static void print_gpu(FILE *f, const gr_snapshot *s, const gr_gpu *g)
{
        fprintf(f, "GPU %u  %s  %s  %s", g->index, g->name[0] ? g->name : "(no name)",
                g->pci_bus_id[0] ? g->pci_bus_id : "(bus ?)", g->uuid[0] ? g->uuid : "(uuid ?)");
        if (g->minor >= 0)
                fprintf(f, "  %s/nvidia%d", s->dev_dir, g->minor);
        fputc('\n', f);
        print_memory(f, g);
        if (g->error[0])
                fprintf(f, "  error    %s\n", g->error);

        if (!g->procs_ok)
                fprintf(f, "  context owners (NVML): unknown\n");
        else if (g->n_procs == 0)
                fprintf(f, "  context owners (NVML): none\n");
        else {
                fprintf(f, "  context owners (NVML):\n");
                fprintf(f, "    PID      TYPE      MEMORY      PROCESS     COMMAND\n");
                for (unsigned i = 0; i < g->n_procs; i++) {
                        const gr_gpu_proc *o = &g->procs[i];
                        char mem[32];
                        gr_format_bytes(o->used_bytes, mem, sizeof(mem));
                        gr_owner_state st = gr_snapshot_owner_state(s, (pid_t)o->pid);
                        const gr_process *p = gr_proc_table_find(s->procs, (pid_t)o->pid);
                        const char *state = st == GR_OWNER_ALIVE ? "alive"
                                            : st == GR_OWNER_ZOMBIE ? "zombie" : "not found";
                        const char *cmd = p ? (p->cmdline ? p->cmdline : p->comm) : "-";
                        fprintf(f, "    %-8u %-9s %-11s %-11s %.72s\n", o->pid,
                                gr_ctx_kind_name((gr_ctx_kind)o->kind), mem, state, cmd);
                }
        }

        unsigned n = 0;
        for (size_t i = 0; s->procs && i < s->procs->n; i++)
                if (gr_process_fds_on_minor(&s->procs->procs[i], g->minor) > 0)
                        n++;
        if (g->minor < 0)
                fprintf(f, "  holders: unknown (the driver gave no minor number)\n");
        else if (n == 0)
                fprintf(f, "  holders (open %s/nvidia%d): none\n", s->dev_dir, g->minor);
        else {
                fprintf(f, "  holders (open %s/nvidia%d):\n%s", s->dev_dir, g->minor, holder_header);
                for (size_t i = 0; i < s->procs->n; i++) {
                        const gr_process *p = &s->procs->procs[i];
                        unsigned k = gr_process_fds_on_minor(p, g->minor);
                        if (k > 0)
                                print_process_row(f, p, k);
                }
        }
}

int render_status_table(FILE *f, const gr_snapshot *s, const struct gpu_selection *sel)
{
        const gr_gpu_report *rep = s->gpu;
        fprintf(f, "gpureap %s  host %s", GPUREAP_VERSION, s->hostname);
        if (rep->status == GR_GPU_OK) {
                fprintf(f, "  driver %s  %u GPU%s\n",
                        rep->driver_version[0] ? rep->driver_version : "?", rep->n_gpus,
                        rep->n_gpus == 1 ? "" : "s");
        } else {
                fprintf(f, "  driver: %s\n", rep->error);
        }
        for (unsigned i = 0; i < rep->n_gpus; i++) {
                if (!gpu_selected(sel, &rep->gpus[i]))
                        continue;
                fputc('\n', f);
                print_gpu(f, s, &rep->gpus[i]);
        }

        /* Holders of NVIDIA device files that no listed GPU accounts for: control and UVM
         * files only, GPUs filtered out, or every holder when the driver could not be read. */
        unsigned n = 0;
        for (size_t i = 0; s->procs && i < s->procs->n; i++) {
                const gr_process *p = &s->procs->procs[i];
                if (!p->hold)
                        continue;
                bool shown = false;
                for (unsigned j = 0; j < rep->n_gpus && !shown; j++)
                        shown = gpu_selected(sel, &rep->gpus[j]) &&
                                gr_process_fds_on_minor(p, rep->gpus[j].minor) > 0;
                bool other_gpu = false;
                for (unsigned j = 0; j < rep->n_gpus && !other_gpu; j++)
                        other_gpu = gr_process_fds_on_minor(p, rep->gpus[j].minor) > 0;
                if (shown || (sel && sel->list && other_gpu))
                        continue;
                if (n++ == 0)
                        fprintf(f, "\nother holders of %s/nvidia* files:\n%s", s->dev_dir, holder_header);
                print_process_row(f, p, p->hold->n_fds);
        }
        if (rep->status == GR_GPU_OK && rep->n_gpus == 0)
                fprintf(f, "\nno GPU found by the driver\n");
        if (s->procs && s->procs->n_unreadable > 0)
                fprintf(f, "\nnote: %u processes could not be inspected (run as root to see all holders)\n",
                        s->procs->n_unreadable);
        return 0;
}
