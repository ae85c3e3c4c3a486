/* Fuzz target for the DRM fdinfo and KFD sysfs parsers (libFuzzer: clang -fsanitize=fuzzer). The
 * first byte picks the parser; the rest is the file's content. The committed corpus
 * (fuzz/corpus-drm) is replayed by the tests. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpureap/basic.h"
#include "gpureap/drm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        const char *buf = (const char *)data + 1;
        size_t len = size - 1;
        switch (data[0] % 4) {
        case 0: {
                gr_drm_fdinfo f;
                if (gr_drm_fdinfo_parse(buf, len, &f) == 0) {
                        uint64_t shared;
                        gr_drm_fdinfo_device_bytes(&f, &shared);
                        /* what is kept is bounded and shown as text */
                        if (f.n_regions > GR_DRM_REGIONS_MAX || !gr_text_is_clean(f.driver) ||
                            strnlen(f.pdev, sizeof(f.pdev)) == sizeof(f.pdev))
                                __builtin_trap();
                        for (unsigned i = 0; i < f.n_regions; i++)
                                if (strnlen(f.regions[i].name, GR_DRM_NAME_MAX) == GR_DRM_NAME_MAX ||
                                    !gr_text_is_clean(f.regions[i].name))
                                        __builtin_trap();
                }
                break;
        }
        case 1: {
                uint64_t v;
                gr_drm_parse_size(buf, len, &v);
                gr_kfd_parse_number(buf, len, &v);
                break;
        }
        case 2: {
                gr_kfd_node n;
                char pci[32];
                if (gr_kfd_parse_properties(buf, len, &n) == 0)
                        gr_kfd_node_pci(&n, pci, sizeof(pci));
                break;
        }
        case 3: {
                char name[256];
                size_t n = len < sizeof(name) - 1 ? len : sizeof(name) - 1;
                memcpy(name, buf, n);
                name[n] = '\0';
                uint32_t id;
                gr_kfd_vram_entry(name, &id);
                break;
        }
        }
        return 0;
}
