/* gpureap serve: a resident watcher (docs/serve.md). A refresher thread takes a snapshot every
 * --interval, brings serve's memory up to date (history.c: who launched each holder, how that
 * launcher ended, from the kernel's process events) and keeps the rendered answers; the main
 * thread answers the Unix socket (the snapshot as 'status --json' gives it, with the memory)
 * from that cache, so a wedged driver never keeps it from answering; a second thread answers
 * HTTP (libmicrohttpd): /metrics, /healthz (are the looks fresh?) and / (what is where). Its
 * socket is read-only: it takes no kill requests. Only the policy the admin may give on its
 * command line (--reap-after, off by default) ends processes, and then through lib's reap cycle
 * (gr_reap, in a thread of its own): the plan, checks and audit log of 'gpureap reap'. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <spawn.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "gpureap-config.h"
#include "gpureap.h"
#include "gpureap/basic.h"
#include "history.h"
#ifdef HAVE_MICROHTTPD
#include <dlfcn.h>
#include <microhttpd.h>
#endif

#define CLIENTS_MAX 64
#define REQUEST_MAX 128
/* Prometheus's default port allocations for exporters, 9100-9999, are all taken (since 2023;
 * 9835, serve's first default, is nvidia_gpu_exporter's): above them, clear of the kubelet's
 * and Zabbix's ports (docs/serve.md) */
#define SERVE_LISTEN_DEFAULT "127.0.0.1:10145"

static void serve_usage(FILE *f)
{
        fprintf(f,
                "usage: gpureap serve [--socket PATH] [--group NAME] [--interval DUR]\n"
                "                     [--listen ADDR:PORT | --listen none] [--nvml-timeout DUR]\n"
                "                     [--reap-after DUR [--reap-all-users]] [--process-metrics]\n"
                "                     [--kubelet-socket PATH]\n"
                "\n"
                "Watch the GPUs and their processes and remember what a snapshot cannot see: the\n"
                "launcher that started each holder and how it ended. 'gpureap status' asks it over\n"
                "its socket (--direct does not); Prometheus scrapes /metrics. Its socket takes no\n"
                "kill requests; it kills nothing unless --reap-after is given. Run it as root, under\n"
                "systemd (contrib/systemd/gpureap-serve.service).\n"
                "\n"
                "  --socket PATH    the Unix socket (default " SERVE_SOCKET_DEFAULT ", or $GPUREAP_SERVE_SOCKET)\n"
                "  --group NAME     let this group use the socket too (it shows every user's commands)\n"
                "  --interval DUR   how often to look (default 1s, at least 100ms)\n"
                "  --listen A:P     HTTP /metrics and /healthz on this address (default\n"
                "                   " SERVE_LISTEN_DEFAULT "; none: off)\n"
                "  --nvml-timeout   how long the driver gets per look (default 5s)\n"
                "  --reap-after DUR a policy, off by default: a holder judged a sure leftover at every\n"
                "                   look for longer than DUR is reaped as 'gpureap reap --yes --only\n"
                "                   PID@START' would (in a thread of serve's: its own look, plan,\n"
                "                   checks, drain and audit log; a live job, an unsure holder, a\n"
                "                   monitor are never touched)\n"
                "  --reap-all-users with --reap-after: other users' leftovers too (else only those of\n"
                "                   the user serve runs as)\n"
                "  --process-metrics\n"
                "                   /metrics shows each GPU process too (PID, name, job, verdict)\n"
                "                   to whoever reaches the port: off by default (hidepid)\n"
                "  --kubelet-socket PATH\n"
                "                   the kubelet's pod-resources socket (default\n"
                "                   " GR_KUBELET_SOCKET_DEFAULT ",\n"
                "                   also $GPUREAP_KUBELET_SOCKET), asked once every 5s at most;\n"
                "                   beside the default one, also its device checkpoint\n"
                "                   " GR_KUBELET_CHECKPOINT_DEFAULT "\n"
                "\n"
                "Its memory is kept beside the socket (its name with .history for .sock) and read\n"
                "back at start. SIGTERM or SIGINT stop it; SIGHUP writes the memory out and goes on.\n");
}

struct serve {
        struct history hist;
        gr_snapshot_options so;
        uint64_t interval_ms;
        pthread_mutex_t lock;     /* guards what follows */
        pthread_cond_t wake;
        bool stop, wake_now;
        char *json;               /* the last answer of the socket */
        size_t json_len;
        char *wire;               /* the same snapshot as its structs, for a client of this build */
        size_t wire_len;
        gr_snapshot *served;      /* the wire read back: what such a client judges from */
        struct rendered {         /* its reports rendered for clients (status_rendered), until
                                     the next look */
                char key[32];
                char *out;        /* "ok CODE\n" and the report; "no\n" */
                size_t len;
        } rendered[4];
        unsigned rendered_next;
        char *metrics;            /* the last answer of /metrics */
        size_t metrics_len;
        uint64_t refreshes;
        bool ready;
        /* the policy (--reap-after): the refresher thread alone uses what follows */
        uint64_t reap_after_ms;   /* 0: off */
        bool reap_all_users;
        struct sure_since *sure;  /* the holders judged sure leftovers at every look since */
        size_t n_sure;
        struct policy_reap *reaping; /* the policy's reap while it runs, until joined */
        char socket_path[4096];   /* ours */
        const char *http_shown;   /* the HTTP address, NULL: none */
        /* what /healthz judges by (monotonic ms, atomic: the HTTP thread reads them without
         * the lock, which a stuck refresher might hold): the start of the look running or
         * of the last one, the end of the last one, and when the next one should have ended */
        uint64_t started_ms, look_started_ms, look_ended_ms, look_due_ms;
        char scan_said[200];      /* the first look's holder scan, for the start-up line */
        bool process_metrics;     /* /metrics with the per-process series (--process-metrics) */
        int hist_dir;             /* where the history is written (the socket's directory) */
        char hist_name[256];
        /* the kubelet's last answer (the refresher thread's alone), asked again at most every
         * KUBELET_EVERY_MS, or KUBELET_SOON_MS after a look found a pod it could not name */
        gr_kubelet_answer *kubelet;
        uint64_t kubelet_at_ms;   /* monotonic */
        /* what the looks learnt of pods the kubelet's devices do not name (the runtime's names,
         * the kubelet's Get), so that they are not asked about at every look */
        gr_pod_memory *pods;
        bool kubelet_unnamed;
};

/* The kubelet rate-limits its socket (100 calls a second): serve asks once a few seconds */
#define KUBELET_EVERY_MS 5000
#define KUBELET_SOON_MS 1000

/* A holder that every look since 'since' judged a sure leftover */
struct sure_since {
        pid_t pid;
        uint64_t start_time, since_ms;
        bool tried;               /* named to the reap now running */
};

/* A child of this thread still running (not a zombie): an NVML helper stuck in the driver.
 * The refresher thread starts no other children (the policy's reap is a thread of its own,
 * and its helpers are its children) */
static pid_t stuck_helper(void)
{
        char path[64], buf[4096];
        snprintf(path, sizeof(path), "/proc/self/task/%ld/children", (long)syscall(SYS_gettid));
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        buf[n > 0 ? n : 0] = '\0';
        for (char *p = buf, *e; *p; p = e) {
                long pid = strtol(p, &e, 10);
                if (e == p)
                        break;
                char st[64], sb[512];
                snprintf(st, sizeof(st), "/proc/%ld/stat", pid);
                int sf = open(st, O_RDONLY | O_CLOEXEC);
                ssize_t k = sf >= 0 ? read(sf, sb, sizeof(sb) - 1) : -1;
                if (sf >= 0)
                        close(sf);
                if (k <= 0)
                        continue;
                sb[k] = '\0';
                const char *close_paren = strrchr(sb, ')');
                if (close_paren && close_paren[1] == ' ' && close_paren[2] != 'Z' && close_paren[2] != 'X')
                        return (pid_t)pid;
        }
        return 0;
}

