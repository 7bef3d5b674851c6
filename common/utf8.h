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

/* True when the well-formed sequence at p (k bytes, from dl__utf8_seq; 0 for a byte
 * that is not one) is text a terminal acts on rather than shows, so that what is shown
 * is not what is there: the C0 controls and DEL, the C1 controls (U+0080..U+009F: C2 80
 * .. C2 9F), the bidirectional marks, embeddings, overrides and isolates (U+061C,
 * U+200E, U+200F, U+202A..U+202E, U+2066..U+2069), the line and paragraph separators
 * (U+2028, U+2029), and bytes that are not UTF-8. The one test of what the command's
 * output and the log lines escape. */
static inline bool dl__utf8_is_control(const unsigned char *p, size_t k)
{
    if (k == 0)
        return true;
    if (k == 1)
        return p[0] < 0x20 || p[0] == 0x7F;
    if (k == 2)
        return (p[0] == 0xC2 && p[1] < 0xA0) || (p[0] == 0xD8 && p[1] == 0x9C);
    if (k != 3 || p[0] != 0xE2)
        return false;
    if (p[1] == 0x80)
        return p[2] == 0x8E || p[2] == 0x8F || (p[2] >= 0xA8 && p[2] <= 0xAE);
    return p[1] == 0x81 && p[2] >= 0xA6 && p[2] <= 0xA9;
}

/* The code point of the well-formed sequence at p (k bytes, 1..4). */
static inline unsigned long dl__utf8_code_point(const unsigned char *p, size_t k)
{
    if (k == 1)
        return p[0];
    unsigned long cp = p[0] & (0x7F >> k);
    for (size_t i = 1; i < k; i++)
        cp = cp << 6 | (p[i] & 0x3F);
    return cp;
}

#endif
