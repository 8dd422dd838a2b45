# OpenCL examples, included from examples/CMakeLists.txt; built when the
# OpenCL backend is (RELO_HAVE_OPENCL, set in src/backend/backends.cmake).
# tests/examples/CMakeLists.txt runs them as tests.
if(RELO_HAVE_OPENCL)
  add_executable(relo-example-opencl-runtime opencl_runtime.c)
  target_link_libraries(relo-example-opencl-runtime PRIVATE relo_opencl)
  target_compile_options(relo-example-opencl-runtime PRIVATE ${RELO_WARNINGS})
  target_compile_definitions(relo-example-opencl-runtime PRIVATE _POSIX_C_SOURCE=200809L)
endif()
