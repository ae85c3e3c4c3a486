/* Load a snapshot recorded with 'gpureap status --json' (schema 1 or 2), so a report can be
 * diagnosed again anywhere: 'gpureap status --replay FILE'. Only the facts are read; verdicts
 * and findings in the file are ignored and computed anew. Bounded in bytes and in items: at
 * most REPLAY_MAX_BYTES of a regular file, and in it at most REPLAY_VALUES_MAX JSON values
 * (REPLAY_CONTAINERS_MAX of them objects or arrays), counted before the parser allocates
 * anything, and no list longer than gpureap writes one (REPLAY_PROCESSES_MAX processes,
 * GR_GPUS_MAX GPUs, GR_GPU_PROCS_MAX owners each...). 18 MB of empty objects had taken 23 s
 * and 4.7 GB: an object parsed costs json-c some 700 bytes, and "{}, " is 4 bytes of text. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpureap/basic.h"
#include "gpureap.h"

static json_object *get(json_object *o, const char *k)
{
        json_object *v = NULL;
        return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

/* The list past its bound, for the message */
struct too_long {
        const char *what;
        size_t max;
};

/* The array o.k (NULL, length 0 when absent or not an array); -E2BIG (what in *tl) when it
 * has more than max items: no snapshot gpureap writes has */
static int get_array(json_object *o, const char *k, size_t max, const char *what, struct too_long *tl,
                     json_object **ret, size_t *ret_n)
{
        json_object *a = get(o, k);
        if (!a || json_object_get_type(a) != json_type_array) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        size_t n = json_object_array_length(a);
        if (n > max) {
                *tl = (struct too_long){ what, max };
                return -E2BIG;
        }
        *ret = a;
        *ret_n = n;
        return 0;
}

static uint64_t get_u64(json_object *o, const char *k)
{
        json_object *v = get(o, k);
        if (!v || json_object_get_type(v) != json_type_int)
                return GR_UNKNOWN_U64;
        int64_t x = json_object_get_int64(v);
        /* past INT64_MAX json-c keeps the number as unsigned: a driver's wrapped value */
        return x < 0 ? GR_UNKNOWN_U64 : x == INT64_MAX ? json_object_get_uint64(v) : (uint64_t)x;
}

static int64_t get_int(json_object *o, const char *k, int64_t dflt)
{
        json_object *v = get(o, k);
        return v && json_object_get_type(v) == json_type_int ? json_object_get_int64(v) : dflt;
}

/* A recorded snapshot is anyone's text: every string is made safe as it is loaded, as the live
 * readers make theirs (a JSON string may hold "\u001b" or bytes that are not UTF-8) */
static void get_str(json_object *o, const char *k, char *buf, size_t size)
{
        json_object *v = get(o, k);
        gr_strlcpy(buf, v && json_object_get_type(v) == json_type_string ? json_object_get_string(v) : "", size);
        gr_text_sanitize(buf);
}

static char *dup_str(json_object *o, const char *k)
{
        json_object *v = get(o, k);
        if (!v || json_object_get_type(v) != json_type_string)
                return NULL;
        const char *s = json_object_get_string(v);
        size_t n = strnlen(s, GR_CMDLINE_MAX - 1);
        char *r = malloc(n + 1);
        if (r) {
                memcpy(r, s, n);
                r[n] = '\0';
                gr_text_sanitize(r);
        }
        return r;
}

static gr_gpu_status status_of(const char *s)
{
        if (strcmp(s, "ok") == 0)
                return GR_GPU_OK;
        if (strcmp(s, "no_library") == 0)
                return GR_GPU_NO_LIBRARY;
        if (strcmp(s, "init_failed") == 0)
                return GR_GPU_INIT_FAILED;
        if (strcmp(s, "timeout") == 0)
                return GR_GPU_TIMEOUT;
        return GR_GPU_FAILED;
}

static int cmp_proc(const void *a, const void *b)
{
        pid_t x = ((const gr_process *)a)->pid, y = ((const gr_process *)b)->pid;
        return (x > y) - (x < y);
}

