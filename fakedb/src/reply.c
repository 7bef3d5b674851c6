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

int fakedb__reply_need_list(json_object *req, const char *member, const char *label,
                            size_t max, json_object **out, fakedb__reply *r)
{
    *out = fakedb__json_get(req, member);
    if (!*out)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", label);
    if (!json_object_is_type(*out, json_type_array))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, json_object_is_type(*out, json_type_object)
                                                        ? "Start of structure or map found where not expected."
                                                        : "Unexpected value type in payload");
    size_t n = json_object_array_length(*out);
    if (n == 0)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '[]' at '%s' failed to satisfy constraint: Member must have length greater than or equal to 1", label);
    if (n > max)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value at '%s' failed to satisfy constraint: Member must have length less than or equal to %zu", label, max);
    return 0;
}
