/* The --gpu-power value: every accepted form, and a clear message for each kind of bad value. */
#include "gpu_power.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;
static const struct regime_gpu_power_range kSite = {100, 700, 1};

static void accepts_in(const struct regime_gpu_power_range* range, const char* text,
                       enum regime_gpu_power_kind kind, double value, const char* canonical) {
  struct regime_gpu_power p;
  char err[256] = "", buf[64];
  if (regime_gpu_power_parse(text, range, &p, err, sizeof err) != 0) {
    printf("FAIL: '%s' refused: %s\n", text, err);
    ++failures;
    return;
  }
  regime_gpu_power_format(&p, buf, sizeof buf);
  if (p.kind != kind || p.value != value || strcmp(buf, canonical) != 0) {
    printf("FAIL: '%s' parsed as kind %d value %g ('%s'), expected %d %g ('%s')\n", text, p.kind,
           p.value, buf, kind, value, canonical);
    ++failures;
  }
}

static void accepts(const char* text, enum regime_gpu_power_kind kind, double value,
                    const char* canonical) {
  accepts_in(NULL, text, kind, value, canonical);
}

static void refuses_in(const struct regime_gpu_power_range* range, const char* text,
                       const char* message_part) {
  struct regime_gpu_power p;
  char err[256] = "";
  if (regime_gpu_power_parse(text, range, &p, err, sizeof err) == 0) {
    printf("FAIL: '%s' accepted\n", text ? text : "(null)");
    ++failures;
  } else if (strstr(err, message_part) == NULL) {
    printf("FAIL: '%s' refused with '%s', expected it to say '%s'\n", text ? text : "(null)", err,
           message_part);
    ++failures;
  }
}

static void refuses(const char* text, const char* message_part) {
  refuses_in(NULL, text, message_part);
}

/* Every cap in milliwatt steps over the default range: its text goes to the node unchanged (no
 * exponent, no digit lost), so the node applies what the user asked for. */
static void formats_without_loss(void) {
  long checked = 0;
  for (long mW = 1000; mW <= 5000000; mW += 7) {
    char text[32], canonical[32], buf[64];
    struct regime_gpu_power p;
    char err[256];
    int len;
    snprintf(text, sizeof text, "%ld.%03ld", mW / 1000, mW % 1000);
    /* the canonical form drops trailing zeros and a bare point */
    strcpy(canonical, text);
    len = (int)strlen(canonical);
    while (canonical[len - 1] == '0') canonical[--len] = '\0';
    if (canonical[len - 1] == '.') canonical[--len] = '\0';
    if (regime_gpu_power_parse(text, NULL, &p, err, sizeof err) != 0) {
      printf("FAIL: '%s' refused: %s\n", text, err);
      ++failures;
      return;
    }
    regime_gpu_power_format(&p, buf, sizeof buf);
    if (strcmp(buf, canonical) != 0) {
      printf("FAIL: '%s' formatted as '%s', expected '%s'\n", text, buf, canonical);
      ++failures;
      return;
    }
    ++checked;
  }
  printf("gpu_power: %ld caps from 1 W to 5000 W formatted without loss\n", checked);
}

static void bounds(void) {
  double w = 0;
  char err[256] = "";
  if (regime_gpu_power_parse_bound("min_watts", "100.5", &w, err, sizeof err) != 0 || w != 100.5) {
    printf("FAIL: min_watts=100.5 gave %g: %s\n", w, err);
    ++failures;
  }
  const char* bad[] = {"0", "0.5", "5001", "1e3", "-5", "", "100.0001", "abc"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    err[0] = '\0';
    if (regime_gpu_power_parse_bound("max_watts", bad[i], &w, err, sizeof err) == 0 ||
        strstr(err, "max_watts=") == NULL || strstr(err, "from 1 to 5000") == NULL) {
      printf("FAIL: max_watts=%s: '%s'\n", bad[i], err);
      ++failures;
    }
  }
}

int main(void) {
  accepts("default", REGIME_GPU_POWER_DEFAULT, 0, "default");
  accepts("auto", REGIME_GPU_POWER_AUTO, 0, "auto");
  accepts("study", REGIME_GPU_POWER_STUDY, 0, "study");
  accepts("150", REGIME_GPU_POWER_WATTS, 150, "150");
  accepts("150W", REGIME_GPU_POWER_WATTS, 150, "150");
  accepts("262.5w", REGIME_GPU_POWER_WATTS, 262.5, "262.5");
  accepts("262.125", REGIME_GPU_POWER_WATTS, 262.125, "262.125");
  accepts("4999.999", REGIME_GPU_POWER_WATTS, 4999.999, "4999.999");
  accepts("0250.500W", REGIME_GPU_POWER_WATTS, 250.5, "250.5");
  accepts("1", REGIME_GPU_POWER_WATTS, 1, "1");
  accepts("5000", REGIME_GPU_POWER_WATTS, 5000, "5000");
  accepts("80%", REGIME_GPU_POWER_PERCENT, 80, "80%");
  accepts("100%", REGIME_GPU_POWER_PERCENT, 100, "100%");
  accepts("1%", REGIME_GPU_POWER_PERCENT, 1, "1%");
  accepts("62.125%", REGIME_GPU_POWER_PERCENT, 62.125, "62.125%");
  refuses(NULL, "needs a value");
  refuses("", "needs a value");
  refuses("fast", "expected default, auto, study");
  refuses("Default", "expected default, auto, study");
  refuses("-150", "expected default");
  refuses("0", "must lie in [1, 5000] W, the widest range of any GPU");
  refuses("0.00001", "must lie in [1, 5000] W, the widest range of any GPU");
  refuses("0.999", "must lie in [1, 5000] W");
  refuses("5001", "must lie in [1, 5000] W");
  refuses("5000.001", "must lie in [1, 5000] W");
  refuses("1e-05", "expected default");
  refuses("1e3", "expected default");
  refuses("inf", "expected default");
  refuses("nan", "expected default");
  refuses("0x96", "expected default");
  refuses("1.5.0", "expected default");
  refuses("150 W", "expected default");
  refuses("W", "expected default");
  refuses("262.1255", "at most 3 decimals");
  refuses("%", "not a percentage");
  refuses("101%", "must lie in [1%, 100%]");
  refuses("0.5%", "must lie in [1%, 100%]");
  refuses("50.0001%", "at most 3 decimals");
  refuses("80%%", "not a percentage");
  refuses("12345678901234567890123456789012345", "expected default");
  /* The site's range from plugstack.conf, named as such. */
  accepts_in(&kSite, "100", REGIME_GPU_POWER_WATTS, 100, "100");
  accepts_in(&kSite, "700W", REGIME_GPU_POWER_WATTS, 700, "700");
  accepts_in(&kSite, "10%", REGIME_GPU_POWER_PERCENT, 10, "10%");
  refuses_in(&kSite, "50", "must lie in [100, 700] W, this cluster's range (plugstack.conf");
  refuses_in(&kSite, "700.001", "must lie in [100, 700] W");
  formats_without_loss();
  bounds();
  if (failures == 0) printf("gpu_power: all cases passed\n");
  return failures == 0 ? 0 : 1;
}
