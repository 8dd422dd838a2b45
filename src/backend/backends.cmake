# Backends. The host and simulated ones need nothing but libc, so they are
# part of librelo: they append their sources to RELO_BACKEND_SOURCES. Each
# device backend needs its vendor's runtime, so it is a library of its own
# (librelo_<name>, see relo_add_backend_library in CMakeLists.txt) and a
# component of the installed package with its own relo-<name>.pc: a program
# that uses only the core needs no GPU toolkit to build, link or run.
#
# A device backend that is found sets RELO_HAVE_<NAME> (ON/OFF, for tests,
# examples and benchmarks), RELO_<NAME>_SOURCES, and appends its public
# header to RELO_BACKEND_PUBLIC_HEADERS and its component name to
# RELO_BACKEND_COMPONENTS. Included from the top-level CMakeLists.txt, so
# paths are relative to the project root.
list(APPEND RELO_BACKEND_SOURCES src/backend/hostlike.c src/backend/host.c src/backend/sim.c)

# relo_backend_mode(<var> <out>) — normalises an AUTO/ON/OFF cache value.
function(relo_backend_mode var out)
  string(TOUPPER "${${var}}" mode)
  if(mode STREQUAL "" OR mode STREQUAL "AUTO")
    set(${out} AUTO PARENT_SCOPE)
  elseif(mode STREQUAL "ON" OR mode STREQUAL "YES" OR mode STREQUAL "TRUE" OR mode STREQUAL "1")
    set(${out} ON PARENT_SCOPE)
  else()
    set(${out} OFF PARENT_SCOPE)
  endif()
endfunction()

# OpenCL: built when the headers and an ICD loader are found.
set(RELO_HAVE_OPENCL OFF)
relo_backend_mode(RELO_WITH_OPENCL _relo_opencl_mode)
if(NOT _relo_opencl_mode STREQUAL "OFF")
  if(_relo_opencl_mode STREQUAL "ON")
    find_package(OpenCL REQUIRED)
  else()
    find_package(OpenCL QUIET)
  endif()
  if(OpenCL_FOUND)
    set(RELO_HAVE_OPENCL ON)
    set(RELO_OPENCL_SOURCES src/backend/opencl.c)
    list(APPEND RELO_BACKEND_PUBLIC_HEADERS include/relo_opencl.h)
    list(APPEND RELO_BACKEND_COMPONENTS opencl)
    message(STATUS "relo: OpenCL backend on (${OpenCL_LIBRARIES})")
  else()
    message(STATUS "relo: OpenCL backend off (OpenCL not found)")
  endif()
endif()

# CUDA: driver API only, built when the toolkit is found. Linking needs
# only libcuda's stub; running needs a driver and a device.
set(RELO_HAVE_CUDA OFF)
relo_backend_mode(RELO_WITH_CUDA _relo_cuda_mode)
if(NOT _relo_cuda_mode STREQUAL "OFF" AND EXISTS ${CMAKE_CURRENT_LIST_DIR}/cuda.c)
  if(_relo_cuda_mode STREQUAL "ON")
    find_package(CUDAToolkit REQUIRED)
  else()
    find_package(CUDAToolkit QUIET)
  endif()
  if(CUDAToolkit_FOUND AND TARGET CUDA::cuda_driver)
    set(RELO_HAVE_CUDA ON)
    set(RELO_CUDA_SOURCES src/backend/cuda.c)
    list(APPEND RELO_BACKEND_PUBLIC_HEADERS include/relo_cuda.h)
    list(APPEND RELO_BACKEND_COMPONENTS cuda)
    message(STATUS "relo: CUDA backend on (toolkit ${CUDAToolkit_VERSION})")
  else()
    message(STATUS "relo: CUDA backend off (CUDA toolkit not found)")
  endif()
endif()

# Vulkan: built when the headers and the loader are found. Running needs a
# Vulkan driver (Mesa's lavapipe runs on any CPU).
set(RELO_HAVE_VULKAN OFF)
relo_backend_mode(RELO_WITH_VULKAN _relo_vulkan_mode)
if(NOT _relo_vulkan_mode STREQUAL "OFF")
  if(_relo_vulkan_mode STREQUAL "ON")
    find_package(Vulkan REQUIRED)
  else()
    find_package(Vulkan QUIET)
  endif()
  if(Vulkan_FOUND)
    set(RELO_HAVE_VULKAN ON)
    set(RELO_VULKAN_SOURCES src/backend/vulkan.c)
    list(APPEND RELO_BACKEND_PUBLIC_HEADERS include/relo_vulkan.h)
    list(APPEND RELO_BACKEND_COMPONENTS vulkan)
    message(STATUS "relo: Vulkan backend on (${Vulkan_LIBRARIES})")
  else()
    message(STATUS "relo: Vulkan backend off (Vulkan headers and loader not found)")
  endif()
endif()
