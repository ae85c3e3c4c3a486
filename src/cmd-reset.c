/* gpureap reset: a guarded 'nvidia-smi --gpu-reset', only when asked, only when nothing holds
 * the GPU, with a deadline, and verified by the memory afterwards. NVML has no public reset. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "gpureap/act.h"
#include "gpureap/basic.h"
#include "gpureap.h"

static void reset_usage(FILE *f)
{
        fprintf(f,
                "usage: gpureap reset --gpu SEL [--yes] [--stop-monitors] [--timeout DUR]\n"
                "\n"
                "Reset one GPU with 'nvidia-smi --gpu-reset -i N', only when nothing holds it: reap the\n"
                "leftovers first ('gpureap reap --gpu N'). Monitors (nvidia-smi, DCGM, the persistence\n"
                "daemon) make a reset fail as 'in use'; they are named, and stopped only with\n"
                "--stop-monitors. The memory is read again afterwards.\n"
                "\n"
                "  --gpu SEL, -i    the GPU (index, UUID prefix or PCI bus id): exactly one\n"
                "  --yes            do not ask (needed when stdin is not a terminal)\n"
                "  --stop-monitors  stop the NVML-only clients that hold the GPU first\n"
                "  --timeout DUR    for the reset and the check after it (default 60s)\n"
                "\n"
                "environment: GPUREAP_NVIDIA_SMI (the nvidia-smi to run)\n"
                "exit codes: 0 reset and clean, 1 something holds the GPU (or still does after),\n"
                "2 usage error or no consent, 3 the reset failed, is not supported, or timed out\n");
}

extern char **environ;

/* run nvidia-smi with a deadline; its output in out; returns its exit status, -ETIMEDOUT, -errno */
static int run_smi(const char *smi, int smi_fd, unsigned index, uint64_t timeout_ms, char *out, size_t size)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        char idx[16];
        snprintf(idx, sizeof(idx), "%u", index);
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                return r;
        }
        if (pid == 0) {
                dup2(p[1], STDOUT_FILENO);
                dup2(p[1], STDERR_FILENO);
                if (smi_fd >= 0) {
                        /* the file that was checked; open across the exec, so that a script's
                         * interpreter reads it through /dev/fd */
                        char *const args[] = { (char *)smi, (char *)"--gpu-reset", (char *)"-i", idx, NULL };
                        fcntl(smi_fd, F_SETFD, 0);
                        syscall(SYS_execveat, smi_fd, "", args, environ, AT_EMPTY_PATH);
                } else {
                        execlp(smi, smi, "--gpu-reset", "-i", idx, (char *)NULL);
                }
                _exit(127);
        }
        close(p[1]);
        size_t len = 0;
        uint64_t deadline = gr_now_ms() + timeout_ms;
        bool timed_out = false;
        for (;;) {
                uint64_t now = gr_now_ms();
                if (now >= deadline) {
                        timed_out = true;
                        break;
                }
                struct pollfd pfd = { .fd = p[0], .events = POLLIN };
                if (poll(&pfd, 1, (int)(deadline - now)) <= 0)
                        continue;
                char buf[512];
                ssize_t n = read(p[0], buf, sizeof(buf));
                if (n <= 0)
                        break;
                size_t take = (size_t)n < size - 1 - len ? (size_t)n : size - 1 - len;
                memcpy(out + len, buf, take);
                len += take;
        }
        out[len] = '\0';
        close(p[0]);
        int st = 0;
        if (timed_out) {
                kill(pid, SIGKILL);
                waitpid(pid, &st, 0);
                return -ETIMEDOUT;
        }
        waitpid(pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool clean_gpu(const gr_snapshot *s, const gr_diagnosis *d, void *userdata)
{
        unsigned i = *(const unsigned *)userdata;
        return i < s->gpu->n_gpus && d->gpus[i].state == GR_GPU_CLEAN;
}

struct reset {
        const char *gpu;
        bool yes, stop_monitors;
        uint64_t timeout;
        const char *smi;
        int smi_fd;
        gr_snapshot_options so;
};

/* 0 to go on, 1 when the help was printed, -1 for a usage error (said) */
static int parse_args(struct reset *rs, int argc, char **argv)
{
        static const struct option opts[] = {
                { "gpu", required_argument, NULL, 'g' },
                { "yes", no_argument, NULL, 'y' },
                { "stop-monitors", no_argument, NULL, 'm' },
                { "timeout", required_argument, NULL, 'T' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "+g:i:ymT:h", opts, NULL)) != -1) {
                switch (c) {
                case 'g':
                case 'i': rs->gpu = optarg; break;
                case 'y': rs->yes = true; break;
                case 'm': rs->stop_monitors = true; break;
                case 'T':
                        if (parse_duration_option(optarg, &rs->timeout, false) < 0)
                                return -1;
                        break;
                case 'h':
                        reset_usage(stdout);
                        return 1;
                default:
                        unknown_option(argc, argv, opts, "reset");
                        return -1;
                }
        }
        if (no_stray_arguments(argc, argv, "reset") < 0)
                return -1;
        if (!rs->gpu || strchr(rs->gpu, ',')) {
                error_msg("reset needs exactly one GPU: --gpu N");
                return -1;
        }
        rs->smi = getenv("GPUREAP_NVIDIA_SMI");
        if (rs->smi && *rs->smi && env_path_trusted("GPUREAP_NVIDIA_SMI", rs->smi, &rs->smi_fd) < 0)
                return -1;
        if (rs->stop_monitors && signalling_env_ok("reset --stop-monitors") < 0)
                return -1;
        return 0;
}

