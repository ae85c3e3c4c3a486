/* The library's settings as an object (issue 20): where /proc, /dev and /sys are, which NVML
 * library and helper program to run, which kubelet module to load, how the scan finds holders,
 * and what a resident caller keeps between looks (the BPF program). Every call takes one
 * through its options (.ctx); NULL there is the process's own context, gr_context_default(),
 * which the gpureap command sets from its environment (the library reads none). Two contexts in
 * one process (an exporter that watches a recorded tree beside the live machine) do not see each
 * other's settings or kept program.
 *
 * A setting is the caller's string, not copied: it must stay valid while the context is used.
 * NULL (or "") gives the setting back its default. Setting and reading are safe from any thread;
 * set before the threads that use the context start, or a call may see either value. */
#ifndef GPUREAP_CONTEXT_H
#define GPUREAP_CONTEXT_H

#pragma GCC visibility push(default)

typedef struct gr_context gr_context;

/* How the scan finds the holders */
typedef enum gr_scan_mode {
        GR_SCAN_MODE_AUTO,       /* the BPF iterator where it can run and pays (the default) */
        GR_SCAN_MODE_PROC,       /* every /proc/PID/fd read */
        GR_SCAN_MODE_BPF,        /* the iterator whenever it loads: no privilege or cost check */
} gr_scan_mode;

/* A new context with every default. 0 or -ENOMEM */
int gr_context_new(gr_context **ret);
/* Frees it and its kept BPF program; NULL and the default context are left alone */
void gr_context_free(gr_context *c);
/* The process's own: what NULL means wherever a context is taken */
gr_context *gr_context_default(void);

/* c NULL: the default context, in every setter and reader below */
void gr_context_set_proc_root(gr_context *c, const char *proc_root);   /* "/proc" */
void gr_context_set_dev_dir(gr_context *c, const char *dev_dir);       /* "/dev" */
void gr_context_set_sys_root(gr_context *c, const char *sys_root);     /* "/sys" */
/* The NVML library of every query and drain watcher whose options name none (NULL: the
 * loader's libnvidia-ml.so.1). origin names it in a refusal ("refusing GPUREAP_NVML_LIBRARY
 * '/tmp/x.so' as root: ..."); NULL: "the NVML library". A library named here must pass
 * gr_open_trusted() for this euid, or nothing is loaded */
void gr_context_set_nvml_library(gr_context *c, const char *path, const char *origin);
/* The helper program that runs NVML (gpu.h): NULL, the installed gpureap-nvml-helper; the
 * gpureap command names itself ("/proc/self/exe") */
void gr_context_set_helper(gr_context *c, const char *path);
/* The kubelet's gRPC module (kubelet.h): NULL, the installed one */
void gr_context_set_kubelet_module(gr_context *c, const char *path);
/* why: with GR_SCAN_MODE_PROC, the reason the table's scan_fallback gives (NULL: none, the /proc
 * scan by choice) */
void gr_context_set_scan_mode(gr_context *c, gr_scan_mode mode, const char *why);

/* The settings as the calls use them: never NULL */
const char *gr_context_proc_root(const gr_context *c);
const char *gr_context_dev_dir(const gr_context *c);
const char *gr_context_sys_root(const gr_context *c);

#pragma GCC visibility pop

#endif
