#include "dcgm_job_map.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_MAX 65536
#define JOB_MAX 64

/* The integer after "key": in `from`, before `end`; -1 when there is none. */
static long number_after(const char* from, const char* end, const char* key) {
  const char* at = strstr(from, key);
  if (at == NULL || at >= end) return -1;
  at += strlen(key);
  while (*at == ' ' || *at == ':' || *at == '\t' || *at == '\n') ++at;
  if (!isdigit((unsigned char)*at)) return -1;
  return strtol(at, NULL, 10);
}

int regime_job_map_indexes(const char* devices, const char* gpus, int* indexes, int max, char* err,
                           size_t err_len) {
  int n = 0;
  const char* p = gpus;
  while (*p) {
    char* end;
    long minor = strtol(p, &end, 10);
    const char* obj;
    int found = 0;
    if (end == p || minor < 0 || (*end != ',' && *end != '\0')) {
      snprintf(err, err_len, "cannot read the GPU list '%s'", gpus);
      return -1;
    }
    /* Each device is one JSON object: its index and minor number lie between its '{' and the
     * next. */
    for (obj = strchr(devices, '{'); obj != NULL && !found; obj = strchr(obj + 1, '{')) {
      const char* next = strchr(obj + 1, '{');
      const char* stop = next ? next : obj + strlen(obj);
      long index = number_after(obj, stop, "\"index\"");
      if (index >= 0 && number_after(obj, stop, "\"minor_number\"") == minor) {
        if (n == max) {
          snprintf(err, err_len, "more than %d GPUs", max);
          return -1;
        }
        indexes[n++] = (int)index;
        found = 1;
      }
    }
    if (!found) {
      snprintf(err, err_len, "no NVML GPU has device minor number %ld", minor);
      return -1;
    }
    p = *end == ',' ? end + 1 : end;
  }
  return n;
}

int regime_job_map_dir(const char* dir, const char* node, char* out, size_t len) {
  size_t used = 0;
  for (const char* p = dir; *p; ++p) {
    const char* add = p;
    size_t add_len = 1;
    if (p[0] == '%' && p[1] == 'n') {
      add = node;
      add_len = strlen(node);
      ++p;
    }
    if (used + add_len >= len) return -1;
    memcpy(out + used, add, add_len);
    used += add_len;
  }
  out[used] = '\0';
  return 0;
}

/* The directory, opened without following a link, and locked; -1 (err set) when it is missing,
 * a link, or writable by anyone but its owner, the user the plugin runs as: another user could
 * otherwise put a link where a file is replaced. */
static int open_dir(const char* dir, char* err, size_t err_len) {
  struct stat st;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, err_len, "cannot open the directory %s: %s", dir, strerror(errno));
    return -1;
  }
  if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
    snprintf(err, err_len, "%s must belong to uid %u and be writable by it alone", dir,
             (unsigned)geteuid());
    close(fd);
    return -1;
  }
  while (flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) {
      snprintf(err, err_len, "cannot lock %s: %s", dir, strerror(errno));
      close(fd);
      return -1;
    }
  return fd;
}

/* The file `name` of `dirfd` into `buf` ("" when missing); -1 when it cannot be read. */
static int read_file(int dirfd, const char* name, char* buf, size_t len) {
  size_t used = 0;
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  buf[0] = '\0';
  if (fd < 0) return errno == ENOENT ? 0 : -1;
  for (;;) {
    ssize_t r = read(fd, buf + used, len - 1 - used);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    used += (size_t)r;
    if (used == len - 1) break;
  }
  buf[used] = '\0';
  close(fd);
  return 0;
}

/* `content` as the whole of `name`: written to a new file beside it, then renamed over it; an
 * empty `content` removes the file. */
