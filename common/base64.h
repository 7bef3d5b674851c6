/* base64.h: base64 with the standard alphabet (RFC 4648 section 4) and '=' padding, the
 * form DynamoDB gives B values in. One codec for the client and the fake server; the
 * decoder is strict: wrong length, a character outside the alphabet, padding anywhere
 * but at the end, or more than two pad characters is an error. Unused low bits of the
 * last character ("QR==") are ignored, as DynamoDB ignores them.
 * Thread: any thread; the functions keep no state. */
#ifndef DL_BASE64_H
#define DL_BASE64_H

#include <stddef.h>

typedef enum dl_base64_status {
    DL_B64_OK = 0,
    DL_B64_INVALID = -1, /* not base64 */
    DL_B64_SPACE = -2,   /* the output buffer is too small */
    DL_B64_NOMEM = -3,   /* an allocation failed */
} dl_base64_status;

/* Bytes the text of len input bytes takes, without a terminating NUL; 0 when that is
 * more than any allocation can hold (PTRDIFF_MAX). */
size_t dl__base64_encoded_len(size_t len);
/* Writes the text of data (len bytes) to out, which has dl__base64_encoded_len(len) + 1
 * bytes; NUL-terminates it and returns its length. */
size_t dl__base64_encode_to(const void *data, size_t len, char *out);
/* The text as a new NUL-terminated string (caller frees), its length in *out_len (may
 * be NULL); NULL when out of memory. */
char *dl__base64_encode(const void *data, size_t len, size_t *out_len);

/* Decodes text (len bytes) into out (cap bytes; out may be NULL to only check the text
 * and count). *out_len receives the decoded length on success. DL_B64_OK,
 * DL_B64_INVALID, or DL_B64_SPACE (out is then partly written). */
dl_base64_status dl__base64_decode_to(const char *text, size_t len, unsigned char *out,
                                      size_t cap, size_t *out_len);
/* Decodes into a new buffer *bytes (caller frees; NUL-terminated for convenience, never
 * NULL on success). DL_B64_OK, DL_B64_INVALID or DL_B64_NOMEM; *bytes is NULL on error. */
dl_base64_status dl__base64_decode(const char *text, size_t len, unsigned char **bytes,
                                   size_t *out_len);

#endif
