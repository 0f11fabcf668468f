// Bytes allocated and not freed, from glibc's mallinfo2 (0 where there is none): for the
// session memory benchmark.
#pragma once
#include <stddef.h>
#if defined(__GLIBC__) || defined(__linux__)
#include <malloc.h>
#endif

static inline size_t cmallocinfo_allocated_bytes(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
#else
    return 0;
#endif
}
