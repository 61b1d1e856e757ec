/* SPANK plugin: --gpu-power=default|auto|study|<watts>|<percent>% for srun, sbatch and salloc.
 *
 * The plugin itself changes nothing on a GPU. In slurmd's job prolog (root) it runs
 *   regime job begin --job ID --uid UID --gpus LIST --power VALUE
 * and in the job epilog, which Slurm runs on every node of the job when it ends however it ends
 * (scancel, time limit, a failed step),
 *   regime job end --job ID --merge-comment CURRENT
 * whose last line it writes to the job's AdminComment with sacctmgr (the job has finished, so
 * scontrol may no longer change it), where sacct shows it. All the work (the agent or the journal,
 * the caps, the energy counters, the run store) is Regime's, so the same code restores caps after
 * a crash of slurmd or a reboot (`regime restore`, docs/cluster.md).
 *
 * plugstack.conf arguments (all optional):
 *   regime=PATH     the regime binary (default /usr/bin/regime)
 *   sacct=PATH      sacct (default /usr/bin/sacct)
 *   sacctmgr=PATH   sacctmgr (default /usr/bin/sacctmgr)
 *   db=PATH         the run store regime reads decisions from and writes job energy to (or
 *                   mariadb://USER@HOST[:PORT]/DATABASE, one server store for the cluster)
 *   steps=DIR       study: where each job's step-marker socket is made (default /run/regime/steps)
 *   study_probe_s=N study: seconds the GPUs are probed at their limit before deciding (default 60)
 *   min_watts=W, max_watts=W  the caps in watts a job may ask for (default 1 and 5000, the widest
 *                   range of any GPU): the plugin cannot see the GPUs at submission, so this is
 *                   the site's range; each GPU's own range is checked on the node
 *   dcgm_job_map=DIR  write dcgm-exporter's HPC job mapping files (its --hpc-job-mapping-dir) in
 *                   DIR, "%n" replaced by the node's name: every job with GPUs on the node, whether
 *                   or not it asked --gpu-power, is listed in its GPUs' files from its prolog to
 * its epilog (dcgm_job_map.h). Off unless set.
 *
 * --gpu-power=study: the prolog's `regime job begin` starts a detached `regime job study` that
 * listens on DIR/JOB.NODE.sock; the task_init hook exports that path to the job's tasks as
 * REGIME_STEP_SOCKET, where regime's step-marker helper (python/regime_step) sends each step.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <slurm/spank.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dcgm_job_map.h"
#include "gpu_power.h"

SPANK_PLUGIN(regime, 1);

#define OUTPUT_MAX 8192
#define COMMENT_PREFIX "admin_comment: "
/* Where Slurm 22.05 hands a job's SPANK option to the prolog and epilog: spank_option_getopt
 * answers "not used" there, so the job control environment is read directly. */
#define OPTION_ENV "SPANK__SLURM_SPANK_OPTION_regime_gpu_power"
#define WORKLOAD_ENV "SPANK__SLURM_SPANK_OPTION_regime_gpu_workload"
#define WORKLOAD_MAX 200

static char regime_path[PATH_MAX] = "/usr/bin/regime";
static char sacct_path[PATH_MAX] = "/usr/bin/sacct";
static char sacctmgr_path[PATH_MAX] = "/usr/bin/sacctmgr";
static char db_path[PATH_MAX] = "";
static char steps_dir[PATH_MAX] = "/run/regime/steps";
static char study_probe_s[16] = "60";
static char job_map_dir[PATH_MAX] = "";
static struct regime_gpu_power_range cap_range = {REGIME_GPU_POWER_MIN_W, REGIME_GPU_POWER_MAX_W,
                                                  0};

static int check_option(int val, const char* optarg, int remote) {
  struct regime_gpu_power power;
  char err[256];
  (void)val;
  (void)remote;
  if (regime_gpu_power_parse(optarg, &cap_range, &power, err, sizeof err) != 0) {
    slurm_error("%s", err);
    return -1;
  }
  return 0;
}

static int check_workload(int val, const char* optarg, int remote) {
  (void)val;
  (void)remote;
  if (optarg == NULL || *optarg == '\0' || strlen(optarg) > WORKLOAD_MAX) {
    slurm_error("--gpu-workload needs a name of 1 to %d characters", WORKLOAD_MAX);
    return -1;
  }
  return 0;
}