/* Who holds GPU g: the holders that forbid a reset, and its monitors (PIDs in mons) */
static size_t gpu_holders(const gr_diagnosis *d, const gr_gpu *g, char *holders, size_t hsize, char *monitors,
                          size_t msize, pid_t *mons, size_t max_mons)
{
        size_t n_mons = 0, oh = 0, om = 0;
        holders[0] = monitors[0] = '\0';
        for (size_t i = 0; i < d->n_holders; i++) {
                const gr_holder_verdict *v = &d->holders[i];
                if (gr_process_fds_on_minor(v->process, g->minor) == 0)
                        continue;
                if (v->role == GR_ROLE_MONITOR) {
                        if (n_mons < max_mons)
                                mons[n_mons++] = v->pid;
                        om += (size_t)snprintf(monitors + om, om < msize ? msize - om : 0, "%s%d (%s)", om ? ", " : "",
                                               (int)v->pid, v->process->comm);
                } else {
                        oh += (size_t)snprintf(holders + oh, oh < hsize ? hsize - oh : 0, "%s%d (%s)", oh ? ", " : "",
                                               (int)v->pid, v->process->comm);
                }
        }
        return n_mons;
}

static bool consent(const struct reset *rs, const gr_gpu *g, size_t n_mons, int *code)
{
        if (rs->yes)
                return true;
        *code = EXIT_USAGE;
        if (!isatty(STDIN_FILENO)) {
                error_msg("not asking without a terminal: add --yes to reset GPU %u", g->index);
                return false;
        }
        fprintf(stderr, "reset GPU %u (%s %s)%s? [y/N] ", g->index, g->name, g->pci_bus_id,
                n_mons ? " after stopping its monitors" : "");
        char line[16];
        if (!fgets(line, sizeof(line), stdin) || (line[0] != 'y' && line[0] != 'Y')) {
                error_msg("nothing done");
                return false;
        }
        return true;
}

/* --stop-monitors: the monitors of the GPU ended, each checked as every target is; true when
 * none is left */
