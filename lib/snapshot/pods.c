/* The kubelet's answer joined with the processes in pods' cgroups (docs/architecture.md, "The
 * kubelet"). The kubelet's List names each pod and container with the devices assigned to it,
 * and no pod UID; a cgroup path names a pod UID and a container ID, and no name. The devices
 * join them: the pod UID whose processes hold the GPUs S is the listed pod P when P was
 * assigned every GPU of S and no other listed pod was, and no other UID's processes come to P
 * too (a deleted pod's leftover beside the pod that got its GPU since: which is which, the
 * devices cannot tell). Then the same inside P for its container IDs and its containers. Where
 * the devices do not name exactly one, the process says why, never a guess. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpureap/basic.h"
#include "gpureap/snapshot.h"
#include "basic/names.h"

_Static_assert(GR_POD_NAME_MAX == GR_K8S_NAME_MAX, "a pod's name fits");

GR_NAME_TABLE(gr_pod_naming_name, gr_pod_naming, GR_POD_NO_CONTAINER, "unknown",
              [GR_POD_NOT_ASKED] = "not_asked", [GR_POD_NAMED] = "named", [GR_POD_NO_GPU] = "no_gpu",
              [GR_POD_UNASSIGNED] = "unassigned", [GR_POD_AMBIGUOUS] = "ambiguous", [GR_POD_UNMAPPED] = "unmapped",
              [GR_POD_NO_CONTAINER] = "no_container")

/* a listed pod, or a listed container (pod: the index of its pod), with its GPUs (bit i: the
 * report's GPU i) and whether it was assigned a device the report does not name */
struct listed {
        const gr_kubelet_device *d; /* its first device: the names */
        unsigned pod;
        uint64_t gpus;
        bool unmapped;
};

/* a pod UID, or a container ID (pod: the index of its UID), seen in the cgroups */
struct seen {
        const char *id;
        unsigned pod;
        uint64_t gpus;
        int match;                  /* the listed one it is, -1 none */
        gr_pod_naming naming;
        bool clash;                 /* another seen one came to the same listed one */
};

struct join {
        struct listed *pods, *ctrs;
        size_t n_pods, n_ctrs;
        struct seen *uids, *cids;
        size_t n_uids, n_cids;
};

static void join_release(struct join *j)
{
        free(j->pods);
        free(j->ctrs);
        free(j->uids);
        free(j->cids);
}

static int gpu_of_uuid(const gr_gpu_report *rep, const char *uuid)
{
        for (unsigned i = 0; i < rep->n_gpus && i < 64; i++)
                if (rep->gpus[i].uuid[0] && strcasecmp(rep->gpus[i].uuid, uuid) == 0)
                        return (int)i;
        return -1;
}

static uint64_t process_gpus(const gr_gpu_report *rep, const gr_process *p)
{
        uint64_t m = 0;
        for (unsigned k = 0; p->hold && k < p->hold->n_gpus; k++)
                for (unsigned i = 0; i < rep->n_gpus && i < 64; i++)
                        if (rep->gpus[i].minor >= 0 && (unsigned)rep->gpus[i].minor == p->hold->gpus[k].minor)
                                m |= 1ULL << i;
        return m;
}

static size_t listed_find(struct listed *l, size_t n, const gr_kubelet_device *d, bool ctr, unsigned pod)
{
        size_t i = 0;
        for (; i < n; i++)
                if (strcmp(l[i].d->pod, d->pod) == 0 && strcmp(l[i].d->ns, d->ns) == 0 &&
                    (!ctr || (l[i].pod == pod && strcmp(l[i].d->container, d->container) == 0)))
                        break;
        return i;
}

