// add1.comp — adds 1 to each 32-bit word of one storage buffer range (the
// Vulkan backend test's kernel: the range is a relo binding's buffer,
// offset and size). Compiled to SPIR-V at build time by glslangValidator.
#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer Words { uint words[]; };
layout(push_constant) uniform Count { uint n; } count;
void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < count.n) words[i] += 1u;
}