static void sd_notify_ready(void)
{
        sd_notify_send("READY=1\nSTATUS=watching the GPUs");
}

static char *render_to_memory(void (*fn)(FILE *, const gr_snapshot *, const gr_diagnosis *), const gr_snapshot *s,
                              const gr_diagnosis *d, size_t *ret_len)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return NULL;
        fn(f, s, d);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        *ret_len = len;
        return buf;
}

static void json_of(FILE *f, const gr_snapshot *s, const gr_diagnosis *d)
{
        render_status_json(f, s, d, NULL);
}

static void metrics_of(FILE *f, const gr_snapshot *s, const gr_diagnosis *d)
{
        metrics_render(f, s, d, NULL);
}

/* /metrics without the per-process series: anyone who reaches the port reads it, and PIDs,
 * names and jobs of every user's GPU processes are what hidepid keeps from them. The series is
 * one metric name, its lines found by their prefix; the per-GPU series stay. */
static void drop_process_series(char *text, size_t *len)
{
        static const char *const prefixes[] = { "gpureap_process_gpu_memory_bytes",
                                                "# HELP gpureap_process_gpu_memory_bytes ",
                                                "# TYPE gpureap_process_gpu_memory_bytes " };
        size_t o = 0;
        for (size_t i = 0; i < *len;) {
                char *nl = memchr(text + i, '\n', *len - i);
                size_t l = nl ? (size_t)(nl - (text + i)) + 1 : *len - i;
                bool drop = false;
                for (size_t k = 0; k < GR_ELEMENTSOF(prefixes) && !drop; k++) {
                        size_t pl = strlen(prefixes[k]);
                        drop = l > pl && strncmp(text + i, prefixes[k], pl) == 0 &&
                               (k > 0 || text[i + pl] == '{' || text[i + pl] == ' ');
                }
                if (!drop) {
                        memmove(text + o, text + i, l);
                        o += l;
                }
                i += l;
        }
        *len = o;
}

/* The policy's reap: lib's whole cycle (gr_reap, through reap's face without its output: the
 * audit trail and the record for 'gpureap metrics' are the same) in a thread of its own, so
 * that the looks go on while it runs. Its first look joins serve's memory of the launchers. */
struct policy_reap {
        struct serve *sv;
        pthread_t thread;
        gr_pid_start only[256];
        size_t n_only;
        int code;
        bool done;                /* set by the reap's thread when it ends (atomic) */
};

static int policy_take(const gr_snapshot_options *so, gr_snapshot **ret, void *userdata)
{
        struct serve *sv = userdata;
        int r = gr_snapshot_take(so, ret);
        if (r == 0 && history_attach(&sv->hist, *ret, gr_wall_ms()) < 0) {
                gr_snapshot_free(*ret);
                *ret = NULL;
                r = -ENOMEM;
        }
        return r;
}

static void *policy_reap_main(void *arg)
{
        struct policy_reap *pr = arg;
        struct reap_request q = { .only = pr->only, .n_only = pr->n_only, .all_users = pr->sv->reap_all_users,
                                  .grace_ms = 5000, .timeout_ms = 30000, .nvml_timeout_ms = pr->sv->so.gpu.timeout_ms,
                                  .quiet = true, .take = policy_take, .take_userdata = pr->sv };
        pr->code = reap_request_run(&q);
        __atomic_store_n(&pr->done, true, __ATOMIC_RELEASE);
        return NULL;
}

static void policy_reap_join(struct serve *sv)
{
        if (!sv->reaping)
                return;
        pthread_join(sv->reaping->thread, NULL);
        audit_log(LOG_NOTICE, "policy: the reap ended with exit code %d", sv->reaping->code);
        free(sv->reaping);
        sv->reaping = NULL;
}

/* The policy: note who is a sure leftover now (and since when: the first look of an unbroken
 * run of looks that said so), and once some have been for longer than --reap-after, start
 * 'gpureap reap' for exactly those processes (PID and start time: a PID reused since names
 * another process, which reap then spares). One reap at a time; it makes its own snapshot and
 * plan, so a process that is no longer a sure leftover by then is spared too. */
static void policy(struct serve *sv, const gr_diagnosis *d, uint64_t now, bool driver_ok)
{
        if (sv->reaping && __atomic_load_n(&sv->reaping->done, __ATOMIC_ACQUIRE)) {
                policy_reap_join(sv);
                /* one it could not end (state D) waits its full time again: no reap after reap
                 * for a process that does not die */
                for (size_t k = 0; k < sv->n_sure; k++)
                        if (sv->sure[k].tried) {
                                sv->sure[k].tried = false;
                                sv->sure[k].since_ms = now;
                        }
        }
        struct sure_since *now_set = calloc(d && d->n_holders ? d->n_holders : 1, sizeof(*now_set));
        if (!now_set)
                return;
        size_t n = 0;
        for (size_t i = 0; d && i < d->n_holders; i++) {
                const gr_holder_verdict *v = &d->holders[i];
                if (!v->process || v->judgement != GR_JUDGE_LEFTOVER || v->confidence != GR_SURE)
                        continue;
                /* another user's: reap would refuse it without --all-users, every DUR again */
                if (!sv->reap_all_users && (!v->process->has_uid || v->process->uid != getuid()))
                        continue;
                struct sure_since e = { v->pid, v->process->start_time, now, false };
                for (size_t k = 0; k < sv->n_sure; k++)
                        if (sv->sure[k].pid == e.pid && sv->sure[k].start_time == e.start_time) {
                                e.since_ms = sv->sure[k].since_ms;
                                e.tried = sv->sure[k].tried;
                        }
                now_set[n++] = e;
        }
        free(sv->sure);
        sv->sure = now_set;
        sv->n_sure = n;
        if (sv->reaping || !driver_ok)
                return;
        struct policy_reap *pr = calloc(1, sizeof(*pr));
        if (!pr)
                return;
        pr->sv = sv;
        char only[8192];
        size_t len = 0, due = 0;
        only[0] = '\0';
        for (size_t i = 0; i < n && due < GR_ELEMENTSOF(pr->only); i++) {
                if (now < now_set[i].since_ms + sv->reap_after_ms)
                        continue;
                int w = snprintf(only + len, sizeof(only) - len, "%s%d@%llu", len ? "," : "", (int)now_set[i].pid,
                                 (unsigned long long)now_set[i].start_time);
                if (w < 0 || (size_t)w >= sizeof(only) - len)
                        break;
                len += (size_t)w;
                pr->only[due++] = (gr_pid_start){ now_set[i].pid, now_set[i].start_time };
                now_set[i].tried = true;
        }
        pr->n_only = due;
        if (!due) {
                free(pr);
                return;
        }
        audit_log(LOG_NOTICE, "policy: %zu sure leftover%s for more than %llu ms: reaping --only %s", due,
                  due == 1 ? "" : "s", (unsigned long long)sv->reap_after_ms, only);
        /* the reap's thread inherits this one's mask: every signal blocked (the main thread's) */
        int r = pthread_create(&pr->thread, NULL, policy_reap_main, pr);
        if (r != 0) {
                audit_log(LOG_WARNING, "policy: cannot start the reap: %s", strerror(r));
                for (size_t i = 0; i < n; i++)
                        now_set[i].tried = false;
                free(pr);
                return;
        }
        sv->reaping = pr;
}

