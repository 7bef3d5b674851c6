/* ops.c: the operations by name (the dispatch table) and what each answers, a
 * fakedb__reply: a body, or an error with optional extra fields. An error drops the
 * body built so far; extra fields are added after. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

typedef int (*op_fn)(fakedb *, json_object *, fakedb__reply *);

static const struct {
    const char *name;
    op_fn fn;
} k_ops[FDB_OP_COUNT] = {
    { "CreateTable", fakedb__op_create_table },
    { "UpdateTable", fakedb__op_update_table },
    { "DeleteTable", fakedb__op_delete_table },
    { "DescribeTable", fakedb__op_describe_table },
    { "ListTables", fakedb__op_list_tables },
    { "UpdateTimeToLive", fakedb__op_update_ttl },
    { "DescribeTimeToLive", fakedb__op_describe_ttl },
    { "GetItem", fakedb__op_get_item },
    { "PutItem", fakedb__op_put_item },
    { "UpdateItem", fakedb__op_update_item },
    { "DeleteItem", fakedb__op_delete_item },
    { "Query", fakedb__op_query },
    { "Scan", fakedb__op_scan },
    { "BatchGetItem", fakedb__op_batch_get },
    { "BatchWriteItem", fakedb__op_batch_write },
    { "TransactWriteItems", fakedb__op_transact_write },
    { "TransactGetItems", fakedb__op_transact_get },
};

const char *fakedb__op_name(int op)
{
    return op >= 0 && op < FDB_OP_COUNT ? k_ops[op].name : "Unknown";
}

int fakedb__op_lookup(const char *name)
{
    for (int i = 0; i < FDB_OP_COUNT; i++)
        if (!strcmp(k_ops[i].name, name))
            return i;
    return -1;
}

int fakedb__op_call(int op, fakedb *db, json_object *req, fakedb__reply *r)
{
    return k_ops[op].fn(db, req, r);
}

__attribute__((format(printf, 3, 0)))
static int vfail(fakedb__reply *r, const char *type, const char *fmt, va_list ap)
{
    r->err.type = type;
    vsnprintf(r->err.message, sizeof r->err.message, fmt, ap);
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
