/*
 * pattern.h — the bytes the host-backend replay writes into each
 * allocation and checks later: a function of the allocation's id and the
 * offset, so a byte that moved to the wrong place, or was lost, shows.
 *
 * Checking every byte of a multi-GiB replay after every relocation costs
 * minutes, so the default covers the first and last 4 KiB of each
 * allocation and 64 bytes at every MiB boundary; `full` covers all.
 */
#ifndef RELO_TOOLS_PATTERN_H
#define RELO_TOOLS_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relo.h"

/**
 * Writes the pattern of id into the allocation (size bytes) with relo_write.
 * Returns RELO_OK or the first failing status.
 */
relo_status pattern_write(relo_device *device, relo_handle handle, uint64_t id, uint64_t size, bool full);

/**
 * Reads the allocation back with relo_read and compares. Returns RELO_OK,
 * RELO_ERR_CORRUPT on a mismatch (the first differing offset goes to
 * *bad_offset), or relo_read's status.
 */
relo_status pattern_check(relo_device *device, relo_handle handle, uint64_t id, uint64_t size, bool full,
                          uint64_t *bad_offset);

#endif /* RELO_TOOLS_PATTERN_H */
