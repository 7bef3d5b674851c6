/* encoding.c: HTTP content codings with zlib. A request body sent with Content-Encoding
 * gzip or deflate (the SDKs' request compression) is decoded before it is read, never
 * past the request size limit; an answer is gzipped when the client's Accept-Encoding
 * asks for gzip (identity, the default, otherwise). */
#include "protocol.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

/* The length of a coding token at s (up to ',', ';' or white space). */
static size_t token_len(const char *s)
{
    return strcspn(s, ",; \t");
}

static bool token_is(const char *s, size_t n, const char *name)
{
    return n == strlen(name) && !strncasecmp(s, name, n);
}

/* Inflates in into *out with zlib's window bits wbits, stopping once more than limit
 * bytes came out. 0, FDB_DECODE_TOO_LARGE or FDB_DECODE_BAD. */
static int inflate_all(int wbits, const char *in, size_t len, size_t limit, char **out,
                       size_t *out_len, const char **why)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, wbits) != Z_OK) {
        *why = "the decoder could not be made";
        return FDB_DECODE_BAD;
    }
    size_t cap = len < 4096 ? 8192 : len * 4, n = 0;
    if (cap > limit + 1)
        cap = limit + 1;
    char *buf = malloc(cap + 1);
    int rc = FDB_DECODE_BAD, zr = Z_OK;
    *why = "out of memory";
    z.next_in = (Bytef *)(uintptr_t)in;
    while (buf) {
        if (n == cap) {
            if (cap > limit) { /* one byte past the limit came out: refuse, inflate no more */
                rc = FDB_DECODE_TOO_LARGE;
                break;
            }
            size_t ncap = cap * 2 > limit + 1 ? limit + 1 : cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb)
                break;
            buf = nb;
            cap = ncap;
        }
        /* zlib's counts are unsigned int: feed at most 1 GB at a time */
        size_t in_left = len - (size_t)((const char *)z.next_in - in);
        z.avail_in = (uInt)(in_left > (1u << 30) ? (1u << 30) : in_left);
        z.next_out = (Bytef *)buf + n;
        z.avail_out = (uInt)(cap - n);
        zr = inflate(&z, Z_NO_FLUSH);
        n = cap - z.avail_out;
        if (zr == Z_STREAM_END) {
            size_t rest = len - (size_t)((const char *)z.next_in - in);
            if (rest) {
                *why = "bytes follow the end of the compressed data";
                break;
            }
            rc = 0;
            break;
        }
        if (zr == Z_BUF_ERROR && z.avail_out) { /* no progress with room to write: input ended */
            *why = "the compressed data is truncated";
            break;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR) {
            *why = zr == Z_MEM_ERROR ? "out of memory" : "the compressed data is corrupt";
            break;
        }
    }
    inflateEnd(&z);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    buf[n] = 0;
    *out = buf;
    *out_len = n;
    return 0;
}

int fakedb__body_decode(const char *coding, const char *in, size_t len, size_t limit,
                        char **out, size_t *out_len, const char **why)
{
    *out = NULL;
    *out_len = 0;
    *why = NULL;
    if (!coding)
        return 0;
    const char *s = coding + strspn(coding, " \t");
    size_t n = token_len(s);
    const char *rest = s + n + strspn(s + n, " \t");
    if (n == 0 || token_is(s, n, "identity"))
        return *rest ? (*why = "only one content coding is supported", FDB_DECODE_BAD) : 0;
    if (*rest) {
        *why = "only one content coding is supported";
        return FDB_DECODE_BAD;
    }
    if (token_is(s, n, "gzip") || token_is(s, n, "x-gzip"))
        return inflate_all(15 + 16, in, len, limit, out, out_len, why);
    if (token_is(s, n, "deflate")) {
        /* RFC 9110: deflate is the zlib format; some clients send raw deflate, whose
         * first two bytes are not a zlib header (a multiple of 31, method 8). */
        bool zlib = len >= 2 && (in[0] & 0x0f) == 8 &&
                    (((unsigned)(unsigned char)in[0] << 8) | (unsigned char)in[1]) % 31 == 0;
        return inflate_all(zlib ? 15 : -15, in, len, limit, out, out_len, why);
    }
    *why = "the content coding is not supported (gzip, deflate and identity are)";
    return FDB_DECODE_BAD;
}

bool fakedb__accepts_gzip(const char *accept)
{
    bool gzip = false, star = false, gzip_named = false;
    for (const char *p = accept; p && *p;) {
        p += strspn(p, " \t,");
        size_t n = token_len(p);
        if (!n) {
            p += strcspn(p, ",");
            continue;
        }
        /* q=0 (any of 0, 0., 0.0...) refuses the coding; anything else accepts it */
        bool refused = false;
        const char *params = p + n, *end = params + strcspn(params, ",");
        const char *q = params;
        while ((q = memchr(q, ';', (size_t)(end - q)))) {
            q++;
            q += strspn(q, " \t");
            if ((q[0] == 'q' || q[0] == 'Q') && q[1] == '=') {
                const char *z = q + 2;
                if (*z == '0') {
                    z++;
                    if (z < end && *z == '.')
                        z++;
                    while (z < end && *z == '0')
                        z++;
                    while (z < end && (*z == ' ' || *z == '\t'))
                        z++;
                    refused = z == end;
                }
            }
        }
        if (token_is(p, n, "gzip") || token_is(p, n, "x-gzip")) {
            gzip_named = true;
            gzip = !refused;
        } else if (token_is(p, n, "*")) {
            star = !refused;
        }
        p = end;
    }
    return gzip || (star && !gzip_named);
}

int fakedb__gzip(const char *in, size_t len, char **out, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    /* level 1: an answer is compressed on the request's path; the size gained past it is small */
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    uLong cap = deflateBound(&z, (uLong)len);
    char *buf = malloc(cap ? cap : 1);
    if (!buf) {
        deflateEnd(&z);
        return -1;
    }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    z.next_out = (Bytef *)buf;
    z.avail_out = (uInt)cap;
    int zr = deflate(&z, Z_FINISH);
    size_t n = (size_t)(cap - z.avail_out);
    deflateEnd(&z);
    if (zr != Z_STREAM_END) {
        free(buf);
        return -1;
    }
    *out = buf;
    *out_len = n;
    return 0;
}
