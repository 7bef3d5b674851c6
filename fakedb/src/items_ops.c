/* items_ops.c: GetItem, PutItem, UpdateItem and DeleteItem, and the prepared write that
 * BatchWriteItem and TransactWriteItems reuse: parse and validate a write, evaluate its
 * condition against the stored item, compute the new item, then apply it. */
#include "ops.h"
#include "expr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The order in which DynamoDB names them when a request mixes the two kinds. */
static const char *const k_update_exprs[] = { "UpdateExpression", "ConditionExpression", NULL };
static const char *const k_update_legacy[] = { "AttributeUpdates", "Expected", "ConditionalOperator", NULL };
static const char *const k_write_exprs[] = { "ConditionExpression", NULL };
static const char *const k_write_legacy[] = { "Expected", "ConditionalOperator", NULL };

static int expr_fail(fakedb__reply *r, const char *msg)
{
    return fakedb__reply_fail_validation(r, "%s", msg);
}

/* Creates the expression context of a request (names and values validated), or leaves
 * *ctx NULL when the request has no expression parameters. null_exprs names the
 * expressions that take values, as DynamoDB's message does ("ConditionExpression is
 * null"), or is NULL. */
static int make_ctx(json_object *req, bool has_expr, const char *null_exprs, struct fakedb__expr_ctx **ctx,
                    fakedb__reply *r)
{
    char err[FAKEDB_EXPR_ERR_MAX];
    json_object *names = fakedb__json_get(req, "ExpressionAttributeNames");
    json_object *values = fakedb__json_get(req, "ExpressionAttributeValues");
    *ctx = NULL;
    if (!has_expr) {
        if (names)
            return fakedb__reply_fail_validation(r, "ExpressionAttributeNames can only be specified when using expressions");
        if (values)
            return fakedb__reply_fail_validation(r, "ExpressionAttributeValues can only be specified when using expressions%s%s",
                                                 null_exprs ? ": " : "", null_exprs ? null_exprs : "");
        return 0;
    }
    if ((names && !json_object_is_type(names, json_type_object)) ||
        (values && !json_object_is_type(values, json_type_object)))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    if (fakedb__values_validate(values, &r->err))
        return -1;
    *ctx = fakedb__expr_ctx_new(names, values, err);
    if (!*ctx)
        return expr_fail(r, err);
    return 0;
}

static int parse_expr(struct fakedb__expr_ctx *ctx, json_object *req, const char *param,
                      fakedb__expr_kind kind, struct fakedb__expr **out, fakedb__reply *r)
{
    char err[FAKEDB_EXPR_ERR_MAX];
    json_object *v = fakedb__json_get(req, param);
    *out = NULL;
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    const char *text = json_object_get_string(v);
    if (text[0] == 0)
        return fakedb__reply_fail_validation(r, "Invalid %s: The expression can not be empty;", param);
    *out = fakedb__expr_parse(ctx, kind, text, err);
    return *out ? 0 : expr_fail(r, err);
}

static int check_unused(struct fakedb__expr_ctx *ctx, fakedb__reply *r)
{
    char err[FAKEDB_EXPR_ERR_MAX];
    if (ctx && fakedb__expr_check_unused(ctx, err))
        return expr_fail(r, err);
    return 0;
}

/* allowed is in the order DynamoDB lists the set in its message; absent means dflt. */
static int enum_param(json_object *req, const char *param, const char *const *allowed, const char *dflt,
                      const char **out, fakedb__reply *r)
{
    json_object *v = fakedb__json_get(req, param);
    *out = dflt;
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_string))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    const char *s = json_object_get_string(v);
    for (size_t i = 0; allowed[i]; i++)
        if (!strcmp(s, allowed[i])) {
            *out = allowed[i];
            return 0;
        }
    char lower[64];
    snprintf(lower, sizeof lower, "%s", param);
    lower[0] = (char)(lower[0] - 'A' + 'a');
    char set[256] = "";
    for (size_t i = 0; allowed[i]; i++) {
        strncat(set, i ? ", " : "", sizeof set - strlen(set) - 1);
        strncat(set, allowed[i], sizeof set - strlen(set) - 1);
    }
    return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy enum value set: [%s]", s, lower, set);
}

