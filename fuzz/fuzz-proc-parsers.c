/* Fuzz target for the /proc parsers (libFuzzer: clang -fsanitize=fuzzer). The first byte picks
 * the parser; the rest is the file's content. The committed corpus is replayed by the tests. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpureap/proc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        const char *buf = (const char *)data + 1;
        size_t len = size - 1;
        char out[256];
        switch (data[0] % 7) {
        case 0: {
                gr_stat st;
                gr_parse_stat(buf, len, &st);
                break;
        }
        case 1: {
                gr_status st;
                gr_parse_status(buf, len, &st);
                break;
        }
        case 2:
                gr_parse_cgroup(buf, len, out, sizeof(out));
                break;
        case 3:
                gr_render_cmdline(buf, len, out, sizeof(out));
                break;
        case 4: {
                /* device paths are NUL-terminated strings; maps lines are not */
                char path[512];
                size_t n = len < sizeof(path) - 1 ? len : sizeof(path) - 1;
                memcpy(path, buf, n);
                path[n] = '\0';
                unsigned minor;
                gr_classify_device_path("/dev", 4, path, &minor);
                gr_maps_line_is_nvidia(buf, len, "/dev", 4);
                break;
        }
        case 5: {
                unsigned port;
                uint64_t inode;
                gr_parse_tcp_listen(buf, len, &port, &inode);
                break;
        }
        case 6: {
                char path[512];
                size_t n = len < sizeof(path) - 1 ? len : sizeof(path) - 1;
                memcpy(path, buf, n);
                path[n] = '\0';
                gr_cgroup_container_id(path, out, sizeof(out));
                gr_cgroup_slurm_job(path, out, sizeof(out));
                break;
        }
        }
        return 0;
}
