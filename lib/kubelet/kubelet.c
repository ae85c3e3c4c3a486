/* Asking the kubelet: a stat() of its socket, and only where one exists the gRPC module
 * (gpureap-kubelet.so, lib/kubelet/grpc-module.c) is loaded and asked List once, with a
 * deadline. No socket, no module: an answer that says it was not asked, and why. */
#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <unistd.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpureap/basic.h"
#include "gpureap/kubelet.h"
#include "basic/context.h"
#include "basic/names.h"

#ifndef GR_KUBELET_MODULE_PATH
#define GR_KUBELET_MODULE_PATH "/usr/lib/gpureap/gpureap-kubelet.so"
#endif

GR_NAME_TABLE(gr_checkpoint_state_name, gr_checkpoint_state, GR_CHECKPOINT_ERROR, "error",
              [GR_CHECKPOINT_NOT_READ] = "not_read", [GR_CHECKPOINT_OK] = "ok", [GR_CHECKPOINT_MISSING] = "missing",
              [GR_CHECKPOINT_ERROR] = "error")

int gr_kubelet_answer_assign(gr_kubelet_answer *a, const gr_kubelet_assignment *e)
{
        if (a->n_assigned >= GR_KUBELET_CHECKPOINT_MAX)
                return -E2BIG;
        if (a->n_assigned == a->cap_assigned) {
                size_t cap = a->cap_assigned ? a->cap_assigned * 2 : 16;
                gr_kubelet_assignment *n = realloc(a->assigned, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                a->assigned = n;
                a->cap_assigned = cap;
        }
        a->assigned[a->n_assigned++] = *e;
        return 0;
}

GR_NAME_TABLE(gr_kubelet_state_name, gr_kubelet_state, GR_KUBELET_ERROR, "error",
              [GR_KUBELET_OFF] = "off", [GR_KUBELET_NO_SOCKET] = "no_socket", [GR_KUBELET_NO_MODULE] = "no_module",
              [GR_KUBELET_OK] = "ok", [GR_KUBELET_TIMEOUT] = "timeout", [GR_KUBELET_ERROR] = "error")

int gr_kubelet_answer_add(gr_kubelet_answer *a, const gr_kubelet_device *d)
{
        if (a->n_devices == a->cap_devices) {
                size_t cap = a->cap_devices ? 2 * a->cap_devices : 16;
                if (cap > 65536)
                        return -E2BIG;
                gr_kubelet_device *n = realloc(a->devices, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                a->devices = n;
                a->cap_devices = cap;
        }
        a->devices[a->n_devices++] = *d;
        return 0;
}

void gr_kubelet_answer_free(gr_kubelet_answer *a)
{
        if (!a)
                return;
        free(a->devices);
        free(a->assigned);
        free(a);
}

gr_kubelet_answer *gr_kubelet_answer_copy(const gr_kubelet_answer *a)
{
        gr_kubelet_answer *c = malloc(sizeof(*c));
        if (!c)
                return NULL;
        *c = *a;
        c->devices = NULL;
        c->n_devices = c->cap_devices = 0;
        c->assigned = NULL;
        c->n_assigned = c->cap_assigned = 0;
        for (size_t i = 0; i < a->n_devices; i++)
                if (gr_kubelet_answer_add(c, &a->devices[i]) < 0) {
                        gr_kubelet_answer_free(c);
                        return NULL;
                }
        for (size_t i = 0; i < a->n_assigned; i++)
                if (gr_kubelet_answer_assign(c, &a->assigned[i]) < 0) {
                        gr_kubelet_answer_free(c);
                        return NULL;
                }
        return c;
}

bool gr_kubelet_device_gpu_uuid(const char *id, char *ret, size_t size)
{
        if (strncmp(id, "GPU-", 4) != 0)
                return false;
        const char *e = strstr(id, "::"); /* time-slicing: the replica's number after the UUID */
        size_t n = e ? (size_t)(e - id) : strlen(id);
        if (n >= size)
                return false;
        memcpy(ret, id, n);
        ret[n] = '\0';
        return true;
}

/* The device manager's checkpoint, where List answered: a file root's or ours (the same trust
 * as code: it names what pods were given), read by the module (JSON, through json-c). 0, or
 * -ENOMEM; what failed is the checkpoint's state */
static int read_checkpoint(void *dl, const char *path, gr_kubelet_answer *a)
{
        gr_strlcpy(a->checkpoint, path, sizeof(a->checkpoint));
        gr_kubelet_module_checkpoint_fn fn = (gr_kubelet_module_checkpoint_fn)dlsym(dl, GR_KUBELET_MODULE_CHECKPOINT_SYMBOL);
        if (!fn) {
                a->checkpoint_state = GR_CHECKPOINT_ERROR;
                snprintf(a->checkpoint_error, sizeof(a->checkpoint_error), "the kubelet module reads no checkpoint");
                return 0;
        }
        char why[200] = "";
        int fd = gr_open_trusted(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, geteuid(), why, sizeof(why));
        if (fd == -ENOENT) {
                a->checkpoint_state = GR_CHECKPOINT_MISSING;
                snprintf(a->checkpoint_error, sizeof(a->checkpoint_error), "no checkpoint at '%s'", path);
                return 0;
        }
        if (fd < 0) {
                if (!why[0])
                        snprintf(why, sizeof(why), "%s", strerror(-fd));
                a->checkpoint_state = GR_CHECKPOINT_ERROR;
                snprintf(a->checkpoint_error, sizeof(a->checkpoint_error), "not reading the checkpoint: %s", why);
                return 0;
        }
        char err[200] = "";
        int r = fn(fd, a, gr_kubelet_answer_assign, err, sizeof(err));
        close(fd);
        if (r == -ENOMEM)
                return r;
        a->checkpoint_state = r == 0 ? GR_CHECKPOINT_OK : GR_CHECKPOINT_ERROR;
        if (r < 0) {
                a->n_assigned = 0; /* a partial one counts for nothing */
                snprintf(a->checkpoint_error, sizeof(a->checkpoint_error), "%s", err[0] ? err : strerror(-r));
        }
        return 0;
}

#if GR_NO_MODULES
/* A static program (gpureap-run) loads no shared object: the pods are gpureap's to tell */
static void *module_load(const gr_kubelet_options *opts, char *why, size_t why_size)
{
        (void)opts;
        snprintf(why, why_size, "this program loads no kubelet module (gpureap does)");
        return NULL;
}
#else
/* The gRPC modules loaded: each file (device and inode) once, its descriptor kept open. A
 * module is loaded through /proc/self/fd/N, and the loader takes a name it has loaded before for
 * that library again: with the descriptor closed, the next module opened got the same number,
 * and two contexts that name two modules both ran the first (seventh adversarial round) */
static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;
static struct module {
        dev_t dev;
        ino_t ino;
        void *dl;
} modules[8];
static size_t n_modules;

/* The gRPC module, loaded once per file: it is code, so loaded only as gr_open_trusted allows
 * (every directory and link on the way root's or ours, not writable by others), through the
 * descriptor checked, never by its path again. Kept loaded: serve asks again, and nghttp2 and
 * protobuf-c keep no state between calls. NULL with why */
static void *module_load(const gr_kubelet_options *opts, char *why, size_t why_size)
{
        const char *mod = opts && opts->module ? opts->module : gr_ctx_kubelet_module(opts ? opts->ctx : NULL);
        if (!mod)
                mod = GR_KUBELET_MODULE_PATH;
        char reason[200];
        int fd = gr_open_trusted(mod, O_RDONLY | O_CLOEXEC, geteuid(), reason, sizeof(reason));
        if (fd < 0) {
                snprintf(why, why_size, "not loading the kubelet module: %s", reason);
                return NULL;
        }
        struct stat st;
        if (fstat(fd, &st) < 0) {
                snprintf(why, why_size, "cannot load the kubelet module '%s': %s", mod, strerror(errno));
                close(fd);
                return NULL;
        }
        pthread_mutex_lock(&modules_lock);
        void *dl = NULL;
        for (size_t i = 0; i < n_modules && !dl; i++)
                if (modules[i].dev == st.st_dev && modules[i].ino == st.st_ino)
                        dl = modules[i].dl;
        if (dl) {
                close(fd);
        } else if (n_modules == GR_ELEMENTSOF(modules)) {
                close(fd);
                snprintf(why, why_size, "not loading the kubelet module '%s': %zu modules are loaded already", mod,
                         n_modules);
        } else {
                char by_fd[64];
                snprintf(by_fd, sizeof(by_fd), "/proc/self/fd/%d", fd);
                dl = dlopen(by_fd, RTLD_NOW | RTLD_LOCAL);
                if (dl) /* the descriptor stays open: no later module gets its number, nor its name */
                        modules[n_modules++] = (struct module){ st.st_dev, st.st_ino, dl };
                else
                        close(fd);
                if (!dl)
                        snprintf(why, why_size, "cannot load the kubelet module '%s' (needs libnghttp2-14 and libprotobuf-c1)",
                                 mod);
        }
        pthread_mutex_unlock(&modules_lock);
        return dl;
}
#endif

/* One entry point of the module (loaded as module_load allows), or NULL with why in err:
 * "the kubelet module has no WHAT" where the module lacks it */
static void *module_symbol(const gr_kubelet_options *opts, const char *symbol, const char *what, char *err,
                           size_t err_size)
{
        void *dl = module_load(opts, err, err_size);
#if GR_NO_MODULES
        void *fn = NULL;
#else
        void *fn = dl ? dlsym(dl, symbol) : NULL;
#endif
        if (dl && !fn)
                snprintf(err, err_size, "the kubelet module has no %s", what);
        return fn;
}

static bool is_socket(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

int gr_kubelet_get(const gr_kubelet_options *opts, uint64_t deadline_ms, const char *ns, const char *name, char *err,
                   size_t err_size)
{
        const char *sock = opts && opts->socket ? opts->socket : GR_KUBELET_SOCKET_DEFAULT;
        if (!is_socket(sock)) {
                snprintf(err, err_size, "no kubelet socket at '%s'", sock);
                return -ENOENT;
        }
        gr_kubelet_module_get_fn get = (gr_kubelet_module_get_fn)module_symbol(opts, GR_KUBELET_MODULE_GET_SYMBOL, "Get",
                                                                                err, err_size);
        if (!get)
                return -ENOSYS;
        return get(sock, deadline_ms, ns, name, err, err_size);
}

int gr_cri_container_status(const gr_kubelet_options *opts, uint64_t deadline_ms, const char *container_id,
                            gr_cri_container *ret, char *err, size_t err_size)
{
        const char *sock = opts && opts->socket ? opts->socket : GR_KUBELET_SOCKET_DEFAULT;
        const char *cri = opts && opts->cri_socket ? opts->cri_socket
                          : strcmp(sock, GR_KUBELET_SOCKET_DEFAULT) == 0 ? GR_CRI_SOCKET_DEFAULT : NULL;
        if (!cri || !is_socket(cri)) {
                snprintf(err, err_size, cri ? "no container runtime socket at '%s'" : "no container runtime socket named%s",
                         cri ? cri : "");
                return -ENOENT;
        }
        gr_kubelet_module_cri_fn fn = (gr_kubelet_module_cri_fn)module_symbol(opts, GR_KUBELET_MODULE_CRI_SYMBOL,
                                                                              "ContainerStatus", err, err_size);
        if (!fn)
                return -ENOSYS;
        memset(ret, 0, sizeof(*ret)); /* a module built before the state was read leaves it */
        return fn(cri, deadline_ms, container_id, ret, err, err_size);
}

int gr_kubelet_ask(const gr_kubelet_options *opts, gr_kubelet_answer **ret)
{
        gr_kubelet_answer *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        const char *sock = opts && opts->socket ? opts->socket : GR_KUBELET_SOCKET_DEFAULT;
        gr_strlcpy(a->socket, sock, sizeof(a->socket));
        *ret = a;
        if (opts && opts->off) {
                a->state = GR_KUBELET_OFF;
                snprintf(a->error, sizeof(a->error), "not asked");
                return 0;
        }
        struct stat st;
        if (stat(sock, &st) < 0 || !S_ISSOCK(st.st_mode)) {
                a->state = GR_KUBELET_NO_SOCKET;
                snprintf(a->error, sizeof(a->error), "no kubelet socket at '%s'", sock);
                return 0;
        }
        char why[200];
        void *dl = module_load(opts, why, sizeof(why));
        gr_kubelet_module_list_fn list = dl ? (gr_kubelet_module_list_fn)dlsym(dl, GR_KUBELET_MODULE_SYMBOL) : NULL;
        if (!list) {
                a->state = GR_KUBELET_NO_MODULE;
                snprintf(a->error, sizeof(a->error), "%s", dl ? "the kubelet module has no List" : why);
                return 0;
        }
        uint64_t timeout = opts && opts->timeout_ms ? opts->timeout_ms : 1000;
        uint64_t t0 = gr_now_ms();
        a->asked_at_ms = gr_wall_ms();
        int r = list(sock, t0 + timeout, a, gr_kubelet_answer_add);
        a->elapsed_ms = gr_now_ms() - t0;
        if (r == -ENOMEM) {
                gr_kubelet_answer_free(a);
                *ret = NULL;
                return r;
        }
        a->state = r == 0 ? GR_KUBELET_OK : r == -ETIMEDOUT ? GR_KUBELET_TIMEOUT : GR_KUBELET_ERROR;
        if (r < 0) {
                /* a partial answer counts for nothing */
                a->n_devices = 0;
                a->n_pods = 0;
        }
        const char *cp = opts && opts->checkpoint ? opts->checkpoint
                         : strcmp(sock, GR_KUBELET_SOCKET_DEFAULT) == 0 ? GR_KUBELET_CHECKPOINT_DEFAULT : NULL;
        if (cp && a->state == GR_KUBELET_OK)
                return read_checkpoint(dl, cp, a);
        return 0;
}
