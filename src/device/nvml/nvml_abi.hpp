#pragma once
// The part of NVML's C ABI that Regime uses, written out so that no NVML header or library is
// needed to build. Values and layouts follow nvml.h (CUDA 12.x / driver 5xx) and were checked
// against NVIDIA's nvidia-ml-py bindings, nvml-wrapper-sys and copies of nvml.h.
// The fake NVML (tests/fake_nvml/) includes this same file, so both sides share one ABI.
#include <cstdint>

extern "C" {

typedef struct nvmlDevice_st* nvmlDevice_t;

typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef enum nvmlTemperatureSensors_enum { NVML_TEMPERATURE_GPU = 0 } nvmlTemperatureSensors_t;

typedef enum nvmlTemperatureThresholds_enum {
  NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
  NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
  NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2,
  NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3,
} nvmlTemperatureThresholds_t;

typedef enum nvmlClockType_enum {
  NVML_CLOCK_GRAPHICS = 0,
  NVML_CLOCK_SM = 1,
  NVML_CLOCK_MEM = 2,
  NVML_CLOCK_VIDEO = 3,
} nvmlClockType_t;

typedef enum nvmlValueType_enum {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
} nvmlValueType_t;

typedef enum nvmlSamplingType_enum {
  NVML_TOTAL_POWER_SAMPLES = 0,
  NVML_GPU_UTILIZATION_SAMPLES = 1,
  NVML_MEMORY_UTILIZATION_SAMPLES = 2,
} nvmlSamplingType_t;

// Time below application clocks, per cause (nvmlDeviceGetViolationStatus); values as in nvml.h.
typedef enum nvmlPerfPolicyType_enum {
  NVML_PERF_POLICY_POWER = 0,
  NVML_PERF_POLICY_THERMAL = 1,
  NVML_PERF_POLICY_SYNC_BOOST = 2,
  NVML_PERF_POLICY_BOARD_LIMIT = 3,
  NVML_PERF_POLICY_LOW_UTILIZATION = 4,
  NVML_PERF_POLICY_RELIABILITY = 5,
  NVML_PERF_POLICY_TOTAL_APP_CLOCKS = 10,
  NVML_PERF_POLICY_TOTAL_BASE_CLOCKS = 11,
} nvmlPerfPolicyType_t;

typedef union nvmlValue_st {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  signed int siVal;
  unsigned short usVal;
} nvmlValue_t;

typedef struct nvmlSample_st {
  unsigned long long timeStamp;  // CPU timestamp, microseconds since the Unix epoch
  nvmlValue_t sampleValue;
} nvmlSample_t;

typedef struct nvmlViolationTime_st {
  unsigned long long referenceTime;  // microseconds
  unsigned long long violationTime;  // nanoseconds
} nvmlViolationTime_t;

typedef struct nvmlUtilization_st {
  unsigned int gpu;     // percent of time a kernel ran
  unsigned int memory;  // percent of time memory was read or written
} nvmlUtilization_t;

typedef struct nvmlFieldValue_st {
  unsigned int fieldId;
  unsigned int scopeId;  // 0: the GPU (for power fields: NVML_POWER_SCOPE_GPU)
  long long timestamp;   // microseconds since the Unix epoch
  long long latencyUsec;
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;

// nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 fills it (nvml.h, CUDA 11 and later).
typedef struct nvmlPciInfo_st {
  char busIdLegacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE: "00000000:19:00.0"
} nvmlPciInfo_t;
static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t layout differs from nvml.h");

// nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v3 (and _v2) fill it (nvml.h, CUDA 11
// and later: nvmlProcessInfo_v2_t). The unversioned function takes a shorter struct: not used.
typedef struct nvmlProcessInfo_st {
  unsigned int pid;  // in the host's PID namespace
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;      // MIG only, else 0xFFFFFFFF
  unsigned int computeInstanceId;  // MIG only, else 0xFFFFFFFF
} nvmlProcessInfo_t;
static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t layout differs from nvml.h");

static_assert(sizeof(nvmlValue_t) == 8, "nvmlValue_t is an 8-byte union in nvml.h");
static_assert(sizeof(nvmlSample_t) == 16, "nvmlSample_t layout differs from nvml.h");
static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t layout differs from nvml.h");

// Function types, named as the library exports them.
typedef nvmlReturn_t (*nvmlInit_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_fn)(char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetCount_fn)(unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_fn)(unsigned int, nvmlDevice_t*);
typedef nvmlReturn_t (*nvmlDeviceGetName_fn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetUUID_fn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetUInt_fn)(nvmlDevice_t, unsigned int*);  // mW getters
typedef nvmlReturn_t (*nvmlDeviceGetPowerManagementLimitConstraints_fn)(nvmlDevice_t, unsigned int*,
                                                                        unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceSetPowerManagementLimit_fn)(nvmlDevice_t, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEnergyConsumption_fn)(nvmlDevice_t, unsigned long long*);
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t, nvmlTemperatureSensors_t,
                                                    unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetTemperatureThreshold_fn)(nvmlDevice_t,
                                                             nvmlTemperatureThresholds_t,
                                                             unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_fn)(nvmlDevice_t, nvmlClockType_t, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t, nvmlUtilization_t*);
typedef nvmlReturn_t (*nvmlDeviceGetReasons_fn)(nvmlDevice_t, unsigned long long*);
typedef nvmlReturn_t (*nvmlDeviceGetFieldValues_fn)(nvmlDevice_t, int, nvmlFieldValue_t*);
typedef nvmlReturn_t (*nvmlDeviceGetSamples_fn)(nvmlDevice_t, nvmlSamplingType_t,
                                                unsigned long long, nvmlValueType_t*, unsigned int*,
                                                nvmlSample_t*);
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_fn)(nvmlDevice_t, nvmlPciInfo_t*);
typedef nvmlReturn_t (*nvmlDeviceGetMinorNumber_fn)(nvmlDevice_t, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetComputeRunningProcesses_fn)(nvmlDevice_t, unsigned int*,
                                                                nvmlProcessInfo_t*);