/* The memory on disk when it changed (a launch, an end, a state): a look that changed nothing
 * writes nothing */
static void save_history(struct serve *sv)
{
        static int last_error;
        int r = sv->hist_dir >= 0 ? history_save(&sv->hist, sv->hist_dir, sv->hist_name, gr_wall_ms()) : 0;
        if (r < 0 && r != last_error)
                fprintf(stderr, "gpureap: cannot write the history '%s': %s\n", sv->hist_name, strerror(-r));
        last_error = r;
}

/* The kubelet's answer for this look: the cached one, or a new one when it is due */
static const gr_kubelet_answer *kubelet_for_look(struct serve *sv)
{
        if (!sv->so.kubelet_ask)
                return NULL;
        uint64_t now = gr_now_ms(), age = now - sv->kubelet_at_ms;
        if (sv->kubelet && age < KUBELET_EVERY_MS && !(sv->kubelet_unnamed && age >= KUBELET_SOON_MS))
                return sv->kubelet;
        gr_kubelet_answer *a = NULL;
        if (gr_kubelet_ask(&sv->so.kubelet, &a) < 0)
                return sv->kubelet; /* out of memory: the last answer stands */
        gr_kubelet_answer_free(sv->kubelet);
        sv->kubelet = a;
        sv->kubelet_at_ms = now;
        return a;
}

/* Did a look find a process in a pod's cgroup that the kubelet's answer could not name for
 * want of a newer one (a pod started since, or one gone)? One the runtime named is not waiting
 * for the kubelet's list: a time-sliced or gone pod stays as it is */
static bool pods_unnamed(const gr_snapshot *s)
{
        for (size_t i = 0; s->kubelet.state == GR_KUBELET_OK && s->procs && i < s->procs->n; i++) {
                const gr_pod *pod = s->procs->procs[i].pod;
                if (pod && s->procs->procs[i].hold && !pod->runtime_named &&
                    (pod->naming == GR_POD_UNASSIGNED || pod->naming == GR_POD_AMBIGUOUS))
                        return true;
        }
        return false;
}

static void refresh(struct serve *sv)
{
        uint64_t now = gr_wall_ms();
        char down[256];
        pid_t stuck = stuck_helper();
        gr_snapshot_options so = sv->so;
        so.kubelet_answer = kubelet_for_look(sv);
        so.pod_memory = sv->pods;
        if (stuck) {
                snprintf(down, sizeof(down), "the driver has not answered a call of gpureap serve's NVML helper (PID %d) "
                         "since an earlier look; not asked again until it returns", (int)stuck);
                so.gpu_down = down;
        }
        gr_snapshot *s = NULL;
        gr_diagnosis *d = NULL;
        if (gr_snapshot_take(&so, &s) < 0)
                return; /* out of memory: the last answer stands */
        s->served_by = getpid();
        sv->kubelet_unnamed = pods_unnamed(s);
        if (s->procs && !sv->scan_said[0])
                snprintf(sv->scan_said, sizeof(sv->scan_said), "%s%s%s%s",
                         s->procs->scan == GR_SCAN_BPF ? "BPF" : "/proc", s->procs->scan_fallback[0] ? " (" : "",
                         s->procs->scan_fallback, s->procs->scan_fallback[0] ? ")" : "");
        history_attach(&sv->hist, s, now);
        if (gr_diagnose(s, 0, &d) < 0)
                d = NULL;
        history_gpus(&sv->hist, s, d, now);
        /* the policy's clock is the monotonic one (a step of the wall clock must not make a
         * leftover old); it waits while the driver does not answer: a reap would only start
         * another NVML helper into the same hung call */
        if (sv->reap_after_ms && d)
                policy(sv, d, gr_now_ms(), !stuck && s->gpu->status == GR_GPU_OK);
        size_t jl = 0, ml = 0;
        char *json = render_to_memory(json_of, s, d, &jl);
        char *wire = NULL;
        size_t wl = 0;
        if (snapshot_to_wire(s, &wire, &wl) < 0)
                wire = NULL;
        char *metrics = render_to_memory(metrics_of, s, d, &ml);
        if (metrics && !sv->process_metrics)
                drop_process_series(metrics, &ml);
        gr_diagnosis_free(d);
        gr_snapshot_free(s);
        /* the report a client of this build would render from the wire is rendered from the
         * wire read back: the same processes, the same facts, byte for byte */
        gr_snapshot *served = NULL;
        if (json && wire && snapshot_from_wire(wire, wl, &served) < 0)
                served = NULL;
        pthread_mutex_lock(&sv->lock);
        if (json) {
                free(sv->json);
                sv->json = json;
                sv->json_len = jl;
                free(sv->wire); /* the wire goes with the JSON of the same look, or not at all */
                sv->wire = wire;
                sv->wire_len = wire ? wl : 0;
                wire = NULL;
                gr_snapshot_free(sv->served);
                sv->served = served;
                served = NULL;
                for (size_t i = 0; i < GR_ELEMENTSOF(sv->rendered); i++) {
                        free(sv->rendered[i].out);
                        sv->rendered[i] = (struct rendered){ 0 };
                }
        }
        gr_snapshot_free(served);
        free(wire);
        if (metrics) {
                free(sv->metrics);
                sv->metrics = metrics;
                sv->metrics_len = ml;
        }
        sv->refreshes++;
        sv->ready = sv->json != NULL;
        pthread_mutex_unlock(&sv->lock);
        save_history(sv);
}

/* The start-up line (the journal's first word on what this serve does), once the first look
 * has said which holder scan runs */
static void say_started(const struct serve *sv)
{
        fprintf(stderr, "gpureap: serve %s (PID %d): socket '%s', HTTP %s, holder scan %s, a look every %llu ms\n",
                GPUREAP_VERSION, (int)getpid(), sv->socket_path, sv->http_shown ? sv->http_shown : "none",
                sv->scan_said[0] ? sv->scan_said : "none (no /proc)", (unsigned long long)sv->interval_ms);
}

/* How long one look may take before /healthz calls the refresher stuck: the driver's deadline
 * (its helper and the /proc scan run side by side) twice, and a second */
static uint64_t look_budget_ms(const struct serve *sv)
{
        return 2 * sv->so.gpu.timeout_ms + 1000;
}

static void *refresher(void *arg)
{
        struct serve *sv = arg;
        /* the signals belong to the main thread (signalfd) */
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, NULL);
        pthread_setname_np(pthread_self(), "serve-looks"); /* top -H, and the tests find it */
        bool notified = false;
        for (;;) {
                uint64_t t0 = gr_now_ms();
                __atomic_store_n(&sv->look_started_ms, t0, __ATOMIC_RELEASE);
                refresh(sv);
                uint64_t t1 = gr_now_ms(), took = t1 - t0;
                if (!notified) {
                        say_started(sv);
                        sd_notify_ready();
                        notified = true;
                }
                /* a look that costs much (10,000 processes: 250 ms here) is not repeated at
                 * once: serve stays under a tenth of a core whatever the host */
                uint64_t pause = sv->interval_ms > took * 9 ? sv->interval_ms : took * 9;
                __atomic_store_n(&sv->look_due_ms, t1 + pause + look_budget_ms(sv), __ATOMIC_RELAXED);
                __atomic_store_n(&sv->look_ended_ms, t1, __ATOMIC_RELEASE);
                pthread_mutex_lock(&sv->lock);
                struct timespec until = gr_deadline_in(pause);
                while (!sv->stop && !sv->wake_now)
                        if (pthread_cond_timedwait(&sv->wake, &sv->lock, &until) == ETIMEDOUT)
                                break;
                sv->wake_now = false;
                bool stop = sv->stop;
                pthread_mutex_unlock(&sv->lock);
                if (stop)
                        return NULL;
        }
}

