/* Asks the kubelet once through the library, as a snapshot will: prints the state, the
 * reason, and each assigned device as "pod namespace container resource id" */
#include <stdio.h>
#include <stdlib.h>

#include "gpureap/kubelet.h"

int main(int argc, char **argv)
{
        if (argc < 3) {
                fprintf(stderr, "usage: kubelet-ask SOCKET MODULE [TIMEOUT_MS]\n");
                return 2;
        }
        gr_kubelet_options o = { .socket = argv[1], .module = argv[2],
                                 .timeout_ms = argc > 3 ? strtoull(argv[3], NULL, 10) : 0 };
        gr_kubelet_answer *a;
        if (gr_kubelet_ask(&o, &a) < 0)
                return 1;
        printf("state %s\n", gr_kubelet_state_name(a->state));
        printf("error %s\n", a->error);
        printf("pods %u\n", a->n_pods);
        for (size_t i = 0; i < a->n_devices; i++) {
                const gr_kubelet_device *d = &a->devices[i];
                char uuid[GR_K8S_ID_MAX];
                printf("device %s %s %s %s %s %s\n", d->pod, d->ns, d->container, d->resource, d->id,
                       gr_kubelet_device_gpu_uuid(d->id, uuid, sizeof(uuid)) ? uuid : "-");
        }
        gr_kubelet_answer_free(a);
        return 0;
}
