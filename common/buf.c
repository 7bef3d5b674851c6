/* buf.c: the growable byte buffer (buf.h). Capacity doubles from a first 256 bytes, so
 * n appends cost O(n) copies in all; a size past PTRDIFF_MAX, which no allocation can
 * have, is an allocation failure without asking malloc. */
#include "buf.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DL_BUF_FIRST 256

void dl__buf_init_storage(dl_buf *b, char *storage, size_t cap)
{
    *b = (dl_buf){ .p = storage, .cap = cap, .borrowed = true };
    storage[0] = '\0';
}

bool dl__buf_grow(dl_buf *b, size_t more)
{
    if (b->oom)
        return false;
    if (more > (size_t)PTRDIFF_MAX - 1 - b->len) { /* no allocation can be that large */
        b->oom = true;
        return false;
    }
    size_t need = b->len + more + 1;
    if (need <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : DL_BUF_FIRST;
    while (cap < need)
        cap = cap > (size_t)PTRDIFF_MAX / 2 ? need : cap * 2;
    char *np;
    if (b->borrowed) {
        np = malloc(cap);
        if (np)
            memcpy(np, b->p, b->len + 1);
    } else {
        np = realloc(b->p, cap);
    }
    if (!np) {
        b->oom = true;
        return false;
    }
    b->p = np;
    b->cap = cap;
    b->borrowed = false;
    return true;
}

bool dl__buf_reserve(dl_buf *b, size_t more)
{
    return (!b->oom && b->cap - b->len > more) || dl__buf_grow(b, more);
}

void dl__buf_reset(dl_buf *b)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
}

char *dl__buf_take(dl_buf *b, size_t *len)
{
    if (!b->oom && (b->borrowed || !b->p)) { /* the caller gets heap memory, always */
        char *np = malloc(b->len + 1);
        if (np) {
            if (b->len)
                memcpy(np, b->p, b->len);
            np[b->len] = '\0';
            b->p = np;
            b->cap = b->len + 1;
            b->borrowed = false;
        } else {
            b->oom = true;
        }
    }
    if (b->oom) {
        dl__buf_cleanup(b);
        return NULL;
    }
    char *s = b->p;
    if (len)
        *len = b->len;
    *b = (dl_buf){ 0 };
    return s;
}

void dl__buf_cleanup(dl_buf *b)
{
    if (!b)
        return;
    if (!b->borrowed)
        free(b->p);
    *b = (dl_buf){ 0 };
}
