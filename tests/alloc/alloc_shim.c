/* alloc_shim.c: the allocation functions, wrapped (see alloc_shim.h). */
#include "alloc_shim.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local long tl_nth, tl_count;
static _Thread_local bool tl_fired;

void shim_fail_nth(long n)
{
    tl_nth = n;
    tl_count = 0;
    tl_fired = false;
}

bool shim_fired(void)
{
    return tl_fired;
}

long shim_count(void)
{
    return tl_count;
}

/* True when this allocation is the one to fail. */
static bool fail_now(void)
{
    if (tl_nth <= 0)
        return false;
    if (++tl_count == tl_nth) {
        tl_fired = true;
        return true;
    }
    return false;
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_asprintf(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void *__wrap_malloc(size_t n)
{
    return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    return fail_now() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
    return fail_now() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
    return fail_now() ? NULL : __real_strndup(s, n);
}

int __wrap_asprintf(char **out, const char *fmt, ...)
{
    if (fail_now()) {
        *out = NULL;
        return -1;
    }
    va_list ap;
    va_start(ap, fmt);
    int rc = vasprintf(out, fmt, ap);
    va_end(ap);
    return rc;
}