static int load_gpus(json_object *root, gr_gpu_report *rep, struct too_long *tl)
{
        json_object *gpus;
        size_t n;
        int r = get_array(root, "gpus", GR_GPUS_MAX, "GPUs", tl, &gpus, &n);
        if (r < 0)
                return r;
        rep->gpus = calloc(n ? n : 1, sizeof(gr_gpu));
        if (!rep->gpus)
                return -ENOMEM;
        rep->n_gpus = (unsigned)n;
        for (size_t i = 0; i < n; i++) {
                json_object *jg = json_object_array_get_idx(gpus, i);
                gr_gpu *g = &rep->gpus[i];
                g->index = (unsigned)get_int(jg, "index", (int64_t)i);
                g->minor = (int)get_int(jg, "minor", -1);
                get_str(jg, "uuid", g->uuid, sizeof(g->uuid));
                get_str(jg, "pci_bus_id", g->pci_bus_id, sizeof(g->pci_bus_id));
                get_str(jg, "name", g->name, sizeof(g->name));
                get_str(jg, "error", g->error, sizeof(g->error));
                json_object *m = get(jg, "memory");
                g->mem_total = get_u64(m, "total");
                g->mem_reserved = get_u64(m, "reserved");
                g->mem_used = get_u64(m, "used");
                g->mem_free = get_u64(m, "free");
                char api[8];
                get_str(m, "api", api, sizeof(api));
                g->mem_api = strcmp(api, "v2") == 0 ? 2 : strcmp(api, "v1") == 0 ? 1 : 0;
                gr_gpu_check_memory(g); /* the recorded numbers are the driver's too */
                g->proc_stride = (unsigned)get_int(jg, "process_entry_bytes", 0);
                json_object *owners;
                size_t k;
                if ((r = get_array(jg, "context_owners", GR_GPU_PROCS_MAX, "context owners of a GPU", tl, &owners, &k)) < 0)
                        return r;
                g->procs_ok = owners != NULL;
                if (k > 0 && !(g->procs = calloc(k, sizeof(gr_gpu_proc))))
                        return -ENOMEM;
                for (size_t j = 0; j < k; j++) {
                        json_object *jo = json_object_array_get_idx(owners, j);
                        char type[16];
                        get_str(jo, "type", type, sizeof(type));
                        int64_t pid = get_int(jo, "pid", 0);
                        if (pid <= 0 || pid > GR_PROC_PID_MAX)
                                continue;
                        g->procs[g->n_procs++] = (gr_gpu_proc){
                                .pid = (uint32_t)pid,
                                .kind = strcmp(type, "graphics") == 0 ? GR_CTX_GRAPHICS :
                                        strcmp(type, "mps") == 0 ? GR_CTX_MPS : GR_CTX_COMPUTE,
                                .used_bytes = get_u64(jo, "used_memory"),
                        };
                }
        }
        return 0;
}

static gr_pod_naming naming_of(json_object *o, const char *k)
{
        char n[24];
        get_str(o, k, n, sizeof(n));
        for (int v = GR_POD_NOT_ASKED; v <= GR_POD_NO_CONTAINER; v++)
                if (strcmp(n, gr_pod_naming_name((gr_pod_naming)v)) == 0)
                        return (gr_pod_naming)v;
        return GR_POD_NOT_ASKED; /* a name from a later version: claim nothing */
}

/* Its pod, as recorded (or served): the kubelet's names are facts of that moment */
static int load_pod(json_object *jp, gr_process *p)
{
        json_object *k = get(jp, "kubernetes");
        if (!k || json_object_get_type(k) != json_type_object)
                return 0;
        gr_pod *pod = calloc(1, sizeof(*pod));
        if (!pod)
                return -ENOMEM;
        get_str(k, "pod_uid", pod->uid, sizeof(pod->uid));
        get_str(k, "container_id", pod->container_id, sizeof(pod->container_id));
        get_str(k, "pod", pod->name, sizeof(pod->name));
        get_str(k, "namespace", pod->ns, sizeof(pod->ns));
        get_str(k, "container", pod->container, sizeof(pod->container));
        pod->naming = naming_of(k, "naming");
        pod->container_naming = naming_of(k, "container_naming");
        const char *by = json_object_get_string(get(k, "named_by"));
        pod->runtime_named = by && strcmp(by, "runtime") == 0 && pod->naming != GR_POD_NAMED;
        if (pod->naming != GR_POD_NAMED && !pod->runtime_named)
                pod->name[0] = pod->ns[0] = '\0';
        if (pod->container_naming != GR_POD_NAMED && !pod->runtime_named)
                pod->container[0] = '\0';
        json_object *ga = get(k, "gpus_assigned");
        if (ga && json_object_get_type(ga) == json_type_array) {
                pod->assigned_known = true;
                size_t n = json_object_array_length(ga);
                for (size_t i = 0; i < n && i < 64; i++) {
                        json_object *e = json_object_array_get_idx(ga, i);
                        int64_t g = e && json_object_get_type(e) == json_type_int ? json_object_get_int64(e) : -1;
                        if (g >= 0 && g < 64)
                                pod->gpus_assigned |= 1ULL << g;
                }
        }
        json_object *gone = get(k, "gone");
        if (gone && json_object_get_type(gone) == json_type_object) {
                const char *st = json_object_get_string(get(gone, "state"));
                for (int v = GR_POD_GONE_CONFIRMED; st && v <= GR_POD_GONE_RUNNING; v++)
                        if (strcmp(st, gr_pod_gone_name((gr_pod_gone)v)) == 0)
                                pod->gone = (gr_pod_gone)v;
                get_str(gone, "pod", pod->gone_name, sizeof(pod->gone_name));
                get_str(gone, "namespace", pod->gone_ns, sizeof(pod->gone_ns));
                get_str(gone, "why", pod->gone_why, sizeof(pod->gone_why));
                if (pod->gone != GR_POD_GONE_CONFIRMED && pod->gone != GR_POD_GONE_PRESENT && pod->gone != GR_POD_GONE_RUNNING)
                        pod->gone_name[0] = pod->gone_ns[0] = '\0';
        }
        p->pod = pod;
        return 0;
}

