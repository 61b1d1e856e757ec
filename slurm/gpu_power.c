#include "gpu_power.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char kAccepted[] =
    "expected default, auto, study, a cap in watts (e.g. 250) or a share "
    "of the default limit (e.g. 80%)";

/* A plain decimal number: digits with at most one point, nothing else (no sign, exponent, hex,
 * inf or nan, which strtod would take). */
static int parse_number(const char* begin, const char* end, double* value) {
  char buf[32];
  size_t n = (size_t)(end - begin);
  int digits = 0, points = 0;
  if (n == 0 || n >= sizeof buf) return -1;
  for (const char* p = begin; p < end; ++p) {
    if (isdigit((unsigned char)*p))
      ++digits;
    else if (*p == '.')
      ++points;
    else
      return -1;
  }
  if (digits == 0 || points > 1) return -1;
  memcpy(buf, begin, n);
  buf[n] = '\0';
  errno = 0;
  *value = strtod(buf, NULL);
  return errno == 0 && isfinite(*value) ? 0 : -1;
}

int regime_gpu_power_parse(const char* text, struct regime_gpu_power* out, char* err,
                           size_t err_len) {
  const char* end;
  size_t n;
  double v = 0;
  if (text == NULL || *text == '\0') {
    snprintf(err, err_len, "--gpu-power needs a value: %s", kAccepted);
    return -1;
  }
  out->value = 0;
  if (strcmp(text, "default") == 0) {
    out->kind = REGIME_GPU_POWER_DEFAULT;
    return 0;
  }
  if (strcmp(text, "auto") == 0) {
    out->kind = REGIME_GPU_POWER_AUTO;
    return 0;
  }
  if (strcmp(text, "study") == 0) {
    out->kind = REGIME_GPU_POWER_STUDY;
    return 0;
  }
  n = strlen(text);
  end = text + n;
  if (text[n - 1] == '%') {
    if (parse_number(text, end - 1, &v) != 0) {
      snprintf(err, err_len, "--gpu-power=%.40s: not a percentage: %s", text, kAccepted);
      return -1;
    }
    if (v < REGIME_GPU_POWER_MIN_PERCENT || v > REGIME_GPU_POWER_MAX_PERCENT) {
      snprintf(err, err_len,
               "--gpu-power=%.40s: a share of the default limit must lie in [%g%%, %g%%]", text,
               REGIME_GPU_POWER_MIN_PERCENT, REGIME_GPU_POWER_MAX_PERCENT);
      return -1;
    }
    out->kind = REGIME_GPU_POWER_PERCENT;
    out->value = v;
    return 0;
  }
  if (text[n - 1] == 'W' || text[n - 1] == 'w') --end;
  if (parse_number(text, end, &v) != 0) {
    snprintf(err, err_len, "--gpu-power=%.40s: %s", text, kAccepted);
    return -1;
  }
  if (v <= 0 || v > REGIME_GPU_POWER_MAX_W) {
    snprintf(err, err_len, "--gpu-power=%.40s: a cap must lie in (0, %g] W", text,
             REGIME_GPU_POWER_MAX_W);
    return -1;
  }
  out->kind = REGIME_GPU_POWER_WATTS;
  out->value = v;
  return 0;
}

void regime_gpu_power_format(const struct regime_gpu_power* power, char* buf, size_t len) {
  switch (power->kind) {
    case REGIME_GPU_POWER_DEFAULT:
      snprintf(buf, len, "default");
      break;
    case REGIME_GPU_POWER_AUTO:
      snprintf(buf, len, "auto");
      break;
    case REGIME_GPU_POWER_STUDY:
      snprintf(buf, len, "study");
      break;
    case REGIME_GPU_POWER_WATTS:
      snprintf(buf, len, "%g", power->value);
      break;
    case REGIME_GPU_POWER_PERCENT:
      snprintf(buf, len, "%g%%", power->value);
      break;
  }
}
