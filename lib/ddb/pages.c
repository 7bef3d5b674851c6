/* pages.c: Query and Scan as iterators over pages. Each ddb_pages_next sends one
 * request, starting after the LastEvaluatedKey of the page before; the options are
 * copied when the iterator is made, so the caller's may go away. */
#include "client.h"

#include <stdlib.h>
#include <string.h>

struct ddb_pages {
    ddb_table *table;
    bool is_query;
    json_object *base;       /* the request without ExclusiveStartKey */
    ddb_cancel *cancel;
    ddb_item *next_start;    /* ExclusiveStartKey of the next request, NULL for none */
    bool started, done;
    ddb_item **items;
    size_t n_items;
    size_t scanned;
    ddb_item *last_key;
};

void ddb_pages_free(ddb_pages *p)
{
    if (!p)
        return;
    json_object_put(p->base);
    ddb_cancel_unref(p->cancel);
    ddb_item_free(p->next_start);
    ddb_item_array_free(p->items, p->n_items);
    ddb_item_free(p->last_key);
    free(p);
}

static bool add_bool(json_object *o, const char *k, bool b)
{
    json_object *v = json_object_new_boolean(b);
    if (!v || json_object_object_add(o, k, v) != 0) {
        json_object_put(v);
        return false;
    }
    return true;
}

static bool add_int(json_object *o, const char *k, int i)
{
    json_object *v = json_object_new_int(i);
    if (!v || json_object_object_add(o, k, v) != 0) {
        json_object_put(v);
        return false;
    }
    return true;
}

