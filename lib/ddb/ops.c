/* ops.c: the single-item operations GetItem, PutItem, UpdateItem and DeleteItem, with
 * conditions, expression names and values, ReturnValues, and the old item delivered on
 * a failed condition (ReturnValuesOnConditionCheckFailure=ALL_OLD). Requests are written
 * as text directly; answers are read with json-c. */
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

/* ---- request text. The single-item operations write their request straight into text
 * (the other modules build json-c objects): this is the path most calls take. */

static void text_key(dl_buf *b, const char *key)
{
    dl__buf_put(b, ",\"", 2);
    dl__buf_puts(b, key);
    dl__buf_put(b, "\":", 2);
}

static void text_str_field(dl_buf *b, const char *key, const char *value)
{
    text_key(b, key);
    ddb__text_json_str(b, value, strlen(value));
}

/* {"TableName":"name" -- the object is closed by text_end. */
static void text_begin(dl_buf *b, const ddb_table *t)
{
    b->len = 0;
    b->oom = false;
    dl__buf_puts(b, "{\"TableName\":");
    ddb__text_json_str(b, t->name, strlen(t->name));
}

static int text_end(dl_buf *b, ddb_error *err)
{
    dl__buf_put(b, "}", 1);
    return b->oom ? ddb__fail(err, DDB_ENOMEM, "out of memory") : 0;
}

static int text_names(dl_buf *b, ddb_names names, ddb_error *err)
{
    if (!names || !names[0])
        return 0;
    text_key(b, "ExpressionAttributeNames");
    dl__buf_put(b, "{", 1);
    for (size_t i = 0; names[i]; i += 2) {
        if (!names[i + 1])
            return ddb__fail(err, DDB_EINVAL, "expression name '%.64s' has no attribute", names[i]);
        if (i > 0)
            dl__buf_put(b, ",", 1);
        ddb__text_json_str(b, names[i], strlen(names[i]));
        dl__buf_put(b, ":", 1);
        ddb__text_json_str(b, names[i + 1], strlen(names[i + 1]));
    }
    dl__buf_put(b, "}", 1);
    return 0;
}

/* The write options shared by Put, Update and Delete. */
static int text_write_options(dl_buf *b, const ddb_write_options *o, ddb_error *err)
{
    if (!o)
        return 0;
    const char *rv = return_values_name(o->return_values);
    if (rv && !*rv)
        return ddb__fail(err, DDB_EINVAL, "return_values %d is not a DDB_RETURN_* value",
                         (int)o->return_values);
    if (o->condition)
        text_str_field(b, "ConditionExpression", o->condition);
    int rc = text_names(b, o->names, err);
    if (rc != 0)
        return rc;
    if (o->values && o->values->n > 0) {
        text_key(b, "ExpressionAttributeValues");
        ddb__text_item(b, o->values);
    }
    if (rv)
        text_str_field(b, "ReturnValues", rv);
    if (o->return_old_on_condition_fail)
        text_str_field(b, "ReturnValuesOnConditionCheckFailure", "ALL_OLD");
    return 0;
}

int ddb__get_request(const ddb_table *t, const ddb_item *key, const ddb_get_options *o,
                     dl_buf *out, ddb_error *err)
{
    text_begin(out, t);
    text_key(out, "Key");
    ddb__text_item(out, key);
    if (o) {
        if (o->consistent_read) {
            text_key(out, "ConsistentRead");
            dl__buf_puts(out, "true");
        }
        if (o->projection)
            text_str_field(out, "ProjectionExpression", o->projection);
        int rc = text_names(out, o->names, err);
        if (rc != 0)
            return rc;
    }
    return text_end(out, err);
}

/* PutItem (`field` "Item") and DeleteItem ("Key"). */
static int write_request(const ddb_table *t, const char *field, const ddb_item *item,
                         const ddb_write_options *o, dl_buf *out, ddb_error *err)
{
    text_begin(out, t);
    text_key(out, field);
    ddb__text_item(out, item);
    int rc = text_write_options(out, o, err);
    return rc != 0 ? rc : text_end(out, err);
}

int ddb__update_request(const ddb_table *t, const ddb_item *key, const char *update,
                        const ddb_write_options *o, dl_buf *out, ddb_error *err)
{
    text_begin(out, t);
    text_key(out, "Key");
    ddb__text_item(out, key);
    int rc = text_write_options(out, o, err);
    if (rc != 0)
        return rc;
    if (update)
        text_str_field(out, "UpdateExpression", update);
    return text_end(out, err);
}

int ddb__item_answer(json_object *resp, const char *item_key, ddb_result *res, ddb_error *err)
{
    res->consumed_capacity = consumed_of(resp);
    return ddb__jget_item(resp, item_key, &res->item, err);
}

/* Reads `item_key` of an answer (or, on DDB_ECONDITION, the item the error carries with
 * ReturnValuesOnConditionCheckFailure=ALL_OLD) into res; returns the call's status. */
static int read_answer(const char *op, int rc, json_object *resp, const char *item_key,
                       int retries, ddb_result *res, ddb_error *err)
{
    if (!res)
        return rc;
    res->retries = retries;
    res->consumed_capacity = consumed_of(resp);
    if (rc == 0) {
        ddb_error perr;
        ddb_error_clear(&perr);
        int prc = ddb__item_answer(resp, item_key, res, &perr);
        if (prc != 0) {
            rc = ddb__fail(err, prc, "%s answered with a malformed item: %s", op, perr.message);
            if (err)
                err->retries = retries;
        }
    } else if ((rc == DDB_ECONDITION || rc == DDB_EINDOUBT) && resp) {
        /* A failed condition (also the last attempt of a write in doubt) may carry the
         * item, with ReturnValuesOnConditionCheckFailure=ALL_OLD. */
        ddb_item *old = NULL;
        if (ddb__jget_item(resp, "Item", &old, NULL) == 0)
            res->item = old;
    }
    return rc;
}