/* Registered in slurm_spank_init: sbatch and salloc know only options registered there. */
static struct spank_option gpu_power_option[] = {
    {"gpu-power", "POLICY",
     "GPU power limit for the job's GPUs (Regime): default (unchanged, energy measured), auto "
     "(the stored decision for the GPU model and the job name), study (probe, then decide), a cap "
     "in watts (250, at most 3 decimals) or a share of the default limit (80%)",
     1, 0, check_option},
    {"gpu-workload", "NAME",
     "With --gpu-power=auto: the workload name its sweeps were kept under (regime runs)", 1, 0,
     check_workload},
    SPANK_OPTIONS_TABLE_END};

static int copy_arg(const char* arg, const char* key, char* dest, size_t len) {
  size_t n = strlen(key);
  if (strncmp(arg, key, n) != 0 || arg[n] != '=') return 0;
  /* db= may name the cluster's server store instead of a file; regime reads and checks the URI. */
  int db = strcmp(key, "db") == 0;
  int server = db && strncmp(arg + n + 1, "mariadb://", 10) == 0;
  if (strlen(arg + n + 1) >= len || (arg[n + 1] != '/' && !server)) {
    slurm_error("regime: plugstack.conf argument %s needs an absolute path%s", arg,
                db ? " or a mariadb:// URI" : "");
    return -1;
  }
  strcpy(dest, arg + n + 1);
  return 1;
}

/* min_watts= or max_watts=: 1 when `arg` is one (and valid), 0 when not, -1 when invalid. */
static int copy_bound(const char* arg, const char* key, double* dest) {
  size_t n = strlen(key);
  char err[256];
  if (strncmp(arg, key, n) != 0 || arg[n] != '=') return 0;
  if (regime_gpu_power_parse_bound(key, arg + n + 1, dest, err, sizeof err) != 0) {
    slurm_error("%s", err);
    return -1;
  }
  cap_range.configured = 1;
  return 1;
}

/* The plugstack.conf arguments. slurmd's prolog and epilog do not call slurm_spank_init, so each
 * callback that needs them reads them. */
static int configure(int ac, char** av) {
  cap_range = regime_gpu_power_default_range();
  for (int i = 0; i < ac; ++i) {
    int r = copy_arg(av[i], "regime", regime_path, sizeof regime_path);
    if (r == 0) r = copy_arg(av[i], "sacct", sacct_path, sizeof sacct_path);
    if (r == 0) r = copy_arg(av[i], "sacctmgr", sacctmgr_path, sizeof sacctmgr_path);
    if (r == 0) r = copy_arg(av[i], "db", db_path, sizeof db_path);
    if (r == 0) r = copy_arg(av[i], "steps", steps_dir, sizeof steps_dir);
    if (r == 0) r = copy_arg(av[i], "dcgm_job_map", job_map_dir, sizeof job_map_dir);
    if (r == 0) r = copy_bound(av[i], "min_watts", &cap_range.min_W);
    if (r == 0) r = copy_bound(av[i], "max_watts", &cap_range.max_W);
    if (r == 0 && strncmp(av[i], "study_probe_s=", 14) == 0) {
      const char* v = av[i] + 14;
      if (*v == '\0' || strlen(v) > 5 || strspn(v, "0123456789") != strlen(v) || atol(v) < 1 ||
          atol(v) > 86400) {
        slurm_error(
            "regime: plugstack.conf argument %s needs a whole number of seconds, 1 to 86400",
            av[i]);
        return -1;
      }
      strcpy(study_probe_s, v);
      r = 1;
    }
    if (r < 0) return -1;
    if (r == 0) {
      slurm_error(
          "regime: unknown plugstack.conf argument '%s' (regime=, sacct=, sacctmgr=, db=, steps=, "
          "study_probe_s=, min_watts=, max_watts=, dcgm_job_map=)",
          av[i]);
      return -1;
    }
  }
  if (cap_range.min_W > cap_range.max_W) {
    slurm_error("regime: plugstack.conf min_watts=%g is above max_watts=%g", cap_range.min_W,
                cap_range.max_W);
    return -1;
  }
  return 0;
}

int slurm_spank_init(spank_t sp, int ac, char** av) {
  if (configure(ac, av) != 0) return -1;
  if (spank_option_register(sp, &gpu_power_option[0]) != ESPANK_SUCCESS) return -1;
  return spank_option_register(sp, &gpu_power_option[1]) == ESPANK_SUCCESS ? 0 : -1;
}

/* Runs argv with stdout and stderr into `out` (NUL-terminated, truncated to OUTPUT_MAX); returns
 * the exit status, 128 + signal when killed, or -1 when it could not be started. */
