/* utf8.h: strict UTF-8 (RFC 3629) for the client, the coordination library and the fake
 * server: no overlong forms (C0 80, E0 80 80), no encoded surrogates (ED A0 80), nothing
 * past U+10FFFF, no truncated sequence. Inline functions, so that every library that
 * checks text (libddb, libddb_coord, libfakedb) has them without exporting a symbol.
 * Thread: any thread; the functions keep no state. */
#ifndef DL_UTF8_H
#define DL_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* The length (1..4) of the well-formed sequence at s, which has n > 0 bytes left; 0
 * when the bytes there are not one. Reads at most n bytes. */
static inline size_t dl__utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t k;
    unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        k = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        k = 3;
        if (c == 0xE0)
            lo = 0xA0; /* below is overlong */
        else if (c == 0xED)
            hi = 0x9F; /* above is a surrogate */
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4;
        if (c == 0xF0)
            lo = 0x90; /* below is overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* above is past U+10FFFF */
    } else {
        return 0; /* a continuation byte, C0, C1 (overlong), F5..FF */
    }
    if (n < k || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < k; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return k;
}

/* True when s (len bytes) is all well-formed UTF-8. */
static inline bool dl__utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        size_t k = dl__utf8_seq(p + i, len - i);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}

#endif
