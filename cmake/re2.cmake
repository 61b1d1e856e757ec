# RE2 (Debian: libre2-dev), for --step-regex: a workload's output is matched in time linear in
# its length, never by backtracking. Found through pkg-config; the static archive is preferred,
# so the binary runs on hosts that lack libre2 (the GPU machines). Linked to the layer that
# matches output lines (the run layer) and nothing else.
find_package(PkgConfig REQUIRED)
pkg_check_modules(RE2 REQUIRED re2)
find_library(REGIME_RE2_STATIC NAMES libre2.a HINTS ${RE2_LIBRARY_DIRS} NO_CACHE)
add_library(regime_re2 INTERFACE)
target_include_directories(regime_re2 SYSTEM INTERFACE ${RE2_INCLUDE_DIRS})
target_compile_options(regime_re2 INTERFACE ${RE2_CFLAGS_OTHER})
if(REGIME_RE2_STATIC)
  target_link_libraries(regime_re2 INTERFACE ${REGIME_RE2_STATIC} Threads::Threads)
else()
  target_link_directories(regime_re2 INTERFACE ${RE2_LIBRARY_DIRS})
  target_link_libraries(regime_re2 INTERFACE ${RE2_LIBRARIES})
endif()
target_link_libraries(regime_run PRIVATE regime_re2)
