/* base64.c: the one base64 codec (see base64.h). Encoding three bytes at a time into
 * four characters; decoding four characters at a time, checking the alphabet and where
 * the padding stands. */
#include "base64.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

static const char k_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t dl__base64_encoded_len(size_t len)
{
    size_t groups = len / 3 + (len % 3 != 0);
    if (groups > ((size_t)PTRDIFF_MAX - 1) / 4) /* no allocation can be that large */
        return 0;
    return groups * 4;
}

size_t dl__base64_encode_to(const void *data, size_t len, char *out)
{
    const unsigned char *in = data;
    size_t o = 0, i = 0;
    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = k_alphabet[v >> 18 & 63];
        out[o++] = k_alphabet[v >> 12 & 63];
        out[o++] = k_alphabet[v >> 6 & 63];
        out[o++] = k_alphabet[v & 63];
    }
    if (i < len) {
        bool two = i + 1 < len;
        uint32_t v = (uint32_t)in[i] << 16 | (two ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = k_alphabet[v >> 18 & 63];
        out[o++] = k_alphabet[v >> 12 & 63];
        out[o++] = two ? k_alphabet[v >> 6 & 63] : '=';
        out[o++] = '=';
    }
    out[o] = '\0';
    return o;
}

char *dl__base64_encode(const void *data, size_t len, size_t *out_len)
{
    size_t n = dl__base64_encoded_len(len);
    if (n == 0 && len != 0)
        return NULL;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    size_t o = dl__base64_encode_to(data, len, out);
    if (out_len)
        *out_len = o;
    return out;
}

/* The value of an alphabet character, or -1. */
static int sextet(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

dl_base64_status dl__base64_decode_to(const char *text, size_t len, unsigned char *out,
                                      size_t cap, size_t *out_len)
{
    if (len % 4 != 0)
        return DL_B64_INVALID;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        bool last = i + 4 == len;
        int pad = 0;
        uint32_t v = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)text[i + k];
            int s;
            if (c == '=' && last && k >= 2) {
                s = 0;
                pad++;
            } else {
                s = pad ? -1 : sextet(c); /* nothing after a pad character */
                if (s < 0)
                    return DL_B64_INVALID;
            }
            v = v << 6 | (uint32_t)s;
        }
        unsigned char b[3] = { (unsigned char)(v >> 16), (unsigned char)(v >> 8), (unsigned char)v };
        for (int k = 0; k < 3 - pad; k++) {
            if (out) {
                if (o >= cap)
                    return DL_B64_SPACE;
                out[o] = b[k];
            }
            o++;
        }
    }
    *out_len = o;
    return DL_B64_OK;
}

dl_base64_status dl__base64_decode(const char *text, size_t len, unsigned char **bytes,
                                   size_t *out_len)
{
    *bytes = NULL;
    size_t n;
    dl_base64_status st = dl__base64_decode_to(text, len, NULL, 0, &n);
    if (st != DL_B64_OK)
        return st;
    unsigned char *out = malloc(n + 1);
    if (!out)
        return DL_B64_NOMEM;
    st = dl__base64_decode_to(text, len, out, n, out_len);
    if (st != DL_B64_OK) { /* cannot happen: the first pass counted n */
        free(out);
        return st;
    }
    out[n] = '\0';
    *bytes = out;
    return DL_B64_OK;
}