/* ---- the Unix socket --------------------------------------------------------------------- */

struct client {
        int fd;
        uint64_t deadline;
        char req[REQUEST_MAX];
        size_t req_len;
        char *out;                /* what is left to send (a copy of the answer) */
        size_t out_len, out_off;
};

static void client_close(struct client *c)
{
        if (c->fd >= 0)
                close(c->fd);
        free(c->out);
        memset(c, 0, sizeof(*c));
        c->fd = -1;
}

/* "status-out ID FLAGS WIDTH UID": the report that a client of build ID would render from the
 * wire, rendered here (issue 25: the client only copies it out). Only for a client of serve's
 * own user (the diagnosis is for getuid(), as the client's is), of this very build (the same
 * code renders it), and from a look no older than a client takes (5 s); a report that would
 * say something on stderr is not rendered here. FLAGS: j(son) or t(able), c(olour) or -,
 * v (--why) or -; WIDTH 0: as wide as it takes; UID the client's real uid, which must be its
 * effective one (SO_PEERCRED) and serve's. The answer: "ok CODE LENGTH\n" and the report, or
 * "no\n" (the client then asks for the structs). Kept until the next look; a table says how
 * old the look is, to a tenth of a second, which is part of its key. Under sv->lock */
static char *status_rendered(struct serve *sv, int fd, const char *args, size_t *ret_len)
{
        char id[64], flags[8], width_s[8], uid_s[16], extra;
        uint64_t width = 0, uid = UINT64_MAX;
        struct ucred cred;
        socklen_t cl = sizeof(cred);
        uint64_t now = gr_wall_ms();
        const gr_snapshot *s = sv->served;
        bool ok = sscanf(args, "%63s %7s %7s %15s %c", id, flags, width_s, uid_s, &extra) == 4 &&
                  strlen(flags) == 3 && strchr("jt", flags[0]) && strchr("c-", flags[1]) && strchr("v-", flags[2]) &&
                  width_s[strspn(width_s, "0123456789")] == '\0' && gr_parse_u64(width_s, &width) == 0 && width <= 10000 &&
                  uid_s[strspn(uid_s, "0123456789")] == '\0' && gr_parse_u64(uid_s, &uid) == 0 &&
                  strcmp(id, wire_build_id()) == 0 && s && s->served_by && s->history_since_ms &&
                  s->taken_at_ms + 5000 >= now && s->taken_at_ms <= now + 5000 &&
                  getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 && cred.uid == getuid() && uid == getuid();
        if (!ok) {
                *ret_len = 3;
                return strdup("no\n");
        }
        bool json = flags[0] == 'j';
        char key[32];
        /* a table says its age as %.1f s does: rounded to the tenth */
        snprintf(key, sizeof(key), "%s %d %llu", flags, (int)width,
                 json ? 0ULL : (unsigned long long)(((now > s->taken_at_ms ? now - s->taken_at_ms : 0) + 50) / 100));
        for (size_t i = 0; i < GR_ELEMENTSOF(sv->rendered); i++)
                if (sv->rendered[i].out && strcmp(sv->rendered[i].key, key) == 0) {
                        char *out = malloc(sv->rendered[i].len);
                        if (out)
                                memcpy(out, sv->rendered[i].out, sv->rendered[i].len);
                        *ret_len = sv->rendered[i].len;
                        return out;
                }
        char *body = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&body, &len);
        if (!f)
                return NULL;
        struct status_report_options o = { .json = json, .color = flags[1] == 'c', .why = flags[2] == 'v', .width = (int)width };
        bool would_say = false;
        int code = status_report(s, &o, f, &would_say);
        if (fclose(f) != 0) {
                free(body);
                return NULL;
        }
        if (would_say || code < 0 || code > 9) {
                free(body);
                *ret_len = 3;
                return strdup("no\n");
        }
        /* the length, so that a client takes only the whole answer */
        char head[48];
        int hl = snprintf(head, sizeof(head), "ok %d %zu\n", code, len);
        char *buf = malloc((size_t)hl + len);
        if (!buf) {
                free(body);
                return NULL;
        }
        memcpy(buf, head, (size_t)hl);
        memcpy(buf + hl, body, len);
        free(body);
        len += (size_t)hl;
        struct rendered *r = &sv->rendered[sv->rendered_next++ % GR_ELEMENTSOF(sv->rendered)];
        free(r->out);
        r->out = malloc(len);
        if (r->out) {
                memcpy(r->out, buf, len);
                r->len = len;
                gr_strlcpy(r->key, key, sizeof(r->key));
        }
        *ret_len = len;
        return buf;
}

/* The request is one line: "status" (the served snapshot's JSON), "status-wire ID" (its
 * structs), "status-out ID FLAGS WIDTH UID" (its report) or "ping" */
static void client_answer(struct serve *sv, struct client *c)
{
        c->req[c->req_len < REQUEST_MAX ? c->req_len : REQUEST_MAX - 1] = '\0';
        char *nl = strchr(c->req, '\n');
        if (nl)
                *nl = '\0';
        pthread_mutex_lock(&sv->lock);
        /* "status-wire ID": the structs, to a client whose build ID is serve's; else the JSON */
        bool wire = strncmp(c->req, "status-wire ", 12) == 0;
        bool same = wire && sv->wire && strcmp(c->req + 12, wire_build_id()) == 0;
        if (strncmp(c->req, "status-out ", 11) == 0) {
                c->out = status_rendered(sv, c->fd, c->req + 11, &c->out_len);
        } else if ((strcmp(c->req, "status") == 0 || wire) && sv->json) {
                const char *a = same ? sv->wire : sv->json;
                size_t n = same ? sv->wire_len : sv->json_len;
                c->out = malloc(n);
                if (c->out) {
                        memcpy(c->out, a, n);
                        c->out_len = n;
                }
        } else {
                char line[128];
                int n = strcmp(c->req, "ping") == 0
                                ? snprintf(line, sizeof(line), "gpureap serve %d %s\n", (int)getpid(), GPUREAP_VERSION)
                                : snprintf(line, sizeof(line), "error: unknown request (status, status-wire ID, status-out ID FLAGS WIDTH UID, ping)\n");
                c->out = strdup(line);
                c->out_len = c->out ? (size_t)n : 0;
        }
        pthread_mutex_unlock(&sv->lock);
        if (!c->out)
                client_close(c);
}

static void client_io(struct serve *sv, struct client *c, short revents)
{
        if (!c->out && (revents & (POLLIN | POLLHUP | POLLERR))) {
                ssize_t n = recv(c->fd, c->req + c->req_len, REQUEST_MAX - 1 - c->req_len, 0);
                if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR))) {
                        client_close(c);
                        return;
                }
                if (n > 0)
                        c->req_len += (size_t)n;
                if (memchr(c->req, '\n', c->req_len) || c->req_len >= REQUEST_MAX - 1)
                        client_answer(sv, c);
                return;
        }
        if (c->out && (revents & (POLLOUT | POLLHUP | POLLERR))) {
                ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return;
                if (n <= 0 || (c->out_off += (size_t)n) >= c->out_len)
                        client_close(c);
        }
}

