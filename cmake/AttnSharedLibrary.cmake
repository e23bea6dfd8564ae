# attn_shared_library_abi(target): what every installed attn shared library
# (libattn.so, libattn_runtime.so) gets.
#
# SOVERSION policy (docs/Install.md): while the major version is 0 any minor
# release may change the ABI, so the SONAME carries MAJOR.MINOR
# (libattn.so.0.1); from 1.0 on it carries MAJOR only. attnConfigVersion.cmake
# says the same (SameMinorVersion before 1.0, SameMajorVersion after).
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(ATTN_SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  set(ATTN_PACKAGE_COMPATIBILITY SameMinorVersion)
else()
  set(ATTN_SOVERSION ${PROJECT_VERSION_MAJOR})
  set(ATTN_PACKAGE_COMPATIBILITY SameMajorVersion)
endif()

function(attn_shared_library_abi target)
  set_target_properties(${target} PROPERTIES
    VERSION ${PROJECT_VERSION}
    SOVERSION ${ATTN_SOVERSION}
    # Installed, a library finds its siblings beside itself; libattn.so
    # adds the LLVM library directory (lib/JIT/CMakeLists.txt).
    INSTALL_RPATH "\$ORIGIN"
    LINK_DEPENDS ${ATTN_SOURCE_DIR}/runtime/attn.map)
  target_link_options(${target} PRIVATE
    # Only attn_* leaves the library (runtime/attn.map).
    "LINKER:--version-script=${ATTN_SOURCE_DIR}/runtime/attn.map"
    # Every symbol the library uses resolves at link time, so a missing
    # dependency is a link error here and not a load error in a program.
    "LINKER:--no-undefined")
endfunction()