static int replace_file(int dirfd, const char* name, const char* content) {
  char tmp[64];
  size_t len = strlen(content), done = 0;
  int fd;
  if (len == 0) return unlinkat(dirfd, name, 0) == 0 || errno == ENOENT ? 0 : -1;
  /* A name dcgm-exporter skips (not digits alone). */
  snprintf(tmp, sizeof tmp, ".%s.%ld.tmp", name, (long)getpid());
  unlinkat(dirfd, tmp, 0);
  fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  while (done < len) {
    ssize_t w = write(fd, content + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += (size_t)w;
  }
  if (done != len || fchmod(fd, 0644) != 0 || fsync(fd) != 0 || close(fd) != 0) {
    unlinkat(dirfd, tmp, 0);
    return -1;
  }
  if (renameat(dirfd, tmp, dirfd, name) != 0) {
    unlinkat(dirfd, tmp, 0);
    return -1;
  }
  return 0;
}

/* `lines` without the line `job` (and with it at the end when `add`), into `out`. */
static void edit_lines(const char* lines, const char* job, int add, char* out, size_t len) {
  size_t used = 0;
  const char* line = lines;
  out[0] = '\0';
  while (*line) {
    size_t n = strcspn(line, "\n");
    int same = n == strlen(job) && strncmp(line, job, n) == 0;
    if (n > 0 && !same && used + n + 2 < len) {
      memcpy(out + used, line, n);
      used += n;
      out[used++] = '\n';
      out[used] = '\0';
    }
    line += n + (line[n] == '\n');
  }
  if (add && used + strlen(job) + 2 < len) snprintf(out + used, len - used, "%s\n", job);
}

static int edit(int dirfd, const char* name, const char* job, int add, char* err, size_t err_len) {
  static char before[FILE_MAX], after[FILE_MAX];
  if (read_file(dirfd, name, before, sizeof before) != 0) {
    snprintf(err, err_len, "cannot read %s: %s", name, strerror(errno));
    return -1;
  }
  edit_lines(before, job, add, after, sizeof after);
  if (strcmp(before, after) != 0 && replace_file(dirfd, name, after) != 0) {
    snprintf(err, err_len, "cannot write %s: %s", name, strerror(errno));
    return -1;
  }
  return 0;
}

static int valid_job(const char* job, char* err, size_t err_len) {
  if (*job == '\0' || strlen(job) >= JOB_MAX || strchr(job, '\n') != NULL) {
    snprintf(err, err_len, "not a job id: '%s'", job);
    return 0;
  }
  return 1;
}

int regime_job_map_add(const char* dir, const char* job, const int* indexes, int n, char* err,
                       size_t err_len) {
  int fd, status = 0;
  if (!valid_job(job, err, err_len)) return -1;
  fd = open_dir(dir, err, err_len);
  if (fd < 0) return -1;
  for (int i = 0; i < n && status == 0; ++i) {
    char name[16];
    snprintf(name, sizeof name, "%d", indexes[i]);
    status = edit(fd, name, job, 1, err, err_len);
  }
  close(fd);
  return status;
}

/* dcgm-exporter's file names: a GPU index, or GPU.INSTANCE for a MIG instance. */
static int mapping_name(const char* name) {
  size_t digits = strspn(name, "0123456789");
  if (digits == 0) return 0;
  if (name[digits] == '\0') return 1;
  return name[digits] == '.' && name[digits + 1] != '\0' &&
         strspn(name + digits + 1, "0123456789") == strlen(name + digits + 1);
}

int regime_job_map_remove(const char* dir, const char* job, char* err, size_t err_len) {
  int fd, listfd, status = 0;
  DIR* d;
  struct dirent* e;
  if (!valid_job(job, err, err_len)) return -1;
  fd = open_dir(dir, err, err_len);
  if (fd < 0) return -1;
  /* Every GPU's file: the epilog need not know which GPUs the job had on this node. */
  listfd = dup(fd);
  d = listfd >= 0 ? fdopendir(listfd) : NULL;
  if (d == NULL) {
    snprintf(err, err_len, "cannot list %s: %s", dir, strerror(errno));
    if (listfd >= 0) close(listfd);
    close(fd);
    return -1;
  }
  while ((e = readdir(d)) != NULL)
    if (mapping_name(e->d_name) && edit(fd, e->d_name, job, 0, err, err_len) != 0) status = -1;
  closedir(d);
  close(fd);
  return status;
}