/* The listed pods and containers that were assigned devices, each with its GPUs */
static int listed_load(struct join *j, const gr_gpu_report *rep, const gr_kubelet_answer *a)
{
        j->pods = calloc(a->n_devices ? a->n_devices : 1, sizeof(*j->pods));
        j->ctrs = calloc(a->n_devices ? a->n_devices : 1, sizeof(*j->ctrs));
        if (!j->pods || !j->ctrs)
                return -ENOMEM;
        for (size_t k = 0; k < a->n_devices; k++) {
                const gr_kubelet_device *d = &a->devices[k];
                char uuid[GR_K8S_ID_MAX];
                int g = gr_kubelet_device_gpu_uuid(d->id, uuid, sizeof(uuid)) ? gpu_of_uuid(rep, uuid) : -1;
                bool nvidia = strncmp(d->resource, "nvidia.com/", 11) == 0 || strncmp(d->id, "MIG-", 4) == 0 ||
                              strncmp(d->id, "GPU-", 4) == 0;
                if (g < 0 && !nvidia)
                        continue; /* another vendor's device, or not a GPU: nothing to join on */
                size_t pi = listed_find(j->pods, j->n_pods, d, false, 0);
                if (pi == j->n_pods)
                        j->pods[j->n_pods++] = (struct listed){ .d = d };
                size_t ci = listed_find(j->ctrs, j->n_ctrs, d, true, (unsigned)pi);
                if (ci == j->n_ctrs)
                        j->ctrs[j->n_ctrs++] = (struct listed){ .d = d, .pod = (unsigned)pi };
                struct listed *l[2] = { &j->pods[pi], &j->ctrs[ci] };
                for (int x = 0; x < 2; x++) {
                        if (g >= 0)
                                l[x]->gpus |= 1ULL << g;
                        else
                                l[x]->unmapped = true;
                }
        }
        return 0;
}

static size_t seen_add(struct seen *v, size_t *n, const char *id, unsigned pod)
{
        for (size_t i = 0; i < *n; i++)
                if (v[i].pod == pod && strcmp(v[i].id, id) == 0)
                        return i;
        v[*n] = (struct seen){ .id = id, .pod = pod, .match = -1 };
        return (*n)++;
}

/* Each seen one (of pod 'pod', or any with pod ~0u) against the listed ones (of listed pod
 * 'lpod', or any): named where exactly one listed was assigned all its GPUs and no other seen
 * one came to the same */
static void match(struct seen *v, size_t n, const struct listed *l, size_t nl, bool ctr, unsigned pod, unsigned lpod)
{
        for (size_t i = 0; i < n; i++) {
                if (ctr && v[i].pod != pod)
                        continue;
                if (ctr && !v[i].id[0]) {
                        v[i].naming = GR_POD_NO_CONTAINER;
                        continue;
                }
                if (!v[i].gpus) {
                        v[i].naming = GR_POD_NO_GPU;
                        continue;
                }
                unsigned found = 0;
                bool unmapped = false;
                for (size_t k = 0; k < nl; k++) {
                        if (ctr && l[k].pod != lpod)
                                continue;
                        unmapped |= l[k].unmapped;
                        if (l[k].gpus && (v[i].gpus & ~l[k].gpus) == 0) {
                                found++;
                                v[i].match = (int)k;
                        }
                }
                if (found != 1)
                        v[i].match = -1;
                v[i].naming = found > 1 ? GR_POD_AMBIGUOUS : found == 1 ? GR_POD_NAMED
                              : unmapped ? GR_POD_UNMAPPED : GR_POD_UNASSIGNED;
        }
        /* two that come to the same listed one: which is it, the devices cannot tell (for
         * containers, among this pod's only: each pod's call compared every container seen,
         * pods x containers in all, found by the sixth adversarial round) */
        for (size_t i = 0; i < n; i++) {
                if (v[i].match < 0 || (ctr && v[i].pod != pod))
                        continue;
                for (size_t k = i + 1; k < n; k++)
                        if (v[k].match == v[i].match && (!ctr || v[k].pod == pod))
                                v[i].clash = v[k].clash = true;
        }
        for (size_t i = 0; i < n; i++)
                if (v[i].clash && (!ctr || v[i].pod == pod)) {
                        v[i].naming = GR_POD_AMBIGUOUS;
                        v[i].match = -1;
                }
}

