/* The gRPC client of the kubelet's PodResources API, built as a module of its own
 * (gpureap-kubelet.so) that links nghttp2 (HTTP/2) and protobuf-c (the messages): the library
 * dlopen()s it only where the kubelet's socket exists, so that no other command, and no node
 * without the kubelet, loads either. One unary call, List, on a non-blocking unix socket,
 * every wait a poll() bounded by the caller's deadline: a kubelet that accepts and never
 * answers costs the deadline, never a hang. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

#include <json-c/json.h>
#include <nghttp2/nghttp2.h>

#include "gpureap/basic.h"
#include "gpureap/kubelet.h"
#include "podresources.pb-c.h"
#include "cri.pb-c.h"

#define ANSWER_MAX (16u << 20) /* the kubelet's own gRPC limit is 16 MiB */

struct call {
        uint8_t *req;            /* the framed request: 5 bytes of gRPC prefix, the message */
        size_t req_len, req_off;
        uint8_t *body;           /* the framed answer */
        size_t body_len;
        int32_t stream;
        bool closed;
        uint32_t h2_error;
        int grpc_status;         /* -1 none seen */
        char grpc_message[128];
        char http_status[8];
        bool too_big;
};

int gr_kubelet_module_list_v1(const char *socket, uint64_t deadline_ms, gr_kubelet_answer *a,
                              int (*add)(gr_kubelet_answer *, const gr_kubelet_device *));

static uint64_t mono_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static ssize_t read_request(nghttp2_session *s, int32_t stream, uint8_t *buf, size_t len, uint32_t *flags,
                            nghttp2_data_source *src, void *user)
{
        struct call *c = user;
        size_t n = c->req_len - c->req_off;
        if (n > len)
                n = len;
        memcpy(buf, c->req + c->req_off, n);
        c->req_off += n;
        if (c->req_off == c->req_len)
                *flags |= NGHTTP2_DATA_FLAG_EOF;
        return (ssize_t)n;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t stream, const uint8_t *data, size_t len, void *user)
{
        struct call *c = user;
        if (stream != c->stream)
                return 0;
        if (c->body_len + len > ANSWER_MAX) {
                c->too_big = true;
                return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        uint8_t *b = realloc(c->body, c->body_len + len);
        if (!b)
                return NGHTTP2_ERR_CALLBACK_FAILURE;
        memcpy(b + c->body_len, data, len);
        c->body = b;
        c->body_len += len;
        return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
                     const uint8_t *value, size_t vlen, uint8_t flags, void *user)
{
        struct call *c = user;
        if (f->hd.stream_id != c->stream)
                return 0;
        if (nlen == 11 && memcmp(name, "grpc-status", 11) == 0) {
                char v[16];
                size_t k = vlen < sizeof(v) - 1 ? vlen : sizeof(v) - 1;
                memcpy(v, value, k);
                v[k] = '\0';
                c->grpc_status = (int)strtol(v, NULL, 10);
        } else if (nlen == 12 && memcmp(name, "grpc-message", 12) == 0) {
                size_t k = vlen < sizeof(c->grpc_message) - 1 ? vlen : sizeof(c->grpc_message) - 1;
                memcpy(c->grpc_message, value, k);
                c->grpc_message[k] = '\0';
        } else if (nlen == 7 && memcmp(name, ":status", 7) == 0) {
                size_t k = vlen < sizeof(c->http_status) - 1 ? vlen : sizeof(c->http_status) - 1;
                memcpy(c->http_status, value, k);
                c->http_status[k] = '\0';
        }
        return 0;
}

static int on_close(nghttp2_session *s, int32_t stream, uint32_t error, void *user)
{
        struct call *c = user;
        if (stream == c->stream) {
                c->closed = true;
                c->h2_error = error;
        }
        return 0;
}

static int connect_unix(const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path) + 1);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS && errno != EAGAIN) {
                int e = -errno;
                close(fd);
                return e;
        }
        /* only a kubelet run by root or by ourselves is believed: the path may come from the
         * environment, and another user's answer would change verdicts (as serve-client.c) */
        struct ucred cred;
        socklen_t cl = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || (cred.uid != 0 && cred.uid != getuid())) {
                close(fd);
                return -EPERM;
        }
        return fd;
}