static void load_kubelet(json_object *root, gr_snapshot_kubelet *k)
{
        json_object *o = get(root, "kubelet");
        *k = (gr_snapshot_kubelet){ .state = GR_KUBELET_OFF };
        if (!o || json_object_get_type(o) != json_type_object)
                return;
        char st[24];
        get_str(o, "state", st, sizeof(st));
        for (int v = GR_KUBELET_OFF; v <= GR_KUBELET_ERROR; v++)
                if (strcmp(st, gr_kubelet_state_name((gr_kubelet_state)v)) == 0)
                        k->state = (gr_kubelet_state)v;
        get_str(o, "socket", k->socket, sizeof(k->socket));
        get_str(o, "error", k->error, sizeof(k->error));
        int64_t at = get_int(o, "asked_at_unix_ms", 0), el = get_int(o, "elapsed_ms", 0);
        int64_t pods = get_int(o, "pods", 0), devs = get_int(o, "devices", 0);
        k->asked_at_ms = at > 0 ? (uint64_t)at : 0;
        k->elapsed_ms = el > 0 ? (uint64_t)el : 0;
        k->n_pods = pods > 0 && pods <= UINT32_MAX ? (unsigned)pods : 0;
        k->n_devices = devs > 0 && devs <= UINT32_MAX ? (unsigned)devs : 0;
        json_object *assigned = get(o, "gpus_assigned");
        size_t n = assigned && json_object_get_type(assigned) == json_type_array ? json_object_array_length(assigned) : 0;
        for (size_t i = 0; i < n && i < 64; i++) {
                json_object *e = json_object_array_get_idx(assigned, i);
                int64_t g = e && json_object_get_type(e) == json_type_int ? json_object_get_int64(e) : -1;
                if (g >= 0 && g < 64)
                        k->gpus_assigned |= 1ULL << g;
        }
        json_object *unmapped = get(o, "devices_unmapped");
        k->devices_unmapped = unmapped && json_object_get_type(unmapped) == json_type_boolean && json_object_get_boolean(unmapped);
        if (!assigned)
                k->devices_unmapped = true; /* a recording without them: which GPUs are assigned is not known */
        json_object *c = get(o, "checkpoint");
        if (c && json_object_get_type(c) == json_type_object) {
                get_str(c, "state", st, sizeof(st));
                for (int v = GR_CHECKPOINT_NOT_READ; v <= GR_CHECKPOINT_ERROR; v++)
                        if (strcmp(st, gr_checkpoint_state_name((gr_checkpoint_state)v)) == 0)
                                k->checkpoint_state = (gr_checkpoint_state)v;
                get_str(c, "path", k->checkpoint, sizeof(k->checkpoint));
                get_str(c, "error", k->checkpoint_error, sizeof(k->checkpoint_error));
                int64_t nd = get_int(c, "devices", 0);
                k->n_assigned = nd > 0 && nd <= UINT32_MAX ? (unsigned)nd : 0;
        }
}

