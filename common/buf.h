/* buf.h: the growable byte buffer every text builder and body collector shares (request
 * text, log lines, the canonical request of a signature, HTTP bodies). A failed
 * allocation sticks in `oom`: later puts do nothing and the caller checks once at the
 * end, so builders need no error path per append.
 * Zero-initialise (or dl__buf_init_storage) before use; dl__buf_cleanup releases it.
 * Thread: a buffer belongs to one thread at a time. */
#ifndef DL_BUF_H
#define DL_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "dl_assert.h"

typedef struct dl_buf {
    char *p;        /* the bytes, NUL-terminated once anything is put; NULL before */
    size_t len;     /* bytes put, not counting the NUL */
    size_t cap;     /* bytes p can hold, NUL included */
    bool oom;       /* an allocation failed (or the size would overflow) */
    bool borrowed;  /* p is storage of the caller's, not yet moved to the heap */
} dl_buf;

/* Starts b in the caller's storage (cap > 0 bytes, e.g. an array on the stack); the
 * bytes move to the heap when they outgrow it. */
void dl__buf_init_storage(dl_buf *b, char *storage, size_t cap);
/* Makes room for `more` bytes beyond len (and the NUL). false when oom is set, or is
 * set now because the allocation failed. */
bool dl__buf_reserve(dl_buf *b, size_t more);
/* The slow path of the appends: makes room for `more` bytes and the NUL (false: oom). */
bool dl__buf_grow(dl_buf *b, size_t more);
/* The appends. The request path appends a few bytes at a time, so the common case (room,
 * no failure) is inline: a compare and a copy. */
static inline void dl__buf_put(dl_buf *b, const void *s, size_t n)
{
    if ((b->oom || b->cap - b->len <= n) && !dl__buf_grow(b, n))
        return;
    DL_ASSERT(b->len + n < b->cap); /* room for the bytes and the NUL */
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}
static inline void dl__buf_puts(dl_buf *b, const char *s)
{
    dl__buf_put(b, s, strlen(s));
}
static inline void dl__buf_putc(dl_buf *b, char c)
{
    if ((b->oom || b->cap - b->len <= 1) && !dl__buf_grow(b, 1))
        return;
    DL_ASSERT(b->len + 1 < b->cap);
    b->p[b->len++] = c;
    b->p[b->len] = '\0';
}
/* Empties b, keeping its memory and its oom flag. */
void dl__buf_reset(dl_buf *b);
/* Hands the bytes to the caller as a malloc'd NUL-terminated string (length in *len,
 * which may be NULL) and empties b; NULL when oom is set (b is then released). An empty
 * buffer gives an empty string. */
char *dl__buf_take(dl_buf *b, size_t *len);
/* Releases b's memory and zeroes it; NULL is a no-op. */
void dl__buf_cleanup(dl_buf *b);

#endif