static const char *const k_rv_fail[] = { "NONE", "ALL_OLD", NULL };

/* legacy: whether the request may hold legacy parameters (the single-item operations).
 * The entries of a transaction or a batch have no such members in DynamoDB's API: there,
 * as DynamoDB (and DynamoDB Local) do with members a shape does not have, they are
 * ignored. */
static int prepare(fakedb__store *db, fakedb__wkind kind, json_object *req, fakedb__write *w, bool legacy,
                   fakedb__reply *r)
{
    memset(w, 0, sizeof *w);
    w->kind = kind;
    const char *rvf;
    bool upd = kind == FDB_W_UPDATE;
    if (legacy && fakedb__legacy_mixing(req, upd ? k_update_exprs : k_write_exprs, upd ? k_update_legacy : k_write_legacy, r))
        return -1;
    if (enum_param(req, "ReturnValuesOnConditionCheckFailure", k_rv_fail, "NONE", &rvf, r))
        return -1;
    /* Expected and ConditionalOperator (a mixing with ConditionExpression was refused) */
    if (legacy && fakedb__legacy_condition_param(req, "Expected", FAKEDB_EXPR_CONDITION, true, &w->cond, r))
        return -1;
    w->return_old_on_fail = !strcmp(rvf, "ALL_OLD");
    if (fakedb__table_lookup(db, req, &w->table, r))
        return -1;
    if (kind == FDB_W_PUT) {
        w->item = fakedb__json_get(req, "Item");
        if (!w->item)
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'item' failed to satisfy constraint: Member must not be null");
        if (fakedb__item_validate(w->item, &r->err) || fakedb__key_make(w->table, w->item, FDB_KEY_ITEM, &w->key, &r->err))
            return -1;
        if (fakedb__item_size(w->item) > FDB_MAX_ITEM_BYTES)
            return fakedb__reply_fail_validation(r, "Item size has exceeded the maximum allowed size");
        for (size_t i = 0; i < w->table->n_idx; i++) {
            fakedb__key ik;
            if (fakedb__index_key(&w->table->idx[i], w->item, &ik, &r->err) < 0)
                return -1;
        }
        w->key_attrs = w->item;
    } else {
        w->key_attrs = fakedb__json_get(req, "Key");
        if (!w->key_attrs)
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'key' failed to satisfy constraint: Member must not be null");
        if (fakedb__item_validate(w->key_attrs, &r->err) ||
            fakedb__key_make(w->table, w->key_attrs, FDB_KEY_PARAM, &w->key, &r->err))
            return -1;
    }
    bool has_cond = fakedb__json_get(req, "ConditionExpression") != NULL;
    bool has_upd = kind == FDB_W_UPDATE && fakedb__json_get(req, "UpdateExpression") != NULL;
    if (kind == FDB_W_CHECK && !has_cond)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'conditionExpression' failed to satisfy constraint: Member must not be null");
    if (make_ctx(req, has_cond || has_upd,
                 upd ? "UpdateExpression and ConditionExpression are null" : "ConditionExpression is null", &w->ctx, r))
        return -1;
    if (w->ctx) {
        if (!w->cond && parse_expr(w->ctx, req, "ConditionExpression", FAKEDB_EXPR_CONDITION, &w->cond, r))
            return -1;
        if (kind == FDB_W_UPDATE &&
            parse_expr(w->ctx, req, "UpdateExpression", FAKEDB_EXPR_UPDATE, &w->update, r))
            return -1;
        if (check_unused(w->ctx, r))
            return -1;
    }
    if (legacy && upd && !w->update && fakedb__legacy_update_param(req, &w->update, r))
        return -1;
    return 0;
}

