# Included from traces/collector/CMakeLists.txt when sanitizer.h and libsanitizer-public exist.
set(UVMSIM_SANITIZER_ARCHS "60;61;70;75;80;86;89;90" CACHE STRING
    "SM architectures the access-tracer patch is compiled for")
option(UVMSIM_SANITIZER_NEWVALUE
       "the toolkit's global-access patch callback has the trailing 'const void* newValue'" ON)
set(_gencode "")
foreach(a ${UVMSIM_SANITIZER_ARCHS})
  list(APPEND _gencode -gencode arch=compute_${a},code=sm_${a})
endforeach()
set(_fatbin ${CMAKE_BINARY_DIR}/uvmtrace_patches.fatbin)
add_custom_command(
  OUTPUT ${_fatbin}
  COMMAND ${UVMSIM_NVCC} --fatbin --compile-as-tools-patch ${_gencode}
          -DUVMTRACE_PATCH_NEWVALUE=$<BOOL:${UVMSIM_SANITIZER_NEWVALUE}>
          -I${UVMSIM_SANITIZER_INCLUDE} -o ${_fatbin}
          ${CMAKE_SOURCE_DIR}/traces/collector/sanitizer/patches.cu
  DEPENDS ${CMAKE_SOURCE_DIR}/traces/collector/sanitizer/patches.cu
  COMMENT "nvcc: access-tracer patch (uvmtrace_patches.fatbin)")
add_custom_target(uvmtrace_patches ALL DEPENDS ${_fatbin})
add_library(uvmtrace_accesses SHARED ${CMAKE_SOURCE_DIR}/traces/collector/sanitizer/access_tracer.cpp)
target_include_directories(uvmtrace_accesses PRIVATE ${CMAKE_SOURCE_DIR})
target_include_directories(uvmtrace_accesses SYSTEM PRIVATE ${UVMSIM_SANITIZER_INCLUDE}
                                                            ${UVMSIM_CUDA_INCLUDE})
target_link_libraries(uvmtrace_accesses PRIVATE ${UVMSIM_SANITIZER_LIB} ${CMAKE_DL_LIBS})
set_target_properties(uvmtrace_accesses PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
if(UVMSIM_SANITIZE)
  target_compile_options(uvmtrace_accesses PRIVATE -fno-sanitize=all)
  target_link_options(uvmtrace_accesses PRIVATE -fno-sanitize=all)
endif()
add_dependencies(uvmtrace_accesses uvmtrace_patches)
add_dependencies(uvmsim-collect uvmtrace_accesses)
target_compile_definitions(uvmsim-collect PRIVATE UVMSIM_HAVE_ACCESS_TRACER=1)