typedef nvmlReturn_t (*nvmlDeviceGetViolationStatus_fn)(nvmlDevice_t, nvmlPerfPolicyType_t,
                                                        nvmlViolationTime_t*);

}  // extern "C"

namespace regime::nvml {

// Buffer sizes from nvml.h (the _V2 sizes are the larger ones; both are accepted by the library).
inline constexpr unsigned kNameBufferSize = 96;    // NVML_DEVICE_NAME_V2_BUFFER_SIZE
inline constexpr unsigned kUuidBufferSize = 96;    // NVML_DEVICE_UUID_V2_BUFFER_SIZE
inline constexpr unsigned kDriverBufferSize = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

// Field ids (NVML_FI_*). Power fields are in milliwatts; the perf-policy and clocks-event
// counters are cumulative nanoseconds. NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP and
// _SYNC_BOOST are defined in nvml.h as the older perf-policy ids 74 and 76; the three slowdown
// counters are 251-253 (CUDA 12.x headers, what nvidia-smi 5xx asks for).
inline constexpr unsigned kFiPerfPolicyPower = 74;         // NVML_FI_DEV_PERF_POLICY_POWER
inline constexpr unsigned kFiPerfPolicyThermal = 75;       // NVML_FI_DEV_PERF_POLICY_THERMAL
inline constexpr unsigned kFiPerfPolicySyncBoost = 76;     // NVML_FI_DEV_PERF_POLICY_SYNC_BOOST
inline constexpr unsigned kFiTotalEnergyConsumption = 83;  // NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION
inline constexpr unsigned kFiPowerAverage = 185;  // NVML_FI_DEV_POWER_AVERAGE (1 s average)
inline constexpr unsigned kFiPowerInstant = 186;  // NVML_FI_DEV_POWER_INSTANT
inline constexpr unsigned kFiClocksEventReasonSwPowerCap = kFiPerfPolicyPower;
inline constexpr unsigned kFiClocksEventReasonSyncBoost = kFiPerfPolicySyncBoost;
inline constexpr unsigned kFiClocksEventReasonSwThermSlowdown = 251;
inline constexpr unsigned kFiClocksEventReasonHwThermSlowdown = 252;
inline constexpr unsigned kFiClocksEventReasonHwPowerBrakeSlowdown = 253;

}  // namespace regime::nvml