int fakedb__write_prepare(fakedb__store *db, fakedb__wkind kind, json_object *req, fakedb__write *w,
                          fakedb__reply *r)
{
    return prepare(db, kind, req, w, false, r);
}

int fakedb__write_eval(fakedb__store *db, fakedb__write *w, fakedb__reply *r)
{
    char err[FAKEDB_EXPR_ERR_MAX];
    if (fakedb__item_get(db, w->table, &w->key, &w->old_item))
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    if (w->cond) {
        bool ok = false;
        if (fakedb__expr_eval(w->cond, w->old_item, &ok, err))
            return expr_fail(r, err);
        if (!ok)
            return 1;
    }
    switch (w->kind) {
    case FDB_W_PUT:
        w->new_item = fakedb__json_copy(w->item);
        break;
    case FDB_W_UPDATE: {
        if (!w->old_item && w->update && fakedb__expr_update_removes_only(w->update)) {
            /* Nothing to remove from: DynamoDB creates no item (and REMOVE of a nested
             * path is no error). A key attribute is still not updatable. */
            const char *const *names = fakedb__expr_update_targets(w->update);
            for (size_t i = 0; names[i]; i++)
                if (!strcmp(names[i], w->table->pk) || (w->table->sk && !strcmp(names[i], w->table->sk)))
                    return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Cannot update attribute %s. This attribute is part of the key", names[i]);
            break;
        }
        w->new_item = w->old_item ? fakedb__json_copy(w->old_item) : fakedb__json_copy(w->key_attrs);
        if (w->update) {
            const char *keys[3] = { w->table->pk, w->table->sk, NULL };
            if (fakedb__expr_apply_update(w->update, w->new_item, keys, err))
                return expr_fail(r, err);
        }
        if (fakedb__item_size(w->new_item) > FDB_MAX_ITEM_BYTES)
            return fakedb__reply_fail_validation(r, "Item size to update has exceeded the maximum allowed size");
        if (fakedb__item_validate(w->new_item, &r->err))
            return -1;
        for (size_t i = 0; i < w->table->n_idx; i++) {
            fakedb__key ik;
            if (fakedb__index_key(&w->table->idx[i], w->new_item, &ik, &r->err) < 0)
                return -1;
        }
        break;
    }
    default:
        break;
    }
    return 0;
}

int fakedb__write_apply(fakedb__store *db, fakedb__write *w)
{
    switch (w->kind) {
    case FDB_W_PUT:
    case FDB_W_UPDATE:
        return w->new_item ? fakedb__item_write(db, w->table, &w->key, w->old_item, w->new_item) : 0;
    case FDB_W_DELETE:
        return w->old_item ? fakedb__item_remove(db, w->table, &w->key, w->old_item) : 0;
    default:
        return 0;
    }
}

void fakedb__write_cleanup(fakedb__write *w)
{
    fakedb__expr_free(w->cond);
    fakedb__expr_free(w->update);
    fakedb__expr_ctx_free(w->ctx);
    json_object_put(w->old_item);
    json_object_put(w->new_item);
    memset(w, 0, sizeof *w);
}

/* ConditionalCheckFailedException, with the stored item when it was asked for. */
static int condition_failed(fakedb__write *w, fakedb__reply *r)
{
    fakedb__reply_fail(r, FDB_E_CCF, "The conditional request failed");
    r->condition_failure = true;
    if (w->return_old_on_fail && w->old_item) {
        r->body = json_object_new_object();
        json_object_object_add(r->body, "Item", json_object_get(w->old_item));
    }
    return -1;
}

/* UPDATED_OLD/UPDATED_NEW: the paths the update changed, nested ones in their structure
 * (`SET a.b` gives a.b, not all of a). */
static json_object *pick(json_object *item, const fakedb__expr *update)
{
    json_object *o = update ? fakedb__expr_update_project(update, item) : NULL;
    return o ? o : json_object_new_object();
}

