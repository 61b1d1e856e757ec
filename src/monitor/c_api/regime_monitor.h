/* The C API of Regime's in-process monitor (libregime_monitor.so), what the Python package
 * loads with ctypes (docs/python.md). Every function is safe to call from any thread; none
 * throws. Functions that can fail return a negative status and write a one-line reason into
 * `error` (error_size bytes, NUL-terminated, may be NULL). Times are Unix seconds. */
#ifndef REGIME_MONITOR_H
#define REGIME_MONITOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct regime_monitor regime_monitor;

/* Status codes: 0 ok, and these. */
#define REGIME_MONITOR_ERROR (-1)     /* the reason is in `error` */
#define REGIME_MONITOR_NOT_READY (-2) /* window figures not ready within the timeout */
#define REGIME_MONITOR_TOO_SMALL (-3) /* the output buffer is too small: size in *needed */

/* The library's version ("0.1.0"), equal to regime's. */
const char* regime_monitor_version(void);

/* Opens `device` and starts sampling every sample_period_s (<= 0: the default,
 * 0.5 s; power itself comes from the driver's 20 ms buffer). NULL on failure. `device`: what
 * `regime probe --device` takes for one GPU ("nvml:0", "nvml:GPU-UUID"), "cuda:N" (the GPU CUDA
 * calls N in this process: CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER mapped as `--device
 * nvml:job` maps them) or "sim:MODEL" (a simulated GPU on the wall clock running a built-in
 * training workload). */
regime_monitor* regime_monitor_open(const char* device, double sample_period_s, char* error,
                                    size_t error_size);
/* The GPUs CUDA would give this process, in CUDA's order, as a JSON list of NVML URIs
 * (["nvml:1"] under CUDA_VISIBLE_DEVICES=1): what "cuda:N" opens. */
int regime_monitor_cuda_devices_json(char* out, size_t out_size, size_t* needed, char* error,
                                     size_t error_size);
/* Stops sampling and frees the monitor (NULL is fine). */
void regime_monitor_close(regime_monitor* monitor);

/* The GPU as JSON ({"device", "name", "uuid", "index", ...}) into out. */
int regime_monitor_gpu_json(regime_monitor* monitor, char* out, size_t out_size, size_t* needed,
                            char* error, size_t error_size);

/* The monitor's clock now (what windows are stamped with). */
double regime_monitor_now(regime_monitor* monitor);

int regime_monitor_begin_window(regime_monitor* monitor, const char* name, char* error,
                                size_t error_size);
/* Ends the window; its id (>= 0) into *id. */
int regime_monitor_end_window(regime_monitor* monitor, const char* name, int64_t* id, char* error,
                              size_t error_size);
/* Drops an open window unmeasured. */
int regime_monitor_cancel_window(regime_monitor* monitor, const char* name, char* error,
                                 size_t error_size);
/* The window's figures as a JSON object into out, waiting up to timeout_s for them; handed over
 * once (a second call for the same id is an error). Keys: name, t_start_s, t_end_s, time_s,
 * steps, energy_J, energy_ci_J [lo, hi], avg_power_W, energy_source, energy_detail,
 * energy_per_step_J, energy_per_step_ci_J, time_per_step_s, time_per_step_ci_s (null without
 * steps), samples, power_points. On REGIME_MONITOR_TOO_SMALL the figures are kept: call again
 * with *needed bytes. */
int regime_monitor_window_json(regime_monitor* monitor, int64_t id, double timeout_s, char* out,
                               size_t out_size, size_t* needed, char* error, size_t error_size);
/* A completed step (t_end_s >= t_start_s). */
int regime_monitor_mark_step(regime_monitor* monitor, double t_start_s, double t_end_s, char* error,
                             size_t error_size);

#ifdef __cplusplus
}
#endif

#endif
