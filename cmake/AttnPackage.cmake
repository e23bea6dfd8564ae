# Installing attn as a package: the CMake config (lib/cmake/attn), the
# pkg-config files (lib/pkgconfig) and what they describe. The libraries,
# headers, tools and docs install themselves (runtime/, lib/JIT, tools/,
# docs/). Included after runtime/ and before the MLIR part, so that a
# runtime-only build (ATTN_RUNTIME_ONLY) installs the runtime's share of it;
# install(EXPORT) sees every target that joins attnTargets later.
include(CMakePackageConfigHelpers)

set(ATTN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/attn)
install(EXPORT attnTargets NAMESPACE attn::
  DESTINATION ${ATTN_INSTALL_CMAKEDIR} COMPONENT attn)
configure_package_config_file(${ATTN_SOURCE_DIR}/cmake/attnConfig.cmake.in
  ${ATTN_BINARY_DIR}/cmake/attnConfig.cmake
  INSTALL_DESTINATION ${ATTN_INSTALL_CMAKEDIR}
  NO_SET_AND_CHECK_MACRO)
# The SONAME policy in compatibility terms (cmake/AttnSharedLibrary.cmake).
write_basic_package_version_file(${ATTN_BINARY_DIR}/cmake/attnConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY ${ATTN_PACKAGE_COMPATIBILITY})
install(FILES
  ${ATTN_BINARY_DIR}/cmake/attnConfig.cmake
  ${ATTN_BINARY_DIR}/cmake/attnConfigVersion.cmake
  DESTINATION ${ATTN_INSTALL_CMAKEDIR} COMPONENT attn)

# pkg-config: relocatable (the prefix is found from the .pc file's own
# directory), so `cmake --install build --prefix P` gives a correct file
# whatever CMAKE_INSTALL_PREFIX was at configure time.
set(ATTN_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH ATTN_PC_PREFIX_FROM_PCFILEDIR
  /prefix/${ATTN_PKGCONFIG_DIR} /prefix)
string(REGEX REPLACE "/$" "" ATTN_PC_PREFIX_FROM_PCFILEDIR "${ATTN_PC_PREFIX_FROM_PCFILEDIR}")
function(attn_pkg_config name library)
  set(ATTN_PC_LIBRARY ${library})
  configure_file(${ATTN_SOURCE_DIR}/cmake/${name}.pc.in
    ${ATTN_BINARY_DIR}/pkgconfig/${name}.pc @ONLY)
  install(FILES ${ATTN_BINARY_DIR}/pkgconfig/${name}.pc
    DESTINATION ${ATTN_PKGCONFIG_DIR} COMPONENT attn)
endfunction()
attn_pkg_config(attn_runtime attn_runtime)
if(NOT ATTN_RUNTIME_ONLY)
  attn_pkg_config(attn attn)
endif()