/* ConsumedCapacity of a single write as DynamoDB counts it (capacity.c). */
static void write_capacity(json_object *req, json_object *body, const fakedb__write *w)
{
    if (!fakedb__capacity_wanted(req))
        return;
    const fakedb__table *t = w->table;
    double *ix_units = calloc(t->n_idx + 1, sizeof *ix_units);
    if (!ix_units)
        return;
    double units = fakedb__write_capacity(w, ix_units);
    fakedb__add_capacity_ix(req, body, t, units, ix_units);
    free(ix_units);
}

static const char *const k_rv_put[] = { "ALL_NEW", "UPDATED_OLD", "ALL_OLD", "NONE", "UPDATED_NEW", NULL };

/* One single-item write request, start to end. */
static int single_write(fakedb__store *db, fakedb__wkind kind, json_object *req, fakedb__reply *r)
{
    const char *rv;
    if (enum_param(req, "ReturnValues", k_rv_put, "NONE", &rv, r))
        return -1;
    if (kind != FDB_W_UPDATE && strcmp(rv, "NONE") && strcmp(rv, "ALL_OLD"))
        return fakedb__reply_fail_validation(r, "ReturnValues can only be ALL_OLD or NONE");
    fakedb__write w;
    pthread_mutex_lock(&db->lock);
    int rc = prepare(db, kind, req, &w, true, r);
    if (rc == 0) {
        rc = fakedb__write_eval(db, &w, r);
        if (rc == 1)
            rc = condition_failed(&w, r);
        else if (rc == 0 && (fakedb__tx_begin(db) || fakedb__write_apply(db, &w) || fakedb__tx_commit(db))) {
            fakedb__tx_rollback(db);
            rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
        }
    }
    pthread_mutex_unlock(&db->lock);
    if (rc == 0) {
        r->body = json_object_new_object();
        json_object *attrs = NULL;
        if (!strcmp(rv, "ALL_OLD") && w.old_item)
            attrs = json_object_get(w.old_item);
        else if (!strcmp(rv, "ALL_NEW") && w.new_item)
            attrs = json_object_get(w.new_item);
        else if (!strcmp(rv, "UPDATED_OLD") && w.old_item)
            attrs = pick(w.old_item, w.update);
        else if (!strcmp(rv, "UPDATED_NEW") && w.new_item)
            attrs = pick(w.new_item, w.update);
        if (attrs && json_object_object_length(attrs) > 0)
            json_object_object_add(r->body, "Attributes", attrs);
        else
            json_object_put(attrs);
        write_capacity(req, r->body, &w);
    }
    fakedb__write_cleanup(&w);
    return rc;
}

int fakedb__op_put_item(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    return single_write(db, FDB_W_PUT, req, r);
}

int fakedb__op_update_item(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    return single_write(db, FDB_W_UPDATE, req, r);
}

int fakedb__op_delete_item(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    return single_write(db, FDB_W_DELETE, req, r);
}

int fakedb__parse_projection(json_object *req, struct fakedb__expr_ctx *ctx,
                             struct fakedb__expr **out, fakedb__reply *r)
{
    *out = NULL;
    json_object *atg = fakedb__json_get(req, "AttributesToGet");
    if (atg && fakedb__json_get(req, "ProjectionExpression"))
        return fakedb__reply_fail_validation(r, "Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression}");
    if (fakedb__legacy_attrs_to_get(atg, r))
        return -1;
    if (!ctx)
        return 0;
    return parse_expr(ctx, req, "ProjectionExpression", FAKEDB_EXPR_PROJECTION, out, r);
}