static void summary(gr_snapshot *s, const gr_kubelet_answer *a)
{
        gr_snapshot_kubelet *k = &s->kubelet;
        *k = (gr_snapshot_kubelet){ .state = GR_KUBELET_OFF };
        if (!a)
                return;
        k->state = a->state;
        gr_strlcpy(k->socket, a->socket, sizeof(k->socket));
        gr_strlcpy(k->error, a->error, sizeof(k->error));
        gr_text_sanitize(k->socket);
        gr_text_sanitize(k->error);
        k->asked_at_ms = a->asked_at_ms;
        k->elapsed_ms = a->elapsed_ms;
        k->n_pods = a->n_pods;
        k->n_devices = (unsigned)a->n_devices;
        k->checkpoint_state = a->checkpoint_state;
        gr_strlcpy(k->checkpoint, a->checkpoint, sizeof(k->checkpoint));
        gr_strlcpy(k->checkpoint_error, a->checkpoint_error, sizeof(k->checkpoint_error));
        gr_text_sanitize(k->checkpoint);
        gr_text_sanitize(k->checkpoint_error);
        k->n_assigned = (unsigned)a->n_assigned;
}

/* What the checkpoint says each pod UID was assigned, into each process's gr_pod: the GPUs
 * its GPU devices name; not known where one names no GPU of the report (MIG) */
static void assigned_fill(gr_snapshot *s, const gr_kubelet_answer *a)
{
        for (size_t i = 0; s->procs && i < s->procs->n; i++) {
                gr_pod *pod = s->procs->procs[i].pod;
                if (!pod)
                        continue;
                pod->assigned_known = false;
                pod->gpus_assigned = 0;
                if (!a || a->checkpoint_state != GR_CHECKPOINT_OK || !pod->uid[0])
                        continue;
                bool known = true;
                uint64_t m = 0;
                for (size_t k = 0; k < a->n_assigned; k++) {
                        const gr_kubelet_assignment *e = &a->assigned[k];
                        if (strcasecmp(e->pod_uid, pod->uid) != 0)
                                continue;
                        char uuid[GR_K8S_ID_MAX];
                        int g = gr_kubelet_device_gpu_uuid(e->id, uuid, sizeof(uuid)) ? gpu_of_uuid(s->gpu, uuid) : -1;
                        bool nvidia = strncmp(e->resource, "nvidia.com/", 11) == 0 || strncmp(e->id, "MIG-", 4) == 0 ||
                                      strncmp(e->id, "GPU-", 4) == 0;
                        if (g >= 0)
                                m |= 1ULL << g;
                        else if (nvidia)
                                known = false;
                }
                pod->assigned_known = known;
                pod->gpus_assigned = known ? m : 0;
        }
}

/* Every process in a pod's cgroup gets its gr_pod, and the UIDs and container IDs their GPUs */
static int seen_load(struct join *j, gr_snapshot *s)
{
        size_t n = s->procs ? s->procs->n : 0;
        j->uids = calloc(n ? n : 1, sizeof(*j->uids));
        j->cids = calloc(n ? n : 1, sizeof(*j->cids));
        if (!j->uids || !j->cids)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                gr_process *p = &s->procs->procs[i];
                char name[128];
                free(p->pod);
                p->pod = NULL;
                if (!p->has_details || !p->cgroup || gr_cgroup_manager(p->cgroup, name, sizeof(name)) != GR_CG_POD)
                        continue;
                gr_pod *pod = calloc(1, sizeof(*pod));
                if (!pod)
                        return -ENOMEM;
                p->pod = pod;
                /* a pod whose UID component was not recognised is named by its container */
                if (strchr(name, '-'))
                        gr_strlcpy(pod->uid, name, sizeof(pod->uid));
                if (gr_cgroup_container_full_id(p->cgroup, pod->container_id, sizeof(pod->container_id)) < 0)
                        pod->container_id[0] = '\0';
                if (!pod->uid[0])
                        continue; /* joined to nothing: which pod it is, its cgroup does not say */
                uint64_t g = process_gpus(s->gpu, p);
                size_t u = seen_add(j->uids, &j->n_uids, pod->uid, ~0u);
                size_t c = seen_add(j->cids, &j->n_cids, pod->container_id, (unsigned)u);
                j->uids[u].gpus |= g;
                j->cids[c].gpus |= g;
        }
        return 0;
}

