/* ops.c: the single-item operations GetItem, PutItem, UpdateItem and DeleteItem, with
 * conditions, expression names and values, ReturnValues, and the old item delivered on
 * a failed condition (ReturnValuesOnConditionCheckFailure=ALL_OLD). */
#include "client.h"

#include <string.h>

void ddb_result_cleanup(ddb_result *r)
{
    if (!r)
        return;
    ddb_item_free(r->item);
    r->item = NULL;
    r->retries = 0;
    r->consumed_capacity = 0;
}

static const char *return_values_name(ddb_return_values rv)
{
    switch (rv) {
    case DDB_RETURN_NONE: return NULL;
    case DDB_RETURN_ALL_OLD: return "ALL_OLD";
    case DDB_RETURN_UPDATED_OLD: return "UPDATED_OLD";
    case DDB_RETURN_ALL_NEW: return "ALL_NEW";
    case DDB_RETURN_UPDATED_NEW: return "UPDATED_NEW";
    }
    return "";
}

static double consumed_of(json_object *resp)
{
    json_object *cc, *cu;
    if (resp && json_object_object_get_ex(resp, "ConsumedCapacity", &cc) &&
        json_object_object_get_ex(cc, "CapacityUnits", &cu))
        return json_object_get_double(cu);
    return 0;
}

