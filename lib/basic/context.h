/* The context's inside, for lib/ only (include/gpureap/context.h is the interface) */
#ifndef GPUREAP_LIB_CONTEXT_H
#define GPUREAP_LIB_CONTEXT_H

#include <pthread.h>
#include <stdbool.h>

#include "gpureap/context.h"

/* What a resident caller keeps between looks: the BPF program (lib/proc/proc-scan.c), one scan
 * at a time under lock */
struct gr_kept {
        pthread_mutex_t lock;
        void *bpf;
        void (*close)(void *bpf);
};

const char *gr_ctx_nvml_library(const gr_context *c, const char **ret_origin);
const char *gr_ctx_helper(const gr_context *c);
const char *gr_ctx_kubelet_module(const gr_context *c);
gr_scan_mode gr_ctx_scan_mode(const gr_context *c, const char **ret_why);
struct gr_kept *gr_ctx_kept(gr_context *c);

#endif