static void names_fill(const struct join *j, gr_snapshot *s, bool answered)
{
        for (size_t i = 0; s->procs && i < s->procs->n; i++) {
                gr_pod *pod = s->procs->procs[i].pod;
                if (!pod)
                        continue;
                pod->naming = pod->container_naming = answered ? GR_POD_AMBIGUOUS : GR_POD_NOT_ASKED;
                if (!answered || !pod->uid[0])
                        continue;
                size_t u = 0, c = 0;
                while (u < j->n_uids && strcmp(j->uids[u].id, pod->uid) != 0)
                        u++;
                while (c < j->n_cids && (j->cids[c].pod != u || strcmp(j->cids[c].id, pod->container_id) != 0))
                        c++;
                if (u == j->n_uids || c == j->n_cids)
                        continue;
                pod->naming = j->uids[u].naming;
                pod->container_naming = pod->naming == GR_POD_NAMED ? j->cids[c].naming : pod->naming;
                if (pod->naming != GR_POD_NAMED)
                        continue;
                const gr_kubelet_device *d = j->pods[j->uids[u].match].d;
                gr_strlcpy(pod->name, d->pod, sizeof(pod->name));
                gr_strlcpy(pod->ns, d->ns, sizeof(pod->ns));
                gr_text_sanitize(pod->name);
                gr_text_sanitize(pod->ns);
                if (pod->container_naming == GR_POD_NAMED) {
                        gr_strlcpy(pod->container, j->ctrs[j->cids[c].match].d->container, sizeof(pod->container));
                        gr_text_sanitize(pod->container);
                }
        }
}

int gr_snapshot_name_pods(gr_snapshot *s, const gr_kubelet_answer *a)
{
        summary(s, a);
        bool answered = a && a->state == GR_KUBELET_OK;
        if (answered && a->n_devices > GR_KUBELET_DEVICES_MAX) {
                s->kubelet.state = GR_KUBELET_ERROR;
                snprintf(s->kubelet.error, sizeof(s->kubelet.error),
                         "the kubelet listed %zu devices, more than %u: not joined", a->n_devices, GR_KUBELET_DEVICES_MAX);
                answered = false;
        }
        struct join j = { 0 };
        int r = seen_load(&j, s);
        if (r == 0 && answered)
                r = listed_load(&j, s->gpu, a);
        for (size_t i = 0; r == 0 && answered && i < j.n_pods; i++) {
                s->kubelet.gpus_assigned |= j.pods[i].gpus;
                s->kubelet.devices_unmapped |= j.pods[i].unmapped;
        }
        if (r == 0 && answered) {
                match(j.uids, j.n_uids, j.pods, j.n_pods, false, 0, 0);
                for (size_t u = 0; u < j.n_uids; u++)
                        if (j.uids[u].match >= 0)
                                match(j.cids, j.n_cids, j.ctrs, j.n_ctrs, true, (unsigned)u, (unsigned)j.uids[u].match);
        }
        if (r == 0)
                names_fill(&j, s, answered);
        if (r == 0)
                assigned_fill(s, answered ? a : NULL);
        join_release(&j);
        return r;
}

GR_NAME_TABLE(gr_pod_gone_name, gr_pod_gone, GR_POD_GONE_RUNNING, "unknown",
              [GR_POD_GONE_NOT_ASKED] = "not_asked", [GR_POD_GONE_CONFIRMED] = "confirmed",
              [GR_POD_GONE_PRESENT] = "present", [GR_POD_GONE_UNKNOWN] = "unknown", [GR_POD_GONE_RUNNING] = "running")

/* One container asked about: the runtime's answer (named: its labels name a pod with the UID
 * its cgroup carries) and, where the container has exited, the kubelet's Get of that name */
