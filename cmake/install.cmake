# Installing regime: `cmake --install` and the Debian package (CPack). Included once from the
# top-level CMakeLists.txt, after the `regime` target:
#
#   binary          bin/regime
#   GPU spec files  share/regime/gpus/*.json      (found from the binary's own place, paths.hpp)
#   Python helper   lib/python3/dist-packages/regime_step  (prefix /usr; else lib/pythonX.Y/...)
#   docs            share/doc/regime/ (with img/, the pictures docs/report.md shows, and
#                   examples/regime.toml, a site config file: docs/install.md)
#   man pages       share/man/man1/regime.1       (help2man from --help, every subcommand's too),
#                   share/man/man8/regimed.8      (the node agent's, from regimed --help)
#   completion      share/bash-completion/completions/regime
#   node agent      bin/regimed, lib/systemd/system/regimed.service (not enabled: it starts once
#                   /etc/regime/regimed.policy exists and an administrator enables it),
#                   share/regime/regimed.policy.example  (docs/agent.md)
#   other units     lib/systemd/system/regime-restore.service (the restore at boot) and
#                   regime-export.service (the exporter: docs/export.md), not enabled
#
# The package: configure with -DCMAKE_INSTALL_PREFIX=/usr, build, then `cpack -G DEB` in the
# build folder (scripts/test-package.sh does it and checks the installed tool).
include(GNUInstallDirs)

# A build folder outside the source tree finds the spec files through this link, so nothing
# about the build's location is compiled into the binary (src/common/paths.hpp).
if(NOT CMAKE_BINARY_DIR STREQUAL CMAKE_SOURCE_DIR)
  file(CREATE_LINK "${CMAKE_SOURCE_DIR}/data" "${CMAKE_BINARY_DIR}/data" SYMBOLIC)
endif()

# Where `import regime_step` finds the helper with the system's python3: Debian's
# version-independent dist-packages under /usr, the versioned one Debian's python3 reads under
# any other prefix (/usr/local/lib/python3.11/dist-packages). Worked out again at each configure,
# so a changed prefix changes it too; -DREGIME_INSTALL_PYTHONDIR=... sets it outright.
set(REGIME_INSTALL_PYTHONDIR "" CACHE STRING
    "Where the regime_step Python package is installed, relative to the prefix (empty: chosen by the prefix)")
if(REGIME_INSTALL_PYTHONDIR)
  set(_regime_pythondir "${REGIME_INSTALL_PYTHONDIR}")