/* Starts a request on a table: {"TableName": name}. */
static json_object *request_for(const ddb_table *t, ddb_error *err)
{
    json_object *req = json_object_new_object();
    if (!req || !ddb__jadd_str(req, "TableName", t->name)) {
        json_object_put(req);
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    return req;
}

/* Fills a request with the write options shared by Put, Update and Delete. */
static int add_write_options(json_object *req, const ddb_write_options *o, ddb_error *err)
{
    if (!o)
        return 0;
    if (o->condition && !ddb__jadd_str(req, "ConditionExpression", o->condition))
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    int rc = ddb__jadd_expr(req, o->names, o->values, err);
    if (rc != 0)
        return rc;
    const char *rv = return_values_name(o->return_values);
    if (rv && !*rv)
        return ddb__fail(err, DDB_EINVAL, "return_values %d is not a DDB_RETURN_* value",
                         (int)o->return_values);
    if (rv && !ddb__jadd_str(req, "ReturnValues", rv))
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    if (o->return_old_on_condition_fail &&
        !ddb__jadd_str(req, "ReturnValuesOnConditionCheckFailure", "ALL_OLD"))
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    return 0;
}

/* Sends req (consumed) and reads `item_key` of the answer into res. */
static int run(ddb_table *t, const char *op, json_object *req, const char *item_key,
               ddb_cancel *cancel, ddb_result *res, ddb_error *err)
{
    ddb_client *c = t->client;
    ddb__call call = { .operation = op, .table = t->name };
    json_object *resp = NULL;
    int retries = 0;
    int rc = ddb__client_send(c, &call, req, &resp, cancel, &retries, err);
    json_object_put(req);
    if (res) {
        res->retries = retries;
        res->consumed_capacity = consumed_of(resp);
    }
    if (rc == 0 && res) {
        ddb_error perr;
        int prc = ddb__jget_item(resp, item_key, &res->item, &perr);
        if (prc != 0) {
            rc = ddb__fail(err, prc, "%s answered with a malformed item: %s", op, perr.message);
            if (err)
                err->retries = retries;
        }
    } else if (rc == DDB_ECONDITION && res) {
        /* With ReturnValuesOnConditionCheckFailure=ALL_OLD the error carries the item. */
        ddb_item *old = NULL;
        if (ddb__jget_item(resp, "Item", &old, NULL) == 0)
            res->item = old;
    }
    json_object_put(resp);
    return ddb__client_done(c, rc);
}

static int check_table(ddb_table *t, const void *arg, const char *what, ddb_error *err)
{
    if (!t)
        return ddb__fail(err, DDB_EINVAL, "no table was given");
    if (!arg)
        return ddb__fail(err, DDB_EINVAL, "no %s was given for table %s", what, t->name);
    return 0;
}

static void result_reset(ddb_result *res)
{
    if (res) {
        ddb_item_free(res->item);
        memset(res, 0, sizeof *res);
    }
}

int ddb_get_item(ddb_table *t, const ddb_item *key, const ddb_get_options *o, ddb_result *res,
                 ddb_error *err)
{
    ddb__err_reset(err);
    result_reset(res);
    int rc = check_table(t, key, "key", err);
    if (rc != 0)
        return rc;
    json_object *req = request_for(t, err);
    if (!req)
        return DDB_ENOMEM;
    if ((rc = ddb__jadd_item(req, "Key", key, err)) != 0)
        goto fail;
    if (o) {
        if (o->consistent_read && json_object_object_add(req, "ConsistentRead", json_object_new_boolean(1)) != 0) {
            rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
            goto fail;
        }
        if (o->projection && !ddb__jadd_str(req, "ProjectionExpression", o->projection)) {
            rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
            goto fail;
        }
        if ((rc = ddb__jadd_expr(req, o->names, NULL, err)) != 0)
            goto fail;
    }
    return run(t, "GetItem", req, "Item", o ? o->cancel : NULL, res, err);
fail:
    json_object_put(req);
    return rc;
}

int ddb_put_item(ddb_table *t, const ddb_item *item, const ddb_write_options *o, ddb_result *res,
                 ddb_error *err)
{
    ddb__err_reset(err);
    result_reset(res);
    int rc = check_table(t, item, "item", err);
    if (rc != 0)
        return rc;
    if (o && o->return_values != DDB_RETURN_NONE && o->return_values != DDB_RETURN_ALL_OLD)
        return ddb__fail(err, DDB_EINVAL, "PutItem on %s returns only NONE or ALL_OLD", t->name);
    json_object *req = request_for(t, err);
    if (!req)
        return DDB_ENOMEM;
    if ((rc = ddb__jadd_item(req, "Item", item, err)) != 0 ||
        (rc = add_write_options(req, o, err)) != 0) {
        json_object_put(req);
        return rc;
    }
    return run(t, "PutItem", req, "Attributes", o ? o->cancel : NULL, res, err);
}

int ddb_update_item(ddb_table *t, const ddb_item *key, const char *update,
                    const ddb_write_options *o, ddb_result *res, ddb_error *err)
{
    ddb__err_reset(err);
    result_reset(res);
    int rc = check_table(t, key, "key", err);
    if (rc != 0)
        return rc;
    json_object *req = request_for(t, err);
    if (!req)
        return DDB_ENOMEM;
    if ((rc = ddb__jadd_item(req, "Key", key, err)) != 0 ||
        (rc = add_write_options(req, o, err)) != 0) {
        json_object_put(req);
        return rc;
    }
    if (update && !ddb__jadd_str(req, "UpdateExpression", update)) {
        json_object_put(req);
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    return run(t, "UpdateItem", req, "Attributes", o ? o->cancel : NULL, res, err);
}

int ddb_delete_item(ddb_table *t, const ddb_item *key, const ddb_write_options *o,
                    ddb_result *res, ddb_error *err)
{
    ddb__err_reset(err);
    result_reset(res);
    int rc = check_table(t, key, "key", err);
    if (rc != 0)
        return rc;
    if (o && o->return_values != DDB_RETURN_NONE && o->return_values != DDB_RETURN_ALL_OLD)
        return ddb__fail(err, DDB_EINVAL, "DeleteItem on %s returns only NONE or ALL_OLD", t->name);
    json_object *req = request_for(t, err);
    if (!req)
        return DDB_ENOMEM;
    if ((rc = ddb__jadd_item(req, "Key", key, err)) != 0 ||
        (rc = add_write_options(req, o, err)) != 0) {
        json_object_put(req);
        return rc;
    }
    return run(t, "DeleteItem", req, "Attributes", o ? o->cancel : NULL, res, err);
}
