/* dcgm-exporter's job mapping files: the minor-number-to-index lookup, the files a prolog and an
 * epilog leave, jobs sharing a GPU, and the directories refused (a link, one others may write). */
#include "dcgm_job_map.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures = 0;

#define CHECK(cond, ...)                  \
  do {                                    \
    if (!(cond)) {                        \
      printf("FAIL line %d: ", __LINE__); \
      printf(__VA_ARGS__);                \
      printf("\n");                       \
      ++failures;                         \
    }                                     \
  } while (0)

/* The whole of DIR/NAME, "(none)" when it cannot be opened. */
static const char* content(const char* dir, const char* name) {
  static char buf[256];
  char path[512];
  FILE* f;
  size_t n;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "r");
  if (f == NULL) return "(none)";
  n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* The names in DIR, sorted, space-separated. */
static const char* names(const char* dir) {
  static char buf[256];
  struct dirent** list;
  int n = scandir(dir, &list, NULL, alphasort);
  buf[0] = '\0';
  for (int i = 0; i < n; ++i) {
    if (list[i]->d_name[0] != '.' || strlen(list[i]->d_name) > 2) {
      if (buf[0]) strcat(buf, " ");
      strcat(buf, list[i]->d_name);
    }
    free(list[i]);
  }
  free(list);
  return buf;
}

/* As `regime limit show --device nvml:all --json` writes them: NVML order is the reverse of the
 * device files'. */
static const char* kDevices =
    "[\n  {\n    \"device\": \"nvml:0\",\n    \"index\": 0,\n    \"minor_number\": 1,\n"
    "    \"uuid\": \"GPU-a\"\n  },\n  {\n    \"device\": \"nvml:1\",\n    \"index\": 1,\n"
    "    \"minor_number\": 0,\n    \"uuid\": \"GPU-b\"\n  }\n]\n";

static void lookup(void) {
  int idx[4];
  char err[256] = "";
  int n = regime_job_map_indexes(kDevices, "0", idx, 4, err, sizeof err);
  CHECK(n == 1 && idx[0] == 1, "minor 0: n=%d idx=%d %s", n, idx[0], err);
  n = regime_job_map_indexes(kDevices, "1,0", idx, 4, err, sizeof err);
  CHECK(n == 2 && idx[0] == 0 && idx[1] == 1, "minors 1,0: n=%d", n);
  n = regime_job_map_indexes(kDevices, "2", idx, 4, err, sizeof err);
  CHECK(n == -1 && strstr(err, "minor number 2") != NULL, "minor 2: n=%d '%s'", n, err);
  n = regime_job_map_indexes(kDevices, "0-1", idx, 4, err, sizeof err);
  CHECK(n == -1 && strstr(err, "cannot read") != NULL, "'0-1': n=%d '%s'", n, err);
}

static void node_dir(void) {
  char out[64];
  CHECK(
      regime_job_map_dir("/run/m/%n", "n2", out, sizeof out) == 0 && strcmp(out, "/run/m/n2") == 0,
      "%%n: '%s'", out);
  CHECK(regime_job_map_dir("/run/m/%n", "n2", out, 8) == -1, "too long accepted");
}

static void prolog_and_epilog(const char* dir) {
  char err[256] = "";
  int both[] = {0, 1}, one[] = {1};
  CHECK(regime_job_map_add(dir, "101", both, 2, err, sizeof err) == 0, "add 101: %s", err);
  CHECK(regime_job_map_add(dir, "202", one, 1, err, sizeof err) == 0, "add 202: %s", err);
  /* A prolog run twice lists the job once. */
  CHECK(regime_job_map_add(dir, "202", one, 1, err, sizeof err) == 0, "add 202 again: %s", err);
  CHECK(strcmp(names(dir), "0 1") == 0, "files: '%s'", names(dir));
  CHECK(strcmp(content(dir, "0"), "101\n") == 0, "0: '%s'", content(dir, "0"));
  CHECK(strcmp(content(dir, "1"), "101\n202\n") == 0, "1: '%s'", content(dir, "1"));
  /* Job 10 is not job 101. */
  CHECK(regime_job_map_remove(dir, "10", err, sizeof err) == 0, "remove 10: %s", err);
  CHECK(strcmp(content(dir, "1"), "101\n202\n") == 0, "1 after 10: '%s'", content(dir, "1"));
  CHECK(regime_job_map_remove(dir, "101", err, sizeof err) == 0, "remove 101: %s", err);
  CHECK(strcmp(names(dir), "1") == 0, "files after 101: '%s'", names(dir));
  CHECK(strcmp(content(dir, "1"), "202\n") == 0, "1 after 101: '%s'", content(dir, "1"));
  CHECK(regime_job_map_remove(dir, "202", err, sizeof err) == 0, "remove 202: %s", err);
  CHECK(strcmp(names(dir), "") == 0, "files left: '%s'", names(dir));
  CHECK(regime_job_map_add(dir, "bad\nid", one, 1, err, sizeof err) == -1, "newline accepted");
}

static void refused_dirs(const char* base) {
  char err[256] = "", link_path[512], open_dir[512];
  int one[] = {0};
  snprintf(link_path, sizeof link_path, "%s/link", base);
  snprintf(open_dir, sizeof open_dir, "%s/open", base);
  CHECK(symlink(base, link_path) == 0, "symlink");
  CHECK(regime_job_map_add(link_path, "1", one, 1, err, sizeof err) == -1 &&
            strstr(err, "cannot open") != NULL,
        "a link was followed: '%s'", err);
  CHECK(mkdir(open_dir, 0777) == 0 && chmod(open_dir, 0777) == 0, "mkdir");
  CHECK(regime_job_map_add(open_dir, "1", one, 1, err, sizeof err) == -1 &&
            strstr(err, "writable by it alone") != NULL,
        "a directory others may write was used: '%s'", err);
  CHECK(strcmp(names(open_dir), "") == 0, "written: '%s'", names(open_dir));
  rmdir(open_dir);
  unlink(link_path);
}

int main(void) {
  char base[] = "/tmp/regime-dcgm-map-XXXXXX", dir[64];
  if (mkdtemp(base) == NULL) return 2;
  snprintf(dir, sizeof dir, "%s/map", base);
  if (mkdir(dir, 0755) != 0) return 2;
  lookup();
  node_dir();
  prolog_and_epilog(dir);
  refused_dirs(base);
  rmdir(dir);
  rmdir(base);
  if (failures) printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