/* Where serve's socket lives: the directory (an O_PATH descriptor: everything after the
 * bind is done through it, never through the path again), the name in it, and the socket's
 * inode, so that the socket removed at the end is the one serve made */
struct unix_place {
        int dir;
        char name[256];
        dev_t dev;
        ino_t ino;
};

/* The directory of PATH, opened. Only the default one (/run/gpureap) is made, one level, 0755:
 * a directory given (--socket, $GPUREAP_SERVE_SOCKET) must exist, so that a mistyped path
 * creates nothing */
static int socket_dir_open(const char *path, struct unix_place *ret, char *dir, size_t dir_size)
{
        const char *slash = strrchr(path, '/');
        const char *name = slash ? slash + 1 : path;
        if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || !gr_strlcpy(ret->name, name, sizeof(ret->name)))
                return -EINVAL;
        if (!slash)
                gr_strlcpy(dir, ".", dir_size);
        else if (slash == path)
                gr_strlcpy(dir, "/", dir_size);
        else
                snprintf(dir, dir_size, "%.*s", (int)(slash - path), path);
        if (strcmp(path, SERVE_SOCKET_DEFAULT) == 0 && mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        ret->dir = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        return ret->dir < 0 ? -errno : 0;
}

/* A socket at PATH that nobody answers on is a leftover of a serve that died: replaced. One
 * that answers belongs to a serve that runs: -EADDRINUSE. The socket is made in a private
 * directory of serve's own beside it, with its mode (umask) and group (fchownat there, where
 * nobody else can put another file under its name), then renamed into place: no path that
 * another user could change is followed after the bind. */
static int listen_unix(const char *path, gid_t gid, struct unix_place *place, char *dir, size_t dir_size)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path) + 1);
        int r = socket_dir_open(path, place, dir, dir_size);
        if (r < 0)
                return r;
        struct stat st;
        if (fstatat(place->dir, place->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                if (!S_ISSOCK(st.st_mode))
                        return -EEXIST;
                int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                bool answers = probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;
                if (probe >= 0)
                        close(probe);
                if (answers)
                        return -EADDRINUSE;
        }
        char priv[64];
        int pdir = -1;
        for (unsigned i = 0; i < 16 && pdir < 0; i++) {
                uint64_t rnd = 0;
                if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
                        rnd = gr_now_ms() * 7919 + i;
                snprintf(priv, sizeof(priv), ".gpureap-serve.%llx", (unsigned long long)rnd);
                if (mkdirat(place->dir, priv, 0700) < 0) {
                        if (errno == EEXIST)
                                continue;
                        return -errno;
                }
                pdir = openat(place->dir, priv, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (pdir < 0) {
                        r = -errno;
                        unlinkat(place->dir, priv, AT_REMOVEDIR);
                        return r;
                }
        }
        if (pdir < 0)
                return -EEXIST;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        struct sockaddr_un pa = { .sun_family = AF_UNIX };
        snprintf(pa.sun_path, sizeof(pa.sun_path), "/proc/self/fd/%d/s", pdir);
        /* no other thread runs yet: the umask is the process's */
        mode_t old = umask(gid != (gid_t)-1 ? 0117 : 0177);
        r = fd < 0 ? -errno : bind(fd, (struct sockaddr *)&pa, sizeof(pa)) < 0 ? -errno : 0;
        umask(old);
        if (r == 0 && gid != (gid_t)-1 && fchownat(pdir, "s", (uid_t)-1, gid, AT_SYMLINK_NOFOLLOW) < 0)
                r = -errno;
        if (r == 0 && fstatat(pdir, "s", &st, AT_SYMLINK_NOFOLLOW) < 0)
                r = -errno;
        if (r == 0 && listen(fd, 64) < 0)
                r = -errno;
        if (r == 0 && renameat(pdir, "s", place->dir, place->name) < 0)
                r = -errno;
        if (r < 0)
                unlinkat(pdir, "s", 0);
        unlinkat(place->dir, priv, AT_REMOVEDIR);
        close(pdir);
        if (r < 0) {
                if (fd >= 0)
                        close(fd);
                return r;
        }
        place->dev = st.st_dev;
        place->ino = st.st_ino;
        return fd;
}

/* The socket removed at the end: the one serve made, if it is still there under its name */
static void unlink_unix(const struct unix_place *place)
{
        struct stat st;
        if (place->dir >= 0 && fstatat(place->dir, place->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            st.st_dev == place->dev && st.st_ino == place->ino)
                unlinkat(place->dir, place->name, 0);
}

/* ---- HTTP: /metrics, /healthz, / -------------------------------------------------------- */

#ifdef HAVE_MICROHTTPD
/* libmicrohttpd, loaded by serve alone (with the TLS stack it links, it would cost every other
 * command its loading); the symbols it needs, type-checked against its header */
static struct {
        void *dl;
        __typeof__(MHD_start_daemon) *start_daemon;
        __typeof__(MHD_stop_daemon) *stop_daemon;
        __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
        __typeof__(MHD_add_response_header) *add_response_header;
        __typeof__(MHD_queue_response) *queue_response;
        __typeof__(MHD_destroy_response) *destroy_response;
} mhd;

static int mhd_load(char *err, size_t size)
{
        static const char *const names[] = { "libmicrohttpd.so.12", "libmicrohttpd.so" };
        for (size_t i = 0; i < GR_ELEMENTSOF(names) && !mhd.dl; i++)
                mhd.dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!mhd.dl) {
                snprintf(err, size, "libmicrohttpd is not installed (apt install libmicrohttpd12)");
                return -ENOENT;
        }
        struct { void **slot; const char *name; } syms[] = {
                { (void **)&mhd.start_daemon, "MHD_start_daemon" },
                { (void **)&mhd.stop_daemon, "MHD_stop_daemon" },
                { (void **)&mhd.create_response_from_buffer, "MHD_create_response_from_buffer" },
                { (void **)&mhd.add_response_header, "MHD_add_response_header" },
                { (void **)&mhd.queue_response, "MHD_queue_response" },
                { (void **)&mhd.destroy_response, "MHD_destroy_response" },
        };
        for (size_t i = 0; i < GR_ELEMENTSOF(syms); i++)
                if (!(*syms[i].slot = dlsym(mhd.dl, syms[i].name))) {
                        snprintf(err, size, "libmicrohttpd has no %s", syms[i].name);
                        return -ENOENT;
                }
        return 0;
}

#define HTTP_CONNECTIONS_MAX 4096

/* As many connections as the fd limit leaves room for, after the socket's clients, the /proc
 * reads and the NVML helper */
static unsigned http_connection_limit(void)
{
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return 32;
        if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > HTTP_CONNECTIONS_MAX + 256)
                return HTTP_CONNECTIONS_MAX;
        return rl.rlim_cur > 256 + 32 ? (unsigned)(rl.rlim_cur - 256) : 32;
}

/* /healthz: 200 "ok" while the looks come when due, else 503 and why. A driver that does not
 * answer is not serve's failure (its looks go on, and /metrics says gpureap_up 0); a refresher
 * that stops looking is: its answers grow old while the socket and /metrics still answer. */
