#include "gpu_power.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char kAccepted[] =
    "expected default, auto, study, a cap in watts (e.g. 250) or a share "
    "of the default limit (e.g. 80%)";

struct regime_gpu_power_range regime_gpu_power_default_range(void) {
  struct regime_gpu_power_range r = {REGIME_GPU_POWER_MIN_W, REGIME_GPU_POWER_MAX_W, 0};
  return r;
}

/* A plain decimal number: digits with at most one point, nothing else (no sign, exponent, hex,
 * inf or nan, which strtod would take). `decimals`: how many digits follow the point. */
static int parse_number(const char* begin, const char* end, double* value, int* decimals) {
  char buf[32];
  size_t n = (size_t)(end - begin);
  int digits = 0, points = 0;
  *decimals = 0;
  if (n == 0 || n >= sizeof buf) return -1;
  for (const char* p = begin; p < end; ++p) {
    if (isdigit((unsigned char)*p)) {
      ++digits;
      if (points) ++*decimals;
    } else if (*p == '.') {
      ++points;
    } else {
      return -1;
    }
  }
  if (digits == 0 || points > 1) return -1;
  memcpy(buf, begin, n);
  buf[n] = '\0';
  /* At most 31 digits: strtod neither overflows nor underflows to a value that matters here. */
  *value = strtod(buf, NULL);
  return isfinite(*value) ? 0 : -1;
}

/* A value of at most REGIME_GPU_POWER_MAX_DECIMALS decimals as plain text, trailing zeros dropped:
 * "%.3f" of such a value (below 10^12) gives back the digits it was parsed from. */
static void format_plain(double value, char* buf, size_t len) {
  char tmp[64];
  char* end;
  snprintf(tmp, sizeof tmp, "%.*f", REGIME_GPU_POWER_MAX_DECIMALS, value);
  end = tmp + strlen(tmp);
  while (end > tmp && end[-1] == '0') --end;
  if (end > tmp && end[-1] == '.') --end;
  *end = '\0';
  snprintf(buf, len, "%s", tmp);
}

static void range_text(const struct regime_gpu_power_range* range, char* buf, size_t len) {
  char lo[64], hi[64];
  format_plain(range->min_W, lo, sizeof lo);
  format_plain(range->max_W, hi, sizeof hi);
  snprintf(buf, len, "[%s, %s] W, %s", lo, hi,
           range->configured ? "this cluster's range (plugstack.conf min_watts=, max_watts=)"
                             : "the widest range of any GPU");
}

int regime_gpu_power_parse_bound(const char* name, const char* text, double* out_W, char* err,
                                 size_t err_len) {
  int decimals = 0;
  double v = 0;
  if (text == NULL || parse_number(text, text + strlen(text), &v, &decimals) != 0 ||
      decimals > REGIME_GPU_POWER_MAX_DECIMALS || v < REGIME_GPU_POWER_MIN_W ||
      v > REGIME_GPU_POWER_MAX_W) {
    snprintf(err, err_len,
             "regime: plugstack.conf argument %s=%.40s needs watts from %g to %g with at most %d "
             "decimals",
             name, text ? text : "", REGIME_GPU_POWER_MIN_W, REGIME_GPU_POWER_MAX_W,
             REGIME_GPU_POWER_MAX_DECIMALS);
    return -1;
  }
  *out_W = v;
  return 0;
}

int regime_gpu_power_parse(const char* text, const struct regime_gpu_power_range* range,
                           struct regime_gpu_power* out, char* err, size_t err_len) {
  struct regime_gpu_power_range widest = regime_gpu_power_default_range();
  const char* end;
  char allowed[256];
  size_t n;
  int decimals = 0;
  double v = 0;
  if (range == NULL) range = &widest;
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
    if (parse_number(text, end - 1, &v, &decimals) != 0) {
      snprintf(err, err_len, "--gpu-power=%.40s: not a percentage: %s", text, kAccepted);
      return -1;
    }
    if (v < REGIME_GPU_POWER_MIN_PERCENT || v > REGIME_GPU_POWER_MAX_PERCENT) {
      snprintf(err, err_len,
               "--gpu-power=%.40s: a share of the default limit must lie in [%g%%, %g%%]", text,
               REGIME_GPU_POWER_MIN_PERCENT, REGIME_GPU_POWER_MAX_PERCENT);
      return -1;
    }
    if (decimals > REGIME_GPU_POWER_MAX_DECIMALS) {
      snprintf(err, err_len, "--gpu-power=%.40s: give a share with at most %d decimals", text,
               REGIME_GPU_POWER_MAX_DECIMALS);
      return -1;
    }
    out->kind = REGIME_GPU_POWER_PERCENT;
    out->value = v;
    return 0;
  }
  if (text[n - 1] == 'W' || text[n - 1] == 'w') --end;
  if (parse_number(text, end, &v, &decimals) != 0) {
    snprintf(err, err_len, "--gpu-power=%.40s: %s", text, kAccepted);
    return -1;
  }
  if (v < range->min_W || v > range->max_W) {
    range_text(range, allowed, sizeof allowed);
    snprintf(err, err_len, "--gpu-power=%.40s: a cap must lie in %s", text, allowed);
    return -1;
  }
  if (decimals > REGIME_GPU_POWER_MAX_DECIMALS) {
    snprintf(err, err_len,
             "--gpu-power=%.40s: give a cap with at most %d decimals (NVML sets limits in "
             "milliwatts)",
             text, REGIME_GPU_POWER_MAX_DECIMALS);
    return -1;
  }
  out->kind = REGIME_GPU_POWER_WATTS;
  out->value = v;
  return 0;
}

void regime_gpu_power_format(const struct regime_gpu_power* power, char* buf, size_t len) {
  char number[64];
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
      format_plain(power->value, number, sizeof number);
      snprintf(buf, len, "%s", number);
      break;
    case REGIME_GPU_POWER_PERCENT:
      format_plain(power->value, number, sizeof number);
      snprintf(buf, len, "%s%%", number);
      break;
  }
}
