/*
 * parse_util.c — field splitting and overflow-checked number parsing.
 *
 * strtoull is avoided on purpose: it skips blanks, accepts signs, and needs
 * NUL-terminated input, and fields here are slices of a line that may hold
 * any byte.
 */
#include "parse_util.h"

#include <stdio.h>
#include <string.h>

parse_result parse_u64_dec(const char *s, size_t n, uint64_t *out)
{
    if (n == 0) return PARSE_EMPTY;
    uint64_t v = 0;
    bool overflow = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < '0' || c > '9') return PARSE_NOT_NUMBER;
        unsigned d = c - '0';
        if (v > (UINT64_MAX - d) / 10)
            overflow = true;
        else
            v = v * 10 + d;
    }
    if (overflow) return PARSE_OVERFLOW;
    *out = v;
    return PARSE_OK;
}

static int hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

parse_result parse_u64_any(const char *s, size_t n, uint64_t *out)
{
    if (n < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return parse_u64_dec(s, n, out);
    if (n == 2) return PARSE_NOT_NUMBER;
    uint64_t v = 0;
    bool overflow = false;
    for (size_t i = 2; i < n; i++) {
        int d = hex_digit((unsigned char)s[i]);
        if (d < 0) return PARSE_NOT_NUMBER;
        if (v >> 60) overflow = true;
        v = (v << 4) | (uint64_t)d;
    }
    if (overflow) return PARSE_OVERFLOW;
    *out = v;
    return PARSE_OK;
}

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

size_t parse_split_blank(const char *line, size_t n, parse_field *fields, size_t max)
{
    size_t count = 0, i = 0;
    for (;;) {
        while (i < n && blank(line[i])) i++;
        if (i == n) return count;
        size_t start = i;
        while (i < n && !blank(line[i])) i++;
        if (count < max) {
            fields[count].s = line + start;
            fields[count].n = i - start;
        }
        count++;
    }
}

size_t parse_split_comma(const char *line, size_t n, parse_field *fields, size_t max)
{
    size_t count = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && line[i] != ',') continue;
        size_t a = start, b = i;
        while (a < b && blank(line[a])) a++;
        while (b > a && blank(line[b - 1])) b--;
        if (count < max) {
            fields[count].s = line + a;
            fields[count].n = b - a;
        }
        count++;
        start = i + 1;
    }
    return count;
}

void parse_quote(const char *s, size_t n, char *out, size_t out_cap)
{
    if (out_cap == 0) return;
    size_t limit = 32, o = 0;
    for (size_t i = 0; i < n && i < limit && o + 1 < out_cap; i++) {
        unsigned char c = (unsigned char)s[i];
        out[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (n > limit && o + 4 < out_cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

bool parse_field_is(parse_field f, const char *word)
{
    size_t k = strlen(word);
    return f.n == k && memcmp(f.s, word, k) == 0;
}
