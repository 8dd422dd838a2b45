// headers.cpp — the public headers compile as C++ (extern "C", no C-only
// constructs), and a C++ program can call relo through them.
#include <relo.h>
#include <relo_backend.h>

#include <cstdio>

int main()
{
    relo_backend *backend = nullptr;
    relo_device *device = nullptr;
    relo_stream *stream = nullptr;
    if (relo_backend_host_create(nullptr, &backend) != RELO_OK) return 1;
    if (relo_device_create(nullptr, backend, &device) != RELO_OK) return 1;
    if (relo_stream_create(device, nullptr, &stream) != RELO_OK) return 1;
    relo_handle h{};
    if (relo_reserve(stream, 4096, &h) != RELO_OK) return 1;
    relo_stats stats{};
    relo_device_stats(device, &stats);
    std::printf("%s: %llu bytes in use\n", relo_status_name(RELO_OK),
                static_cast<unsigned long long>(stats.bytes_in_use));
    relo_release(device, h);
    relo_stream_destroy(stream);
    return relo_device_destroy(device) == RELO_OK && stats.bytes_in_use == 4096 ? 0 : 1;
}
