/* Unit tests of the DRM fdinfo and KFD sysfs parsers, on text in the documented formats
 * (drm-usage-stats.rst and the amdgpu, i915 and xe examples; KFD's proc and topology files). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "gpureap/basic.h"
#include "gpureap/drm.h"

/* the region of that name, or one named "" whose numbers are all 0 (which no test expects) */
static const gr_drm_region *find(const gr_drm_fdinfo *f, const char *name)
{
        static const gr_drm_region none;
        for (unsigned i = 0; i < f->n_regions; i++)
                if (strcmp(f->regions[i].name, name) == 0)
                        return &f->regions[i];
        return &none;
}

static uint64_t size_of(const char *s)
{
        uint64_t v = 12345;
        int r = gr_drm_parse_size(s, strlen(s), &v);
        return r < 0 ? GR_UNKNOWN_U64 - 1 : v;
}

static void size_every_unit_form(void **state)
{
        assert_int_equal(size_of("0"), 0);
        assert_int_equal(size_of("4096"), 4096);
        assert_int_equal(size_of(" 4096\n"), 4096);
        assert_int_equal(size_of("192 KiB"), 192 * 1024);
        assert_int_equal(size_of("16 MiB"), 16ull << 20);
        assert_int_equal(size_of("16\tMiB"), 16ull << 20);
        assert_int_equal(size_of("18446744073709551615"), UINT64_MAX);
}

static void size_rejects_other_forms(void **state)
{
        const char *bad[] = { "", " ", "KiB", "-1", "1.5 MiB", "12 GiB", "12 kib", "12 ns", "12KiBx",
                              "18446744073709551616", "18014398509481984 MiB", "0x10" };
        for (size_t i = 0; i < GR_ELEMENTSOF(bad); i++) {
                uint64_t v = 7;
                assert_true(gr_drm_parse_size(bad[i], strlen(bad[i]), &v) < 0);
                assert_int_equal(v, 7); /* untouched on failure */
        }
}

/* amdgpu on 6.10+: drm-total-* beside the deprecated drm-memory-* and its amd-* keys */
static void fdinfo_amdgpu(void **state)
{
        const char *s =
                "pos:\t0\nflags:\t02100002\nmnt_id:\t25\nino:\t1155\n"
                "drm-driver:\tamdgpu\ndrm-client-id:\t412\ndrm-pdev:\t0000:C1:00.0\n"
                "pasid:\t32771\n"
                "drm-memory-vram:\t4194304 KiB\ndrm-memory-gtt: \t2048 KiB\ndrm-memory-cpu: \t0 KiB\n"
                "drm-total-vram:\t4294967296\ndrm-shared-vram:\t2097152\ndrm-resident-vram:\t4294967296\n"
                "drm-total-gtt:\t2 MiB\ndrm-total-cpu:\t0\n"
                "amd-memory-visible-vram:\t1024 KiB\namd-evicted-vram:\t0 KiB\namd-requested-vram:\t4194304 KiB\n"
                "drm-engine-gfx:\t1234567 ns\ndrm-engine-compute:\t99 ns\n";
        gr_drm_fdinfo f;
        assert_int_equal(gr_drm_fdinfo_parse(s, strlen(s), &f), 0);
        assert_string_equal(f.driver, "amdgpu");
        assert_true(f.has_client_id);
        assert_int_equal(f.client_id, 412);
        assert_string_equal(f.pdev, "0000:c1:00.0");
        const gr_drm_region *v = find(&f, "vram");
        assert_string_equal(v->name, "vram");
        assert_int_equal(v->total, 4ull << 30);
        assert_int_equal(v->memory, 4ull << 30);
        assert_int_equal(v->shared, 2ull << 20);
        assert_int_equal(v->purgeable, GR_UNKNOWN_U64);
        assert_int_equal(find(&f, "gtt")->memory, 2ull << 20);
        assert_int_equal(find(&f, "gtt")->total, 2ull << 20);
        assert_int_equal(f.n_bad, 0);
        uint64_t shared;
        assert_int_equal(gr_drm_fdinfo_device_bytes(&f, &shared), 4ull << 30);
        assert_int_equal(shared, 2ull << 20);
}

/* amdgpu before 6.10: only the deprecated drm-memory-<region>, in KiB */
static void fdinfo_amdgpu_deprecated_only(void **state)
{
        const char *s = "drm-driver:\tamdgpu\ndrm-client-id:\t7\ndrm-pdev:\t0000:03:00.0\n"
                        "drm-memory-vram:\t262144 KiB\ndrm-memory-gtt: \t1024 KiB\n";
        gr_drm_fdinfo f;
        assert_int_equal(gr_drm_fdinfo_parse(s, strlen(s), &f), 0);
        assert_int_equal(find(&f, "vram")->total, GR_UNKNOWN_U64);
        uint64_t shared;
        assert_int_equal(gr_drm_fdinfo_device_bytes(&f, &shared), 256ull << 20);
        assert_int_equal(shared, 0);
}

