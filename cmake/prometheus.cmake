# prometheus-cpp's core (vendored in third_party/prometheus-cpp: Debian 12 has no package) as a
# static library, and Debian's cpp-httplib (libcpp-httplib-dev, through pkg-config) that serves
# its text over HTTP. Both are linked to the export layer alone.
set(REGIME_PROMETHEUS_DIR ${CMAKE_SOURCE_DIR}/third_party/prometheus-cpp)
file(GLOB_RECURSE REGIME_PROMETHEUS_SOURCES CONFIGURE_DEPENDS ${REGIME_PROMETHEUS_DIR}/core/src/*.cc)
add_library(regime_prometheus_core STATIC ${REGIME_PROMETHEUS_SOURCES})
# SYSTEM: third-party headers do not meet Regime's warning flags.
target_include_directories(regime_prometheus_core SYSTEM PUBLIC
  ${REGIME_PROMETHEUS_DIR}/core/include ${REGIME_PROMETHEUS_DIR}/generated)
target_include_directories(regime_prometheus_core PRIVATE ${REGIME_PROMETHEUS_DIR}/core/src)
target_link_libraries(regime_prometheus_core PRIVATE Threads::Threads)
set_target_properties(regime_prometheus_core PROPERTIES POSITION_INDEPENDENT_CODE ON)

find_package(PkgConfig REQUIRED)
pkg_check_modules(CPP_HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
target_link_libraries(regime_export PRIVATE regime_prometheus_core PkgConfig::CPP_HTTPLIB)
