/* batch.c: BatchGetItem (up to 100 keys over several tables) and BatchWriteItem (up to
 * 25 puts and deletes). Every request in a batch is validated before any is applied.
 * Entries are left unprocessed only by an `unprocessed` fault: those come back in
 * UnprocessedKeys/UnprocessedItems, untouched, for the client to retry. */
#include "ops.h"
#include "expr.h"

#include <stdlib.h>
#include <string.h>

#define MAX_BATCH_GET 100
#define MAX_BATCH_WRITE 25

static int same_key(const fakedb__key *a, const fakedb__key *b)
{
    return a->pk_len == b->pk_len && a->sk_len == b->sk_len && !memcmp(a->pk, b->pk, a->pk_len) &&
           !memcmp(a->sk, b->sk, a->sk_len);
}

static int request_items(json_object *req, fakedb__reply *r, json_object **out)
{
    *out = fakedb__json_get(req, "RequestItems");
    if (!*out)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'requestItems' failed to satisfy constraint: Member must not be null");
    if (!json_object_is_type(*out, json_type_object))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    if (json_object_object_length(*out) == 0)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '{}' at 'requestItems' failed to satisfy constraint: Member must have length greater than or equal to 1");
    return 0;
}

static json_object *table_req(const char *name, json_object *src)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "TableName", json_object_new_string(name));
    if (src && json_object_is_type(src, json_type_object)) {
        json_object_object_foreach(src, k, v) json_object_object_add(o, k, json_object_get(v));
    }
    return o;
}

int fakedb__op_batch_get(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    json_object *ri;
    if (request_items(req, r, &ri))
        return -1;
    size_t total = 0;
    json_object_object_foreach(ri, tn, spec) {
        (void)tn;
        json_object *keys = fakedb__json_get(spec, "Keys");
        if (keys && !json_object_is_type(keys, json_type_array))
            return fakedb__reply_fail(r, FDB_E_SERIALIZATION, json_object_is_type(keys, json_type_object)
                                                            ? "Start of structure or map found where not expected."
                                                            : "Unexpected value type in payload");
        if (!keys || json_object_array_length(keys) == 0)
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'requestItems.%s.member.keys' failed to satisfy constraint: Member must not be null", tn);
        total += json_object_array_length(keys);
    }
    if (total > MAX_BATCH_GET)
        return fakedb__reply_fail_validation(r, "Too many items requested for the BatchGetItem call");
    json_object *responses = json_object_new_object();
    json_object *caps = json_object_new_array();
    json_object *unprocessed = json_object_new_object();
    int rc = 0;
    fakedb__key *keys = calloc(total ? total : 1, sizeof *keys);
    if (!keys) {
        json_object_put(responses);
        json_object_put(caps);
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    }
    pthread_mutex_lock(&db->lock);
    json_object_object_foreach(ri, name, tspec) {
        json_object *treq = table_req(name, tspec);
        fakedb__table *t;
        struct fakedb__expr_ctx *ctx = NULL;
        struct fakedb__expr *proj = NULL;
        static const char *const params[] = { "ProjectionExpression", NULL };
        json_object *klist = fakedb__json_get(tspec, "Keys");
        size_t n = json_object_array_length(klist);
        json_object *cr = fakedb__json_get(tspec, "ConsistentRead");
        bool consistent = cr && json_object_get_boolean(cr);
        rc = fakedb__table_lookup(db, treq, &t, r);
        if (rc == 0)
            rc = fakedb__expr_setup(treq, params, &ctx, r) || fakedb__parse_projection(treq, ctx, &proj, r) ||
                 fakedb__expr_unused(ctx, r) ? -1 : 0;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            json_object *k = json_object_array_get_idx(klist, i);
            if (fakedb__item_validate(k, &r->err) || fakedb__key_make(t, k, FDB_KEY_PARAM, &keys[i], &r->err))
                rc = -1;
            for (size_t j = 0; rc == 0 && j < i; j++)
                if (same_key(&keys[i], &keys[j]))
                    rc = fakedb__reply_fail_validation(r, "Provided list of item keys contains duplicates");
        }
        json_object *items = json_object_new_array();
        json_object *skipped = json_object_new_array();
        double units = 0;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            json_object *item = NULL;
            if (r->leave_out && r->leave_out(r->leave_out_arg, name, t->pk, json_object_array_get_idx(klist, i))) {
                json_object_array_add(skipped, json_object_get(json_object_array_get_idx(klist, i)));
                continue;
            }
            if (fakedb__item_get(db, t, &keys[i], &item)) {
                rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
                break;
            }
            units += fakedb__read_units(fakedb__item_size(item), consistent);
            if (item)
                json_object_array_add(items, fakedb__apply_projection(proj, fakedb__json_get(treq, "AttributesToGet"), item));
            json_object_put(item);
        }
        if (rc == 0) {
            json_object_object_add(responses, name, items);
            fakedb__capacity_list_add(req, caps, t, NULL, units, NULL);
            if (json_object_array_length(skipped)) {
                /* the table's KeysAndAttributes as sent, with only the keys not read */
                json_object *left = json_object_new_object();
                json_object_object_foreach(tspec, sk, sv) {
                    if (strcmp(sk, "Keys"))
                        json_object_object_add(left, sk, json_object_get(sv));
                }
                json_object_object_add(left, "Keys", json_object_get(skipped));
                json_object_object_add(unprocessed, name, left);
            }
        } else {
            json_object_put(items);
        }
        json_object_put(skipped);
        fakedb__expr_free(proj);
        fakedb__expr_ctx_free(ctx);
        json_object_put(treq);
        if (rc)
            break;
    }
    pthread_mutex_unlock(&db->lock);
    free(keys);
    if (rc) {
        json_object_put(responses);
        json_object_put(caps);
        json_object_put(unprocessed);
        return rc;
    }
    r->body = json_object_new_object();
    json_object_object_add(r->body, "Responses", responses);
    json_object_object_add(r->body, "UnprocessedKeys", unprocessed);
    if (fakedb__capacity_wanted(req))
        json_object_object_add(r->body, "ConsumedCapacity", caps);
    else
        json_object_put(caps);
    return 0;
}

