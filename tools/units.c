/*
 * units.c — parsing and printing byte counts with binary suffixes.
 */
#include "units.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* The power of 1024 a suffix names, or -1 for an unknown suffix. */
static int suffix_power(const char *s)
{
    static const char letters[] = "KMGT";
    if (*s == '\0') return 0;
    if ((s[0] == 'B' || s[0] == 'b') && s[1] == '\0') return 0;
    const char *at = strchr(letters, toupper((unsigned char)s[0]));
    if (!at || s[0] == '\0') return -1;
    int power = (int)(at - letters) + 1;
    const char *rest = s + 1;
    if (*rest == '\0') return power;
    if ((rest[0] == 'i' || rest[0] == 'I') && (rest[1] == 'B' || rest[1] == 'b') && rest[2] == '\0')
        return power;
    if ((rest[0] == 'B' || rest[0] == 'b') && rest[1] == '\0') return power;
    return -1;
}

bool units_parse_bytes(const char *text, uint64_t *out)
{
    const char *p = text;
    uint64_t whole = 0;
    bool any = false;
    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (whole > (UINT64_MAX - d) / 10) return false;
        whole = whole * 10 + d;
        p++;
        any = true;
    }
    /* The fraction is frac / scale exactly: up to 19 digits (10^19 < 2^64)
     * after trailing zeros, which change nothing, are dropped. */
    uint64_t frac = 0, scale = 1;
    unsigned digits = 0, zeros = 0;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            if (*p == '0') {
                zeros++; /* kept back until a digit that matters follows */
            } else {
                if (digits + zeros + 1 > 19) return false;
                for (; zeros > 0; zeros--, digits++) {
                    frac *= 10;
                    scale *= 10;
                }
                frac = frac * 10 + (uint64_t)(*p - '0');
                scale *= 10;
                digits++;
            }
            p++;
            any = true;
        }
    }
    if (!any) return false;
    while (*p == ' ') p++;
    int power = suffix_power(p);
    if (power < 0) return false;
    uint64_t unit = 1;
    for (int i = 0; i < power; i++) unit *= 1024;
    if (whole > UINT64_MAX / unit) return false;
    uint64_t value = whole * unit;
    /* frac/scale of a unit is a whole number of bytes only when the reduced
     * scale divides the unit (a power of two); anything else is a fraction
     * of a byte and is refused rather than rounded. */
    uint64_t a = frac, b = scale;
    while (b) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    uint64_t g = a ? a : 1;
    frac /= g;
    scale /= g;
    if (unit % scale != 0) return false;
    uint64_t per = unit / scale;
    if (frac > UINT64_MAX / per) return false;
    uint64_t part = frac * per;
    if (value > UINT64_MAX - part) return false;
    *out = value + part;
    return true;
}

bool units_parse_count(const char *text, uint64_t *out)
{
    uint64_t v = 0;
    if (*text == '\0') return false;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9') return false;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

char *units_format_bytes(uint64_t bytes, char *out, size_t cap)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int i = 0;
    double v = (double)bytes;
    while (v >= 1024.0 && i < 6) {
        v /= 1024.0;
        i++;
    }
    if (i == 0)
        snprintf(out, cap, "%llu B", (unsigned long long)bytes);
    else if (v < 10.0)
        snprintf(out, cap, "%.2f %s", v, names[i]);
    else if (v < 100.0)
        snprintf(out, cap, "%.1f %s", v, names[i]);
    else
        snprintf(out, cap, "%.0f %s", v, names[i]);
    return out;
}