static unsigned healthz(const struct serve *sv, char *buf, size_t size)
{
        uint64_t now = gr_now_ms();
        uint64_t started = __atomic_load_n(&sv->look_started_ms, __ATOMIC_ACQUIRE);
        uint64_t ended = __atomic_load_n(&sv->look_ended_ms, __ATOMIC_ACQUIRE);
        uint64_t due = __atomic_load_n(&sv->look_due_ms, __ATOMIC_RELAXED);
        if (!ended) {
                snprintf(buf, size, "no look yet: serve started %.1f s ago, its first look %s\n",
                         (double)(now - sv->started_ms) / 1000, started ? "has not ended" : "has not started");
                return MHD_HTTP_SERVICE_UNAVAILABLE;
        }
        if (now <= due) {
                snprintf(buf, size, "ok\n");
                return MHD_HTTP_OK;
        }
        if (started > ended)
                snprintf(buf, size, "stuck: a look started %.1f s ago has not ended (a look every %llu ms, the last one ended %.1f s ago)\n",
                         (double)(now - started) / 1000, (unsigned long long)sv->interval_ms, (double)(now - ended) / 1000);
        else
                snprintf(buf, size, "stuck: no look for %.1f s (a look every %llu ms)\n", (double)(now - ended) / 1000,
                         (unsigned long long)sv->interval_ms);
        return MHD_HTTP_SERVICE_UNAVAILABLE;
}

static enum MHD_Result http_answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                   const char *version, const char *upload_data, size_t *upload_data_size,
                                   void **con_cls)
{
        (void)version;
        (void)upload_data;
        (void)con_cls;
        struct serve *sv = cls;
        if (*upload_data_size != 0)
                return MHD_NO; /* a GET has no body */
        unsigned code = MHD_HTTP_OK;
        char *body = NULL, text[512];
        size_t len = 0;
        const char *type = "text/plain; charset=utf-8";
        text[0] = '\0';
        if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
                code = MHD_HTTP_METHOD_NOT_ALLOWED;
                snprintf(text, sizeof(text), "GET only\n");
        } else if (strcmp(url, "/metrics") == 0) {
                pthread_mutex_lock(&sv->lock);
                if (sv->metrics && (body = malloc(sv->metrics_len ? sv->metrics_len : 1))) {
                        memcpy(body, sv->metrics, sv->metrics_len);
                        len = sv->metrics_len;
                        type = "text/plain; version=0.0.4; charset=utf-8";
                } else {
                        code = MHD_HTTP_SERVICE_UNAVAILABLE;
                        snprintf(text, sizeof(text), "not ready: no look yet\n");
                }
                pthread_mutex_unlock(&sv->lock);
        } else if (strcmp(url, "/healthz") == 0) {
                code = healthz(sv, text, sizeof(text));
        } else if (strcmp(url, "/") == 0) {
                snprintf(text, sizeof(text),
                         "gpureap serve %s (PID %d): the GPUs, what holds them and what is left over\n"
                         "\n"
                         "/metrics  the metrics, in the Prometheus text format (docs/integrations.md)\n"
                         "/healthz  200 \"ok\" while the looks are fresh (one every %llu ms), else 503 and why\n",
                         GPUREAP_VERSION, (int)getpid(), (unsigned long long)sv->interval_ms);
        } else {
                code = MHD_HTTP_NOT_FOUND;
                snprintf(text, sizeof(text), "not found: try /metrics or /healthz\n");
        }
        if (!body) {
                body = strdup(text);
                len = body ? strlen(body) : 0;
        }
        struct MHD_Response *resp = mhd.create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(body);
                return MHD_NO;
        }
        mhd.add_response_header(resp, "Content-Type", type);
        enum MHD_Result r = mhd.queue_response(conn, code, resp);
        mhd.destroy_response(resp);
        return r;
}
#endif

/* "127.0.0.1:10145", "[::1]:10145", ":10145" (all addresses) */
static int parse_listen(const char *v, struct sockaddr_storage *ret, socklen_t *ret_len)
{
        memset(ret, 0, sizeof(*ret));
        const char *colon = strrchr(v, ':');
        if (!colon || !colon[1])
                return -EINVAL;
        char *end;
        long port = strtol(colon + 1, &end, 10);
        if (*end || port < 1 || port > 65535)
                return -EINVAL;
        char host[128];
        size_t hl = (size_t)(colon - v);
        if (hl >= sizeof(host))
                return -EINVAL;
        memcpy(host, v, hl);
        host[hl] = '\0';
        if (host[0] == '[' && hl >= 2 && host[hl - 1] == ']') {
                host[hl - 1] = '\0';
                struct sockaddr_in6 *a = (struct sockaddr_in6 *)ret;
                a->sin6_family = AF_INET6;
                a->sin6_port = htons((uint16_t)port);
                if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
                        return -EINVAL;
                *ret_len = sizeof(*a);
                return 0;
        }
        struct sockaddr_in *a = (struct sockaddr_in *)ret;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        if (hl == 0)
                a->sin_addr.s_addr = htonl(INADDR_ANY);
        else if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
                return -EINVAL;
        *ret_len = sizeof(*a);
        return 0;
}

struct exit_events {
        struct history *hist;
        bool watched;             /* one of them was a watched launcher's */
};

static void on_exit_event(pid_t pid, int status, void *userdata)
{
        struct exit_events *e = userdata;
        e->watched |= history_note_exit(e->hist, pid, status, gr_wall_ms());
}

/* What the command line asked for beyond struct serve's own settings */
struct serve_args {
        const char *socket_opt, *group, *listen_opt;
};

