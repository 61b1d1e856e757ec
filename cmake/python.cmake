# The Python side (docs/python.md): the in-process monitor's C API as a shared library,
# libregime_monitor.so, which the regime_step package loads with ctypes; a wheel that bundles
# it; where both are installed; and the Python tests that need them. Included once from the
# top-level CMakeLists.txt, after the layers.
include(GNUInstallDirs)

# The layers the library holds are compiled position-independent, so they link into it.
set_target_properties(regime_common regime_trace regime_analysis regime_device regime_run
                      regime_monitor PROPERTIES POSITION_INDEPENDENT_CODE ON)
# sim: devices in the monitor: the simulator and the GPU specs it reads (twin). Nothing of twin's
# fitting is linked in, so the libraries only Ceres needs are left out (--as-needed).
set_target_properties(regime_sim regime_twin PROPERTIES POSITION_INDEPENDENT_CODE ON)
add_library(regime_monitor_c SHARED src/monitor/c_api/regime_monitor.cpp)
set_target_properties(regime_monitor_c PROPERTIES OUTPUT_NAME regime_monitor)
target_compile_options(regime_monitor_c PRIVATE ${REGIME_WARNINGS})
target_link_libraries(regime_monitor_c PRIVATE regime_monitor)
# Only the C API is exported: the C++ inside (fmt, nlohmann-json, Regime's own) cannot clash
# with another copy loaded in the same Python process (PyTorch's, say).
set(REGIME_MONITOR_EXPORTS ${CMAKE_SOURCE_DIR}/src/monitor/c_api/exports.map)
target_link_options(regime_monitor_c PRIVATE -Wl,--gc-sections -Wl,--no-undefined -Wl,--as-needed
                    -Wl,--version-script=${REGIME_MONITOR_EXPORTS})
set_target_properties(regime_monitor_c PROPERTIES LINK_DEPENDS ${REGIME_MONITOR_EXPORTS})
# Self-contained, so the wheel installs on hosts without Debian's libfmt or this GCC's
# libstdc++: libstdc++ is linked in (hidden by the version script), and so is fmt's compiled
# part (fmt_linked_in.cpp holds fmt 9's; --as-needed then drops libfmt.so). What remains is
# glibc and libgcc_s; the wheel's tag names the oldest glibc the library needs
# (build_backend/regime_step_build.py reads it from the library's symbol versions).
target_link_options(regime_monitor_c PRIVATE -static-libstdc++ -Wl,--as-needed)
if(fmt_VERSION VERSION_GREATER_EQUAL 9 AND fmt_VERSION VERSION_LESS 10)
  target_sources(regime_monitor_c PRIVATE src/monitor/c_api/fmt_linked_in.cpp)
else()
  message(WARNING "fmt ${fmt_VERSION}: libregime_monitor.so (and the wheel) will need libfmt.so")
endif()

# A wheel with the library inside, so `pip install` of it into any venv on this platform has
# the monitor with nothing else installed: python/regime_step-VERSION-py3-none-linux_ARCH.whl.
# The library goes in stripped of its debug information (19 MB -> 1.1 MB).
set(REGIME_WHEEL_DIR ${CMAKE_BINARY_DIR}/python)
set(REGIME_WHEEL_LIBRARY ${CMAKE_BINARY_DIR}/python-lib/libregime_monitor.so)
file(GLOB_RECURSE REGIME_PYTHON_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/regime_step/*.py
     ${CMAKE_SOURCE_DIR}/python/build_backend/*.py)
add_custom_command(
  OUTPUT ${REGIME_WHEEL_DIR}/wheel.stamp
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${REGIME_WHEEL_DIR}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${REGIME_WHEEL_DIR} ${CMAKE_BINARY_DIR}/python-lib
  COMMAND ${CMAKE_STRIP} --strip-unneeded -o ${REGIME_WHEEL_LIBRARY} $<TARGET_FILE:regime_monitor_c>
  COMMAND ${CMAKE_COMMAND} -E env REGIME_WHEEL_LIBRARY=${REGIME_WHEEL_LIBRARY}
          python3 ${CMAKE_SOURCE_DIR}/python/build_backend/regime_step_build.py ${REGIME_WHEEL_DIR}
  COMMAND ${CMAKE_COMMAND} -E touch ${REGIME_WHEEL_DIR}/wheel.stamp
  DEPENDS regime_monitor_c ${REGIME_PYTHON_SOURCES} ${CMAKE_SOURCE_DIR}/python/pyproject.toml
  COMMENT "Python wheel with libregime_monitor.so"
  VERBATIM)
add_custom_target(regime_wheel ALL DEPENDS ${REGIME_WHEEL_DIR}/wheel.stamp)

# Installed: the library in Regime's private folder, where the package installed beside the
# system's python3 finds it, and the wheel for virtual environments (pip install
# /usr/share/regime/python/regime_step-*.whl).
install(TARGETS regime_monitor_c LIBRARY DESTINATION lib/regime)
install(DIRECTORY ${REGIME_WHEEL_DIR}/ DESTINATION ${CMAKE_INSTALL_DATADIR}/regime/python
        FILES_MATCHING PATTERN "*.whl")

if(REGIME_BUILD_TESTS)
  # The Python tests that drive the C++ core: the monitor and step-marker batches through
  # `regime probe`, and the optimizer's studies, on the fake NVML. 88 s on 2 busy cores; the
  # timeout leaves room for a machine running builds beside it.
  add_test(NAME python_native
           COMMAND python3 -m unittest discover -s ${CMAKE_SOURCE_DIR}/python -p "native_test_*.py")
  set_tests_properties(python_native PROPERTIES LABELS e2e TIMEOUT 300 ENVIRONMENT
    "REGIME_BINARY=$<TARGET_FILE:regime>;REGIME_FAKE_NVML=$<TARGET_FILE:fake_nvml>;REGIME_MONITOR_LIBRARY=$<TARGET_FILE:regime_monitor_c>;REGIME_WHEEL_DIR=${REGIME_WHEEL_DIR}")
  # The wheel is self-contained: its tag, its licence, and a run where libfmt is absent.
  add_test(NAME python_wheel
           COMMAND python3 ${CMAKE_SOURCE_DIR}/python/test_package_install.py SelfContainedWheel)
  set_tests_properties(python_wheel PROPERTIES LABELS e2e TIMEOUT 120 ENVIRONMENT
                       "REGIME_WHEEL_DIR=${REGIME_WHEEL_DIR}")
endif()
if(REGIME_BUILD_TESTS)
  target_link_libraries(regime_unit_tests PRIVATE regime_monitor)  # src/monitor/*_test.cpp
endif()
