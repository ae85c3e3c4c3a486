/* The join of the kubelet's answer with the processes in pods' cgroups (gr_snapshot_name_pods):
 * named only where the devices name one listed pod and container; every other case says why,
 * each with its control (the same snapshot with the defect taken away names the pod). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpureap/kubelet.h"
#include "gpureap/snapshot.h"

#define UID_A "5f0c1e2a-7b3d-4c1e-9a8b-1234567890ab"
#define UID_B "0d9c8b7a-6f5e-4d3c-2b1a-ba0987654321"
#define HEX64(c) c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c \
                 c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c

static gr_snapshot *snap_new(unsigned n_gpus)
{
        gr_snapshot *s = calloc(1, sizeof(*s));
        s->gpu = calloc(1, sizeof(*s->gpu));
        s->procs = calloc(1, sizeof(*s->procs));
        s->procs->cap = 16;
        s->procs->procs = calloc(16, sizeof(gr_process));
        s->gpu->n_gpus = n_gpus;
        s->gpu->gpus = calloc(n_gpus, sizeof(gr_gpu));
        for (unsigned i = 0; i < n_gpus; i++) {
                s->gpu->gpus[i].index = i;
                s->gpu->gpus[i].minor = (int)i;
                snprintf(s->gpu->gpus[i].uuid, sizeof(s->gpu->gpus[i].uuid), "GPU-fa4e0000-0000-4000-8000-%012u", i);
        }
        return s;
}

/* a process in cgroup cg holding GPU minor (-1: only the control files) */
static gr_process *proc_in(gr_snapshot *s, pid_t pid, const char *cg, int minor)
{
        gr_process *p = &s->procs->procs[s->procs->n++];
        p->pid = pid;
        p->has_details = true;
        p->cgroup = strdup(cg);
        p->hold = calloc(1, sizeof(gr_holding));
        p->hold->n_ctl = 2;
        if (minor >= 0) {
                p->hold->n_gpus = 1;
                p->hold->gpus[0].minor = (unsigned)minor;
                p->hold->gpus[0].n_fds = 3;
        }
        return p;
}

static gr_kubelet_answer *answer(void)
{
        gr_kubelet_answer *a = calloc(1, sizeof(*a));
        a->state = GR_KUBELET_OK;
        a->n_pods = 0;
        return a;
}

static void assign(gr_kubelet_answer *a, const char *pod, const char *ns, const char *ctr, const char *id)
{
        gr_kubelet_device d = { 0 };
        snprintf(d.pod, sizeof(d.pod), "%s", pod);
        snprintf(d.ns, sizeof(d.ns), "%s", ns);
        snprintf(d.container, sizeof(d.container), "%s", ctr);
        snprintf(d.resource, sizeof(d.resource), "nvidia.com/gpu");
        snprintf(d.id, sizeof(d.id), "%s", id);
        assert_int_equal(gr_kubelet_answer_add(a, &d), 0);
        a->n_pods++;
}

#define GPU(n) "GPU-fa4e0000-0000-4000-8000-00000000000" #n
#define SYSTEMD_A "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5f0c1e2a_7b3d_4c1e_9a8b_1234567890ab.slice/cri-containerd-" HEX64("a") ".scope"
#define SYSTEMD_A2 "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5f0c1e2a_7b3d_4c1e_9a8b_1234567890ab.slice/cri-containerd-" HEX64("c") ".scope"
#define SYSTEMD_A_POD "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5f0c1e2a_7b3d_4c1e_9a8b_1234567890ab.slice"
#define CGROUPFS_B "/kubepods/besteffort/pod" UID_B "/" HEX64("b")

static const gr_pod *pod_or_null(const gr_snapshot *s, pid_t pid)
{
        for (size_t i = 0; i < s->procs->n; i++)
                if (s->procs->procs[i].pid == pid)
                        return s->procs->procs[i].pod;
        return NULL;
}

/* the pod of a process that has one (the test fails otherwise) */
static const gr_pod *pod_of(const gr_snapshot *s, pid_t pid)
{
        static const gr_pod none = { .naming = (gr_pod_naming)-1 };
        const gr_pod *p = pod_or_null(s, pid);
        if (!p)
                fail_msg("process %d has no pod", (int)pid);
        return p ? p : &none;
}