/* The options into sv and a; -1 to go on, else the exit code */
static int serve_parse(int argc, char **argv, struct serve *sv, struct serve_args *a)
{
        static const struct option opts[] = {
                { "socket", required_argument, NULL, 's' },
                { "group", required_argument, NULL, 'g' },
                { "interval", required_argument, NULL, 'i' },
                { "listen", required_argument, NULL, 'l' },
                { "nvml-timeout", required_argument, NULL, 't' },
                { "reap-after", required_argument, NULL, 'R' },
                { "reap-all-users", no_argument, NULL, 'U' },
                { "process-metrics", no_argument, NULL, 'P' },
                { "kubelet-socket", required_argument, NULL, OPT_KUBELET_SOCKET },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        const char *kubelet_socket = NULL;
        if (nvml_timeout_from_env(&sv->so.gpu.timeout_ms) < 0)
                return EXIT_USAGE;
        optind = 1;
        int c;
        while ((c = getopt_long(argc, argv, "+s:g:i:l:t:h", opts, NULL)) != -1) {
                switch (c) {
                case 's': a->socket_opt = optarg; break;
                case 'g': a->group = optarg; break;
                case 'i':
                        if (parse_duration_option(optarg, &sv->interval_ms, false) < 0)
                                return EXIT_USAGE;
                        if (sv->interval_ms < 100) {
                                error_msg("--interval must be at least 100ms");
                                return EXIT_USAGE;
                        }
                        break;
                case 'l': a->listen_opt = optarg; break;
                case 't':
                        if (parse_duration_option(optarg, &sv->so.gpu.timeout_ms, false) < 0)
                                return EXIT_USAGE;
                        break;
                case 'R':
                        if (parse_duration_option(optarg, &sv->reap_after_ms, false) < 0)
                                return EXIT_USAGE;
                        if (sv->reap_after_ms == 0) {
                                error_msg("--reap-after must be more than 0 (leave it out for no policy)");
                                return EXIT_USAGE;
                        }
                        break;
                case 'U': sv->reap_all_users = true; break;
                case OPT_KUBELET_SOCKET: kubelet_socket = optarg; break;
                case 'P': sv->process_metrics = true; break;
                case 'h':
                        serve_usage(stdout);
                        return EXIT_CLEAN;
                default:
                        unknown_option(argc, argv, opts, "serve");
                        return EXIT_USAGE;
                }
        }
        if (no_stray_arguments(argc, argv, "serve") < 0 || kubelet_socket_option(&sv->so, kubelet_socket) < 0)
                return EXIT_USAGE;
        if (sv->reap_all_users && !sv->reap_after_ms) {
                error_msg("--reap-all-users needs --reap-after");
                return EXIT_USAGE;
        }
        return -1;
}

/* What serve holds open while it runs */
struct serve_io {
        int lfd, sfd, efd;        /* the unix socket, the signals, the process events */
        struct unix_place place;
        char dir[4096];           /* the socket's directory, as shown */
        bool http;
        struct sockaddr_storage http_addr;
        socklen_t http_len;
#ifdef HAVE_MICROHTTPD
        struct MHD_Daemon *daemon;
#endif
        pthread_t refresher;
        struct client clients[CLIENTS_MAX];
};

/* The group and the HTTP address asked for; -1 to go on, else the exit code */
static int serve_check_addresses(const struct serve_args *a, gid_t *gid, struct serve_io *io)
{
        *gid = (gid_t)-1;
        if (a->group) {
                struct group *gr = getgrnam(a->group);
                if (!gr) {
                        error_msg("no group '%s'", QUOTED(a->group));
                        return EXIT_USAGE;
                }
                *gid = gr->gr_gid;
        }
        io->http = strcmp(a->listen_opt, "none") != 0;
        if (io->http && parse_listen(a->listen_opt, &io->http_addr, &io->http_len) < 0) {
                error_msg("invalid --listen '%s': give ADDR:PORT ('127.0.0.1:10145', '[::1]:10145', ':10145') or 'none'",
                          QUOTED(a->listen_opt));
                return EXIT_USAGE;
        }
#ifndef HAVE_MICROHTTPD
        if (io->http && strcmp(a->listen_opt, SERVE_LISTEN_DEFAULT) != 0) {
                error_msg("this gpureap was built without HTTP (libmicrohttpd): --listen is not available");
                return EXIT_USAGE;
        }
        io->http = false;
#endif
        return -1;
}

/* The unix socket, and the history's place beside it (serve.sock -> serve.history), shown as
 * hist_shown; -1 to go on, else the exit code */
static int serve_listen_socket(struct serve *sv, const struct serve_args *a, gid_t gid, struct serve_io *io,
                               char *hist_shown, size_t hist_size)
{
        const char *path = serve_socket_path(a->socket_opt);
        if (!gr_strlcpy(sv->socket_path, path, sizeof(sv->socket_path))) {
                error_msg("the socket path is too long");
                return EXIT_USAGE;
        }
        io->lfd = listen_unix(path, gid, &io->place, io->dir, sizeof(io->dir));
        if (io->lfd < 0) {
                int e = io->lfd;
                if (e == -EADDRINUSE)
                        error_msg("another gpureap serve answers on '%s'", QUOTED(path));
                else if (e == -ENOENT && io->place.dir < 0)
                        error_msg("no directory '%s' for the socket '%s'", QUOTED(io->dir), QUOTED(path));
                else
                        error_msg("cannot listen on '%s': %s", QUOTED(path), strerror(-e));
                if (io->place.dir >= 0)
                        close(io->place.dir);
                return e == -EADDRINUSE ? EXIT_NOT_CLEAN : EXIT_USAGE;
        }
        size_t nl = strlen(io->place.name);
        if (nl > 5 && strcmp(io->place.name + nl - 5, ".sock") == 0)
                nl -= 5;
        snprintf(sv->hist_name, sizeof(sv->hist_name), "%.*s.history", (int)(nl < 200 ? nl : 200), io->place.name);
        sv->hist_dir = io->place.dir;
        snprintf(hist_shown, hist_size, "%s/%s", io->dir, sv->hist_name);
        return -1;
}

/* Signals through a signalfd, the process events, the history read back, the lock */
static void serve_open_state(struct serve *sv, struct serve_io *io, const char *hist_shown)
{
        /* /metrics takes hundreds of connections: the soft fd limit up to the hard one */
        gr_raise_fd_limit();
        sigset_t sigs;
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGINT);
        sigaddset(&sigs, SIGHUP);
        sigaddset(&sigs, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &sigs, NULL);
        io->sfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);

        audit_open("serve");
        io->efd = gr_procev_open();
        history_init(&sv->hist, gr_wall_ms(), io->efd >= 0, NULL);
        /* after the process events are open: a launcher found alive now is the one serve saw,
         * and its end from now on is an event */
        char hmsg[2 * 4400];
        int hr = history_load(&sv->hist, sv->hist_dir, sv->hist_name, hist_shown, gr_wall_ms(), hmsg, sizeof(hmsg));
        if (hr > 0)
                fprintf(stderr, "gpureap: %s\n", hmsg);
        else if (hr < 0)
                fprintf(stderr, "gpureap: ignoring the history '%s': %s\n", hist_shown, hr == -ENOMEM ? strerror(ENOMEM) : hmsg);
        if (io->efd < 0)
                fprintf(stderr, "gpureap: no process events (%s): how launchers end will not be known\n", strerror(-io->efd));
        pthread_mutex_init(&sv->lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&sv->wake, &ca);
        pthread_condattr_destroy(&ca);
}

/* The HTTP listener, where asked for and available; the exit code */
static int serve_start_http(struct serve *sv, const struct serve_args *a, struct serve_io *io)
{
#ifdef HAVE_MICROHTTPD
        char why[160];
        if (io->http && mhd_load(why, sizeof(why)) < 0) {
                /* the default address: serve without HTTP and say so; one asked for: an error */
                if (strcmp(a->listen_opt, SERVE_LISTEN_DEFAULT) != 0) {
                        error_msg("cannot serve HTTP on '%s': %s", QUOTED(a->listen_opt), why);
                        return EXIT_USAGE;
                }
                fprintf(stderr, "gpureap: no HTTP /metrics: %s\n", why);
                io->http = false;
        }
        if (io->http) {
                /* Any local user can open connections to the port and send nothing: with 32 of
                 * them (and 10 s before each was dropped) Prometheus's scrapes failed. epoll
                 * (one thread, no poll set to rebuild), up to HTTP_CONNECTIONS_MAX connections
                 * as far as the fd limit allows, each of at most 16 KiB, and 3 s for one that
                 * sends nothing: hundreds of idle connections leave room for the scrape, which
                 * is answered from the text the last look rendered. A limit per address would
                 * not help: the scraper and every local user share 127.0.0.1. */
                io->daemon = mhd.start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                                                      (io->http_addr.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
                                              0, NULL, NULL, http_answer, sv, MHD_OPTION_SOCK_ADDR,
                                              (struct sockaddr *)&io->http_addr, MHD_OPTION_CONNECTION_LIMIT,
                                              http_connection_limit(), MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)3,
                                              MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
                                              MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)1024, MHD_OPTION_END);
                if (!io->daemon) {
                        error_msg("cannot serve HTTP on '%s'", QUOTED(a->listen_opt));
                        return EXIT_USAGE;
                }
        }
#else
        (void)a;
#endif
        sv->http_shown = io->http ? a->listen_opt : NULL;
        return EXIT_CLEAN;
}