static void load_environ(json_object *jp, gr_process *p)
{
        p->env = (gr_env_marks){ .run_pid = p->run_pid, .local_rank = -1, .rank = -1, .group_rank = -1 };
        json_object *env = get(jp, "environ");
        if (!env || json_object_get_type(env) != json_type_object)
                return;
        p->env_read = true;
        get_str(env, "TORCHELASTIC_RUN_ID", p->env.torchelastic_run_id, sizeof(p->env.torchelastic_run_id));
        get_str(env, "SLURM_JOB_ID", p->env.slurm_job_id, sizeof(p->env.slurm_job_id));
        p->env.local_rank = (int)get_int(env, "LOCAL_RANK", -1);
        p->env.rank = (int)get_int(env, "RANK", -1);
        p->env.group_rank = (int)get_int(env, "GROUP_RANK", -1);
        char ref[48];
        get_str(env, "GPUREAP_RUN_REF", ref, sizeof(ref));
        pid_t pid;
        uint64_t start;
        if (gr_parse_run_ref(ref, strlen(ref), &pid, &start) == 0 && pid == p->run_pid)
                p->env.run_start = start;
}

/* sockets: "net" since schema 3, the holder's "devices.listen_ports" before */
static int load_net(json_object *jp, gr_process *p, struct too_long *tl)
{
        json_object *net = get(jp, "net");
        json_object *dev0 = get(jp, "devices");
        json_object *ports, *inodes;
        size_t n_ports, n_inodes;
        int r;
        if ((r = get_array(net ? net : dev0, "listen_ports", GR_LISTEN_MAX, "listening ports of a process", tl, &ports,
                           &n_ports)) < 0 ||
            (r = get_array(net, "listen_inodes", GR_LISTEN_MAX, "listening sockets of a process", tl, &inodes,
                           &n_inodes)) < 0)
                return r;
        if (!net && !ports)
                return 0;
        gr_net *n = calloc(1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        for (size_t i = 0; i < n_ports; i++) {
                json_object *ino = i < n_inodes ? json_object_array_get_idx(inodes, i) : NULL;
                n->listen_inodes[n->n_listen] = ino ? (uint64_t)json_object_get_int64(ino) : 0;
                n->listen_ports[n->n_listen++] = (uint16_t)json_object_get_int(json_object_array_get_idx(ports, i));
        }
        n->n_serving = net ? (unsigned)get_int(net, "serving", 0) : 0;
        n->n_established = net ? (unsigned)get_int(net, "established", 0) : 0;
        p->net = n;
        return 0;
}

static int load_devices(json_object *jp, gr_process *p, struct too_long *tl)
{
        json_object *dev = get(jp, "devices");
        if (!dev || json_object_get_type(dev) != json_type_object)
                return 0;
        gr_holding *h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->n_fds = (unsigned)get_int(dev, "fds", 0);
        h->n_ctl = (unsigned)get_int(dev, "ctl", 0);
        h->n_uvm = (unsigned)get_int(dev, "uvm", 0);
        h->n_caps = (unsigned)get_int(dev, "caps", 0);
        h->n_other = (unsigned)get_int(dev, "other", 0);
        h->maps_read = get_int(dev, "maps", -1) >= 0;
        h->n_maps = h->maps_read ? (unsigned)get_int(dev, "maps", 0) : 0;
        json_object *gs;
        size_t n_gs;
        int r = get_array(dev, "gpus", GR_HOLD_GPUS_MAX, "GPUs a process holds", tl, &gs, &n_gs);
        if (r < 0) {
                free(h);
                return r;
        }
        for (size_t i = 0; i < n_gs; i++) {
                json_object *jg = json_object_array_get_idx(gs, i);
                h->gpus[h->n_gpus].minor = (unsigned)get_int(jg, "minor", 0);
                h->gpus[h->n_gpus].n_fds = (unsigned)get_int(jg, "fds", 0);
                h->n_gpus++;
        }
        p->hold = h;
        return 0;
}

/* what serve saw of it: since when, and its launcher's end */
static int load_seen(json_object *jp, gr_process *p)
{
        json_object *seen = get(jp, "seen");
        if (!seen || json_object_get_type(seen) != json_type_object)
                return 0;
        gr_seen *h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->since_ms = (uint64_t)get_int(seen, "since_unix_ms", 0);
        h->state_since_ms = (uint64_t)get_int(seen, "state_since_unix_ms", 0);
        json_object *l = get(seen, "launcher");
        int64_t lp = get_int(l, "pid", 0);
        if (l && lp > 0 && lp <= GR_PROC_PID_MAX) {
                h->launcher = (pid_t)lp;
                h->launcher_start = (uint64_t)get_int(l, "start_time_ticks", 0);
                get_str(l, "comm", h->launcher_comm, sizeof(h->launcher_comm));
                json_object *same = get(l, "same_exe");
                h->same_exe = same && json_object_get_type(same) == json_type_boolean && json_object_get_boolean(same);
                char end[16];
                get_str(l, "end", end, sizeof(end));
                h->end = strcmp(end, "signal") == 0 ? GR_END_SIGNAL : strcmp(end, "exit") == 0 ? GR_END_EXIT :
                         strcmp(end, "alive") == 0 ? GR_END_ALIVE : GR_END_UNKNOWN;
                int64_t status = get_int(l, "end_status", 0);
                h->end_status = (int)(status >= 0 && status <= 255 ? status : 0);
                if ((h->end == GR_END_SIGNAL && (h->end_status < 1 || h->end_status > 64)))
                        h->end = GR_END_UNKNOWN; /* not a signal: claim nothing */
                h->end_ms = (uint64_t)get_int(l, "end_unix_ms", 0);
        }
        p->seen = h;
        return 0;
}

static int load_process(json_object *jp, gr_process *p, struct too_long *tl)
{
        int64_t pid = get_int(jp, "pid", 0);
        if (pid <= 0 || pid > GR_PROC_PID_MAX)
                return -EINVAL;
        p->pid = (pid_t)pid;
        p->ppid = (pid_t)get_int(jp, "ppid", 0);
        p->pgrp = (pid_t)get_int(jp, "pgid", 0);
        p->session = (pid_t)get_int(jp, "sid", 0);
        p->tty_nr = (int)get_int(jp, "tty_nr", 0);
        p->tpgid = (pid_t)get_int(jp, "tpgid", -1);
        p->start_time = (uint64_t)get_int(jp, "start_time_ticks", 0);
        char st[4];
        get_str(jp, "state", st, sizeof(st));
        p->state = (st[0] >= 'A' && st[0] <= 'Z') || (st[0] >= 'a' && st[0] <= 'z') ? st[0] : '?';
        get_str(jp, "comm", p->comm, sizeof(p->comm));
        int64_t uid = get_int(jp, "uid", -1);
        p->has_uid = uid >= 0;
        p->uid = (uid_t)(uid >= 0 ? uid : 0);
        json_object *ns;
        size_t n_ns;
        int r = get_array(jp, "nspid", GR_NSPID_MAX, "PID namespaces of a process", tl, &ns, &n_ns);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_ns; i++)
                p->nspid[p->n_nspid++] = (pid_t)json_object_get_int(json_object_array_get_idx(ns, i));
        p->cmdline = dup_str(jp, "cmdline");
        p->cgroup = dup_str(jp, "cgroup");
        char lock[8];
        get_str(jp, "run_leaf_lock", lock, sizeof(lock));
        p->run_leaf = strcmp(lock, "held") == 0 ? GR_LEAF_HELD : strcmp(lock, "free") == 0 ? GR_LEAF_FREE : GR_LEAF_UNKNOWN;
        /* absent in recordings made before it was kept: unknown, the name decides there */
        json_object *exe = NULL;
        if (json_object_object_get_ex(jp, "exe", &exe)) {
                p->exe_state = exe && json_object_get_type(exe) == json_type_string ? GR_EXE_READ : GR_EXE_UNREADABLE;
                get_str(jp, "exe", p->exe, sizeof(p->exe));
        }
        p->run_pid = (pid_t)get_int(jp, "run_pid", 0);
        char sig[24];
        get_str(jp, "sig_ignored", sig, sizeof(sig));
        p->sig_ignored = strtoull(sig, NULL, 16);
        p->has_details = true;
        load_environ(jp, p);
        if ((r = load_net(jp, p, tl)) < 0 || (r = load_devices(jp, p, tl)) < 0 || (r = load_seen(jp, p)) < 0)
                return r;
        return load_pod(jp, p);
}

