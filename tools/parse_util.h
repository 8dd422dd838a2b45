/*
 * parse_util.h — small, bounds-checked text helpers the trace parsers share:
 * splitting fields and reading unsigned numbers without overflow.
 */
#ifndef RELO_TOOLS_PARSE_UTIL_H
#define RELO_TOOLS_PARSE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** How a number failed to parse. */
typedef enum parse_result {
    PARSE_OK = 0,
    PARSE_EMPTY,      /**< no characters */
    PARSE_NOT_NUMBER, /**< a character that is not a digit */
    PARSE_OVERFLOW,   /**< more than 64 bits */
    PARSE_RESULT_COUNT
} parse_result;

/** Reads s[0..n) as a decimal number into *out. */
parse_result parse_u64_dec(const char *s, size_t n, uint64_t *out);

/** Reads s[0..n) as "0x" + hex digits, or as decimal, into *out. */
parse_result parse_u64_any(const char *s, size_t n, uint64_t *out);

/** A field: a pointer into the line and its length (not NUL-terminated). */
typedef struct parse_field {
    const char *s;
    size_t n;
} parse_field;

/**
 * Splits line[0..n) at spaces and tabs into at most max fields; returns
 * how many there are in total (may exceed max: the extra are not stored).
 */
size_t parse_split_blank(const char *line, size_t n, parse_field *fields, size_t max);

/**
 * Splits line[0..n) at commas into at most max fields, trimming blanks
 * around each; returns the total count (may exceed max).
 */
size_t parse_split_comma(const char *line, size_t n, parse_field *fields, size_t max);

/**
 * Copies a field into out (out_cap bytes) for an error message: at most 32
 * characters, non-printable bytes shown as '?', "..." when cut.
 */
void parse_quote(const char *s, size_t n, char *out, size_t out_cap);

/** Whether field equals the NUL-terminated word. */
bool parse_field_is(parse_field f, const char *word);

#endif /* RELO_TOOLS_PARSE_UTIL_H */
