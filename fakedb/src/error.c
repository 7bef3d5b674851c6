/* error.c: errors as data. Every layer below the dispatcher reports a failure as a
 * fakedb__error (DynamoDB's __type and message) and returns -1; only protocol.c turns
 * one into an HTTP answer. */
#include "values.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int fakedb__error_vset(fakedb__error *e, const char *type, const char *fmt, va_list ap)
{
    e->type = type;
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    return -1;
}

int fakedb__fail(fakedb__error *e, const char *type, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fakedb__error_vset(e, type, fmt, ap);
    va_end(ap);
    return -1;
}

int fakedb__fail_validation(fakedb__error *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fakedb__error_vset(e, FDB_E_VALIDATION, fmt, ap);
    va_end(ap);
    return -1;
}

int fakedb__error_status(const fakedb__error *e)
{
    return e->type && strstr(e->type, "#InternalServerError") ? 500 : 400;
}