/* i915 (the man page's example) with local memory of a discrete card */
static void fdinfo_i915(void **state)
{
        const char *s =
                "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t284\n"
                "drm-driver:\ti915\ndrm-client-id:\t39\ndrm-pdev:\t0000:00:02.0\n"
                "drm-total-system0:\t6044 KiB\ndrm-shared-system0:\t0\ndrm-active-system0:\t0\n"
                "drm-resident-system0:\t6044 KiB\ndrm-purgeable-system0:\t1688 KiB\n"
                "drm-total-stolen-system0:\t0\ndrm-shared-stolen-system0:\t0\n"
                "drm-total-local0:\t512 MiB\ndrm-shared-local0:\t0\n"
                "drm-engine-render:\t346249 ns\ndrm-engine-copy:\t0 ns\ndrm-engine-capacity-video:\t2\n";
        gr_drm_fdinfo f;
        assert_int_equal(gr_drm_fdinfo_parse(s, strlen(s), &f), 0);
        assert_string_equal(f.driver, "i915");
        assert_int_equal(f.client_id, 39);
        assert_int_equal(find(&f, "system0")->purgeable, 1688 * 1024);
        assert_string_equal(find(&f, "stolen-system0")->name, "stolen-system0");
        assert_string_equal(find(&f, "engine-render")->name, "");
        assert_int_equal(gr_drm_fdinfo_device_bytes(&f, NULL), 512ull << 20);
        assert_int_equal(f.n_bad, 0);
}

/* xe: drm-total-cycles-<engine> is no region, whatever its prefix says */
static void fdinfo_xe_cycles_are_not_regions(void **state)
{
        const char *s =
                "pos:\t0\nflags:\t0100002\nmnt_id:\t26\nino:\t685\n"
                "drm-driver:\txe\ndrm-client-id:\t3\ndrm-pdev:\t0000:03:00.0\n"
                "drm-total-system:\t0\ndrm-shared-system:\t0\ndrm-active-system:\t0\n"
                "drm-resident-system:\t0\ndrm-purgeable-system:\t0\n"
                "drm-total-gtt:\t192 KiB\ndrm-resident-gtt:\t192 KiB\n"
                "drm-total-vram0:\t23992 KiB\ndrm-shared-vram0:\t16 MiB\ndrm-resident-vram0:\t23992 KiB\n"
                "drm-total-vram1:\t1 MiB\n"
                "drm-total-stolen:\t0\n"
                "drm-cycles-rcs:\t28257900\ndrm-total-cycles-rcs:\t7655183225\n"
                "drm-cycles-ccs:\t0\ndrm-total-cycles-ccs:\t7655183225\ndrm-engine-capacity-ccs:\t4\n";
        gr_drm_fdinfo f;
        assert_int_equal(gr_drm_fdinfo_parse(s, strlen(s), &f), 0);
        assert_string_equal(f.driver, "xe");
        assert_int_equal(f.n_regions, 5); /* system, gtt, vram0, vram1, stolen */
        for (unsigned i = 0; i < f.n_regions; i++)
                assert_true(strncmp(f.regions[i].name, "cycles", 6) != 0);
        assert_int_equal(find(&f, "vram0")->shared, 16ull << 20);
        uint64_t shared;
        assert_int_equal(gr_drm_fdinfo_device_bytes(&f, &shared), 23992ull * 1024 + (1ull << 20));
        assert_int_equal(shared, 16ull << 20);
}

static void fdinfo_not_drm(void **state)
{
        const char *s = "pos:\t0\nflags:\t02\nmnt_id:\t25\nino:\t3\n";
        gr_drm_fdinfo f;
        f.client_id = 99;
        assert_int_equal(gr_drm_fdinfo_parse(s, strlen(s), &f), -ENOMSG);
        assert_int_equal(f.client_id, 99);
        assert_int_equal(gr_drm_fdinfo_parse("", 0, &f), -ENOMSG);
}

