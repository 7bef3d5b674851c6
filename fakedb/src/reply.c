/* reply.c: what an operation answers, a fakedb__reply: a body, or an error with
 * optional extra fields. An error drops the body built so far; extra fields are added
 * after. The bottom of the operations layer. */
#include "ops.h"

#include <stdarg.h>
#include <stdio.h>

/* The error, and the body built so far dropped. */
__attribute__((format(printf, 3, 0)))
static int vfail(fakedb__reply *r, const char *type, const char *fmt, va_list ap)
{
    fakedb__error_vset(&r->err, type, fmt, ap);
    json_object_put(r->body);
    r->body = NULL;
    return -1;
}

int fakedb__reply_fail(fakedb__reply *r, const char *type, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(r, type, fmt, ap);
    va_end(ap);
    return -1;
}

int fakedb__reply_fail_validation(fakedb__reply *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(r, FDB_E_VALIDATION, fmt, ap);
    va_end(ap);
    return -1;
}
