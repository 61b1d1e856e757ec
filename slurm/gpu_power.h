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

/* Bounds checked before the job is queued; the GPU's own range is checked on the node. */
#define REGIME_GPU_POWER_MAX_W 5000.0
#define REGIME_GPU_POWER_MIN_PERCENT 1.0
#define REGIME_GPU_POWER_MAX_PERCENT 100.0

/* Parses `text` ("default", "auto", "study", "250", "250W", "80%"). Returns 0 on success; else -1
 * with a one-line message in `err` saying what is accepted. */
int regime_gpu_power_parse(const char* text, struct regime_gpu_power* out, char* err,
                           size_t err_len);

/* The canonical text of a parsed value ("default", "250", "80%"), for the node's command line. */
void regime_gpu_power_format(const struct regime_gpu_power* power, char* buf, size_t len);

#endif
