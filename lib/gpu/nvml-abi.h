/* The part of the NVML ABI that gpureap uses, declared here so the build needs no NVIDIA
 * headers. Layouts as documented by NVML and as observed on driver 580 (H200, 2026). */
#ifndef GPUREAP_NVML_ABI_H
#define GPUREAP_NVML_ABI_H

#include <stdint.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

enum {
        NVML_SUCCESS = 0,
        NVML_ERROR_UNINITIALIZED = 1,
        NVML_ERROR_INVALID_ARGUMENT = 2,
        NVML_ERROR_NOT_SUPPORTED = 3,
        NVML_ERROR_NO_PERMISSION = 4,
        NVML_ERROR_NOT_FOUND = 6,
        NVML_ERROR_INSUFFICIENT_SIZE = 7,
        NVML_ERROR_DRIVER_NOT_LOADED = 9,
        NVML_ERROR_TIMEOUT = 10,
        NVML_ERROR_FUNCTION_NOT_FOUND = 13,
        NVML_ERROR_GPU_IS_LOST = 15,
        NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
        NVML_ERROR_UNKNOWN = 999,
};

#define NVML_VALUE_NOT_AVAILABLE_ULL 0xFFFFFFFFFFFFFFFFULL
#define NVML_DEVICE_NAME_BUFFER 96
#define NVML_DEVICE_UUID_BUFFER 96
#define NVML_SYSTEM_VERSION_BUFFER 80

typedef struct {
        unsigned long long total;
        unsigned long long free;
        unsigned long long used; /* includes what the driver reserves */
} nvmlMemory_v1_t;

typedef struct {
        unsigned int version; /* sizeof(nvmlMemory_v2_t) | 2 << 24 */
        unsigned long long total;
        unsigned long long reserved;
        unsigned long long free;
        unsigned long long used;
} nvmlMemory_v2_t;

#define NVML_MEMORY_V2_VERSION ((unsigned int)(sizeof(nvmlMemory_v2_t) | 2u << 24))

typedef struct {
        char busIdLegacy[16];
        unsigned int domain;
        unsigned int bus;
        unsigned int device;
        unsigned int pciDeviceId;
        unsigned int pciSubSystemId;
        char busId[32];
} nvmlPciInfo_t;

/* Process list entries. v1 calls write 16 bytes (pid, used); _v2 calls 24 (plus GPU and compute
 * instance ids); newer headers give _v3 entries 32 bytes (plus confidential-computing memory),
 * but driver 580 wrote 24-byte entries from _v3, so the stride is checked at run time. */
typedef struct {
        unsigned int pid;
        unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
        unsigned int pid;
        unsigned long long usedGpuMemory;
        unsigned int gpuInstanceId;
        unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;

typedef struct {
        unsigned int pid;
        unsigned long long usedGpuMemory;
        unsigned int gpuInstanceId;
        unsigned int computeInstanceId;
        unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessInfo_v3_t;

_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t is 40 bytes");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t is 68 bytes");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "v1 process entries are 16 bytes");
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "v2 process entries are 24 bytes");
_Static_assert(sizeof(nvmlProcessInfo_v3_t) == 32, "v3 process entries are 32 bytes");

#endif
