/* The library's settings as an object (include/gpureap/context.h). Each setting is a pointer
 * to the caller's string, stored and read atomically, so that a setter racing a call gives the
 * call one value or the other, never a torn one. */
#include <errno.h>
#include <stdlib.h>

#include "gpureap/context.h"
#include "context.h"

struct gr_context {
        const char *proc_root, *dev_dir, *sys_root;
        const char *library, *library_origin, *helper, *kubelet_module;
        const char *scan_why;
        int scan_mode; /* gr_scan_mode */
        struct gr_kept kept;
};

static gr_context default_context = { .kept = { .lock = PTHREAD_MUTEX_INITIALIZER } };

gr_context *gr_context_default(void)
{
        return &default_context;
}

static gr_context *ctx(gr_context *c)
{
        return c ? c : &default_context;
}

static const gr_context *cctx(const gr_context *c)
{
        return c ? c : &default_context;
}

int gr_context_new(gr_context **ret)
{
        gr_context *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        pthread_mutex_init(&c->kept.lock, NULL);
        *ret = c;
        return 0;
}

void gr_context_free(gr_context *c)
{
        if (!c || c == &default_context)
                return;
        if (c->kept.bpf && c->kept.close)
                c->kept.close(c->kept.bpf);
        pthread_mutex_destroy(&c->kept.lock);
        free(c);
}

static void store(const char **field, const char *value)
{
        __atomic_store_n(field, value && *value ? value : NULL, __ATOMIC_RELEASE);
}

static const char *load(const char *const *field)
{
        return __atomic_load_n(field, __ATOMIC_ACQUIRE);
}

void gr_context_set_proc_root(gr_context *c, const char *proc_root)
{
        store(&ctx(c)->proc_root, proc_root);
}

void gr_context_set_dev_dir(gr_context *c, const char *dev_dir)
{
        store(&ctx(c)->dev_dir, dev_dir);
}

void gr_context_set_sys_root(gr_context *c, const char *sys_root)
{
        store(&ctx(c)->sys_root, sys_root);
}

void gr_context_set_nvml_library(gr_context *c, const char *path, const char *origin)
{
        store(&ctx(c)->library_origin, origin);
        store(&ctx(c)->library, path);
}

void gr_context_set_helper(gr_context *c, const char *path)
{
        store(&ctx(c)->helper, path);
}

void gr_context_set_kubelet_module(gr_context *c, const char *path)
{
        store(&ctx(c)->kubelet_module, path);
}

void gr_context_set_scan_mode(gr_context *c, gr_scan_mode mode, const char *why)
{
        store(&ctx(c)->scan_why, mode == GR_SCAN_MODE_PROC ? why : NULL);
        __atomic_store_n(&ctx(c)->scan_mode, (int)mode, __ATOMIC_RELEASE);
}

const char *gr_context_proc_root(const gr_context *c)
{
        const char *r = load(&cctx(c)->proc_root);
        return r ? r : "/proc";
}

const char *gr_context_dev_dir(const gr_context *c)
{
        const char *r = load(&cctx(c)->dev_dir);
        return r ? r : "/dev";
}

const char *gr_context_sys_root(const gr_context *c)
{
        const char *r = load(&cctx(c)->sys_root);
        return r ? r : "/sys";
}

const char *gr_ctx_nvml_library(const gr_context *c, const char **ret_origin)
{
        *ret_origin = load(&cctx(c)->library_origin);
        return load(&cctx(c)->library);
}

const char *gr_ctx_helper(const gr_context *c)
{
        return load(&cctx(c)->helper);
}

const char *gr_ctx_kubelet_module(const gr_context *c)
{
        return load(&cctx(c)->kubelet_module);
}

gr_scan_mode gr_ctx_scan_mode(const gr_context *c, const char **ret_why)
{
        int m = __atomic_load_n(&cctx(c)->scan_mode, __ATOMIC_ACQUIRE);
        *ret_why = load(&cctx(c)->scan_why);
        return (gr_scan_mode)m;
}

struct gr_kept *gr_ctx_kept(gr_context *c)
{
        return &ctx(c)->kept;
}
