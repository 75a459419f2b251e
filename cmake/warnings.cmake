# One warnings target for every target of the project (harness, backends, CLI, tests, tools): -Wall -Wextra
# -Wshadow, and -Werror when RECIPEBENCH_WERROR is ON (the presets turn it on, so CI's build, scripts/test, has it;
# scripts/gpu-build does not). recipebench_apply_warnings(DIR) links it into every compiled target defined under DIR,
# so a new target gets it without asking. Third-party headers come in as SYSTEM include directories (imported targets
# and Debian's /usr/include), so their warnings are not ours.
option(RECIPEBENCH_WERROR "Treat compiler warnings as errors (the default and harness presets turn it on)" OFF)
if(NOT TARGET recipebench_warnings)
  add_library(recipebench_warnings INTERFACE)
  # -Werror for C++ only: the CUDA sources (nvcc forwards the -W flags to the host compiler) warn, never fail.
  target_compile_options(recipebench_warnings INTERFACE -Wall -Wextra -Wshadow
                         $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${RECIPEBENCH_WERROR}>>:-Werror>)
  # GCC 12's -Wdangling-pointer fires inside yaml-cpp 0.7's node/impl.h (a false positive in a system header that
  # -isystem does not silence, the warning being emitted after inlining): shown, never fatal.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12)
    target_compile_options(recipebench_warnings INTERFACE -Wno-error=dangling-pointer)
  endif()
endif()

function(recipebench_apply_warnings dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|OBJECT_LIBRARY|MODULE_LIBRARY)$")
      target_link_libraries(${t} PRIVATE recipebench_warnings)
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(d IN LISTS subdirs)
    recipebench_apply_warnings(${d})
  endforeach()
endfunction()
