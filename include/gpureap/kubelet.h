/* gpureap and the kubelet: the v1 PodResources API (which pod and container each device was
 * assigned to), asked over the kubelet's unix socket, and the join of its answer with the
 * holders that a snapshot sees in pods' cgroups (docs/architecture.md, "The kubelet"). */
#ifndef GPUREAP_KUBELET_H
#define GPUREAP_KUBELET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpureap/context.h"

#pragma GCC visibility push(default)

#define GR_KUBELET_SOCKET_DEFAULT "/var/lib/kubelet/pod-resources/kubelet.sock"
/* The device manager's checkpoint: which devices each pod UID's containers were assigned */
#define GR_KUBELET_CHECKPOINT_DEFAULT "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
#define GR_KUBELET_CHECKPOINT_MAX 16384 /* entries; more: an error, nothing taken */
#define GR_K8S_NAME_MAX 254      /* a DNS subdomain (pod names) and its NUL */
#define GR_K8S_ID_MAX 128
/* An answer with more devices than this is not joined (an error, said): a node's device plugins
 * list a few hundred; the join compares each device's pod with the pods before it */
#define GR_KUBELET_DEVICES_MAX 4096

typedef enum gr_kubelet_state {
        GR_KUBELET_OFF,          /* not asked: the caller did not ask (replayed, disabled) */
        GR_KUBELET_NO_SOCKET,    /* not asked: no socket at the path (not a Kubernetes node) */
        GR_KUBELET_NO_MODULE,    /* not asked: the gRPC module or its libraries are missing */
        GR_KUBELET_OK,           /* List answered */
        GR_KUBELET_TIMEOUT,      /* no answer within the deadline */
        GR_KUBELET_ERROR,        /* refused, an error status, a malformed answer */
} gr_kubelet_state;

const char *gr_kubelet_state_name(gr_kubelet_state s);

/* One device the kubelet assigned to one container of a listed pod */
typedef struct gr_kubelet_device {
        char pod[GR_K8S_NAME_MAX];
        char ns[64];
        char container[64];
        char resource[64];       /* nvidia.com/gpu, nvidia.com/mig-1g.10gb, ... */
        char id[GR_K8S_ID_MAX];  /* GPU-<uuid>, MIG-<uuid>, GPU-<uuid>::N (time-slicing) */
} gr_kubelet_device;

/* One device the device manager's checkpoint says a pod UID's container was assigned. The
 * checkpoint names pods by UID (as their cgroups do) and keeps entries of pods deleted since
 * until the kubelet next cleans it: which devices a UID has is a fact of the checkpoint, not
 * whether the pod still runs */
typedef struct gr_kubelet_assignment {
        char pod_uid[40];
        char container[64];
        char resource[64];
        char id[GR_K8S_ID_MAX];
} gr_kubelet_assignment;

typedef enum gr_checkpoint_state {
        GR_CHECKPOINT_NOT_READ,  /* not asked, or the kubelet was not */
        GR_CHECKPOINT_OK,
        GR_CHECKPOINT_MISSING,   /* no file there */
        GR_CHECKPOINT_ERROR,     /* not trusted, unreadable, malformed, too big */
} gr_checkpoint_state;
const char *gr_checkpoint_state_name(gr_checkpoint_state s); /* not_read, ok, missing, error */

typedef struct gr_kubelet_answer {
        gr_kubelet_state state;
        char socket[1024];
        char error[256];         /* why not asked, or what failed: one line */
        uint64_t asked_at_ms;    /* wall clock; 0 never asked */
        uint64_t elapsed_ms;
        unsigned n_pods;         /* pods List gave (with or without devices) */
        gr_kubelet_device *devices;
        size_t n_devices;
        size_t cap_devices;
        gr_checkpoint_state checkpoint_state;
        char checkpoint[1024];
        char checkpoint_error[200];
        gr_kubelet_assignment *assigned;
        size_t n_assigned, cap_assigned;
} gr_kubelet_answer;

/* A container's state as the runtime gives it (CRI ContainerState); created is also what an
 * answer without the field reads as */
typedef enum gr_cri_state {
        GR_CRI_CREATED,
        GR_CRI_RUNNING,
        GR_CRI_EXITED,
        GR_CRI_UNKNOWN,
} gr_cri_state;

/* What the container runtime's labels say of a container (CRI ContainerStatus): the kubelet
 * wrote them when it created the container; and its state now */
typedef struct gr_cri_container {
        char pod[GR_K8S_NAME_MAX];
        char ns[64];
        char uid[40];
        char container[64];
        gr_cri_state state;      /* a module of before 2026-12-07 leaves it GR_CRI_CREATED */
} gr_cri_container;