/* Sends the request text (freed here) and reads `item_key` of the answer into res. */
static int run(ddb_table *t, const char *op, dl_buf *req, const char *item_key,
               ddb_cancel *cancel, ddb_result *res, ddb_error *err)
{
    ddb_client *c = t->client;
    DDB__CALL_SCOPE(c->clock);
    ddb__call call = { .operation = op, .table = t->name };
    json_object *resp = NULL;
    int retries = 0;
    int rc = ddb__client_send_text(c, &call, req->p, req->len, &resp, cancel, &retries, err);
    dl__buf_cleanup(req);
    rc = read_answer(op, rc, resp, item_key, retries, res, err);
    json_object_put(resp);
    return rc;
}

/* An asynchronous single-item write: the reply of the client's call, read as run does. */
typedef struct item_call {
    const char *op, *item_key;
    ddb__item_reply_fn fn;
    void *arg;
} item_call;

static void item_reply(void *arg, int rc, json_object *resp, int retries, ddb_error *err)
{
    item_call *ic = arg;
    ddb_result res = { 0 };
    rc = read_answer(ic->op, rc, resp, ic->item_key, retries, &res, err);
    ic->fn(ic->arg, rc, &res, err);
    ddb_result_cleanup(&res);
    free(ic);
}

static int start(ddb_table *t, const char *op, dl_buf *req, const char *item_key,
                 ddb_cancel *cancel, ddb__item_reply_fn fn, void *arg, ddb_error *err)
{
    item_call *ic = malloc(sizeof *ic);
    if (!ic) {
        dl__buf_cleanup(req);
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    *ic = (item_call){ .op = op, .item_key = item_key, .fn = fn, .arg = arg };
    ddb__call call = { .operation = op, .table = t->name };
    char *body = req->p;
    size_t len = req->len;
    req->p = NULL;
    int rc = ddb__client_start(t->client, &call, body, len, cancel, item_reply, ic, err);
    if (rc != 0)
        free(ic);
    return rc;
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

int ddb_table_get_item(ddb_table *t, const ddb_item *key, const ddb_get_options *o,
                       ddb_result *res, ddb_cancel *cancel, ddb_error *err)
{
    ddb__err_reset(err);
    result_reset(res);
    int rc = check_table(t, key, "key", err);
    if (rc != 0)
        return rc;
    dl_buf req = { 0 };
    if ((rc = ddb__get_request(t, key, o, &req, err)) != 0) {
        dl__buf_cleanup(&req);
        return rc;
    }
    return run(t, "GetItem", &req, "Item", cancel, res, err);
}

/* PutItem and DeleteItem: `field` is "Item" or "Key"; both return at most ALL_OLD. */
static int write_one(ddb_table *t, const char *op, const char *field, const ddb_item *item,
                     const ddb_write_options *o, ddb_result *res, ddb_cancel *cancel,
                     ddb_error *err)
{
    ddb__err_reset(err);
    result_reset(res);
    int rc = check_table(t, item, strcmp(field, "Item") == 0 ? "item" : "key", err);
    if (rc != 0)
        return rc;
    if (o && o->return_values != DDB_RETURN_NONE && o->return_values != DDB_RETURN_ALL_OLD)
        return ddb__fail(err, DDB_EINVAL, "%s on %s returns only NONE or ALL_OLD", op, t->name);
    dl_buf req = { 0 };
    if ((rc = write_request(t, field, item, o, &req, err)) != 0) {
        dl__buf_cleanup(&req);
        return rc;
    }
    return run(t, op, &req, "Attributes", cancel, res, err);
}

int ddb_table_put_item(ddb_table *t, const ddb_item *item, const ddb_write_options *o,
                       ddb_result *res, ddb_cancel *cancel, ddb_error *err)
{
    return write_one(t, "PutItem", "Item", item, o, res, cancel, err);
}

/* The text of an UpdateItem, after the table and key are checked. */
static int update_req(ddb_table *t, const ddb_item *key, const char *update,
                      const ddb_write_options *o, dl_buf *req, ddb_error *err)
{
    int rc = check_table(t, key, "key", err);
    if (rc == 0 && (rc = ddb__update_request(t, key, update, o, req, err)) != 0)
        dl__buf_cleanup(req);
    return rc;
}

int ddb_table_update_item(ddb_table *t, const ddb_item *key, const char *update,
                          const ddb_write_options *o, ddb_result *res, ddb_cancel *cancel,
                          ddb_error *err)
{
    ddb__err_reset(err);
    result_reset(res);
    dl_buf req = { 0 };
    int rc = update_req(t, key, update, o, &req, err);
    return rc ? rc : run(t, "UpdateItem", &req, "Attributes", cancel, res, err);
}

int ddb__update_item_start(ddb_table *t, const ddb_item *key, const char *update,
                           const ddb_write_options *o, ddb_cancel *cancel,
                           ddb__item_reply_fn fn, void *arg, ddb_error *err)
{
    dl_buf req = { 0 };
    int rc = update_req(t, key, update, o, &req, err);
    return rc ? rc : start(t, "UpdateItem", &req, "Attributes", cancel, fn, arg, err);
}

int ddb_table_delete_item(ddb_table *t, const ddb_item *key, const ddb_write_options *o,
                          ddb_result *res, ddb_cancel *cancel, ddb_error *err)
{
    return write_one(t, "DeleteItem", "Key", key, o, res, cancel, err);
}