static void serve_wake(struct serve *sv)
{
        pthread_mutex_lock(&sv->lock);
        sv->wake_now = true;
        pthread_cond_signal(&sv->wake);
        pthread_mutex_unlock(&sv->lock);
}

/* The signals that came; true when serve is to stop */
static bool serve_on_signals(struct serve *sv, int sfd)
{
        bool stop = false;
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                if (si.ssi_signo == SIGHUP) {
                        /* nothing to reload (the command line is all the configuration): the
                         * memory goes to disk now */
                        pthread_mutex_lock(&sv->hist.lock);
                        sv->hist.dirty = true;
                        pthread_mutex_unlock(&sv->hist.lock);
                        serve_wake(sv);
                        audit_log(LOG_INFO, "SIGHUP: still watching; the history is written out");
                } else if (si.ssi_signo != SIGPIPE) {
                        stop = true;
                }
        }
        return stop;
}

static void serve_on_events(struct serve *sv, int efd)
{
        bool lost = false;
        struct exit_events ee = { &sv->hist, false };
        /* every process of the host that ends is an event (our own helpers too): only a watched
         * launcher's end makes serve look again at once */
        if (gr_procev_read(efd, on_exit_event, &ee, &lost) > 0 && ee.watched)
                serve_wake(sv);
        if (lost)
                history_note_lost(&sv->hist);
}

static void serve_accept(struct serve *sv, struct serve_io *io)
{
        for (;;) {
                int cfd = accept4(io->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (cfd < 0)
                        break;
                size_t i = 0;
                while (i < CLIENTS_MAX && io->clients[i].fd >= 0)
                        i++;
                if (i == CLIENTS_MAX) {
                        close(cfd); /* busy: the client falls back to reading the driver itself */
                        continue;
                }
                struct client *c = &io->clients[i];
                c->fd = cfd;
                c->deadline = gr_now_ms() + 2000;
                /* a client sends its request as it connects: answered in this round when it is
                 * there, the answer sent as far as the socket takes it (the rest when poll says) */
                client_io(sv, c, POLLIN);
                if (c->fd >= 0 && c->out)
                        client_io(sv, c, POLLOUT);
        }
}

/* Until a signal ends it: the socket's clients, the signals and the process events */
static void serve_loop(struct serve *sv, struct serve_io *io)
{
        for (size_t i = 0; i < CLIENTS_MAX; i++) {
                memset(&io->clients[i], 0, sizeof(io->clients[i]));
                io->clients[i].fd = -1;
        }
        for (;;) {
                struct pollfd pfd[3 + CLIENTS_MAX];
                size_t n = 0, map[CLIENTS_MAX];
                pfd[n++] = (struct pollfd){ .fd = io->lfd, .events = POLLIN };
                pfd[n++] = (struct pollfd){ .fd = io->sfd, .events = POLLIN };
                pfd[n++] = (struct pollfd){ .fd = io->efd, .events = POLLIN };
                uint64_t now = gr_now_ms();
                for (size_t i = 0; i < CLIENTS_MAX; i++) {
                        struct client *cl = &io->clients[i];
                        if (cl->fd < 0)
                                continue;
                        if (now >= cl->deadline) {
                                client_close(cl); /* a client that neither asks nor reads */
                                continue;
                        }
                        map[n - 3] = i;
                        pfd[n++] = (struct pollfd){ .fd = cl->fd, .events = cl->out ? POLLOUT : POLLIN };
                }
                int k = poll(pfd, n, 500);
                if (k < 0 && errno != EINTR)
                        return;
                if ((pfd[1].revents & POLLIN) && serve_on_signals(sv, io->sfd))
                        return;
                if (pfd[2].revents & POLLIN)
                        serve_on_events(sv, io->efd);
                for (size_t i = 3; i < n; i++)
                        if (pfd[i].revents)
                                client_io(sv, &io->clients[map[i - 3]], pfd[i].revents);
                if (pfd[0].revents & POLLIN)
                        serve_accept(sv, io);
        }
}

static void serve_close(struct serve *sv, struct serve_io *io, bool ran)
{
#ifdef HAVE_MICROHTTPD
        if (io->daemon)
                mhd.stop_daemon(io->daemon);
#endif
        if (ran)
                for (size_t i = 0; i < CLIENTS_MAX; i++)
                        client_close(&io->clients[i]);
        close(io->lfd);
        unlink_unix(&io->place);
        if (ran)
                save_history(sv); /* the refresher has ended: this thread alone writes now */
        close(io->place.dir);
        if (io->efd >= 0)
                close(io->efd);
        if (io->sfd >= 0)
                close(io->sfd);
        free(sv->json);
        free(sv->wire);
        gr_snapshot_free(sv->served);
        for (size_t i = 0; i < GR_ELEMENTSOF(sv->rendered); i++)
                free(sv->rendered[i].out);
        free(sv->metrics);
        free(sv->sure);
        if (ran)
                policy_reap_join(sv); /* a reap runs to its own deadline */
        gr_kubelet_answer_free(sv->kubelet);
        gr_pod_memory_free(sv->pods);
        history_release(&sv->hist);
}

int cmd_serve(int argc, char **argv)
{
        struct serve_args a = { .listen_opt = SERVE_LISTEN_DEFAULT };
        struct serve sv = { .interval_ms = 1000, .hist_dir = -1 };
        sv.so.proc.keep_bpf = true; /* loaded once, not at every look */
        int code = serve_parse(argc, argv, &sv, &a);
        if (code >= 0)
                return code;
        static struct serve_io io; /* its clients are large for a stack */
        io = (struct serve_io){ .lfd = -1, .sfd = -1, .efd = -1, .place = { .dir = -1 } };
        gid_t gid;
        if ((code = serve_check_addresses(&a, &gid, &io)) >= 0)
                return code;
        char hist_shown[sizeof(io.dir) + sizeof(sv.hist_name) + 2];
        if ((code = serve_listen_socket(&sv, &a, gid, &io, hist_shown, sizeof(hist_shown))) >= 0)
                return code;
        serve_open_state(&sv, &io, hist_shown);
        if (gr_pod_memory_new(&sv.pods) < 0)
                sv.pods = NULL; /* each look asks about its pods as if it were the first */
        sv.started_ms = gr_now_ms();
        code = serve_start_http(&sv, &a, &io);
        if (code == EXIT_CLEAN && pthread_create(&io.refresher, NULL, refresher, &sv) != 0) {
                error_msg("cannot start the refresher thread");
                code = EXIT_DRIVER;
        }
        if (code != EXIT_CLEAN) {
                serve_close(&sv, &io, false);
                return code;
        }
        audit_log(LOG_INFO, "watching: socket %s, http %s, every %llu ms, process events %s", sv.socket_path,
                  io.http ? a.listen_opt : "off", (unsigned long long)sv.interval_ms, io.efd >= 0 ? "on" : "off");
        if (sv.reap_after_ms)
                audit_log(LOG_NOTICE, "policy: sure leftovers of %s reaped after %llu ms",
                          sv.reap_all_users ? "every user" : "serve's own user", (unsigned long long)sv.reap_after_ms);
        serve_loop(&sv, &io);
        audit_log(LOG_INFO, "stopping");
        pthread_mutex_lock(&sv.lock);
        sv.stop = true;
        pthread_cond_signal(&sv.wake);
        pthread_mutex_unlock(&sv.lock);
        pthread_join(io.refresher, NULL);
        serve_close(&sv, &io, true);
        return EXIT_CLEAN;
}
