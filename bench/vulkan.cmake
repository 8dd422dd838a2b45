# Vulkan benchmarks, included from bench/CMakeLists.txt when the Vulkan
# backend is built.
if(RELO_HAVE_VULKAN)
  relo_add_bench(bench_vulkan_reloc LIBS relo_vulkan)
endif()