/* The recording, whole, into a buffer: a regular file of at most REPLAY_MAX_BYTES. Opened
 * without blocking and checked before reading, so a FIFO with no writer, /dev/zero or a
 * terminal is refused at once instead of hanging or growing until memory runs out. */
static int read_recording(const char *path, char **ret, size_t *ret_len, char *err, size_t err_size)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                int r = -errno;
                snprintf(err, err_size, "cannot open '%s': %s", QUOTED(path), strerror(errno));
                return r;
        }
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                snprintf(err, err_size, "'%s' is not a regular file: --replay reads a snapshot recorded with 'gpureap status --json'",
                         QUOTED(path));
                close(fd);
                return -EINVAL;
        }
        if (st.st_size > REPLAY_MAX_BYTES) {
                snprintf(err, err_size, "'%s' is larger than a snapshot may be (%d MiB)", QUOTED(path), REPLAY_MAX_BYTES >> 20);
                close(fd);
                return -EFBIG;
        }
        /* the size may change while we read: the bound is on what is read, not on what fstat said */
        size_t cap = (size_t)st.st_size + 1, len = 0;
        char *buf = malloc(cap + 1);
        int r = buf ? 0 : -ENOMEM;
        while (r == 0) {
                if (len == cap) {
                        if (cap > REPLAY_MAX_BYTES) {
                                r = -EFBIG;
                                break;
                        }
                        size_t ncap = cap * 2 > (size_t)REPLAY_MAX_BYTES + 1 ? (size_t)REPLAY_MAX_BYTES + 1 : cap * 2;
                        char *nb = realloc(buf, ncap + 1);
                        if (!nb) {
                                r = -ENOMEM;
                                break;
                        }
                        buf = nb;
                        cap = ncap;
                }
                ssize_t n = read(fd, buf + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        r = -errno;
                else if (n == 0)
                        break;
                else
                        len += (size_t)n;
        }
        close(fd);
        if (r == 0 && len > REPLAY_MAX_BYTES)
                r = -EFBIG;
        if (r < 0) {
                free(buf);
                if (r == -EFBIG)
                        snprintf(err, err_size, "'%s' is larger than a snapshot may be (%d MiB)", QUOTED(path), REPLAY_MAX_BYTES >> 20);
                else
                        snprintf(err, err_size, "cannot read '%s': %s", QUOTED(path), strerror(-r));
                return r;
        }
        buf[len] = '\0';
        *ret = buf;
        *ret_len = len;
        return 0;
}

