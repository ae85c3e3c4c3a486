/* Two contexts, each naming its own kubelet module; each asks the same socket. Context B
 * should get module B's answer (pod "from-module-B"). */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "gpureap/context.h"
#include "gpureap/kubelet.h"
int main(int argc, char **argv)
{
        const char *sock = argv[3];
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        strcpy(sa.sun_path, sock);
        unlink(sock);
        if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) { perror("bind"); return 2; }
        gr_context *a, *b;
        gr_context_new(&a); gr_context_new(&b);
        gr_context_set_kubelet_module(a, argv[1]);
        gr_context_set_kubelet_module(b, argv[2]);
        int bad = 0;
        gr_context *order[] = { a, b };
        const char *want[] = { "from-module-A", "from-module-B" };
        for (int i = 0; i < 2; i++) {
                gr_kubelet_options o = { .socket = sock, .ctx = order[i] };
                gr_kubelet_answer *ans = NULL;
                gr_kubelet_ask(&o, &ans);
                const char *got = ans && ans->n_devices ? ans->devices[0].pod : "(none)";
                printf("context %c: state %s, pod '%s' (want '%s')\n", 'A' + i, gr_kubelet_state_name(ans->state), got, want[i]);
                bad |= strcmp(got, want[i]) != 0;
                gr_kubelet_answer_free(ans);
        }
        gr_context_free(a); gr_context_free(b);
        close(s); unlink(sock);
        if (bad) printf("BUG: context B ran context A's kubelet module\n");
        return bad;
}