static bool stop_monitors(struct reset *rs, gr_snapshot *s, const gr_diagnosis *d, const gr_gpu *g, const pid_t *mons,
                          size_t n_mons)
{
        /* the ancestors rule holds here too: the NVML client that ran this reset (a monitoring
         * agent, a health check) is never one of the monitors stopped */
        gr_plan_options po = { .pids = mons, .n_pids = n_mons, .monitors_ok = true };
        if (self_plan_options(&po) < 0) {
                error_msg("out of memory");
                return false;
        }
        gr_kill_options ko = { .proc_root = s->proc_root, .grace_ms = 5000, .deadline_ms = 10000, .refuse_drm = true,
                               .dev_dir = s->dev_dir[0] ? s->dev_dir : NULL };
        for (size_t i = 0; i < n_mons; i++) {
                gr_process *mp = gr_proc_table_find(s->procs, mons[i]);
                if (mp)
                        gr_proc_load_details(&rs->so.proc, mp);
        }
        bool left = false;
        gr_plan *plan = NULL;
        if (gr_plan_make(s, d, &po, &plan) == 0) {
                for (size_t i = 0; i < plan->n; i++)
                        if (plan->targets[i].refused != GR_REFUSE_NONE) {
                                printf("  spare   %-8d %-16s %s\n", (int)plan->targets[i].pid, plan->targets[i].comm,
                                       gr_refusal_text(plan->targets[i].refused));
                                left = true;
                        }
                audit_open("reset");
                for (size_t i = 0; i < plan->n; i++)
                        if (plan->targets[i].refused == GR_REFUSE_NONE)
                                audit_log(LOG_NOTICE, "signalling pid %d start %llu uid %u comm '%s': a monitor of GPU %u, stopped for its reset (--stop-monitors)",
                                          (int)plan->targets[i].pid, (unsigned long long)plan->targets[i].start_time,
                                          (unsigned)plan->targets[i].uid, plan->targets[i].comm, g->index);
                gr_kill_outcome *res = NULL;
                size_t n_res = 0;
                if (gr_kill_plan(plan, &ko, &res, &n_res) == 0) {
                        for (size_t i = 0; i < n_res; i++) {
                                printf("  monitor %-8d %s\n", (int)res[i].pid, gr_kill_result_name(res[i].result));
                                left |= gr_kill_result_failed(res[i].result);
                                audit_log(LOG_NOTICE, "pid %d start %llu comm '%s': %s", (int)res[i].pid,
                                          (unsigned long long)res[i].start_time, res[i].comm, gr_kill_result_name(res[i].result));
                        }
                        free(res);
                }
        }
        gr_plan_free(plan);
        self_plan_options_release(&po);
        if (left)
                error_msg("GPU %u: a monitor is still there (spared or not ended): not resetting", g->index);
        return !left;
}

/* nvidia-smi --gpu-reset on the GPU; its exit code (EXIT_CLEAN: it said it reset) */
static int reset_by_smi(const struct reset *rs, const gr_gpu *g)
{
        const char *smi = rs->smi && *rs->smi ? rs->smi : "nvidia-smi";
        char out[4096];
        audit_open("reset");
        audit_log(LOG_NOTICE, "GPU %u (%s %s): '%s --gpu-reset -i %u'", g->index, g->uuid, g->pci_bus_id, smi, g->index);
        int rc = run_smi(smi, rs->smi_fd, g->index, rs->timeout, out, sizeof(out));
        for (char *nl; (nl = strrchr(out, '\n')) && nl[1] == '\0';)
                *nl = '\0';
        /* its words go into one line of ours: its line breaks as spaces, no control byte */
        for (char *nl; (nl = strchr(out, '\n'));)
                *nl = ' ';
        gr_text_sanitize(out);
        if (rc == -ETIMEDOUT) {
                error_msg("'%s --gpu-reset -i %u' did not finish within %.1fs", QUOTED(smi), g->index, (double)rs->timeout / 1000);
                return EXIT_DRIVER;
        }
        if (rc < 0 || rc == 127) {
                error_msg("cannot run '%s': %s", QUOTED(smi), rc < 0 ? strerror(-rc) : "not found");
                return EXIT_DRIVER;
        }
        if (strcasestr(out, "not supported")) {
                error_msg("GPU %u: reset is not supported here (%s said: %s)", g->index, QUOTED(smi), out);
                return EXIT_DRIVER;
        }
        if (strcasestr(out, "in use") || strcasestr(out, "being used")) {
                error_msg("GPU %u: the driver refused the reset, the GPU is in use (%s said: %s)", g->index, QUOTED(smi), out);
                return EXIT_NOT_CLEAN;
        }
        if (rc != 0) {
                error_msg("GPU %u: the reset failed with exit %d: %s", g->index, rc, out);
                return EXIT_DRIVER;
        }
        printf("GPU %u reset: %s\n", g->index, out);
        return EXIT_CLEAN;
}