/* Drive the session until the stream closes, the deadline passes or the peer goes */
static int exchange(int fd, nghttp2_session *s, struct call *c, uint64_t deadline_ms)
{
        for (;;) {
                const uint8_t *out;
                ssize_t n;
                while ((n = nghttp2_session_mem_send(s, &out)) > 0) {
                        size_t off = 0;
                        while (off < (size_t)n) {
                                ssize_t w = send(fd, out + off, (size_t)n - off, MSG_NOSIGNAL);
                                if (w < 0 && errno == EAGAIN) {
                                        uint64_t now = mono_ms();
                                        if (now >= deadline_ms)
                                                return -ETIMEDOUT;
                                        struct pollfd p = { .fd = fd, .events = POLLOUT };
                                        poll(&p, 1, (int)(deadline_ms - now));
                                        continue;
                                }
                                if (w < 0)
                                        return -errno;
                                off += (size_t)w;
                        }
                }
                if (n < 0)
                        return -EPROTO;
                if (c->closed)
                        return 0;
                uint64_t now = mono_ms();
                if (now >= deadline_ms)
                        return -ETIMEDOUT;
                struct pollfd p = { .fd = fd, .events = POLLIN };
                int r = poll(&p, 1, (int)(deadline_ms - now));
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (r <= 0)
                        continue;
                uint8_t buf[16384];
                ssize_t got = recv(fd, buf, sizeof(buf), 0);
                if (got == 0)
                        return -ECONNRESET;
                if (got < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                continue;
                        return -errno;
                }
                if (nghttp2_session_mem_recv(s, buf, (size_t)got) < 0)
                        return c->too_big ? -EFBIG : -EPROTO;
        }
}

static void copy(char *dst, size_t size, const char *src)
{
        snprintf(dst, size, "%s", src ? src : "");
}

/* The one gRPC message of an answer: a flag byte (0: not compressed), a 4-byte big-endian length */
static const uint8_t *answer_message(const struct call *c, size_t *ret_len)
{
        if (c->body_len < 5 || c->body[0] != 0)
                return NULL;
        size_t len = (size_t)c->body[1] << 24 | (size_t)c->body[2] << 16 | (size_t)c->body[3] << 8 | c->body[4];
        if (len != c->body_len - 5)
                return NULL;
        *ret_len = len;
        return c->body + 5;
}

static int take_answer(const struct call *c, gr_kubelet_answer *a,
                       int (*add)(gr_kubelet_answer *, const gr_kubelet_device *))
{
        size_t len;
        const uint8_t *msg = answer_message(c, &len);
        if (!msg)
                return -EBADMSG;
        V1__ListPodResourcesResponse *m = v1__list_pod_resources_response__unpack(NULL, len, msg);
        if (!m)
                return -EBADMSG;
        int r = 0;
        a->n_pods = (unsigned)m->n_pod_resources;
        for (size_t i = 0; i < m->n_pod_resources && r == 0; i++) {
                const V1__PodResources *p = m->pod_resources[i];
                for (size_t j = 0; j < p->n_containers && r == 0; j++) {
                        const V1__ContainerResources *ct = p->containers[j];
                        for (size_t k = 0; k < ct->n_devices && r == 0; k++) {
                                const V1__ContainerDevices *dv = ct->devices[k];
                                for (size_t l = 0; l < dv->n_device_ids && r == 0; l++) {
                                        gr_kubelet_device d;
                                        copy(d.pod, sizeof(d.pod), p->name);
                                        copy(d.ns, sizeof(d.ns), p->namespace_);
                                        copy(d.container, sizeof(d.container), ct->name);
                                        copy(d.resource, sizeof(d.resource), dv->resource_name);
                                        copy(d.id, sizeof(d.id), dv->device_ids[l]);
                                        r = add(a, &d);
                                }
                        }
                }
        }
        v1__list_pod_resources_response__free_unpacked(m, NULL);
        return r;
}

#define NV(n, v) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1, NGHTTP2_NV_FLAG_NONE }
#define NVS(n, v) { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE }

/* One unary call: the message (packed by pack into its gRPC frame) to path, the answer framed in
 * c->body and its grpc-status in c->grpc_status. 0 once the stream closed, else -errno with why
 * in err (what names the call there) */