json_object *fakedb__apply_projection(struct fakedb__expr *proj, json_object *attrs_to_get,
                                      json_object *item)
{
    if (proj)
        return fakedb__expr_project(proj, item);
    if (attrs_to_get) {
        json_object *o = json_object_new_object();
        for (size_t i = 0; i < json_object_array_length(attrs_to_get); i++) {
            const char *n = json_object_get_string(json_object_array_get_idx(attrs_to_get, i));
            json_object *v = n ? fakedb__json_get(item, n) : NULL;
            if (v)
                json_object_object_add(o, n, json_object_get(v));
        }
        return o;
    }
    return json_object_get(item);
}

int fakedb__op_get_item(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    json_object *cr = fakedb__json_get(req, "ConsistentRead");
    if (cr && !json_object_is_type(cr, json_type_boolean))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    bool consistent = cr && json_object_get_boolean(cr);
    json_object *key = fakedb__json_get(req, "Key");
    if (!key)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'key' failed to satisfy constraint: Member must not be null");
    struct fakedb__expr_ctx *ctx = NULL;
    struct fakedb__expr *proj = NULL;
    fakedb__table *t;
    fakedb__key *k = malloc(sizeof *k);
    json_object *item = NULL;
    int rc = -1;
    if (!k)
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    if (make_ctx(req, fakedb__json_get(req, "ProjectionExpression") != NULL, NULL, &ctx, r) ||
        fakedb__parse_projection(req, ctx, &proj, r) || check_unused(ctx, r) ||
        fakedb__item_validate(key, &r->err))
        goto out;
    pthread_mutex_lock(&db->lock);
    rc = fakedb__table_lookup(db, req, &t, r);
    if (rc == 0)
        rc = fakedb__key_make(t, key, FDB_KEY_PARAM, k, &r->err);
    /* A whole item into a body that is only rendered is the text it was stored as (what
     * FDB_JSON_FLAGS wrote), which the Item member's serializer writes as it is: it is
     * not parsed and written again (as query.c does with a page). */
    bool raw = r->render_only && !proj && !fakedb__json_get(req, "AttributesToGet");
    char *text = NULL;
    int64_t size = 0;
    if (rc == 0 && (raw ? fakedb__item_get_text(db, t, k, &text, &size) : fakedb__item_get(db, t, k, &item)))
        rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    json_object *whole = text ? json_object_new_object() : NULL; /* it then owns text */
    if (whole) {
        json_object_set_serializer(whole, json_object_userdata_to_json_string, text, json_object_free_userdata);
    } else if (text) {
        free(text);
        rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    }
    if (rc == 0) {
        r->body = json_object_new_object();
        if (whole) {
            json_object_object_add(r->body, "Item", whole);
            whole = NULL;
        } else if (item) {
            json_object_object_add(r->body, "Item",
                                   fakedb__apply_projection(proj, fakedb__json_get(req, "AttributesToGet"), item));
            size = (int64_t)fakedb__item_size(item);
        }
        fakedb__add_capacity(req, r->body, t->name, fakedb__read_units((size_t)size, consistent));
    }
    json_object_put(whole);
    pthread_mutex_unlock(&db->lock);
out:
    json_object_put(item);
    fakedb__expr_free(proj);
    fakedb__expr_ctx_free(ctx);
    free(k);
    return rc;
}

/* Shared with query.c, batch.c and txn.c. */
int fakedb__expr_setup(json_object *req, const char *const *params, struct fakedb__expr_ctx **ctx,
                       fakedb__reply *r)
{
    bool any = false;
    for (size_t i = 0; params[i]; i++)
        any = any || fakedb__json_get(req, params[i]) != NULL;
    return make_ctx(req, any, NULL, ctx, r);
}

int fakedb__expr_parse_param(struct fakedb__expr_ctx *ctx, json_object *req, const char *param,
                             int kind, struct fakedb__expr **out, fakedb__reply *r)
{
    *out = NULL;
    return ctx ? parse_expr(ctx, req, param, (fakedb__expr_kind)kind, out, r) : 0;
}

int fakedb__expr_unused(struct fakedb__expr_ctx *ctx, fakedb__reply *r)
{
    return check_unused(ctx, r);
}