static void named_by_its_gpu(void **state)
{
        (void)state;
        gr_snapshot *s = snap_new(2);
        proc_in(s, 10, SYSTEMD_A, 0);
        proc_in(s, 11, CGROUPFS_B, 1);
        proc_in(s, 12, "/user.slice/session-1.scope", 0);
        gr_kubelet_answer *a = answer();
        assign(a, "train-0", "ml", "worker", GPU(0));
        assign(a, "infer-1", "serving", "server", GPU(1) "::2");
        assert_int_equal(gr_snapshot_name_pods(s, a), 0);
        const gr_pod *pa = pod_of(s, 10), *pb = pod_of(s, 11);
        assert_int_equal(pa->naming, GR_POD_NAMED);
        assert_string_equal(pa->uid, UID_A);
        assert_string_equal(pa->container_id, HEX64("a"));
        assert_string_equal(pa->name, "train-0");
        assert_string_equal(pa->ns, "ml");
        assert_string_equal(pa->container, "worker");
        assert_int_equal(pb->naming, GR_POD_NAMED);
        assert_string_equal(pb->uid, UID_B);
        assert_string_equal(pb->name, "infer-1");
        assert_null(pod_or_null(s, 12)); /* not in a pod */
        assert_int_equal(s->kubelet.state, GR_KUBELET_OK);
        assert_int_equal(s->kubelet.n_devices, 2);
        /* no answer, or a failed one: not asked, the UID kept */
        a->state = GR_KUBELET_TIMEOUT;
        assert_int_equal(gr_snapshot_name_pods(s, a), 0);
        assert_int_equal(pod_of(s, 10)->naming, GR_POD_NOT_ASKED);
        assert_string_equal(pod_of(s, 10)->name, "");
        assert_string_equal(pod_of(s, 10)->uid, UID_A);
        assert_int_equal(gr_snapshot_name_pods(s, NULL), 0);
        assert_int_equal(pod_of(s, 10)->naming, GR_POD_NOT_ASKED);
        assert_int_equal(s->kubelet.state, GR_KUBELET_OFF);
        gr_kubelet_answer_free(a);
        gr_snapshot_free(s);
}

/* a deleted pod's leftover (A) beside the pod that got its GPU since (B): both come to B */
static void leftover_beside_the_new_pod_is_ambiguous(void **state)
{
        (void)state;
        gr_snapshot *s = snap_new(1);
        proc_in(s, 10, SYSTEMD_A, 0);
        proc_in(s, 11, CGROUPFS_B, 0);
        gr_kubelet_answer *a = answer();
        assign(a, "new", "ml", "w", GPU(0));
        assert_int_equal(gr_snapshot_name_pods(s, a), 0);
        assert_int_equal(pod_of(s, 10)->naming, GR_POD_AMBIGUOUS);
        assert_int_equal(pod_of(s, 11)->naming, GR_POD_AMBIGUOUS);
        assert_string_equal(pod_of(s, 11)->name, "");
        assert_string_equal(pod_of(s, 11)->container, "");
        /* control: the leftover gone, the new pod is named */
        s->procs->n = 1;
        free(s->procs->procs[0].cgroup);
        s->procs->procs[0].cgroup = strdup(CGROUPFS_B);
        free(s->procs->procs[1].cgroup);
        free(s->procs->procs[1].hold);
        free(s->procs->procs[1].pod);
        memset(&s->procs->procs[1], 0, sizeof(gr_process));
        assert_int_equal(gr_snapshot_name_pods(s, a), 0);
        assert_int_equal(pod_of(s, 10)->naming, GR_POD_NAMED);
        assert_string_equal(pod_of(s, 10)->name, "new");
        gr_kubelet_answer_free(a);
        gr_snapshot_free(s);
}

static void replicas_in_two_pods_are_ambiguous(void **state)
{
        (void)state;
        gr_snapshot *s = snap_new(1);
        proc_in(s, 10, SYSTEMD_A, 0);
        gr_kubelet_answer *a = answer();
        assign(a, "share-a", "lab", "nb", GPU(0) "::0");
        assign(a, "share-b", "lab", "nb", GPU(0) "::1");
        assert_int_equal(gr_snapshot_name_pods(s, a), 0);
        assert_int_equal(pod_of(s, 10)->naming, GR_POD_AMBIGUOUS);
        assert_int_equal(pod_of(s, 10)->container_naming, GR_POD_AMBIGUOUS);
        gr_kubelet_answer_free(a);
        gr_snapshot_free(s);
}

static void unassigned_or_unmapped(void **state)
{
        (void)state;
        gr_snapshot *s = snap_new(2);
        proc_in(s, 10, SYSTEMD_A, 1);
        gr_kubelet_answer *a = answer();
        assign(a, "train-0", "ml", "worker", GPU(0));
        assert_int_equal(gr_snapshot_name_pods(s, a), 0);
        assert_int_equal(pod_of(s, 10)->naming, GR_POD_UNASSIGNED);
        /* a MIG device somewhere: it may be that one, so not "unassigned" */
        assign(a, "infer-1", "serving", "server", "MIG-11111111-2222-3333-4444-555555555555");
        assert_int_equal(gr_snapshot_name_pods(s, a), 0);
        assert_int_equal(pod_of(s, 10)->naming, GR_POD_UNMAPPED);
        /* another vendor's device does not count */
        gr_kubelet_answer *b = answer();
        assign(b, "train-0", "ml", "worker", GPU(0));
        gr_kubelet_device d = { .pod = "rdma", .ns = "net", .container = "c", .resource = "rdma/hca", .id = "mlx5_0" };
        assert_int_equal(gr_kubelet_answer_add(b, &d), 0);
        assert_int_equal(gr_snapshot_name_pods(s, b), 0);
        assert_int_equal(pod_of(s, 10)->naming, GR_POD_UNASSIGNED);
        gr_kubelet_answer_free(a);
        gr_kubelet_answer_free(b);
        gr_snapshot_free(s);
}

