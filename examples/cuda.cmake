# CUDA examples, included from examples/CMakeLists.txt; built when the CUDA
# backend is (RELO_HAVE_CUDA, set in src/backend/backends.cmake).
if(RELO_HAVE_CUDA)
  add_executable(relo-example-cuda-graph cuda_graph.c)
  target_link_libraries(relo-example-cuda-graph PRIVATE relo_cuda)
  target_compile_options(relo-example-cuda-graph PRIVATE ${RELO_WARNINGS})
endif()