int snapshot_from_json(const char *path, gr_snapshot **ret, char *err, size_t err_size)
{
        char *buf = NULL;
        size_t len = 0;
        int r = read_recording(path, &buf, &len, err, err_size);
        if (r < 0)
                return r;
        r = snapshot_from_json_buffer(buf, len, path, ret, err, err_size);
        free(buf);
        return r;
}

/* "taken_at": "2026-12-02T14:16:40Z" (UTC, as render-json.c writes it); 0 when absent or
 * not that */
static uint64_t recorded_at_ms(json_object *root)
{
        char when[64];
        struct tm tm = { 0 };
        int n = 0;
        get_str(root, "taken_at", when, sizeof(when));
        if (sscanf(when, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                   &tm.tm_sec, &n) != 6 || when[n] != '\0' || tm.tm_year < 1970 || tm.tm_mon < 1 || tm.tm_mon > 12)
                return 0;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        time_t t = timegm(&tm);
        return t > 0 ? (uint64_t)t * 1000 : 0;
}

/* The JSON values in buf, counted before json-c parses it (json-c has no bound of its own but
 * the depth): -E2BIG, and which bound in *tl, past REPLAY_VALUES_MAX values or
 * REPLAY_CONTAINERS_MAX objects and arrays. Every value but a container's first follows a
 * comma, so values <= commas + containers + 1. Only a bound: the parser judges the syntax. */
static int json_count_values(const char *buf, size_t len, struct too_long *tl)
{
        size_t containers = 0, values = 1;
        bool in_string = false;
        for (size_t i = 0; i < len; i++) {
                char c = buf[i];
                if (in_string) {
                        if (c == '\\')
                                i++;
                        else if (c == '"')
                                in_string = false;
                        continue;
                }
                if (c == '"')
                        in_string = true;
                else if (c == '{' || c == '[')
                        containers++;
                else if (c != ',')
                        continue;
                values++;
                if (containers > REPLAY_CONTAINERS_MAX) {
                        *tl = (struct too_long){ "JSON objects and arrays", REPLAY_CONTAINERS_MAX };
                        return -E2BIG;
                }
                if (values > REPLAY_VALUES_MAX) {
                        *tl = (struct too_long){ "JSON values", REPLAY_VALUES_MAX };
                        return -E2BIG;
                }
        }
        return 0;
}

/* One JSON object and nothing after it but white space, within the bounds; NULL with the
 * error written otherwise */