static void containers_of_a_pod(void **state)
{
        (void)state;
        gr_snapshot *s = snap_new(2);
        proc_in(s, 10, SYSTEMD_A, 0);     /* container a: GPU 0 */
        proc_in(s, 11, SYSTEMD_A_POD, 1); /* the pod's own cgroup */
        proc_in(s, 12, SYSTEMD_A2, -1);   /* container c: control files only */
        gr_kubelet_answer *a = answer();
        assign(a, "train-0", "ml", "worker", GPU(0));
        assign(a, "train-0", "ml", "helper", GPU(1));
        assert_int_equal(gr_snapshot_name_pods(s, a), 0);
        assert_int_equal(pod_of(s, 10)->naming, GR_POD_NAMED);
        assert_string_equal(pod_of(s, 10)->container, "worker");
        assert_int_equal(pod_of(s, 11)->naming, GR_POD_NAMED); /* the pod holds GPUs 0 and 1 */
        assert_int_equal(pod_of(s, 11)->container_naming, GR_POD_NO_CONTAINER);
        assert_string_equal(pod_of(s, 11)->container, "");
        assert_int_equal(pod_of(s, 12)->naming, GR_POD_NAMED);
        assert_int_equal(pod_of(s, 12)->container_naming, GR_POD_NO_GPU);
        /* a restarted container's old process (container ID c) on the same GPU as the new one */
        s->procs->procs[2].hold->n_gpus = 1;
        s->procs->procs[2].hold->gpus[0].minor = 0;
        assert_int_equal(gr_snapshot_name_pods(s, a), 0);
        assert_int_equal(pod_of(s, 10)->naming, GR_POD_NAMED);
        assert_int_equal(pod_of(s, 10)->container_naming, GR_POD_AMBIGUOUS);
        assert_int_equal(pod_of(s, 12)->container_naming, GR_POD_AMBIGUOUS);
        assert_string_equal(pod_of(s, 10)->container, "");
        gr_kubelet_answer_free(a);
        gr_snapshot_free(s);
}

static void a_pod_holding_only_control_files(void **state)
{
        (void)state;
        gr_snapshot *s = snap_new(1);
        proc_in(s, 10, CGROUPFS_B, -1);
        gr_kubelet_answer *a = answer();
        assign(a, "train-0", "ml", "worker", GPU(0));
        assert_int_equal(gr_snapshot_name_pods(s, a), 0);
        assert_int_equal(pod_of(s, 10)->naming, GR_POD_NO_GPU);
        assert_int_equal(pod_of(s, 10)->container_naming, GR_POD_NO_GPU);
        gr_kubelet_answer_free(a);
        gr_snapshot_free(s);
}

/* a kubelet listing more devices than the join takes (the join is quadratic in them: 30,000
 * made check take 15 s, sixth adversarial round): an error, said, nothing named */
static void too_many_devices_are_not_joined(void **state)
{
        (void)state;
        gr_snapshot *s = snap_new(1);
        proc_in(s, 10, SYSTEMD_A, 0);
        gr_kubelet_answer *a = answer();
        assign(a, "train-0", "ml", "worker", GPU(0));
        assert_int_equal(gr_snapshot_name_pods(s, a), 0);
        assert_int_equal(pod_of(s, 10)->naming, GR_POD_NAMED); /* control */
        char name[32];
        for (unsigned i = 1; i < GR_KUBELET_DEVICES_MAX; i++) {
                snprintf(name, sizeof(name), "filler-%u", i);
                assign(a, name, "ml", "w", GPU(0) "::1");
        }
        assert_int_equal(a->n_devices, GR_KUBELET_DEVICES_MAX);
        assert_int_equal(gr_snapshot_name_pods(s, a), 0);
        assert_int_equal(s->kubelet.state, GR_KUBELET_OK); /* at the bound: joined */
        assign(a, "one-more", "ml", "w", GPU(0) "::2");
        assert_int_equal(gr_snapshot_name_pods(s, a), 0);
        assert_int_equal(s->kubelet.state, GR_KUBELET_ERROR);
        assert_string_equal(s->kubelet.error, "the kubelet listed 4097 devices, more than 4096: not joined");
        assert_int_equal(pod_of(s, 10)->naming, GR_POD_NOT_ASKED);
        assert_string_equal(pod_of(s, 10)->name, "");
        assert_int_equal(s->kubelet.gpus_assigned, 0);
        gr_kubelet_answer_free(a);
        gr_snapshot_free(s);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(named_by_its_gpu),
                cmocka_unit_test(leftover_beside_the_new_pod_is_ambiguous),
                cmocka_unit_test(replicas_in_two_pods_are_ambiguous),
                cmocka_unit_test(unassigned_or_unmapped),
                cmocka_unit_test(containers_of_a_pod),
                cmocka_unit_test(a_pod_holding_only_control_files),
                cmocka_unit_test(too_many_devices_are_not_joined),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
