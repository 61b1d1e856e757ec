/* The --gpu-power value: every accepted form, and a clear message for each kind of bad value. */
#include "gpu_power.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;

static void accepts(const char* text, enum regime_gpu_power_kind kind, double value,
                    const char* canonical) {
  struct regime_gpu_power p;
  char err[256] = "", buf[64];
  if (regime_gpu_power_parse(text, &p, err, sizeof err) != 0) {
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

static void refuses(const char* text, const char* message_part) {
  struct regime_gpu_power p;
  char err[256] = "";
  if (regime_gpu_power_parse(text, &p, err, sizeof err) == 0) {
    printf("FAIL: '%s' accepted\n", text ? text : "(null)");
    ++failures;
  } else if (strstr(err, message_part) == NULL) {
    printf("FAIL: '%s' refused with '%s', expected it to say '%s'\n", text ? text : "(null)", err,
           message_part);
    ++failures;
  }
}

int main(void) {
  accepts("default", REGIME_GPU_POWER_DEFAULT, 0, "default");
  accepts("auto", REGIME_GPU_POWER_AUTO, 0, "auto");
  accepts("study", REGIME_GPU_POWER_STUDY, 0, "study");
  accepts("150", REGIME_GPU_POWER_WATTS, 150, "150");
  accepts("150W", REGIME_GPU_POWER_WATTS, 150, "150");
  accepts("262.5w", REGIME_GPU_POWER_WATTS, 262.5, "262.5");
  accepts("80%", REGIME_GPU_POWER_PERCENT, 80, "80%");
  accepts("100%", REGIME_GPU_POWER_PERCENT, 100, "100%");
  accepts("1%", REGIME_GPU_POWER_PERCENT, 1, "1%");
  refuses(NULL, "needs a value");
  refuses("", "needs a value");
  refuses("fast", "expected default, auto, study");
  refuses("Default", "expected default, auto, study");
  refuses("-150", "expected default");
  refuses("0", "must lie in (0, 5000] W");
  refuses("5001", "must lie in (0, 5000] W");
  refuses("1e3", "expected default");
  refuses("inf", "expected default");
  refuses("nan", "expected default");
  refuses("0x96", "expected default");
  refuses("1.5.0", "expected default");
  refuses("150 W", "expected default");
  refuses("W", "expected default");
  refuses("%", "not a percentage");
  refuses("101%", "must lie in [1%, 100%]");
  refuses("0.5%", "must lie in [1%, 100%]");
  refuses("80%%", "not a percentage");
  refuses("12345678901234567890123456789012345", "expected default");
  if (failures == 0) printf("gpu_power: all cases passed\n");
  return failures == 0 ? 0 : 1;
}
