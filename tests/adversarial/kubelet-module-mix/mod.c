/* A kubelet module that answers with one device whose pod is WHO (a -D at build time) */
#include <stdint.h>
#include <string.h>
#include "gpureap/kubelet.h"
int gr_kubelet_module_list_v1(const char *socket, uint64_t deadline_ms, gr_kubelet_answer *a,
                              int (*add)(gr_kubelet_answer *, const gr_kubelet_device *))
{
        (void)socket; (void)deadline_ms;
        gr_kubelet_device d;
        memset(&d, 0, sizeof(d));
        strcpy(d.pod, WHO); strcpy(d.ns, "default"); strcpy(d.container, "c");
        strcpy(d.resource, "nvidia.com/gpu"); strcpy(d.id, "GPU-0");
        return add(a, &d);
}
