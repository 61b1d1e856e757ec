#pragma once
// What CMake's generate_export_header writes for prometheus-cpp's core built as a static library:
// no visibility attributes (Regime links it statically into one binary).
#define PROMETHEUS_CPP_CORE_EXPORT
#define PROMETHEUS_CPP_CORE_NO_EXPORT
#define PROMETHEUS_CPP_CORE_DEPRECATED __attribute__((__deprecated__))