#define GR_CRI_SOCKET_DEFAULT "/run/containerd/containerd.sock"

typedef struct gr_kubelet_options {
        const char *socket;      /* NULL: GR_KUBELET_SOCKET_DEFAULT */
        gr_context *ctx;         /* NULL: gr_context_default() */
        const char *module;      /* the gRPC module; NULL: the context's, else the
                                    installed one (GR_KUBELET_MODULE_PATH) */
        const char *checkpoint;  /* the device manager's checkpoint; NULL: the default where the
                                    socket is the default one, else none is read */
        const char *cri_socket;  /* the container runtime's CRI socket; NULL: the default
                                    (GR_CRI_SOCKET_DEFAULT) where the socket is the default one,
                                    else none is asked */
        uint64_t timeout_ms;     /* the whole call's deadline; 0: 1000 */
        bool off;                /* do not ask (GR_KUBELET_OFF) */
} gr_kubelet_options;

/* Ask the kubelet's List once, with a deadline. Always returns an answer (its state says what
 * happened) unless memory runs out (-ENOMEM). The module is loaded only when the socket
 * exists, so a node without the kubelet pays a stat(). */
int gr_kubelet_ask(const gr_kubelet_options *opts, gr_kubelet_answer **ret);
gr_kubelet_answer *gr_kubelet_answer_copy(const gr_kubelet_answer *a);
void gr_kubelet_answer_free(gr_kubelet_answer *a);
/* Append a device (the module and the JSON reader fill an answer so); 0 or -ENOMEM */
int gr_kubelet_answer_add(gr_kubelet_answer *a, const gr_kubelet_device *d);
/* Append a checkpoint's entry; 0, -ENOMEM, or -E2BIG past GR_KUBELET_CHECKPOINT_MAX */
int gr_kubelet_answer_assign(gr_kubelet_answer *a, const gr_kubelet_assignment *e);

/* The GPU UUID a device ID names: "GPU-x" and "GPU-x::N" name GPU-x; a MIG device's ID
 * ("MIG-...") names no GPU UUID that NVML's report carries (false) */
bool gr_kubelet_device_gpu_uuid(const char *id, char *ret, size_t size);

/* ---- the module's entry point (lib/kubelet/grpc-module.c), resolved by dlsym ---- */
#define GR_KUBELET_MODULE_SYMBOL "gr_kubelet_module_list_v1"
typedef int (*gr_kubelet_module_list_fn)(const char *socket, uint64_t deadline_ms, gr_kubelet_answer *a,
                                         int (*add)(gr_kubelet_answer *, const gr_kubelet_device *));
/* The checkpoint's entries from an open file (the library opened and checked it); 0, or
 * -errno with err written (one line) */
#define GR_KUBELET_MODULE_CHECKPOINT_SYMBOL "gr_kubelet_module_checkpoint_v1"
typedef int (*gr_kubelet_module_checkpoint_fn)(int fd, gr_kubelet_answer *a,
                                               int (*assign)(gr_kubelet_answer *, const gr_kubelet_assignment *),
                                               char *err, size_t err_size);

/* Get for one pod (by namespace and name): 1 the kubelet knows it, 0 it answers that it does
 * not, else -errno with why in err (one line). The socket and module as gr_kubelet_ask's */
int gr_kubelet_get(const gr_kubelet_options *opts, uint64_t deadline_ms, const char *ns, const char *name, char *err,
                   size_t err_size);
/* The container runtime's labels of one container (CRI ContainerStatus on opts->cri_socket, or
 * the default one beside the default kubelet socket): 1 known, 0 the runtime does not know it,
 * -ENOENT no CRI socket to ask, else -errno; why in err */
int gr_cri_container_status(const gr_kubelet_options *opts, uint64_t deadline_ms, const char *container_id,
                            gr_cri_container *ret, char *err, size_t err_size);
#define GR_KUBELET_MODULE_GET_SYMBOL "gr_kubelet_module_get_v1"
typedef int (*gr_kubelet_module_get_fn)(const char *socket, uint64_t deadline_ms, const char *ns, const char *name,
                                        char *err, size_t err_size);
#define GR_KUBELET_MODULE_CRI_SYMBOL "gr_kubelet_module_cri_status_v1"
typedef int (*gr_kubelet_module_cri_fn)(const char *socket, uint64_t deadline_ms, const char *container_id,
                                        gr_cri_container *ret, char *err, size_t err_size);

#pragma GCC visibility pop

#endif