struct remembered {
        char container_id[72];
        char uid[40];            /* the cgroup's pod UID */
        bool named;
        gr_cri_container c;      /* with named: the runtime's names and the container's state */
        char why[200];           /* without: why not */
        uint64_t cri_at_ms;
        gr_pod_gone gone;        /* Get's answer: CONFIRMED (for good), PRESENT or UNKNOWN (for a
                                    while), NOT_ASKED */
        char get_why[200];       /* with UNKNOWN: Get's error */
        uint64_t get_at_ms;
};

/* How long an answer that can change is kept: a running container's state (its pod deleted,
 * it exits), the runtime's "not known", Get's "present" or its error. Long enough that a node
 * of many pods is not asked about at every look, short enough that a deleted pod's leftover is
 * found within a minute */
#define RUNNING_KEEP_MS 30000
#define MEMORY_MAX 1024
/* Questions one look asks at most, the rest left to later looks: the runtime's, and the
 * kubelet's Get (its socket takes 100 calls a second in bursts of 10, for every client) */
#define CRI_ASKS_MAX 32
#define GETS_MAX 8

struct gr_pod_memory {
        struct remembered e[MEMORY_MAX];
        size_t n, next;
};

int gr_pod_memory_new(gr_pod_memory **ret)
{
        *ret = calloc(1, sizeof(**ret));
        return *ret ? 0 : -ENOMEM;
}

void gr_pod_memory_free(gr_pod_memory *m)
{
        free(m);
}

static struct remembered *memory_find(gr_pod_memory *m, const gr_pod *pod)
{
        for (size_t k = 0; k < m->n; k++)
                if (strcmp(m->e[k].container_id, pod->container_id) == 0 && strcmp(m->e[k].uid, pod->uid) == 0)
                        return &m->e[k];
        return NULL;
}

/* A pod proved gone by any of its containers: gone, whichever container asks (a UID never
 * comes back, and the container that proved it had exited) */
static const struct remembered *memory_gone(const gr_pod_memory *m, const char *uid)
{
        for (size_t k = 0; k < m->n; k++)
                if (m->e[k].gone == GR_POD_GONE_CONFIRMED && strcmp(m->e[k].uid, uid) == 0)
                        return &m->e[k];
        return NULL;
}

static struct remembered *memory_add(gr_pod_memory *m, const gr_pod *pod)
{
        struct remembered *e = &m->e[m->next];
        m->next = (m->next + 1) % MEMORY_MAX;
        if (m->n < MEMORY_MAX)
                m->n++;
        *e = (struct remembered){ .gone = GR_POD_GONE_NOT_ASKED };
        gr_strlcpy(e->container_id, pod->container_id, sizeof(e->container_id));
        gr_strlcpy(e->uid, pod->uid, sizeof(e->uid));
        return e;
}

/* A DNS subdomain as Kubernetes validates a pod's name and namespace ([a-z0-9.-], a letter or
 * digit at each end): anything else was not written by a kubelet, and is asked about nowhere */
static bool k8s_name(const char *s, size_t max)
{
        size_t n = strlen(s);
        if (n == 0 || n > max || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '.'))
                        return false;
        return true;
}

/* The runtime's labels of the container: named where they name a pod with the cgroup's UID */
static void ask_runtime(struct remembered *e, const gr_kubelet_options *ko, uint64_t deadline_ms)
{
        char err[200] = "";
        int r = gr_cri_container_status(ko, deadline_ms, e->container_id, &e->c, err, sizeof(err));
        e->cri_at_ms = gr_now_ms();
        e->named = false;
        if (r <= 0) {
                gr_text_sanitize(err);
                snprintf(e->why, sizeof(e->why), "%s", r == 0 ? "the container runtime does not know its container" : err);
                return;
        }
        if (!k8s_name(e->c.pod, 253) || !k8s_name(e->c.ns, 63)) {
                snprintf(e->why, sizeof(e->why), "the container runtime's labels of its container name no pod by a name "
                                                 "Kubernetes allows");
                return;
        }
        gr_text_sanitize(e->c.uid);
        gr_text_sanitize(e->c.container);
        if (strcmp(e->c.uid, e->uid) != 0) {
                snprintf(e->why, sizeof(e->why), "the container runtime's labels of its container name that pod (UID %.40s), "
                                                 "not its cgroup's pod", e->c.uid[0] ? e->c.uid : "none");
                return;
        }
        e->named = true;
}

