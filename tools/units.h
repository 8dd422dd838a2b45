/*
 * units.h — byte counts as people write and read them: "512M", "1.5GiB",
 * "38.3 GiB".
 */
#ifndef RELO_TOOLS_UNITS_H
#define RELO_TOOLS_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * Parses a byte count: digits, an optional fraction, and an optional
 * suffix K, M, G, T, KiB, MiB, GiB, TiB (all powers of 1024; case of the
 * letter is ignored, "B" alone means bytes). Returns false for anything
 * else, a fraction of a byte, or a value over 64 bits.
 */
bool units_parse_bytes(const char *text, uint64_t *out);

/** Parses a plain decimal count (digits only, at most 2^64 - 1). */
bool units_parse_count(const char *text, uint64_t *out);

/** Formats bytes as "5.33 GiB", "812 KiB", "100 B" into out. Returns out. */
char *units_format_bytes(uint64_t bytes, char *out, size_t cap);

#endif /* RELO_TOOLS_UNITS_H */