/* After the reset: until the GPU is clean, within --timeout */
static int verify_reset(struct reset *rs, unsigned gi)
{
        gr_snapshot *s = NULL;
        gr_diagnosis *d = NULL;
        gr_wait_options w = { .so = &rs->so, .timeout_ms = rs->timeout };
        bool met = false;
        int r = gr_wait_until(&w, clean_gpu, &gi, &s, &d, &met);
        if (r < 0) {
                error_msg("cannot verify: %s", strerror(-r));
                return EXIT_DRIVER;
        }
        char mem[32];
        printf("GPU %u  %s  memory %s used\n", gi, gr_gpu_state_name(d->gpus[gi].state),
               gr_format_bytes(s->gpu->gpus[gi].mem_used, mem, sizeof(mem)));
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        return met ? EXIT_CLEAN : EXIT_NOT_CLEAN;
}

/* The GPU --gpu names, once the driver has answered: EXIT_CLEAN with its index, else the exit
 * code, said */
static int pick_gpu(const struct reset *rs, const gr_snapshot *s, unsigned *ret)
{
        if (s->gpu->status != GR_GPU_OK) {
                error_msg("%s", s->gpu->error);
                return EXIT_DRIVER;
        }
        for (unsigned i = 0; i < s->gpu->n_gpus; i++)
                if (gr_gpu_matches(&s->gpu->gpus[i], rs->gpu)) {
                        *ret = i;
                        return EXIT_CLEAN;
                }
        error_msg("no GPU matches '%s' (this machine has %u)", QUOTED(rs->gpu), s->gpu->n_gpus);
        return EXIT_USAGE;
}

int cmd_reset(int argc, char **argv)
{
        struct reset rs = { .timeout = 60000, .smi_fd = -1 };
        int pa = parse_args(&rs, argc, argv);
        if (pa != 0) {
                if (rs.smi_fd >= 0)
                        close(rs.smi_fd);
                return pa > 0 ? EXIT_CLEAN : EXIT_USAGE;
        }
        gr_snapshot *s = NULL;
        gr_diagnosis *d = NULL;
        int code = EXIT_DRIVER, r;
        if ((r = gr_snapshot_take(&rs.so, &s)) < 0) {
                error_msg("cannot take a snapshot: %s", strerror(-r));
                goto out;
        }
        unsigned gi = 0;
        if ((code = pick_gpu(&rs, s, &gi)) != EXIT_CLEAN)
                goto out;
        code = EXIT_DRIVER;
        if ((r = gr_diagnose(s, getuid(), &d)) < 0) {
                error_msg("cannot diagnose: %s", strerror(-r));
                goto out;
        }
        const gr_gpu *g = &s->gpu->gpus[gi];
        char holders[512], monitors[512];
        pid_t mons[64];
        size_t n_mons = gpu_holders(d, g, holders, sizeof(holders), monitors, sizeof(monitors), mons, GR_ELEMENTSOF(mons));
        code = EXIT_NOT_CLEAN;
        if (holders[0] || g->n_procs > 0) {
                error_msg("GPU %u is in use (%s): reap first: gpureap reap --gpu %u", g->index,
                          holders[0] ? holders : "the driver lists contexts on it", g->index);
                goto out;
        }
        if (monitors[0] && !rs.stop_monitors) {
                error_msg("GPU %u is held by monitors %s: a reset would fail as 'in use'; stop them, or add --stop-monitors",
                          g->index, monitors);
                goto out;
        }
        if (!consent(&rs, g, n_mons, &code))
                goto out;
        code = EXIT_NOT_CLEAN;
        if (n_mons > 0 && !stop_monitors(&rs, s, d, g, mons, n_mons))
                goto out;
        if ((code = reset_by_smi(&rs, g)) == EXIT_CLEAN)
                code = verify_reset(&rs, gi);
out:
        fflush(stdout);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        if (rs.smi_fd >= 0)
                close(rs.smi_fd);
        return code;
}
