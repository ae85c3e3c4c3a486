/* bench-diagnose: time gr_diagnose() on synthetic snapshots of N processes (1% of them CUDA
 * holders in groups of 8 under launchers, half of the launchers dead), to show the diagnosis
 * grows linearly with the process table. Prints N, holders, median microseconds of 21 runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpureap/basic.h"
#include "gpureap/diagnose.h"

static double now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

static gr_snapshot *build(size_t n)
{
        gr_snapshot *s = calloc(1, sizeof(*s));
        s->gpu = calloc(1, sizeof(*s->gpu));
        s->procs = calloc(1, sizeof(*s->procs));
        s->gpu->n_gpus = 8;
        s->gpu->gpus = calloc(8, sizeof(gr_gpu));
        for (unsigned i = 0; i < 8; i++) {
                gr_gpu *g = &s->gpu->gpus[i];
                g->index = i;
                g->minor = (int)i;
                g->mem_api = 2;
                g->mem_total = 140ULL << 30;
                g->procs_ok = true;
                g->procs = calloc(GR_GPU_PROCS_MAX, sizeof(gr_gpu_proc));
        }
        s->procs->procs = calloc(n, sizeof(gr_process));
        s->procs->cap = n;
        for (size_t i = 0; i < n; i++) {
                gr_process *p = &s->procs->procs[i];
                p->pid = (pid_t)(i + 1);
                p->state = 'S';
                p->ppid = i ? 1 : 0;
                p->pgrp = p->session = p->pid;
                snprintf(p->comm, sizeof(p->comm), "p%zu", i);
                /* every 100th process launches 8 workers (pids i+1..i+8) holding GPU i%8 */
                size_t base = i - i % 100;
                if (i % 100 >= 1 && i % 100 <= 8) {
                        p->ppid = (base / 100) % 2 ? (pid_t)(base + 1) : 1; /* odd launchers are dead */
                        p->pgrp = (pid_t)(base + 1);
                        p->session = 1;
                        p->hold = calloc(1, sizeof(gr_holding));
                        p->hold->n_gpus = 1;
                        p->hold->gpus[0].minor = (unsigned)(base / 100 % 8);
                        p->hold->gpus[0].n_fds = 23;
                        p->hold->n_maps = 30;
                        s->procs->n_holders++;
                        gr_gpu *g = &s->gpu->gpus[base / 100 % 8];
                        if (g->n_procs < GR_GPU_PROCS_MAX) {
                                g->procs[g->n_procs++] = (gr_gpu_proc){ .pid = (uint32_t)p->pid, .used_bytes = 1ULL << 30 };
                                g->mem_used += 1ULL << 30;
                        }
                }
                if (i % 100 == 0 && (i / 100) % 2 == 0)
                        p->state = 'Z'; /* the dead launchers: zombies here, so the pids stay */
        }
        s->procs->n = n;
        return s;
}

int main(int argc, char **argv)
{
        size_t sizes[] = { 1000, 10000, 50000 };
        printf("%10s %8s %10s %12s\n", "processes", "holders", "findings", "median_us");
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
                gr_snapshot *s = build(sizes[k]);
                double t[21];
                size_t nf = 0;
                for (int r = 0; r < 21; r++) {
                        gr_diagnosis *d = NULL;
                        double t0 = now_us();
                        if (gr_diagnose(s, 0, &d) < 0)
                                return 1;
                        t[r] = now_us() - t0;
                        nf = d->n_findings;
                        gr_diagnosis_free(d);
                }
                qsort(t, 21, sizeof(double), cmp_double);
                printf("%10zu %8zu %10zu %12.1f\n", sizes[k], s->procs->n_holders, nf, t[10]);
                gr_snapshot_free(s);
        }
        (void)argc;
        (void)argv;
        return 0;
}