static void fdinfo_bad_values_counted(void **state)
{
        const char *s = "drm-driver: amdgpu\ndrm-client-id: twelve\ndrm-pdev: 3:0.0\n"
                        "drm-total-vram: 12 GiB\ndrm-total-gtt: 4 KiB\ndrm total-x: 1\n"
                        "drm-total-: 5\n";
        gr_drm_fdinfo f;
        assert_int_equal(gr_drm_fdinfo_parse(s, strlen(s), &f), 0);
        assert_false(f.has_client_id);
        assert_string_equal(f.pdev, "");
        assert_int_equal(f.n_bad, 4); /* client id, pdev, the GiB value, the empty region */
        assert_int_equal(f.n_regions, 1);
        assert_int_equal(gr_drm_fdinfo_device_bytes(&f, NULL), GR_UNKNOWN_U64);
}

static void fdinfo_many_regions_bounded(void **state)
{
        char s[4096];
        size_t n = (size_t)snprintf(s, sizeof(s), "drm-driver: xe\n");
        for (int i = 0; i < 40; i++)
                n += (size_t)snprintf(s + n, sizeof(s) - n, "drm-total-vram%d: 1 KiB\n", i);
        gr_drm_fdinfo f;
        assert_int_equal(gr_drm_fdinfo_parse(s, n, &f), 0);
        assert_int_equal(f.n_regions, GR_DRM_REGIONS_MAX);
        assert_true(f.regions_truncated);
        assert_int_equal(gr_drm_fdinfo_device_bytes(&f, NULL), GR_DRM_REGIONS_MAX * 1024);
}

static void kfd_numbers(void **state)
{
        uint64_t v = 1;
        assert_int_equal(gr_kfd_parse_number("4294967296\n", 11, &v), 0);
        assert_int_equal(v, 4ull << 30);
        assert_true(gr_kfd_parse_number("\n", 1, &v) < 0);
        assert_true(gr_kfd_parse_number("12 KiB\n", 7, &v) < 0);
        uint32_t id = 0;
        assert_true(gr_kfd_vram_entry("vram_53114", &id));
        assert_int_equal(id, 53114);
        assert_false(gr_kfd_vram_entry("sdma_53114", &id));
        assert_false(gr_kfd_vram_entry("vram_", &id));
        assert_false(gr_kfd_vram_entry("vram_0", &id));
        assert_false(gr_kfd_vram_entry("vram_99999999999", &id));
}

static void kfd_topology_gpu_and_cpu(void **state)
{
        const char *gpu = "cpu_cores_count 0\nsimd_count 304\nmem_banks_count 1\n"
                          "vendor_id 4098\ndevice_id 29856\nlocation_id 49408\ndomain 0\n"
                          "drm_render_minor 128\nunique_id 8812453177829537432\n";
        gr_kfd_node n;
        assert_int_equal(gr_kfd_parse_properties(gpu, strlen(gpu), &n), 0);
        assert_true(n.is_gpu);
        assert_int_equal(n.drm_render_minor, 128);
        assert_int_equal(n.vendor_id, 0x1002);
        char pci[32];
        assert_true(gr_kfd_node_pci(&n, pci, sizeof(pci)));
        assert_string_equal(pci, "0000:c1:00.0");
        const char *cpu = "cpu_cores_count 64\nsimd_count 0\ndrm_render_minor 0\n";
        assert_int_equal(gr_kfd_parse_properties(cpu, strlen(cpu), &n), 0);
        assert_false(n.is_gpu);
        assert_int_equal(n.drm_render_minor, -1);
        assert_false(gr_kfd_node_pci(&n, pci, sizeof(pci)));
        assert_int_equal(gr_kfd_parse_properties("garbage", 7, &n), -EINVAL);
}

static void sys_root_default_and_set(void **state)
{
        assert_string_equal(gr_context_sys_root(NULL), "/sys");
        gr_context_set_sys_root(NULL, "/tmp/fixture-sys");
        assert_string_equal(gr_context_sys_root(NULL), "/tmp/fixture-sys");
        gr_context_set_sys_root(NULL, "");
        assert_string_equal(gr_context_sys_root(NULL), "/sys");
        gr_context_set_sys_root(NULL, NULL);
        assert_string_equal(gr_context_sys_root(NULL), "/sys");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(size_every_unit_form),
                cmocka_unit_test(size_rejects_other_forms),
                cmocka_unit_test(fdinfo_amdgpu),
                cmocka_unit_test(fdinfo_amdgpu_deprecated_only),
                cmocka_unit_test(fdinfo_i915),
                cmocka_unit_test(fdinfo_xe_cycles_are_not_regions),
                cmocka_unit_test(fdinfo_not_drm),
                cmocka_unit_test(fdinfo_bad_values_counted),
                cmocka_unit_test(fdinfo_many_regions_bounded),
                cmocka_unit_test(kfd_numbers),
                cmocka_unit_test(kfd_topology_gpu_and_cpu),
                cmocka_unit_test(sys_root_default_and_set),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