elseif(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(_regime_pythondir "lib/python3/dist-packages")
else()
  execute_process(COMMAND /usr/bin/python3 -c "import sys; print('%d.%d' % sys.version_info[:2])"
                  OUTPUT_VARIABLE _regime_python_version OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _regime_python_rc ERROR_QUIET)
  if(_regime_python_rc EQUAL 0)
    set(_regime_pythondir "lib/python${_regime_python_version}/dist-packages")
  else()
    set(_regime_pythondir "lib/python3/dist-packages")
  endif()
endif()

install(TARGETS regime regimed RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The unit names /usr/bin/regimed: other prefixes install it for reference only.
install(FILES deploy/systemd/regimed.service deploy/systemd/regime-restore.service
        deploy/systemd/regime-export.service DESTINATION lib/systemd/system)
install(FILES deploy/systemd/regimed.policy DESTINATION ${CMAKE_INSTALL_DATADIR}/regime
        RENAME regimed.policy.example)
install(DIRECTORY data/gpus DESTINATION ${CMAKE_INSTALL_DATADIR}/regime
        FILES_MATCHING PATTERN "*.json")
# The charting library report pages inline (scripts/deps.sh copies it from report/node_modules).
install(FILES data/report/echarts.min.js DESTINATION ${CMAKE_INSTALL_DATADIR}/regime/report
        OPTIONAL)
# The exporter's deployment examples (docs/export.md): Grafana dashboard, Prometheus scrape
# configuration, systemd unit; copied into place by the administrator.
install(DIRECTORY deploy/ DESTINATION ${CMAKE_INSTALL_DATADIR}/regime/deploy
        PATTERN "test_*.py" EXCLUDE PATTERN "__pycache__" EXCLUDE)
install(DIRECTORY python/regime_step DESTINATION ${_regime_pythondir}
        PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)
# The licence and changelog where Debian policy puts them: share/doc/regime/copyright and
# changelog.Debian.gz (compressed reproducibly: no name or time stamp in the gzip header).
install(FILES packaging/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
set(REGIME_CHANGELOG_GZ ${CMAKE_BINARY_DIR}/changelog.Debian.gz)
add_custom_command(
  OUTPUT ${REGIME_CHANGELOG_GZ}
  COMMAND gzip -9nc ${CMAKE_SOURCE_DIR}/packaging/changelog > ${REGIME_CHANGELOG_GZ}
  DEPENDS ${CMAKE_SOURCE_DIR}/packaging/changelog
  VERBATIM)
add_custom_target(regime_changelog ALL DEPENDS ${REGIME_CHANGELOG_GZ})
install(FILES ${REGIME_CHANGELOG_GZ} DESTINATION ${CMAKE_INSTALL_DOCDIR})
file(GLOB REGIME_DOCS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs/*.md)
install(FILES README.md LICENSE ${REGIME_DOCS} DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The pages link their pictures as img/NAME.png: installed beside them, they show from there too.
install(DIRECTORY docs/img DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES packaging/examples/regime.toml DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES packaging/regime.bash-completion
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME regime)

# The man page is `regime --help` (help2man), with every subcommand's --help as COMMANDS and the
# environment and files from packaging/regime.h2m, so the two cannot disagree.
find_program(HELP2MAN help2man)
if(NOT HELP2MAN)
  message(FATAL_ERROR "help2man not found: the man page is made from --help with it "
                      "(scripts/deps.sh installs it; Debian package help2man)")
endif()
set(REGIME_MAN_PAGE ${CMAKE_BINARY_DIR}/regime.1)
add_custom_command(
  OUTPUT ${REGIME_MAN_PAGE}
  COMMAND ${CMAKE_COMMAND} -DREGIME=$<TARGET_FILE:regime> -DHELP2MAN=${HELP2MAN}
          -DSTATIC_INCLUDE=${CMAKE_SOURCE_DIR}/packaging/regime.h2m -DOUT=${REGIME_MAN_PAGE}
          -P ${CMAKE_SOURCE_DIR}/cmake/manpage.cmake
  DEPENDS regime ${CMAKE_SOURCE_DIR}/cmake/manpage.cmake ${CMAKE_SOURCE_DIR}/packaging/regime.h2m
  COMMENT "Man page regime.1 from regime --help"
  VERBATIM)
# The node agent's page the same way, from `regimed --help` and packaging/regimed.h2m.
set(REGIMED_MAN_PAGE ${CMAKE_BINARY_DIR}/regimed.8)
add_custom_command(
  OUTPUT ${REGIMED_MAN_PAGE}
  COMMAND ${CMAKE_COMMAND} -DREGIME=$<TARGET_FILE:regimed> -DHELP2MAN=${HELP2MAN}
          -DSTATIC_INCLUDE=${CMAKE_SOURCE_DIR}/packaging/regimed.h2m -DOUT=${REGIMED_MAN_PAGE}
          "-DNAME=Regime's node agent: GPU power limits for the users its policy allows"
          -DSECTION=8 -P ${CMAKE_SOURCE_DIR}/cmake/manpage.cmake
  DEPENDS regimed ${CMAKE_SOURCE_DIR}/cmake/manpage.cmake
          ${CMAKE_SOURCE_DIR}/packaging/regimed.h2m
  COMMENT "Man page regimed.8 from regimed --help"
  VERBATIM)
add_custom_target(regime_man ALL DEPENDS ${REGIME_MAN_PAGE} ${REGIMED_MAN_PAGE})
install(FILES ${REGIME_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${REGIMED_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)

if(REGIME_BUILD_TESTS)
  # The installed tree on its own (no root): scripts/test-install-tree.sh. The Debian package is
  # checked by scripts/test-package.sh (root: dpkg -i).
  add_test(NAME install_tree
           COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/test-install-tree.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(install_tree PROPERTIES LABELS e2e)
  # Every shipped unit below 5 in `systemd-analyze security`, keeping what its service needs.
  add_test(NAME systemd_units
           COMMAND python3 ${CMAKE_SOURCE_DIR}/deploy/systemd/test_unit_security.py)
  # The example regime.toml is accepted by the commands it sets defaults for.
  add_test(NAME example_config
           COMMAND python3 ${CMAKE_SOURCE_DIR}/packaging/test_example_config.py)
  set_tests_properties(systemd_units PROPERTIES LABELS unit TIMEOUT 120)
  set_tests_properties(example_config PROPERTIES LABELS e2e TIMEOUT 120 ENVIRONMENT
                       "REGIME_BINARY=$<TARGET_FILE:regime>")
endif()

# Debian package. Runtime dependencies come from the binary's own links (dpkg-shlibdeps: libfmt9,
# libsqlite3-0, libmariadb3 (>= 3.0.0) for a run store on a server, libceres3, libstdc++6, ...), so
# they follow whatever the build linked.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME regime)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "regime-first GPU power management for deep-learning work")
set(CPACK_PACKAGE_DESCRIPTION
    "Measures a GPU + workload pair, names its regime (cap-bound, thermal-bound, headroom, \
underutilized, idle) with the evidence, and only then decides whether a power cap saves energy \
per training step; finds the cap with few probes, applies it safely (journaled, always \
restored) and reports energy per completed step with a confidence interval. NVIDIA GPUs \
through NVML (loaded at run time), and simulated GPUs for trying it without one.")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
# The project has no public list or domain yet: the address says so (.invalid, RFC 2606).
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "Regime developers <maintainers@regime.invalid>")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# python3 runs the step-marker helper; man-db and bash-completion read the page and completion.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3, man-db, bash-completion")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)
include(CPack)