static int run(char* const argv[], char* out, size_t out_len) {
  int fds[2];
  size_t used = 0;
  int status = 0;
  pid_t pid;
  out[0] = '\0';
  if (pipe(fds) != 0) return -1;
  pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    execv(argv[0], argv);
    dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  for (;;) {
    char buf[1024];
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (used + 1 < out_len) {
      size_t take = (size_t)n < out_len - 1 - used ? (size_t)n : out_len - 1 - used;
      memcpy(out + used, buf, take);
      used += take;
      out[used] = '\0';
    }
  }
  close(fds[0]);
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

/* Every line of a command's output in slurmd's log, under the job's id. */
static void log_output(uint32_t job, const char* what, const char* out, int error) {
  const char* line = out;
  while (*line) {
    const char* nl = strchr(line, '\n');
    int len = nl ? (int)(nl - line) : (int)strlen(line);
    if (len > 0) {
      if (error)
        slurm_error("regime: job %u %s: %.*s", job, what, len, line);
      else
        slurm_info("regime: job %u %s: %.*s", job, what, len, line);
    }
    line = nl ? nl + 1 : line + len;
  }
}

static int job_ids(spank_t sp, uint32_t* job, uid_t* uid) {
  if (spank_get_item(sp, S_JOB_ID, job) != ESPANK_SUCCESS) {
    slurm_error("regime: cannot read the job id");
    return -1;
  }
  if (uid && spank_get_item(sp, S_JOB_UID, uid) != ESPANK_SUCCESS) {
    slurm_error("regime: cannot read the owner of job %u", *job);
    return -1;
  }
  return 0;
}

/* The option's value when the job asked for it, else NULL (the job is left alone). */
static char* requested(spank_t sp) {
  char* value = NULL;
  const char* env;
  if (spank_option_getopt(sp, &gpu_power_option[0], &value) == ESPANK_SUCCESS && value != NULL)
    return value;
  env = getenv(OPTION_ENV);
  return env && *env ? (char*)env : NULL;
}

/* study: the job's step-marker socket on this node, DIR/JOB.NODE.sock. */
static int step_socket_path(uint32_t job, const char* node, char* buf, size_t len) {
  int n = snprintf(buf, len, "%s/%u.%s.sock", steps_dir, job, node && *node ? node : "node");
  return n > 0 && (size_t)n < len && (size_t)n < 108 ? 0 : -1; /* sockaddr_un's sun_path */
}

/* In each task of a study job, before its command runs: where to send step markers. */
int slurm_spank_task_init(spank_t sp, int ac, char** av) {
  struct regime_gpu_power power;
  char err[256], node[256], path[PATH_MAX];
  char* value = requested(sp);
  uint32_t job = 0;
  if (value == NULL) {
    if (spank_getenv(sp, OPTION_ENV, path, sizeof path) != ESPANK_SUCCESS) return 0;
    value = path;
  }
  if (regime_gpu_power_parse(value, &cap_range, &power, err, sizeof err) != 0 ||
      power.kind != REGIME_GPU_POWER_STUDY)
    return 0;
  if (configure(ac, av) != 0) return -1;
  if (job_ids(sp, &job, NULL) != 0) return -1;
  if (spank_getenv(sp, "SLURMD_NODENAME", node, sizeof node) != ESPANK_SUCCESS) node[0] = '\0';
  if (step_socket_path(job, node, path, sizeof path) != 0) {
    slurm_error("regime: job %u: the step socket path under %s is too long", job, steps_dir);
    return 0;
  }
  if (spank_setenv(sp, "REGIME_STEP_SOCKET", path, 1) != ESPANK_SUCCESS)
    slurm_error("regime: job %u: cannot set REGIME_STEP_SOCKET", job);
  return 0;
}

/* The GPUs Slurm gave the job on this node (gres indexes: device minor numbers), as the prolog
 * environment names them; NULL when none. */
static const char* job_gpus(void) {
  const char* gpus = getenv("SLURM_JOB_GPUS");
  if (gpus == NULL || *gpus == '\0') gpus = getenv("CUDA_VISIBLE_DEVICES");
  return gpus && *gpus ? gpus : NULL;
}

/* This node's mapping directory into `dir`; 0 when dcgm_job_map= is not set. */
static int job_map_here(uint32_t job, char* dir, size_t len) {
  const char* node = getenv("SLURMD_NODENAME");
  if (job_map_dir[0] == '\0') return 0;
  if (regime_job_map_dir(job_map_dir, node ? node : "", dir, len) != 0) {
    slurm_error("regime: job %u: dcgm_job_map=%s is too long with the node's name", job,
                job_map_dir);
    return 0;
  }
  return 1;
}

/* Lists the job in dcgm-exporter's mapping file of each of its GPUs. The files are named by NVML's
 * index, which need not be the minor number Slurm gives, so regime (read-only) names both. A
 * failure is logged and the job runs: its series only lack the job label. */
static void job_map_begin(uint32_t job) {
  char dir[PATH_MAX], out[OUTPUT_MAX], err[256], job_text[32];
  char* argv[] = {regime_path, "limit", "show", "--device", "nvml:all", "--json", NULL};
  int indexes[REGIME_JOB_MAP_MAX_GPUS], n;
  const char* gpus = job_gpus();
  if (gpus == NULL || !job_map_here(job, dir, sizeof dir)) return;
  if (run(argv, out, sizeof out) != 0) {
    log_output(job, "dcgm job map", out, 1);
    return;
  }
  n = regime_job_map_indexes(out, gpus, indexes, REGIME_JOB_MAP_MAX_GPUS, err, sizeof err);
  snprintf(job_text, sizeof job_text, "%u", job);
  if (n < 0 || regime_job_map_add(dir, job_text, indexes, n, err, sizeof err) != 0)
    slurm_error("regime: job %u: dcgm-exporter's job mapping in %s: %s", job, dir, err);
}

/* Takes the job out of every mapping file of the node; a file left empty goes. */
static void job_map_end(uint32_t job) {
  char dir[PATH_MAX], err[256], job_text[32];
  if (!job_map_here(job, dir, sizeof dir)) return;
  snprintf(job_text, sizeof job_text, "%u", job);
  if (regime_job_map_remove(dir, job_text, err, sizeof err) != 0)
    slurm_error("regime: job %u: dcgm-exporter's job mapping in %s: %s", job, dir, err);
}

int slurm_spank_job_prolog(spank_t sp, int ac, char** av) {
  struct regime_gpu_power power;
  char err[256], power_text[64], job_text[32], uid_text[32], out[OUTPUT_MAX], socket[PATH_MAX];
  char workload_arg[WORKLOAD_MAX + 16];
  const char* gpus;
  char* value = requested(sp);
  char* workload = NULL;
  uint32_t job = 0;
  uid_t uid = 0;
  int status;
  if (configure(ac, av) != 0) return -1;
  if (job_ids(sp, &job, &uid) != 0) return -1;
  job_map_begin(job);
  if (value == NULL) return 0;
  if (regime_gpu_power_parse(value, &cap_range, &power, err, sizeof err) != 0) {
    /* A value the user chose (one that bypassed the submission check, or one this node's range
     * refuses) is no fault of the node: the job runs with the limits as they are. */
    slurm_error("regime: job %u: %s; the job runs with the GPUs' limits unchanged", job, err);
    return 0;
  }
  regime_gpu_power_format(&power, power_text, sizeof power_text);
  if (spank_option_getopt(sp, &gpu_power_option[1], &workload) != ESPANK_SUCCESS)
    workload = getenv(WORKLOAD_ENV);
  /* A job with no GPU here has nothing to cap on this node. */
  gpus = job_gpus();
  if (gpus == NULL) {
    slurm_info("regime: job %u asked --gpu-power=%s but holds no GPU on this node", job,
               power_text);
    return 0;
  }
  snprintf(job_text, sizeof job_text, "%u", job);
  snprintf(uid_text, sizeof uid_text, "%u", (unsigned)uid);
  {
    char* argv[24];
    int n = 0;
    argv[n++] = regime_path;
    argv[n++] = "job";
    argv[n++] = "begin";
    argv[n++] = "--job";
    argv[n++] = job_text;
    argv[n++] = "--uid";
    argv[n++] = uid_text;
    argv[n++] = "--gpus";
    argv[n++] = (char*)gpus;
    argv[n++] = "--power";
    argv[n++] = power_text;
    if (workload != NULL && *workload != '\0' && strlen(workload) <= WORKLOAD_MAX) {
      /* One argument, so that a name the user chose that starts with '-' stays a value. */
      snprintf(workload_arg, sizeof workload_arg, "--workload=%s", workload);
      argv[n++] = workload_arg;
    }
    if (db_path[0]) {
      argv[n++] = "--db";
      argv[n++] = db_path;
    }
    if (power.kind == REGIME_GPU_POWER_STUDY) {
      if (step_socket_path(job, getenv("SLURMD_NODENAME"), socket, sizeof socket) != 0) {
        slurm_error("regime: job %u: the step socket path under %s is too long", job, steps_dir);
        return -1;
      }
      argv[n++] = "--step-socket";
      argv[n++] = socket;
      argv[n++] = "--study-probe-seconds";
      argv[n++] = study_probe_s;
    }
    argv[n] = NULL;
    status = run(argv, out, sizeof out);
  }
  log_output(job, "begin", out, status != 0);
  if (status != 0) {
    /* Regime could not set or journal the caps: the node should not take jobs until an
     * administrator looks (a failed prolog drains it and requeues the job). */
    slurm_error("regime: job %u: `%s job begin` failed (status %d)", job, regime_path, status);
    return -1;
  }
  return 0;
}

/* The job's AdminComment as the accounting database has it now ("" when none or unreadable). */
static void read_comment(const char* job_text, char* comment, size_t len) {
  char* argv[] = {sacct_path, "-n", "-P", "-X", "-j", (char*)job_text, "-o", "AdminComment", NULL};
  char out[OUTPUT_MAX];
  comment[0] = '\0';
  if (run(argv, out, sizeof out) != 0) return;
  snprintf(comment, len, "%.*s", (int)strcspn(out, "\n"), out);
}

/* A job on several nodes: each node's epilog merges its energy into the one comment. */
static int several_nodes(void) {
  const char* nodes = getenv("SLURM_JOB_NODELIST");
  if (nodes == NULL) nodes = getenv("SLURM_NODELIST");
  return nodes != NULL && (strchr(nodes, ',') != NULL || strchr(nodes, '[') != NULL);
}

int slurm_spank_job_epilog(spank_t sp, int ac, char** av) {
  char job_text[32], out[OUTPUT_MAX], existing[1024], comment[1024], set[1100];
  const char* line;
  uint32_t job = 0;
  int status, attempt;
  if (configure(ac, av) != 0) return -1;
  if (job_ids(sp, &job, NULL) != 0) return -1;
  job_map_end(job);
  if (requested(sp) == NULL) return 0;
  snprintf(job_text, sizeof job_text, "%u", job);
  /* Read the comment, merge this node's energy into it, write it, and read it back until it holds
   * what was written: the accounting record may not have reached the database yet, and another
   * node of the job may write between the read and the write. `regime job end` is idempotent:
   * the limits are restored and the energy recorded by the first call. */
  for (attempt = 0; attempt < 10; ++attempt) {
    char* argv[12];
    int n = 0;
    read_comment(job_text, existing, sizeof existing);
    argv[n++] = regime_path;
    argv[n++] = "job";
    argv[n++] = "end";
    argv[n++] = "--job";
    argv[n++] = job_text;
    argv[n++] = "--merge-comment";
    argv[n++] = existing;
    if (db_path[0]) {
      argv[n++] = "--db";
      argv[n++] = db_path;
    }
    argv[n] = NULL;
    status = run(argv, out, sizeof out);
    if (attempt == 0 || status != 0) log_output(job, "end", out, status != 0);
    if (status != 0) {
      /* A cap that could not be restored stays in the journal; draining the node keeps jobs off
       * it until `regime restore` has run. */
      slurm_error("regime: job %u: `%s job end` failed (status %d)", job, regime_path, status);
      return -1;
    }
    line = strstr(out, COMMENT_PREFIX);
    if (line == NULL) return 0; /* nothing was recorded for the job on this node */
    line += strlen(COMMENT_PREFIX);
    snprintf(comment, sizeof comment, "%.*s", (int)strcspn(line, "\n"), line);
    if (strcmp(comment, existing) == 0) return 0;
    snprintf(set, sizeof set, "AdminComment=%s", comment);
    {
      char where[48];
      char* mgr[] = {sacctmgr_path, "-i", "modify", "job", "where", where, "set", set, NULL};
      snprintf(where, sizeof where, "JobID=%u", job);
      status = run(mgr, out, sizeof out);
    }
    /* Give the other nodes' epilogs time to write before reading back. */
    if (status == 0 && !several_nodes()) continue;
    usleep((useconds_t)(500000 + (getpid() % 7) * 150000));
  }
  /* The energy is in the node's run store and slurmd's log either way; the node stays in service.
   */
  slurm_error("regime: job %u: could not write its AdminComment: %s", job, out);
  return 0;
}