struct asks {
        unsigned cri, gets;      /* asked in this look */
        uint64_t deadline_ms;
};

/* The kubelet's Get of the pod the runtime named, for a container that has exited: only the
 * kubelet's own "no such pod" makes it gone */
static void ask_get(struct remembered *e, const gr_kubelet_options *ko, struct asks *a)
{
        char err[200] = "";
        a->gets++;
        int r = gr_kubelet_get(ko, a->deadline_ms, e->c.ns, e->c.pod, err, sizeof(err));
        e->get_at_ms = gr_now_ms();
        if (r < 0) {
                gr_text_sanitize(err);
                e->gone = GR_POD_GONE_UNKNOWN;
                snprintf(e->get_why, sizeof(e->get_why), "%s", err);
                return;
        }
        e->gone = r == 0 ? GR_POD_GONE_CONFIRMED : GR_POD_GONE_PRESENT;
}

static bool stale(uint64_t at_ms, uint64_t now)
{
        return now - at_ms >= RUNNING_KEEP_MS;
}

/* One pod's container: the runtime's labels and state (remembered, or asked), then for an
 * exited container the kubelet's Get of the pod they name (remembered, or asked) */
static void confirm_one(gr_pod *pod, const gr_kubelet_options *ko, gr_pod_memory *m, unsigned n_pods, struct asks *a)
{
        uint64_t now = gr_now_ms();
        pod->gone = GR_POD_GONE_UNKNOWN;
        const struct remembered *g = memory_gone(m, pod->uid);
        if (g) { /* proved before, by this container or another of its pod */
                pod->gone = GR_POD_GONE_CONFIRMED;
                gr_strlcpy(pod->gone_name, g->c.pod, sizeof(pod->gone_name));
                gr_strlcpy(pod->gone_ns, g->c.ns, sizeof(pod->gone_ns));
        }
        if (!pod->container_id[0]) {
                if (!g)
                        snprintf(pod->gone_why, sizeof(pod->gone_why), "its cgroup names no container to ask the runtime about");
                return;
        }
        struct remembered *e = memory_find(m, pod);
        bool ask = !e || (stale(e->cri_at_ms, now) && (!e->named || e->c.state != GR_CRI_EXITED));
        if (ask && (gr_now_ms() >= a->deadline_ms || a->cri >= CRI_ASKS_MAX)) {
                if (!e) {
                        if (!g)
                                snprintf(pod->gone_why, sizeof(pod->gone_why), "not asked in this look (no time left, or "
                                                                               "%u questions to the runtime asked)", CRI_ASKS_MAX);
                        return;
                }
                ask = false; /* the last answer stands a while longer */
        }
        if (ask) {
                if (!e)
                        e = memory_add(m, pod);
                a->cri++;
                ask_runtime(e, ko, a->deadline_ms);
        }
        if (!e->named) {
                if (!g)
                        snprintf(pod->gone_why, sizeof(pod->gone_why), "%s", e->why);
                return;
        }
        /* the names the kubelet wrote when it created the container, for the UID the kernel's
         * cgroup carries: its pod's, whatever Get says */
        pod->runtime_named = true;
        gr_strlcpy(pod->name, e->c.pod, sizeof(pod->name));
        gr_strlcpy(pod->ns, e->c.ns, sizeof(pod->ns));
        gr_strlcpy(pod->container, e->c.container, sizeof(pod->container));
        if (g)
                return;
        gr_strlcpy(pod->gone_name, e->c.pod, sizeof(pod->gone_name));
        gr_strlcpy(pod->gone_ns, e->c.ns, sizeof(pod->gone_ns));
        if (e->c.state != GR_CRI_EXITED) {
                /* its container runs (or the runtime does not say it ended): a pod that is
                 * deleted has its containers stopped; a kubelet that restarts lists no pod and
                 * knows none by Get for a while, so Get alone is never asked for */
                pod->gone = GR_POD_GONE_RUNNING;
                return;
        }
        if (n_pods == 0) {
                snprintf(pod->gone_why, sizeof(pod->gone_why), "the kubelet lists no pod at all (starting?): its Get is not "
                                                               "believed");
                return;
        }
        bool get = e->gone == GR_POD_GONE_NOT_ASKED || (e->gone != GR_POD_GONE_CONFIRMED && stale(e->get_at_ms, now));
        if (get && gr_now_ms() < a->deadline_ms && a->gets < GETS_MAX)
                ask_get(e, ko, a);
        else if (get && e->gone == GR_POD_GONE_NOT_ASKED) {
                snprintf(pod->gone_why, sizeof(pod->gone_why), "the kubelet not asked in this look (no time left, or %u Gets "
                                                               "asked)", GETS_MAX);
                return;
        }
        pod->gone = e->gone;
        if (e->gone == GR_POD_GONE_UNKNOWN)
                snprintf(pod->gone_why, sizeof(pod->gone_why), "%s", e->get_why);
}

