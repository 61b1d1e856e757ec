/* The value of --gpu-power, parsed without Slurm so that it can be tested on its own. */
#ifndef REGIME_SLURM_GPU_POWER_H
#define REGIME_SLURM_GPU_POWER_H

#include <stddef.h>

enum regime_gpu_power_kind {
  REGIME_GPU_POWER_DEFAULT, /* leave the limit alone; measure the job's energy */
  REGIME_GPU_POWER_AUTO,    /* the stored decision for this GPU model and workload, else default */
  REGIME_GPU_POWER_STUDY,   /* probe the job and decide during its first minutes */
  REGIME_GPU_POWER_WATTS,   /* a fixed cap in watts */
  REGIME_GPU_POWER_PERCENT  /* a fixed cap as a share of the GPU's default limit */
};

struct regime_gpu_power {
  enum regime_gpu_power_kind kind;
  double value; /* watts or percent; 0 for the named policies */
};

/* The caps in watts a job may ask for. The plugin cannot see the GPUs (srun runs on a login node),
 * so this is the site's range from plugstack.conf (min_watts=, max_watts=), else the widest range
 * of any GPU; each GPU's own range is checked on the node, where a cap outside it leaves the limit
 * as it is and the job runs. */
struct regime_gpu_power_range {
  double min_W;
  double max_W;
  int configured; /* 1: from plugstack.conf; 0: the defaults below */
};

#define REGIME_GPU_POWER_MIN_W 1.0
#define REGIME_GPU_POWER_MAX_W 5000.0
#define REGIME_GPU_POWER_MIN_PERCENT 1.0
#define REGIME_GPU_POWER_MAX_PERCENT 100.0
/* NVML sets limits in milliwatts: a finer value could not be applied as written. */
#define REGIME_GPU_POWER_MAX_DECIMALS 3

/* The defaults: [REGIME_GPU_POWER_MIN_W, REGIME_GPU_POWER_MAX_W], not configured. */
struct regime_gpu_power_range regime_gpu_power_default_range(void);

/* Parses a plugstack.conf bound ("min_watts=100" gives 100): a plain decimal number of watts
 * within the default range. Returns 0 on success; else -1 with a one-line message in `err`. */
int regime_gpu_power_parse_bound(const char* name, const char* text, double* out_W, char* err,
                                 size_t err_len);

/* Parses `text` ("default", "auto", "study", "250", "250W", "80%") against `range` (NULL: the
 * default range). Returns 0 on success; else -1 with a one-line message in `err` saying what is
 * accepted, and for a cap out of range, the range and where it comes from. */
int regime_gpu_power_parse(const char* text, const struct regime_gpu_power_range* range,
                           struct regime_gpu_power* out, char* err, size_t err_len);

/* The canonical text of a parsed value ("default", "250", "262.125", "80%") for the node's command
 * line: plain decimal, no exponent, every digit the user gave (at most 3 decimals). */
void regime_gpu_power_format(const struct regime_gpu_power* power, char* buf, size_t len);

#endif