static ddb_pages *pages_new(ddb_table *t, const ddb_query_options *o, bool query,
                            ddb_cancel *cancel, ddb_error *err)
{
    ddb_query_options zero = { 0 };
    if (!o)
        o = &zero;
    if (!t) {
        ddb__fail(err, DDB_EINVAL, "no table was given");
        return NULL;
    }
    if (query && (!o->key_condition || !*o->key_condition)) {
        ddb__fail(err, DDB_EINVAL, "a Query on %s needs a key condition", t->name);
        return NULL;
    }
    if (o->limit < 0 || o->segment < 0 || o->total_segments < 0 ||
        (o->total_segments > 0 && o->segment >= o->total_segments) ||
        (o->total_segments == 0 && o->segment != 0)) {
        ddb__fail(err, DDB_EINVAL, "bad limit or segments for a %s on %s",
                  query ? "Query" : "Scan", t->name);
        return NULL;
    }
    if (query && o->total_segments > 0) {
        ddb__fail(err, DDB_EINVAL, "a Query on %s cannot be parallel", t->name);
        return NULL;
    }
    ddb_pages *p = calloc(1, sizeof *p);
    json_object *r = p ? json_object_new_object() : NULL;
    if (!r) {
        free(p);
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    p->table = t;
    p->is_query = query;
    p->base = r;
    bool ok = ddb__jadd_str(r, "TableName", t->name) &&
              (!o->index || ddb__jadd_str(r, "IndexName", o->index)) &&
              (!query || ddb__jadd_str(r, "KeyConditionExpression", o->key_condition)) &&
              (!o->filter || ddb__jadd_str(r, "FilterExpression", o->filter)) &&
              (!o->projection || ddb__jadd_str(r, "ProjectionExpression", o->projection)) &&
              (!o->limit || add_int(r, "Limit", o->limit)) &&
              (!(query && o->descending) || add_bool(r, "ScanIndexForward", false)) &&
              (!o->consistent_read || add_bool(r, "ConsistentRead", true)) &&
              (!o->total_segments || (add_int(r, "Segment", o->segment) &&
                                      add_int(r, "TotalSegments", o->total_segments)));
    if (!ok) {
        ddb_pages_free(p);
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    if (ddb__jadd_expr(r, o->names, o->values, err) != 0) {
        ddb_pages_free(p);
        return NULL;
    }
    if (o->start_key && !(p->next_start = ddb_item_copy(o->start_key))) {
        ddb_pages_free(p);
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    p->cancel = cancel ? ddb_cancel_ref(cancel) : NULL;
    return p;
}

ddb_pages *ddb_table_query(ddb_table *t, const ddb_query_options *o, ddb_cancel *cancel,
                           ddb_error *err)
{
    ddb__err_reset(err);
    return pages_new(t, o, true, cancel, err);
}

ddb_pages *ddb_table_scan(ddb_table *t, const ddb_query_options *o, ddb_cancel *cancel,
                          ddb_error *err)
{
    ddb__err_reset(err);
    return pages_new(t, o, false, cancel, err);
}

static void page_clear(ddb_pages *p)
{
    ddb_item_array_free(p->items, p->n_items);
    p->items = NULL;
    p->n_items = 0;
    p->scanned = 0;
    ddb_item_free(p->last_key);
    p->last_key = NULL;
}

/* Reads Items, ScannedCount and LastEvaluatedKey of an answer into the page. */
static int read_page(ddb_pages *p, json_object *resp, ddb_error *err)
{
    json_object *items, *sc;
    if (json_object_object_get_ex(resp, "Items", &items)) {
        if (!json_object_is_type(items, json_type_array))
            return ddb__fail(err, DDB_EPROTOCOL, "Items of a page is not an array");
        size_t n = json_object_array_length(items);
        if (n) {
            p->items = calloc(n, sizeof *p->items);
            if (!p->items)
                return ddb__fail(err, DDB_ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < n; i++) {
            ddb_item *it = ddb__item_from_jobj(json_object_array_get_idx(items, i), err);
            if (!it)
                return err && err->code ? err->code : DDB_EPROTOCOL;
            p->items[p->n_items++] = it;
        }
    }
    if (json_object_object_get_ex(resp, "ScannedCount", &sc))
        p->scanned = (size_t)json_object_get_int64(sc);
    ddb_item *last = NULL;
    ddb_error perr;
    int rc = ddb__jget_item(resp, "LastEvaluatedKey", &last, &perr);
    if (rc != 0)
        return ddb__fail(err, rc, "LastEvaluatedKey is malformed: %s", perr.message);
    if (last && last->n == 0) {
        ddb_item_free(last);
        last = NULL;
    }
    p->last_key = last;
    return 0;
}

int ddb_pages_next(ddb_pages *p, ddb_error *err)
{
    ddb__err_reset(err);
    if (!p)
        return ddb__fail(err, DDB_EINVAL, "no iterator was given");
    page_clear(p);
    if (p->done)
        return 0;
    ddb_client *c = p->table->client;
    DDB__CALL_SCOPE(c->clock);

    json_object *req = json_object_new_object();
    int rc = 0;
    if (!req) {
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
        goto out;
    }
    json_object_object_foreach(p->base, k, v) {
        if (json_object_object_add(req, k, json_object_get(v)) != 0) {
            json_object_put(v);
            rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
            goto out;
        }
    }
    if (p->next_start && (rc = ddb__jadd_item(req, "ExclusiveStartKey", p->next_start, err)) != 0)
        goto out;

    ddb__call call = { .operation = p->is_query ? "Query" : "Scan", .table = p->table->name };
    json_object *resp = NULL;
    rc = ddb__client_send(c, &call, req, &resp, p->cancel, NULL, err);
    if (rc == 0) {
        rc = read_page(p, resp, err);
        if (rc != 0)
            page_clear(p);
    }
    json_object_put(resp);
    if (rc == 0) {
        p->started = true;
        ddb_item_free(p->next_start);
        p->next_start = NULL;
        if (p->last_key) {
            p->next_start = ddb_item_copy(p->last_key);
            if (!p->next_start)
                rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
        } else {
            p->done = true;
        }
    }
out:
    json_object_put(req);
    return rc == 0 ? 1 : rc;
}

size_t ddb_pages_count(const ddb_pages *p) { return p ? p->n_items : 0; }

const ddb_item *ddb_pages_item(const ddb_pages *p, size_t i)
{
    return (p && i < p->n_items) ? p->items[i] : NULL;
}

size_t ddb_pages_scanned(const ddb_pages *p) { return p ? p->scanned : 0; }

const ddb_item *ddb_pages_last_key(const ddb_pages *p) { return p ? p->last_key : NULL; }