static int unary(const char *socket, const char *path, const char *what, size_t mlen,
                 size_t (*pack)(const void *m, uint8_t *out), const void *m, uint64_t deadline_ms, struct call *c,
                 char *err, size_t err_size)
{
        *c = (struct call){ .grpc_status = -1 };
        c->req_len = 5 + mlen;
        c->req = calloc(1, c->req_len);
        if (!c->req)
                return -ENOMEM;
        c->req[1] = (uint8_t)(mlen >> 24);
        c->req[2] = (uint8_t)(mlen >> 16);
        c->req[3] = (uint8_t)(mlen >> 8);
        c->req[4] = (uint8_t)mlen;
        pack(m, c->req + 5);
        int r, fd = connect_unix(socket);
        if (fd < 0) {
                if (fd == -EPERM)
                        snprintf(err, err_size, "'%s' is served by neither root nor this user: not believed", socket);
                else
                        snprintf(err, err_size, "cannot connect to '%s': %s", socket, strerror(-fd));
                return fd;
        }
        nghttp2_session_callbacks *cb = NULL;
        nghttp2_session *s = NULL;
        if (nghttp2_session_callbacks_new(&cb) != 0) {
                r = -ENOMEM;
                goto out;
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
        nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
        nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
        if (nghttp2_session_client_new(&s, cb, c) != 0) {
                r = -ENOMEM;
                goto out;
        }
        nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
        const nghttp2_nv hdrs[] = {
                NV(":method", "POST"), NV(":scheme", "http"),
                NVS(":path", path), NV(":authority", "localhost"),
                NV("content-type", "application/grpc"), NV("te", "trailers"),
        };
        nghttp2_data_provider dp = { .read_callback = read_request };
        c->stream = nghttp2_submit_request(s, NULL, hdrs, GR_ELEMENTSOF(hdrs), &dp, c);
        if (c->stream < 0) {
                r = -EPROTO;
                goto out;
        }
        r = exchange(fd, s, c, deadline_ms);
        if (r == -ETIMEDOUT)
                snprintf(err, err_size, "'%s' did not answer %s in time", socket, what);
        else if (r < 0)
                snprintf(err, err_size, "%s at '%s' failed: %s", what, socket, strerror(-r));
out:
        if (s)
                nghttp2_session_del(s);
        if (cb)
                nghttp2_session_callbacks_del(cb);
        close(fd);
        return r;
}

static void call_release(struct call *c)
{
        free(c->req);
        free(c->body);
        c->req = c->body = NULL;
}

/* A call that the peer answered with an error status (or an answer not understood): said in err,
 * -EREMOTEIO */
static int answered_error(char *err, size_t err_size, const char *what, const char *socket, const struct call *c)
{
        snprintf(err, err_size, "%s at '%s' answered grpc-status %d%s%s", what, socket, c->grpc_status,
                 c->grpc_message[0] ? ": " : "", c->grpc_message);
        return -EREMOTEIO;
}

static size_t pack_list(const void *m, uint8_t *out)
{
        return v1__list_pod_resources_request__pack(m, out);
}

int gr_kubelet_module_list_v1(const char *socket, uint64_t deadline_ms, gr_kubelet_answer *a,
                              int (*add)(gr_kubelet_answer *, const gr_kubelet_device *))
{
        struct call c;
        V1__ListPodResourcesRequest req = V1__LIST_POD_RESOURCES_REQUEST__INIT;
        int r = unary(socket, "/v1.PodResourcesLister/List", "List", v1__list_pod_resources_request__get_packed_size(&req),
                      pack_list, &req, deadline_ms, &c, a->error, sizeof(a->error));
        if (r == -ETIMEDOUT)
                snprintf(a->error, sizeof(a->error), "the kubelet at '%s' did not answer List in time", socket);
        if (r == 0 && c.grpc_status != 0)
                r = answered_error(a->error, sizeof(a->error), "List", socket, &c);
        else if (r == 0 && (r = take_answer(&c, a, add)) < 0 && r != -ENOMEM) {
                snprintf(a->error, sizeof(a->error), "List at '%s' gave a malformed answer", socket);
        }
        call_release(&c);
        return r;
}

static size_t pack_get(const void *m, uint8_t *out)
{
        return v1__get_pod_resources_request__pack(m, out);
}

/* Get for one pod: 1 found, 0 not found (grpc-status NOT_FOUND, or UNKNOWN with the kubelet's
 * own words for it, "pod NAME in namespace NS not found"), else -errno with why in err */
int gr_kubelet_module_get_v1(const char *socket, uint64_t deadline_ms, const char *ns, const char *name, char *err,
                             size_t err_size);
int gr_kubelet_module_get_v1(const char *socket, uint64_t deadline_ms, const char *ns, const char *name, char *err,
                             size_t err_size)
{
        struct call c;
        V1__GetPodResourcesRequest req = V1__GET_POD_RESOURCES_REQUEST__INIT;
        req.pod_name = (char *)name;
        req.pod_namespace = (char *)ns;
        int r = unary(socket, "/v1.PodResourcesLister/Get", "Get", v1__get_pod_resources_request__get_packed_size(&req),
                      pack_get, &req, deadline_ms, &c, err, err_size);
        if (r == 0) {
                char words[sizeof(c.grpc_message)];
                snprintf(words, sizeof(words), "pod %s in namespace %s not found", name, ns);
                size_t len;
                const uint8_t *msg = answer_message(&c, &len);
                V1__GetPodResourcesResponse *m = c.grpc_status == 0 && msg ?
                        v1__get_pod_resources_response__unpack(NULL, len, msg) : NULL;
                if (c.grpc_status == 5 || (c.grpc_status == 2 && strcmp(c.grpc_message, words) == 0)) {
                        r = 0;
                } else if (m && m->pod_resources && m->pod_resources->name &&
                           strcmp(m->pod_resources->name, name) == 0) {
                        r = 1;
                } else {
                        char what[GR_K8S_NAME_MAX + 72];
                        snprintf(what, sizeof(what), "Get %s/%s", ns, name);
                        r = answered_error(err, err_size, what, socket, &c);
                }
                if (m)
                        v1__get_pod_resources_response__free_unpacked(m, NULL);
        }
        call_release(&c);
        return r;
}

static size_t pack_status(const void *m, uint8_t *out)
{
        return runtime__v1__container_status_request__pack(m, out);
}

/* The container runtime's ContainerStatus for one container ID: its labels' pod name, namespace
 * and UID (each "" where the label is missing). 1 known, 0 the runtime does not know it
 * (NOT_FOUND), else -errno with why in err */
int gr_kubelet_module_cri_status_v1(const char *socket, uint64_t deadline_ms, const char *container_id,
                                    gr_cri_container *ret, char *err, size_t err_size);
int gr_kubelet_module_cri_status_v1(const char *socket, uint64_t deadline_ms, const char *container_id,
                                    gr_cri_container *ret, char *err, size_t err_size)
{
        memset(ret, 0, sizeof(*ret));
        struct call c;
        Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
        req.container_id = (char *)container_id;
        int r = unary(socket, "/runtime.v1.RuntimeService/ContainerStatus", "ContainerStatus",
                      runtime__v1__container_status_request__get_packed_size(&req), pack_status, &req, deadline_ms, &c,
                      err, err_size);
        if (r == 0) {
                size_t len;
                const uint8_t *msg = answer_message(&c, &len);
                Runtime__V1__ContainerStatusResponse *m = c.grpc_status == 0 && msg ?
                        runtime__v1__container_status_response__unpack(NULL, len, msg) : NULL;
                if (c.grpc_status == 5) {
                        r = 0;
                } else if (m && m->status && m->status->id && strcmp(m->status->id, container_id) == 0) {
                        ret->state = m->status->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING ? GR_CRI_RUNNING
                                     : m->status->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED ? GR_CRI_EXITED
                                     : m->status->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED ? GR_CRI_CREATED
                                                                                                       : GR_CRI_UNKNOWN;
                        for (size_t i = 0; i < m->status->n_labels; i++) {
                                const Runtime__V1__LabelEntry *l = m->status->labels[i];
                                if (!l->key || !l->value)
                                        continue;
                                if (strcmp(l->key, "io.kubernetes.pod.name") == 0)
                                        copy(ret->pod, sizeof(ret->pod), l->value);
                                else if (strcmp(l->key, "io.kubernetes.pod.namespace") == 0)
                                        copy(ret->ns, sizeof(ret->ns), l->value);
                                else if (strcmp(l->key, "io.kubernetes.pod.uid") == 0)
                                        copy(ret->uid, sizeof(ret->uid), l->value);
                                else if (strcmp(l->key, "io.kubernetes.container.name") == 0)
                                        copy(ret->container, sizeof(ret->container), l->value);
                        }
                        r = 1;
                } else {
                        r = answered_error(err, err_size, "ContainerStatus", socket, &c);
                }
                if (m)
                        runtime__v1__container_status_response__free_unpacked(m, NULL);
        }
        call_release(&c);
        return r;
}

/* ---- the device manager's checkpoint (kubelet_internal_checkpoint): JSON, read with json-c ----
 * {"Data": {"PodDeviceEntries": [{"PodUID": ..., "ContainerName": ..., "ResourceName": ...,
 *  "DeviceIDs": {"<NUMA node>": [ids]} (since 1.20) or [ids] (before)}], ...}, "Checksum": N} */

#define CHECKPOINT_BYTES_MAX (16u << 20)

static bool copy_str(json_object *o, const char *key, char *buf, size_t size)
{
        json_object *v;
        if (!json_object_object_get_ex(o, key, &v) || json_object_get_type(v) != json_type_string)
                return false;
        const char *s = json_object_get_string(v);
        size_t n = strlen(s);
        if (n == 0 || n >= size)
                return false;
        memcpy(buf, s, n + 1);
        return true;
}

static int assign_ids(json_object *ids, gr_kubelet_assignment *e, gr_kubelet_answer *a,
                      int (*assign)(gr_kubelet_answer *, const gr_kubelet_assignment *))
{
        size_t n = json_object_array_length(ids);
        for (size_t i = 0; i < n; i++) {
                json_object *id = json_object_array_get_idx(ids, i);
                if (!id || json_object_get_type(id) != json_type_string)
                        return -EINVAL;
                const char *s = json_object_get_string(id);
                size_t len = strlen(s);
                if (len >= sizeof(e->id))
                        return -EINVAL;
                memcpy(e->id, s, len + 1);
                int r = assign(a, e);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int checkpoint_entries(json_object *root, gr_kubelet_answer *a,
                              int (*assign)(gr_kubelet_answer *, const gr_kubelet_assignment *))
{
        json_object *data, *entries;
        if (!json_object_object_get_ex(root, "Data", &data) || !json_object_object_get_ex(data, "PodDeviceEntries", &entries))
                return -EINVAL;
        if (json_object_get_type(entries) == json_type_null)
                return 0; /* no pod was given a device */
        if (json_object_get_type(entries) != json_type_array)
                return -EINVAL;
        size_t n = json_object_array_length(entries);
        for (size_t i = 0; i < n; i++) {
                json_object *en = json_object_array_get_idx(entries, i), *ids;
                gr_kubelet_assignment e = { 0 };
                if (!en || json_object_get_type(en) != json_type_object || !copy_str(en, "PodUID", e.pod_uid, sizeof(e.pod_uid)) ||
                    !copy_str(en, "ContainerName", e.container, sizeof(e.container)) ||
                    !copy_str(en, "ResourceName", e.resource, sizeof(e.resource)) ||
                    !json_object_object_get_ex(en, "DeviceIDs", &ids))
                        return -EINVAL;
                int r = 0;
                if (json_object_get_type(ids) == json_type_array) {
                        r = assign_ids(ids, &e, a, assign);
                } else if (json_object_get_type(ids) == json_type_object) {
                        json_object_object_foreach(ids, numa, list) {
                                (void)numa;
                                if (r == 0)
                                        r = list && json_object_get_type(list) == json_type_array ? assign_ids(list, &e, a, assign) : -EINVAL;
                        }
                } else if (json_object_get_type(ids) != json_type_null) {
                        r = -EINVAL;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

int gr_kubelet_module_checkpoint_v1(int fd, gr_kubelet_answer *a,
                                    int (*assign)(gr_kubelet_answer *, const gr_kubelet_assignment *), char *err,
                                    size_t err_size)
{
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                snprintf(err, err_size, "the checkpoint is not a regular file");
                return -EINVAL;
        }
        if (st.st_size > (off_t)CHECKPOINT_BYTES_MAX) {
                snprintf(err, err_size, "the checkpoint is over %u MiB", CHECKPOINT_BYTES_MAX >> 20);
                return -E2BIG;
        }
        size_t cap = (size_t)st.st_size + 1, len = 0;
        char *buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t k = read(fd, buf + len, cap - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        int e = -errno;
                        free(buf);
                        snprintf(err, err_size, "cannot read the checkpoint: %s", strerror(-e));
                        return e;
                }
                if (k == 0 || (len += (size_t)k) == cap)
                        break; /* a file that grew meanwhile: what fits is not the whole, and fails to parse */
        }
        json_tokener *tok = json_tokener_new();
        json_object *root = tok ? json_tokener_parse_ex(tok, buf, (int)len) : NULL;
        bool parsed = tok && json_tokener_get_error(tok) == json_tokener_success && root &&
                      json_object_get_type(root) == json_type_object;
        if (tok)
                json_tokener_free(tok);
        free(buf);
        if (!tok) {
                json_object_put(root);
                return -ENOMEM;
        }
        int r = parsed ? checkpoint_entries(root, a, assign) : -EINVAL;
        json_object_put(root);
        if (r == -E2BIG)
                snprintf(err, err_size, "the checkpoint lists more than %u devices", GR_KUBELET_CHECKPOINT_MAX);
        else if (r == -EINVAL)
                snprintf(err, err_size, "the checkpoint is not the kubelet's device checkpoint (malformed)");
        return r;
}