/* The devices named no pod for it: the runtime may */
static bool askable(const gr_pod *pod)
{
        return pod->uid[0] && (pod->naming == GR_POD_UNASSIGNED || pod->naming == GR_POD_AMBIGUOUS ||
                               pod->naming == GR_POD_UNMAPPED);
}

/* What one process's pod was found to be, given to another of the same pod: all of it to one
 * of the same container, the pod's names and end to one of another container */
static void pod_share(const gr_pod *from, gr_pod *to)
{
        bool same = strcmp(from->container_id, to->container_id) == 0;
        to->gone = from->gone;
        gr_strlcpy(to->gone_name, from->gone_name, sizeof(to->gone_name));
        gr_strlcpy(to->gone_ns, from->gone_ns, sizeof(to->gone_ns));
        gr_strlcpy(to->gone_why, from->gone_why, sizeof(to->gone_why));
        to->runtime_named = from->runtime_named;
        gr_strlcpy(to->name, from->name, sizeof(to->name));
        gr_strlcpy(to->ns, from->ns, sizeof(to->ns));
        gr_strlcpy(to->container, same ? from->container : "", sizeof(to->container));
}

int gr_snapshot_confirm_gone(gr_snapshot *s, const gr_kubelet_options *ko, gr_pod_memory *memory, uint64_t deadline_ms)
{
        if (!s->procs || s->kubelet.state != GR_KUBELET_OK)
                return 0;
        gr_pod_memory *m = memory;
        if (!m && gr_pod_memory_new(&m) < 0)
                return -ENOMEM;
        struct asks a = { .deadline_ms = deadline_ms };
        for (size_t i = 0; i < s->procs->n; i++) {
                gr_pod *pod = s->procs->procs[i].pod;
                if (!pod || !s->procs->procs[i].hold || !askable(pod) || pod->gone != GR_POD_GONE_NOT_ASKED)
                        continue;
                confirm_one(pod, ko, m, s->kubelet.n_pods, &a);
                /* the answer is its container's, and its pod's: every other process of the
                 * same container gets it, and those of another container that no holder of
                 * theirs will ask about get the pod's part */
                for (size_t k = 0; k < s->procs->n; k++) {
                        gr_pod *o = s->procs->procs[k].pod;
                        if (k == i || !o || strcmp(o->uid, pod->uid) != 0 || !askable(o))
                                continue;
                        if (strcmp(o->container_id, pod->container_id) == 0 ||
                            (o->gone == GR_POD_GONE_NOT_ASKED && !s->procs->procs[k].hold))
                                pod_share(pod, o);
                }
        }
        if (m != memory)
                gr_pod_memory_free(m);
        return 0;
}