static json_object *parse_root(const char *buf, size_t len, const char *path, int *ret_r, char *err, size_t err_size)
{
        json_object *root = NULL;
        struct too_long counted;
        if (len <= REPLAY_MAX_BYTES && json_count_values(buf, len, &counted) < 0) {
                snprintf(err, err_size, "'%s' holds more %s than a snapshot may (%zu)", QUOTED(path), counted.what,
                         counted.max);
                *ret_r = -E2BIG;
                return NULL;
        }
        json_tokener *tok = len <= REPLAY_MAX_BYTES && len <= INT_MAX ? json_tokener_new() : NULL;
        if (tok) {
                root = json_tokener_parse_ex(tok, buf, (int)len);
                if (json_tokener_get_error(tok) != json_tokener_success)
                        root = NULL;
                for (size_t i = root ? json_tokener_get_parse_end(tok) : len; i < len; i++)
                        if (buf[i] != ' ' && buf[i] != '\n' && buf[i] != '\t' && buf[i] != '\r') {
                                json_object_put(root);
                                root = NULL;
                                break;
                        }
                json_tokener_free(tok);
        }
        if (!root || json_object_get_type(root) != json_type_object) {
                snprintf(err, err_size, "cannot read '%s' as a gpureap JSON snapshot", QUOTED(path));
                json_object_put(root);
                *ret_r = -EINVAL;
                return NULL;
        }
        int64_t version = get_int(root, "schema_version", 0);
        if (version < 1 || version > JSON_SCHEMA_VERSION) {
                snprintf(err, err_size, "'%s' has schema version %lld; this gpureap reads 1 to %d",
                         QUOTED(path), (long long)version, JSON_SCHEMA_VERSION);
                json_object_put(root);
                *ret_r = -EINVAL;
                return NULL;
        }
        return root;
}

/* The driver's status and the scan's: what the recording says of how it was taken */
static void load_header(json_object *root, gr_snapshot *s)
{
        gr_gpu_report *rep = s->gpu;
        gr_proc_table *t = s->procs;
        s->proc_elapsed_ms = GR_UNKNOWN_U64;
        get_str(root, "host", s->hostname, sizeof(s->hostname));
        s->taken_at_ms = recorded_at_ms(root);
        json_object *pr = get(root, "proc");
        get_str(pr, "root", s->proc_root, sizeof(s->proc_root));
        get_str(pr, "dev_dir", s->dev_dir, sizeof(s->dev_dir));
        json_object *d = get(root, "driver");
        char st[32];
        get_str(d, "status", st, sizeof(st));
        rep->status = status_of(st);
        get_str(d, "error", rep->error, sizeof(rep->error));
        get_str(d, "stuck_call", rep->stuck_call, sizeof(rep->stuck_call));
        rep->stuck_gpu = -1; /* not recorded */
        get_str(d, "library", rep->library, sizeof(rep->library));
        get_str(d, "driver_version", rep->driver_version, sizeof(rep->driver_version));
        get_str(d, "nvml_version", rep->nvml_version, sizeof(rep->nvml_version));
        uint64_t de = get_u64(d, "elapsed_ms");
        rep->elapsed_ms = de == GR_UNKNOWN_U64 ? 0 : de; /* what the recording took */
        t->clock_ticks = 100;
        s->procs_partial = get_int(root, "schema_version", 0) < 2;
        s->replayed = true;
        json_object *view = get(root, "view");
        int64_t uid = get_int(view, "uid", 0);
        s->uid = (uid_t)(uid >= 0 && uid <= UINT32_MAX ? uid : 0);
        char ns[16];
        get_str(view, "pid_namespace", ns, sizeof(ns));
        s->pidns = strcmp(ns, "host") == 0 ? GR_PIDNS_HOST : strcmp(ns, "other") == 0 ? GR_PIDNS_OTHER : GR_PIDNS_UNKNOWN;
        json_object *hp = get(view, "hidepid");
        s->hidepid = hp && json_object_get_type(hp) == json_type_boolean && json_object_get_boolean(hp);
        t->n_unreadable = (unsigned)get_int(pr, "unreadable", 0);
        int64_t vanished = get_int(pr, "vanished", 0);
        t->n_vanished = vanished > 0 && vanished <= UINT32_MAX ? (unsigned)vanished : 0;
        t->boot_time = get_u64(pr, "boot_time") == GR_UNKNOWN_U64 ? 0 : get_u64(pr, "boot_time");
        s->proc_elapsed_ms = get_u64(pr, "elapsed_ms");
        char scan[8];
        get_str(pr, "scan", scan, sizeof(scan));
        t->scan = strcmp(scan, "bpf") == 0 ? GR_SCAN_BPF : strcmp(scan, "proc") == 0 ? GR_SCAN_PROC : GR_SCAN_UNKNOWN;
        get_str(pr, "scan_fallback", t->scan_fallback, sizeof(t->scan_fallback));
        json_object *slow = get(pr, "slow");
        s->proc_slow = slow && json_object_get_type(slow) == json_type_boolean && json_object_get_boolean(slow);
}

