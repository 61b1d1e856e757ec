/* dcgm-exporter's HPC job mapping files (its --hpc-job-mapping-dir): in one directory per node, a
 * file per GPU named by the GPU's index as NVML (and DCGM) numbers it, each line a job id running
 * on that GPU; dcgm-exporter labels that GPU's series hpc_job=<id>, one series per job. It only
 * reads them: whoever writes a job in removes it when the job ends.
 *
 * The plugin runs these as root in slurmd's prolog and epilog, in a directory others may see: no
 * path component of a file is followed as a link, a file is replaced whole (written beside it,
 * then renamed over it) so dcgm-exporter never reads half of one, and prologs and epilogs of jobs
 * ending and starting at once on a node take turns on the directory (flock). */
#ifndef REGIME_DCGM_JOB_MAP_H
#define REGIME_DCGM_JOB_MAP_H

#include <stddef.h>

#define REGIME_JOB_MAP_MAX_GPUS 64

/* The NVML index of each GPU in `gpus` (Slurm's SLURM_JOB_GPUS: device minor numbers, "0,1"),
 * looked up in `devices`, the JSON of `regime limit show --device nvml:all --json` (objects with
 * "index" and "minor_number"). Returns how many were found (written to `indexes`), or -1 with
 * `err` set when a GPU of `gpus` is not there. */
int regime_job_map_indexes(const char* devices, const char* gpus, int* indexes, int max, char* err,
                           size_t err_len);

/* `dir` with each "%n" replaced by `node` (one directory per node where nodes share a file
 * system); -1 when it does not fit. */
int regime_job_map_dir(const char* dir, const char* node, char* out, size_t len);

/* Adds `job` to the file of each of the `n` GPU indexes in `dir` (created 0644 when missing; a job
 * already listed is not listed twice). 0, or -1 with `err` set. */
int regime_job_map_add(const char* dir, const char* job, const int* indexes, int n, char* err,
                       size_t err_len);

/* Removes `job` from every GPU's file in `dir`; a file left with no job is removed. 0, or -1 with
 * `err` set. */
int regime_job_map_remove(const char* dir, const char* job, char* err, size_t err_len);

#endif