int fakedb__op_batch_write(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    json_object *ri;
    if (request_items(req, r, &ri))
        return -1;
    size_t total = 0;
    json_object_object_foreach(ri, tn, list) {
        if (!json_object_is_type(list, json_type_array) || json_object_array_length(list) == 0)
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value '{%s=[]}' at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to 25, Member must have length greater than or equal to 1]", tn);
        total += json_object_array_length(list);
    }
    if (total > MAX_BATCH_WRITE)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value at 'requestItems' failed to satisfy constraint: Map value must satisfy constraint: [Member must have length less than or equal to 25, Member must have length greater than or equal to 1]");
    fakedb__write *w = calloc(total, sizeof *w);
    json_object **reqs = calloc(total, sizeof *reqs);
    json_object **ents = calloc(total, sizeof *ents); /* borrowed from req */
    bool *skip = calloc(total, sizeof *skip);
    size_t n = 0;
    int rc = 0;
    if (!w || !reqs || !ents || !skip) {
        free(w);
        free(reqs);
        free(ents);
        free(skip);
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    }
    pthread_mutex_lock(&db->lock);
    json_object_object_foreach(ri, name, entries) {
        for (size_t i = 0; rc == 0 && i < json_object_array_length(entries); i++) {
            json_object *e = json_object_array_get_idx(entries, i);
            json_object *put = fakedb__json_get(e, "PutRequest"), *del = fakedb__json_get(e, "DeleteRequest");
            if ((put != NULL) == (del != NULL) || json_object_object_length(e) != 1) {
                rc = fakedb__reply_fail_validation(r, "Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes");
                break;
            }
            reqs[n] = table_req(name, put ? put : del);
            if (fakedb__write_prepare(db, put ? FDB_W_PUT : FDB_W_DELETE, reqs[n], &w[n], r)) {
                if (put && r->err.type && !strcmp(r->err.type, FDB_E_VALIDATION) &&
                    (strstr(r->err.message, "Type mismatch for key") || strstr(r->err.message, "Missing the key")))
                    fakedb__reply_fail_validation(r, "The provided key element does not match the schema");
                n++;
                rc = -1;
                break;
            }
            for (size_t j = 0; j < n; j++)
                if (w[j].table == w[n].table && same_key(&w[j].key, &w[n].key))
                    rc = fakedb__reply_fail_validation(r, "Provided list of item keys contains duplicates");
            ents[n] = e;
            skip[n] = r->leave_out && r->leave_out(r->leave_out_arg, name, w[n].table->pk, w[n].key_attrs);
            n++;
        }
        if (rc)
            break;
    }
    if (rc == 0) {
        if (fakedb__tx_begin(db))
            rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
        for (size_t i = 0; rc == 0 && i < n; i++) {
            if (skip[i])
                continue;
            int e = fakedb__write_eval(db, &w[i], r);
            if (e == 0 && fakedb__write_apply(db, &w[i]))
                e = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
            if (e)
                rc = -1;
        }
        if (rc == 0 && fakedb__tx_commit(db))
            rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
        if (rc)
            fakedb__tx_rollback(db);
    }
    json_object *caps = json_object_new_array();
    json_object *unprocessed = json_object_new_object();
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (skip[i]) {
            json_object *left = fakedb__json_get(unprocessed, w[i].table->name);
            if (!left) {
                left = json_object_new_array();
                json_object_object_add(unprocessed, w[i].table->name, left);
            }
            json_object_array_add(left, json_object_get(ents[i]));
            continue;
        }
        if (fakedb__capacity_wanted(req)) { /* each write as its single-item form counts it */
            double *ix_units = calloc(w[i].table->n_idx + 1, sizeof *ix_units);
            if (ix_units) {
                double units = fakedb__write_capacity(&w[i], ix_units);
                fakedb__capacity_list_add(req, caps, w[i].table, NULL, units, ix_units);
            }
            free(ix_units);
        }
    }
    pthread_mutex_unlock(&db->lock);
    for (size_t i = 0; i < n; i++) {
        fakedb__write_cleanup(&w[i]);
        json_object_put(reqs[i]);
    }
    free(w);
    free(reqs);
    free(ents);
    free(skip);
    if (rc) {
        json_object_put(caps);
        json_object_put(unprocessed);
        return rc;
    }
    r->body = json_object_new_object();
    json_object_object_add(r->body, "UnprocessedItems", unprocessed);
    if (fakedb__capacity_wanted(req))
        json_object_object_add(r->body, "ConsumedCapacity", caps);
    else
        json_object_put(caps);
    return 0;
}