/* serve's memory, where the recording was served: since when, and each GPU's state's age */
static int load_history(json_object *root, gr_snapshot *s)
{
        json_object *hist = get(root, "history");
        int64_t since = get_int(hist, "since_unix_ms", 0);
        if (hist && since > 0) {
                s->history_since_ms = (uint64_t)since;
                json_object *e = get(hist, "events"), *lost = get(hist, "events_lost");
                s->history_events = e && json_object_get_type(e) == json_type_boolean && json_object_get_boolean(e);
                s->history_events_lost = lost && json_object_get_type(lost) == json_type_boolean &&
                                         json_object_get_boolean(lost);
                int64_t by = get_int(hist, "served_by", 0);
                s->served_by = by > 0 && by <= GR_PROC_PID_MAX ? (pid_t)by : 0;
        }
        json_object *gpus = get(root, "gpus");
        if (s->gpu->n_gpus == 0 || !s->history_since_ms)
                return 0;
        s->gpu_state_since_ms = calloc(s->gpu->n_gpus, sizeof(uint64_t));
        if (!s->gpu_state_since_ms)
                return -ENOMEM;
        for (unsigned i = 0; i < s->gpu->n_gpus; i++) {
                int64_t v = get_int(json_object_array_get_idx(gpus, i), "state_since_unix_ms", 0);
                s->gpu_state_since_ms[i] = v > 0 ? (uint64_t)v : 0;
        }
        return 0;
}

static int load_processes(json_object *root, gr_proc_table *t, struct too_long *tl)
{
        json_object *procs = NULL;
        size_t n = 0;
        int r = get_array(root, "processes", REPLAY_PROCESSES_MAX, "processes", tl, &procs, &n);
        if (r == 0 && n > 0) {
                t->procs = calloc(n, sizeof(gr_process));
                t->cap = n;
                if (!t->procs)
                        r = -ENOMEM;
        }
        for (size_t i = 0; r == 0 && i < n; i++) {
                gr_process *p = &t->procs[t->n];
                r = load_process(json_object_array_get_idx(procs, i), p, tl);
                if (r < 0) { /* left out (-EINVAL: no valid PID), or the end of the load */
                        free(p->cmdline);
                        free(p->cgroup);
                        free(p->net);
                        free(p->hold);
                        free(p->seen);
                        free(p->pod);
                        memset(p, 0, sizeof(*p));
                        r = r == -EINVAL ? 0 : r;
                        continue;
                }
                t->n++;
                t->n_holders += p->hold != NULL;
        }
        return r;
}

int snapshot_from_json_buffer(const char *buf, size_t len, const char *path, gr_snapshot **ret,
                              char *err, size_t err_size)
{
        int r = 0;
        json_object *root = parse_root(buf, len, path, &r, err, err_size);
        if (!root)
                return r;
        gr_snapshot *s = calloc(1, sizeof(*s));
        gr_gpu_report *rep = calloc(1, sizeof(*rep));
        gr_proc_table *t = calloc(1, sizeof(*t));
        if (!s || !rep || !t) {
                free(s);
                free(rep);
                free(t);
                json_object_put(root);
                snprintf(err, err_size, "out of memory");
                return -ENOMEM;
        }
        struct too_long tl = { NULL, 0 };
        s->gpu = rep;
        s->procs = t;
        load_header(root, s);
        r = load_gpus(root, rep, &tl);
        int64_t taken = get_int(root, "taken_at_unix_ms", 0);
        if (taken > 0) /* more precise than taken_at, where the recording has it */
                s->taken_at_ms = (uint64_t)taken;
        load_kubelet(root, &s->kubelet);
        if (r == 0)
                r = load_history(root, s);
        if (r == 0)
                r = load_processes(root, t, &tl);
        json_object_put(root);
        if (r == -E2BIG)
                snprintf(err, err_size, "'%s' lists more %s than a snapshot may (%zu)", QUOTED(path), tl.what, tl.max);
        else if (r < 0)
                snprintf(err, err_size, "cannot load '%s': %s", QUOTED(path), strerror(-r));
        if (r < 0) {
                gr_snapshot_free(s);
                return r;
        }
        if (t->n > 0)
                qsort(t->procs, t->n, sizeof(gr_process), cmp_proc);
        for (size_t i = 1; i < t->n; i++)
                if (t->procs[i].pid == t->procs[i - 1].pid) {
                        snprintf(err, err_size, "'%s' lists PID %d twice", QUOTED(path), (int)t->procs[i].pid);
                        gr_snapshot_free(s);
                        return -EINVAL;
                }
        *ret = s;
        return 0;
}
