/* query.c: Query and Scan, on a table or one of its indexes: key conditions turned into
 * ranges over the encoded keys, pages of at most 1 MB or Limit items with
 * LastEvaluatedKey, ScanIndexForward, parallel scan segments, filters, projections and
 * Select=COUNT. */
#include "ops.h"
#include "expr.h"

#include <buf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct qstate {
    fakedb__table *t;
    const fakedb__index *ix;
    bool scan, forward, consistent, count_only, all_attrs;
    int64_t limit;
    long segment, total_segments;
    struct fakedb__expr_ctx *ctx;
    struct fakedb__expr *key_expr, *filter, *proj;
    const struct fakedb__pq_select *pq;   /* PartiQL's SELECT: its WHERE and projection */
    bool legacy_keys, legacy_filter;  /* from KeyConditions, QueryFilter/ScanFilter */
    json_object *attrs_to_get;
    /* key condition, encoded */
    fakedb__key *kc;            /* pk and lower bound in sk */
    uint8_t hi[FDB_KEY_SK_CAP];
    size_t hi_len;
    bool has_hi;
    fakedb__key_op op;
    /* start key */
    bool has_start;
    fakedb__key *start;         /* base key */
    fakedb__key *start_ix;      /* index key */
} qstate;

static int bad_start(fakedb__reply *r)
{
    return fakedb__reply_fail_validation(r, "The provided starting key is invalid: The provided key element does not match the schema");
}

static int encode_attr(json_object *obj, const char *name, char type, uint8_t *buf, size_t cap,
                       size_t *len)
{
    json_object *av = fakedb__json_get(obj, name);
    if (!av || fakedb__av_scalar(av) != type)
        return -1;
    return fakedb__encode_scalar(av, type, buf, cap, len) ? -1 : 0;
}

static int parse_start(qstate *q, json_object *esk, fakedb__reply *r)
{
    if (!esk)
        return 0;
    if (fakedb__item_validate(esk, &r->err))
        return -1;
    size_t want = q->t->sk ? 2 : 1;
    q->start = calloc(1, sizeof *q->start);
    q->start_ix = calloc(1, sizeof *q->start_ix);
    if (!q->start || !q->start_ix)
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    if (encode_attr(esk, q->t->pk, q->t->pk_type, q->start->pk, FDB_MAX_PK_BYTES, &q->start->pk_len) ||
        (q->t->sk && encode_attr(esk, q->t->sk, q->t->sk_type, q->start->sk, FDB_MAX_SK_BYTES, &q->start->sk_len)))
        return bad_start(r);
    if (q->ix) {
        /* the table's key and every key attribute of the index */
        for (size_t i = 0; i < q->ix->n_hash + q->ix->n_range; i++) {
            const char *name = i < q->ix->n_hash ? q->ix->hash[i] : q->ix->range[i - q->ix->n_hash];
            if (strcmp(name, q->t->pk) && (!q->t->sk || strcmp(name, q->t->sk)))
                want++;
        }
        if (fakedb__index_key_encode(q->ix, esk, q->start_ix))
            return bad_start(r);
    }
    if ((size_t)json_object_object_length(esk) != want)
        return bad_start(r);
    q->has_start = true;
    return 0;
}

/* The smallest byte string greater than every string starting with p: 0 when none. */
static int prefix_successor(const uint8_t *p, size_t n, uint8_t *out, size_t *out_len)
{
    while (n > 0 && p[n - 1] == 0xFF)
        n--;
    if (n == 0)
        return 0;
    memcpy(out, p, n);
    out[n - 1]++;
    *out_len = n;
    return 1;
}

static int range_too_large(fakedb__reply *r)
{
    return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes");
}

/* The key condition of a multi-attribute key as one range [kc->sk, hi) of the encoded
 * RANGE parts (q->op FAKEDB_KEY_BEGINS_WITH: >= the low bound, < the high one when
 * has_hi), or FAKEDB_KEY_EQ when every RANGE attribute is given by =. With P the encoded
 * leading attributes given by = and E = P + the last one's value closed:
 * = v: [E, succ(E)); > v: [succ(E), succ(P)); >= v: [E, succ(P)); < v: [P, E);
 * <= v: [P, succ(E)); BETWEEN a AND b: [P+a, succ(P+b)); begins_with(v): [P+v open,
 * succ(P+v open)), succ(x) being the least string above every string starting with x. */
static int multi_key_condition(qstate *q, fakedb__reply *r)
{
    char err[FAKEDB_EXPR_ERR_MAX];
    const fakedb__index *ix = q->ix;
    fakedb__key_schema ks = { ix->n_hash, ix->n_range, (const char *const *)ix->hash,
                              (const char *const *)ix->range, ix->hash_type, ix->range_type };
    fakedb__key_conds kc;
    _Static_assert(FAKEDB_KEY_ATTRS_MAX == FDB_MAX_KEY_ATTRS, "one limit of key attributes");
    if (fakedb__expr_key_conditions(q->key_expr, &ks, &kc, err))
        return fakedb__reply_fail_validation(r, "%s", err);
    q->kc = calloc(1, sizeof *q->kc);
    if (!q->kc)
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    if (fakedb__key_part_encode(kc.hash_value, ix->hash_type, ix->n_hash, true, false, q->kc->pk, &q->kc->pk_len))
        return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes");
    q->op = FAKEDB_KEY_NONE;
    if (kc.n_range == 0)
        return 0;
    size_t last = kc.n_range - 1;
    json_object *vals[FDB_MAX_KEY_ATTRS];
    memcpy(vals, kc.range_value, sizeof vals);
    uint8_t *lo = q->kc->sk;
    size_t *lo_len = &q->kc->sk_len;
    uint8_t p[FDB_KEY_SK_CAP];
    size_t p_len = 0;
    if (fakedb__key_part_encode(vals, ix->range_type, last, false, false, p, &p_len))
        return range_too_large(r);
    fakedb__key_op op = kc.last_op;
    if (op == FAKEDB_KEY_EQ && kc.n_range == ix->n_range) {
        if (fakedb__key_part_encode(vals, ix->range_type, kc.n_range, false, false, lo, lo_len))
            return range_too_large(r);
        q->op = FAKEDB_KEY_EQ;
        return 0;
    }
    uint8_t e[FDB_KEY_SK_CAP];
    size_t e_len = 0;
    if (fakedb__key_part_encode(vals, ix->range_type, kc.n_range, false, op == FAKEDB_KEY_BEGINS_WITH, e, &e_len))
        return range_too_large(r);
    q->op = FAKEDB_KEY_BEGINS_WITH;
    q->has_hi = true;
    switch (op) {
    case FAKEDB_KEY_EQ:
    case FAKEDB_KEY_BEGINS_WITH:
        memcpy(lo, e, e_len);
        *lo_len = e_len;
        q->has_hi = prefix_successor(e, e_len, q->hi, &q->hi_len) == 1;
        break;
    case FAKEDB_KEY_GT:
    case FAKEDB_KEY_GE:
        if (op == FAKEDB_KEY_GE) {
            memcpy(lo, e, e_len);
            *lo_len = e_len;
        } else {
            prefix_successor(e, e_len, lo, lo_len); /* E ends in 00 01: it has one */
        }
        q->has_hi = prefix_successor(p, p_len, q->hi, &q->hi_len) == 1;
        break;
    case FAKEDB_KEY_LT:
    case FAKEDB_KEY_LE:
        memcpy(lo, p, p_len);
        *lo_len = p_len;
        if (op == FAKEDB_KEY_LT) {
            memcpy(q->hi, e, e_len);
            q->hi_len = e_len;
        } else {
            prefix_successor(e, e_len, q->hi, &q->hi_len);
        }
        break;
    case FAKEDB_KEY_BETWEEN: {
        char t = ix->range_type[last];
        if (fakedb__av_compare(vals[last], kc.last_value2) > 0)
            return fakedb__reply_fail_validation(r, "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {%c:%s}, upper bound operand: AttributeValue: {%c:%s}",
                                                 t, json_object_get_string(json_object_object_get(vals[last], (char[]){ t, 0 })),
                                                 t, json_object_get_string(json_object_object_get(kc.last_value2, (char[]){ t, 0 })));
        memcpy(lo, e, e_len);
        *lo_len = e_len;
        vals[last] = kc.last_value2;
        if (fakedb__key_part_encode(vals, ix->range_type, kc.n_range, false, false, e, &e_len))
            return range_too_large(r);
        prefix_successor(e, e_len, q->hi, &q->hi_len);
        break;
    }
    default:
        break;
    }
    return 0;
}

static int key_condition(qstate *q, json_object *req, fakedb__reply *r)
{
    if (q->ix && q->ix->multi)
        return multi_key_condition(q, r);
    char err[FAKEDB_EXPR_ERR_MAX];
    fakedb__key_cond kc;
    const char *pk = q->ix ? q->ix->pk : q->t->pk, *sk = q->ix ? q->ix->sk : q->t->sk;
    char pkt = q->ix ? q->ix->pk_type : q->t->pk_type, skt = q->ix ? q->ix->sk_type : q->t->sk_type;
    memset(&kc, 0, sizeof kc);
    if (q->legacy_keys && fakedb__legacy_key_check(req, pk, pkt, sk, skt, r))
        return -1;
    if (fakedb__expr_key_condition(q->key_expr, pk, pkt, sk, skt, &kc, err))
        return fakedb__reply_fail_validation(r, "%s", err);
    q->kc = calloc(1, sizeof *q->kc);
    if (!q->kc)
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    if (fakedb__av_scalar(kc.pk_value) != pkt ||
        (kc.sk_op != FAKEDB_KEY_NONE && fakedb__av_scalar(kc.sk_value1) != skt) ||
        (kc.sk_op == FAKEDB_KEY_BETWEEN && fakedb__av_scalar(kc.sk_value2) != skt))
        return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Condition parameter type does not match schema type");
    if (fakedb__encode_scalar(kc.pk_value, pkt, q->kc->pk, FDB_MAX_PK_BYTES, &q->kc->pk_len))
        return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes");
    q->op = kc.sk_op;
    if (kc.sk_op == FAKEDB_KEY_NONE)
        return 0;
    if (kc.sk_op == FAKEDB_KEY_BEGINS_WITH && skt == 'N')
        return fakedb__reply_fail_validation(r, "Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N");
    if (fakedb__encode_scalar(kc.sk_value1, skt, q->kc->sk, FDB_MAX_SK_BYTES, &q->kc->sk_len))
        return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes");
    if (kc.sk_op == FAKEDB_KEY_BETWEEN) {
        if (fakedb__encode_scalar(kc.sk_value2, skt, q->hi, FDB_MAX_SK_BYTES, &q->hi_len))
            return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes");
        q->has_hi = true;
        if (fakedb__av_compare(kc.sk_value1, kc.sk_value2) > 0)
            return fakedb__reply_fail_validation(r, "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {%c:%s}, upper bound operand: AttributeValue: {%c:%s}",
                                           skt, json_object_get_string(json_object_object_get(kc.sk_value1, (char[]){ skt, 0 })),
                                           skt, json_object_get_string(json_object_object_get(kc.sk_value2, (char[]){ skt, 0 })));
    } else if (kc.sk_op == FAKEDB_KEY_BEGINS_WITH) {
        q->has_hi = prefix_successor(q->kc->sk, q->kc->sk_len, q->hi, &q->hi_len) == 1;
    } else if (kc.sk_op == FAKEDB_KEY_LT || kc.sk_op == FAKEDB_KEY_LE) {
        memcpy(q->hi, q->kc->sk, q->kc->sk_len);
        q->hi_len = q->kc->sk_len;
        q->has_hi = true;
    }
    return 0;
}

/* memcmp order of two encoded sort keys, which is DynamoDB's order */
static int enc_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

/* Whether a start key's sort key satisfies the query's sort key condition. */
static bool start_in_range(const qstate *q, const fakedb__key *k)
{
    int lo = enc_cmp(k->sk, k->sk_len, q->kc->sk, q->kc->sk_len);
    int hi = q->has_hi ? enc_cmp(k->sk, k->sk_len, q->hi, q->hi_len) : -1;
    switch (q->op) {
    case FAKEDB_KEY_EQ: return lo == 0;
    case FAKEDB_KEY_LT: return hi < 0;
    case FAKEDB_KEY_LE: return hi <= 0;
    case FAKEDB_KEY_GT: return lo > 0;
    case FAKEDB_KEY_GE: return lo >= 0;
    case FAKEDB_KEY_BETWEEN: return lo >= 0 && hi <= 0;
    case FAKEDB_KEY_BEGINS_WITH: return lo >= 0 && hi < 0;
    default: return true;
    }
}

static void build_sql(const qstate *q, char *sql, size_t n)
{
    const char *dir = q->forward ? "" : " DESC";
    char cond[512] = "";
    const char *col = q->ix ? "x.isk" : "i.sk";
    size_t o = 0;
#define ADD(...) o += (size_t)snprintf(cond + o, o < sizeof cond ? sizeof cond - o : 0, __VA_ARGS__)
    if (!q->scan) {
        switch (q->op) {
        case FAKEDB_KEY_EQ: ADD(" AND %s = ?3", col); break;
        case FAKEDB_KEY_LT: ADD(" AND %s < ?4", col); break;
        case FAKEDB_KEY_LE: ADD(" AND %s <= ?4", col); break;
        case FAKEDB_KEY_GT: ADD(" AND %s > ?3", col); break;
        case FAKEDB_KEY_GE: ADD(" AND %s >= ?3", col); break;
        case FAKEDB_KEY_BETWEEN: ADD(" AND %s >= ?3 AND %s <= ?4", col, col); break;
        case FAKEDB_KEY_BEGINS_WITH:
            ADD(" AND %s >= ?3", col);
            if (q->has_hi)
                ADD(" AND %s < ?4", col);
            break;
        default: break;
        }
    }
    const char *cmp = q->forward ? ">" : "<";
    if (q->has_start) {
        if (q->scan && q->ix)
            ADD(" AND (x.ipk, x.isk, x.pk, x.sk) > (?2, ?5, ?6, ?7)");
        else if (q->scan)
            ADD(" AND (i.pk, i.sk) > (?6, ?7)");
        else if (q->ix)
            ADD(" AND (x.isk, x.pk, x.sk) %s (?5, ?6, ?7)", cmp);
        else
            ADD(" AND i.sk %s ?7", cmp);
    }
#undef ADD
    if (q->ix) {
        snprintf(sql, n,
                 "SELECT i.item, i.size FROM fdb_index x JOIN fdb_items i ON i.tid = x.tid AND i.pk = x.pk AND i.sk = x.sk"
                 " WHERE x.tid = ?1 AND x.iname = ?8%s%s ORDER BY %s",
                 q->scan ? "" : " AND x.ipk = ?9", cond,
                 q->scan ? "x.ipk, x.isk, x.pk, x.sk"
                         : (q->forward ? "x.isk, x.pk, x.sk" : "x.isk DESC, x.pk DESC, x.sk DESC"));
    } else {
        snprintf(sql, n, "SELECT i.item, i.size FROM fdb_items i WHERE i.tid = ?1%s%s ORDER BY %s%s",
                 q->scan ? "" : " AND i.pk = ?9", cond, q->scan ? "i.pk, i.sk" : "i.sk", q->scan ? "" : dir);
    }
}

static void bind_blob(sqlite3_stmt *st, int i, const uint8_t *p, size_t n)
{
    if (i <= sqlite3_bind_parameter_count(st))
        sqlite3_bind_blob(st, i, p, (int)n, SQLITE_STATIC);
}

static uint32_t fnv1a(const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

static json_object *last_key(const qstate *q, json_object *item)
{
    json_object *k = fakedb__key_of(q->t, item);
    for (size_t i = 0; q->ix && i < q->ix->n_hash + q->ix->n_range; i++) {
        const char *name = i < q->ix->n_hash ? q->ix->hash[i] : q->ix->range[i - q->ix->n_hash];
        json_object *v = fakedb__json_get(item, name);
        if (v)
            json_object_object_add(k, name, json_object_get(v));
    }
    return k;
}

static int run(fakedb__store *db, qstate *q, json_object *req, fakedb__reply *r)
{
    char sql[1024];
    char err[FAKEDB_EXPR_ERR_MAX];
    build_sql(q, sql, sizeof sql);
    sqlite3_stmt *st = fakedb__stmt(db, sql);
    if (!st)
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    sqlite3_bind_int64(st, 1, q->t->id);
    if (q->kc) {
        bind_blob(st, 9, q->kc->pk, q->kc->pk_len);
        bind_blob(st, 3, q->kc->sk, q->kc->sk_len);
        bind_blob(st, 4, q->has_hi ? q->hi : q->kc->sk, q->has_hi ? q->hi_len : q->kc->sk_len);
    }
    if (q->ix && 8 <= sqlite3_bind_parameter_count(st))
        sqlite3_bind_text(st, 8, q->ix->name, -1, SQLITE_STATIC);
    if (q->has_start) {
        bind_blob(st, 2, q->start_ix->pk, q->start_ix->pk_len);
        bind_blob(st, 5, q->start_ix->sk, q->start_ix->sk_len);
        bind_blob(st, 6, q->start->pk, q->start->pk_len);
        bind_blob(st, 7, q->start->sk, q->start->sk_len);
    }
    json_object *items = json_object_new_array();
    json_object *last = NULL;
    int64_t scanned = 0, count = 0, bytes = 0;
    int rc = 0, step;
    /* Whole items into a body that is only rendered: the page's Items are the stored JSON
     * of its items (what FDB_JSON_FLAGS wrote), copied one after the other into one text
     * that the array's serializer writes as it is; none is parsed and written again, and
     * no object is made per item (one per item, with its hash table, made the worker's
     * malloc arena grow and shrink again at every page: bench/RESULTS.md). Only the
     * page's last item is parsed, for LastEvaluatedKey. */
    dl_buf text = {0};
    /* A local index whose entries lack attributes asked for fetches each item from the
     * table: DynamoDB charges the entries read, as a page, and each item fetched, rounded
     * up on its own, to the table. */
    bool fetch = q->ix && !q->ix->global && q->all_attrs && q->ix->projection != FDB_PROJ_ALL;
    int64_t entry_bytes = 0;
    double fetched_units = 0;
    bool raw = r->render_only && !q->total_segments && !q->pq && !q->filter && !q->proj &&
               !q->attrs_to_get && (!q->ix || q->all_attrs) && !fetch;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t size = sqlite3_column_int64(st, 1);
        if (raw) {
            scanned++;
            count++;
            bytes += size;
            bool stop = (q->limit > 0 && scanned >= q->limit) || bytes >= FDB_PAGE_BYTES;
            if (!q->count_only) {
                const unsigned char *json = sqlite3_column_text(st, 0); /* then its length */
                dl__buf_putc(&text, text.len ? ',' : '[');
                dl__buf_put(&text, json, (size_t)sqlite3_column_bytes(st, 0));
            }
            if (stop) {
                json_object *item = fakedb__json_from_text((const char *)sqlite3_column_text(st, 0));
                last = item ? last_key(q, item) : NULL;
                json_object_put(item);
                break;
            }
            continue;
        }
        json_object *item = fakedb__json_from_text((const char *)sqlite3_column_text(st, 0));
        if (!item)
            continue;
        if (q->total_segments > 0) {
            fakedb__key k;
            fakedb__error scratch;
            memset(&scratch, 0, sizeof scratch);
            if (q->ix)
                fakedb__index_key(q->ix, item, &k, &scratch);
            else
                fakedb__key_make(q->t, item, FDB_KEY_ITEM, &k, &scratch);
            if ((long)(fnv1a(k.pk, k.pk_len) % (uint32_t)q->total_segments) != q->segment) {
                json_object_put(item);
                continue;
            }
        }
        scanned++;
        json_object *view = q->ix && !q->all_attrs ? fakedb__project_index(q->t, q->ix, item) : json_object_get(item);
        if (q->ix && !q->all_attrs && q->ix->projection != FDB_PROJ_ALL)
            size = (int64_t)fakedb__item_size(view); /* an index is read by the size of its entries */
        bytes += size;
        if (fetch) {
            json_object *entry = fakedb__project_index(q->t, q->ix, item);
            entry_bytes += (int64_t)fakedb__item_size(entry);
            json_object_put(entry);
            fetched_units += fakedb__read_units((size_t)size, q->consistent);
        } else {
            entry_bytes += size;
        }
        bool keep = true;
        if (q->pq && q->pq->where && fakedb__expr_eval(q->pq->where, view, &keep, err)) {
            rc = fakedb__reply_fail_validation(r, "%s", err);
            json_object_put(view);
            json_object_put(item);
            break;
        }
        if (keep && q->filter && fakedb__expr_eval(q->filter, view, &keep, err)) {
            rc = fakedb__reply_fail_validation(r, "%s", err);
            json_object_put(view);
            json_object_put(item);
            break;
        }
        if (keep) {
            count++;
            if (q->pq && q->pq->project)
                json_object_array_add(items, q->pq->project(q->pq->arg, view));
            else if (!q->count_only)
                json_object_array_add(items, fakedb__apply_projection(q->proj, q->attrs_to_get, view));
        }
        json_object_put(view);
        if ((q->limit > 0 && scanned >= q->limit) || bytes >= FDB_PAGE_BYTES) {
            last = last_key(q, item);
            json_object_put(item);
            break;
        }
        json_object_put(item);
    }
    sqlite3_reset(st);
    if (rc == 0 && text.len) {
        dl__buf_putc(&text, ']');
        char *all = dl__buf_take(&text, NULL);
        if (all && items)
            json_object_set_serializer(items, json_object_userdata_to_json_string, all, json_object_free_userdata);
        else {
            free(all);
            rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
        }
    }
    dl__buf_cleanup(&text);
    if (rc) {
        json_object_put(items);
        json_object_put(last);
        return rc;
    }
    r->body = json_object_new_object();
    if (!q->count_only)
        json_object_object_add(r->body, "Items", items);
    else
        json_object_put(items);
    json_object_object_add(r->body, "Count", json_object_new_int64(count));
    json_object_object_add(r->body, "ScannedCount", json_object_new_int64(scanned));
    if (last)
        json_object_object_add(r->body, "LastEvaluatedKey", last);
    double units = fakedb__read_units((size_t)(raw ? bytes : entry_bytes), q->consistent);
    double *ix_units = q->ix ? calloc(q->t->n_idx, sizeof *ix_units) : NULL;
    if (ix_units) { /* an index's read is the index's; the table's, what was fetched from it */
        ix_units[q->ix - q->t->idx] = units;
        fakedb__add_capacity_ix(req, r->body, q->t, fetched_units, ix_units);
        free(ix_units);
    } else {
        fakedb__add_capacity(req, r->body, q->t->name, units);
    }
    return 0;
}

static const char *const k_query_params[] = { "KeyConditionExpression", "FilterExpression", "ProjectionExpression", NULL };
static const char *const k_scan_params[] = { "FilterExpression", "ProjectionExpression", NULL };
/* The order in which DynamoDB names them when a request mixes the two kinds. */
static const char *const k_query_mix_exprs[] = { "ProjectionExpression", "FilterExpression", "KeyConditionExpression", NULL };
static const char *const k_query_mix_legacy[] = { "AttributesToGet", "QueryFilter", "ConditionalOperator", "KeyConditions", NULL };
static const char *const k_scan_mix_exprs[] = { "ProjectionExpression", "FilterExpression", NULL };
static const char *const k_scan_mix_legacy[] = { "AttributesToGet", "ScanFilter", "ConditionalOperator", NULL };

static bool projected(const qstate *q, const char *name)
{
    if (!strcmp(q->t->pk, name) || (q->t->sk && !strcmp(q->t->sk, name)) ||
        fakedb__index_has_key_attr(q->ix, name))
        return true;
    for (size_t i = 0; q->ix->projection == FDB_PROJ_INCLUDE && i < q->ix->n_include; i++)
        if (!strcmp(q->ix->include[i], name))
            return true;
    return false;
}

/* A GSI without projection ALL answers only what it projects: asking for more is a
 * ValidationException naming what is missing (DynamoDB; an empty answer before). */
static int gsi_unprojected(const qstate *q, const char *iname, fakedb__reply *r)
{
    char missing[512];
    size_t o = 0;
    missing[0] = 0;
    size_t n_atg = q->attrs_to_get && json_object_is_type(q->attrs_to_get, json_type_array) ? json_object_array_length(q->attrs_to_get) : 0;
    for (int i = 0;; i++) {
        const char *name = NULL;
        if (q->proj)
            name = fakedb__expr_projection_name(q->proj, i);
        else if ((size_t)i < n_atg)
            name = json_object_get_string(json_object_array_get_idx(q->attrs_to_get, (size_t)i));
        if (!name)
            break;
        if (projected(q, name) || o >= sizeof missing - 1)
            continue;
        int k = snprintf(missing + o, sizeof missing - o, "%s%s", o ? ", " : "", name);
        if (k > 0)
            o = o + (size_t)k < sizeof missing ? o + (size_t)k : sizeof missing - 1;
    }
    if (!o)
        return 0;
    return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Global secondary index %s does not project [%s]", iname, missing);
}

static int parse_common(fakedb__store *db, qstate *q, json_object *req, fakedb__reply *r)
{
    if (fakedb__legacy_mixing(req, q->scan ? k_scan_mix_exprs : k_query_mix_exprs,
                              q->scan ? k_scan_mix_legacy : k_query_mix_legacy, r) ||
        fakedb__legacy_attrs_to_get(fakedb__json_get(req, "AttributesToGet"), r))
        return -1;
    /* QueryFilter/ScanFilter and ConditionalOperator come before the other checks (a
     * mixing with FilterExpression was refused above) */
    if (fakedb__legacy_condition_param(req, q->scan ? "ScanFilter" : "QueryFilter", FAKEDB_EXPR_FILTER, true, &q->filter, r))
        return -1;
    q->legacy_filter = q->filter != NULL;
    json_object *lim = fakedb__json_get(req, "Limit");
    if (lim) {
        if (fakedb__json_int_param(req, "Limit", &q->limit, &r->err))
            return -1;
        if (q->limit < 1)
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%lld' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", (long long)q->limit);
    }
    json_object *cr = fakedb__json_get(req, "ConsistentRead");
    q->consistent = cr && json_object_get_boolean(cr);
    json_object *fw = fakedb__json_get(req, "ScanIndexForward");
    q->forward = !fw || json_object_get_boolean(fw);
    q->attrs_to_get = fakedb__json_get(req, "AttributesToGet");
    if (fakedb__json_get(req, "ExpressionAttributeValues") && !fakedb__json_get(req, "FilterExpression") &&
        (q->scan || !fakedb__json_get(req, "KeyConditionExpression")) &&
        (fakedb__json_get(req, "ProjectionExpression") || fakedb__json_get(req, "ExpressionAttributeNames") == NULL))
        return fakedb__reply_fail_validation(r, "ExpressionAttributeValues can only be specified when using expressions: %s",
                                             q->scan ? "FilterExpression is null" : "FilterExpression and KeyConditionExpression are null");
    if (fakedb__expr_setup(req, q->scan ? k_scan_params : k_query_params, &q->ctx, r))
        return -1;
    if (!q->scan) {
        if (!fakedb__json_get(req, "KeyConditionExpression") && !fakedb__json_get(req, "KeyConditions"))
            return fakedb__reply_fail_validation(r, "Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.");
        if (fakedb__expr_parse_param(q->ctx, req, "KeyConditionExpression", FAKEDB_EXPR_KEY_CONDITION, &q->key_expr, r))
            return -1;
        if (!q->key_expr) {
            if (fakedb__legacy_condition_param(req, "KeyConditions", FAKEDB_EXPR_KEY_CONDITION, false, &q->key_expr, r))
                return -1;
            q->legacy_keys = true;
        }
    }
    if (!q->filter && fakedb__expr_parse_param(q->ctx, req, "FilterExpression", FAKEDB_EXPR_FILTER, &q->filter, r))
        return -1;
    if (fakedb__parse_projection(req, q->ctx, &q->proj, r) || fakedb__expr_unused(q->ctx, r))
        return -1;
    const char *sel = fakedb__json_str(req, "Select");
    if (sel && strcmp(sel, "ALL_ATTRIBUTES") && strcmp(sel, "ALL_PROJECTED_ATTRIBUTES") &&
        strcmp(sel, "SPECIFIC_ATTRIBUTES") && strcmp(sel, "COUNT"))
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at 'select' failed to satisfy constraint: Member must satisfy enum value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]", sel);
    bool has_proj = q->proj || q->attrs_to_get;
    if (sel && !has_proj && !strcmp(sel, "SPECIFIC_ATTRIBUTES"))
        return fakedb__reply_fail_validation(r, "%sMust specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES",
                                       q->scan ? "" : "1 validation error detected: ");
    /* AWS's texts for a ProjectionExpression (verified against AWS by ExtendDB's
     * validation-parity tests): "only the Count" for COUNT, "get <Select>" otherwise,
     * with the constraint prefix on Query and Scan alike */
    if (sel && q->proj && strcmp(sel, "SPECIFIC_ATTRIBUTES"))
        return !strcmp(sel, "COUNT")
            ? fakedb__reply_fail_validation(r, "1 validation error detected: Cannot specify the ProjectionExpression when choosing to get only the Count")
            : fakedb__reply_fail_validation(r, "1 validation error detected: Cannot specify the ProjectionExpression when choosing to get %s", sel);
    if (sel && has_proj && strcmp(sel, "SPECIFIC_ATTRIBUTES"))
        return q->attrs_to_get && strcmp(sel, "COUNT")
                   /* DynamoDB (and DynamoDB Local, its own code) name the Select as it is,
                    * except for COUNT */
                   ? fakedb__reply_fail_validation(r, "Cannot specify the AttributesToGet when choosing to get %s", sel)
                   : fakedb__reply_fail_validation(r, "Cannot specify the AttributesToGet when choosing to get only the %s",
                                                   strcmp(sel, "COUNT") ? sel : "Count");
    q->count_only = sel && !strcmp(sel, "COUNT");

    if (fakedb__table_lookup(db, req, &q->t, r))
        return -1;
    const char *iname = fakedb__json_str(req, "IndexName");
    if (iname) {
        q->ix = fakedb__index_find(q->t, iname);
        if (!q->ix)
            return fakedb__reply_fail_validation(r, "The table does not have the specified index: %s", iname);
        if (fakedb__index_backfilling(db, q->t, iname))
            return fakedb__reply_fail_validation(r, "Cannot read from backfilling global secondary index: %s", iname);
        if (q->ix->global && q->consistent)
            return fakedb__reply_fail_validation(r, "Consistent reads are not supported on global secondary indexes");
        if (sel && !strcmp(sel, "ALL_ATTRIBUTES") && q->ix->projection != FDB_PROJ_ALL) {
            if (q->ix->global)
                return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global secondary index %s because its projection type is not ALL", iname);
            q->all_attrs = true;
        }
        if (!q->ix->global && has_proj)
            q->all_attrs = true;    /* an LSI fetches non-projected attributes from the table */
        if (q->ix->global && has_proj && q->ix->projection != FDB_PROJ_ALL && gsi_unprojected(q, iname, r))
            return -1;
    } else if (sel && !strcmp(sel, "ALL_PROJECTED_ATTRIBUTES")) {
        return fakedb__reply_fail_validation(r, "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName");
    }
    if (q->scan) {
        if (parse_start(q, fakedb__json_get(req, "ExclusiveStartKey"), r))
            return -1;
        /* a parallel scan restarts only inside its own segment (DynamoDB's text) */
        const fakedb__key *from = q->ix ? q->start_ix : q->start;
        if (q->has_start && q->total_segments > 0 &&
            (long)(fnv1a(from->pk, from->pk_len) % (uint32_t)q->total_segments) != q->segment)
            return fakedb__reply_fail_validation(r, "Exclusive start key must lie within the segment");
        return 0;
    }
    /* A query's filter may not name the key attributes of what it queries. */
    const char *keys[2 * FDB_MAX_KEY_ATTRS] = { q->t->pk, q->t->sk };
    size_t nk = 2;
    if (q->ix) {
        nk = 0;
        for (size_t i = 0; i < q->ix->n_hash; i++)
            keys[nk++] = q->ix->hash[i];
        for (size_t i = 0; i < q->ix->n_range; i++)
            keys[nk++] = q->ix->range[i];
    }
    for (size_t i = 0; i < nk; i++)
        if (keys[i] && fakedb__expr_refers_to(q->filter, keys[i]))
            return fakedb__reply_fail_validation(r, "%s can only contain non-primary key attributes: Primary key attribute: %s",
                                                 q->legacy_filter ? "QueryFilter" : "Filter Expression", keys[i]);
    if (key_condition(q, req, r) || parse_start(q, fakedb__json_get(req, "ExclusiveStartKey"), r))
        return -1;
    const fakedb__key *from = q->ix ? q->start_ix : q->start;
    bool other_pk = q->has_start && (from->pk_len != q->kc->pk_len || memcmp(from->pk, q->kc->pk, from->pk_len));
    /* AWS's order and texts (dynalite's query tests, written against AWS; DynamoDB Local
     * has the same two texts): with a sort key condition the start key's sort key is
     * checked first, then its partition key */
    if (q->has_start && q->op != FAKEDB_KEY_NONE) {
        if (!start_in_range(q, from))
            return fakedb__reply_fail_validation(r, "The provided starting key does not match the range key predicate");
        if (other_pk)
            return fakedb__reply_fail_validation(r, "The query can return at most one row and cannot be restarted");
    }
    if (other_pk)
        return fakedb__reply_fail_validation(r, "The provided starting key is outside query boundaries based on provided conditions");
    return 0;
}

static void qstate_clear(qstate *q)
{
    fakedb__expr_free(q->key_expr);
    fakedb__expr_free(q->filter);
    fakedb__expr_free(q->proj);
    fakedb__expr_ctx_free(q->ctx);
    free(q->kc);
    free(q->start);
    free(q->start_ix);
}

static int query_or_scan(fakedb__store *db, json_object *req, bool scan,
                         const fakedb__pq_select *pq, fakedb__reply *r)
{
    qstate q;
    memset(&q, 0, sizeof q);
    q.scan = scan;
    q.pq = pq;
    if (scan) {
        json_object *seg = fakedb__json_get(req, "Segment"), *tot = fakedb__json_get(req, "TotalSegments");
        if (seg && !tot)
            return fakedb__reply_fail_validation(r, "The TotalSegments parameter is required but was not present in the request when Segment parameter is present");
        if (tot && !seg)
            return fakedb__reply_fail_validation(r, "The Segment parameter is required but was not present in the request when parameter TotalSegments is present");
        if (tot) {
            int64_t t = 0, sg = 0;
            if (fakedb__json_int_param(req, "TotalSegments", &t, &r->err) || fakedb__json_int_param(req, "Segment", &sg, &r->err))
                return -1;
            q.total_segments = (long)t;
            q.segment = (long)sg;
            if (q.total_segments < 1 || q.total_segments > 1000000)
                return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%ld' at 'totalSegments' failed to satisfy constraint: Member must have value %s", q.total_segments,
                                               q.total_segments < 1 ? "greater than or equal to 1" : "less than or equal to 1000000");
            if (q.segment < 0)
                return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%ld' at 'segment' failed to satisfy constraint: Member must have value greater than or equal to 0", q.segment);
            if (q.segment >= q.total_segments)
                return fakedb__reply_fail_validation(r, "The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: %ld is not less than TotalSegments: %ld", q.segment, q.total_segments);
        }
    }
    pthread_mutex_lock(&db->lock);
    int rc = parse_common(db, &q, req, r);
    if (rc == 0)
        rc = run(db, &q, req, r);
    pthread_mutex_unlock(&db->lock);
    qstate_clear(&q);
    return rc;
}

int fakedb__op_query(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    return query_or_scan(db, req, false, NULL, r);
}

int fakedb__op_scan(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    return query_or_scan(db, req, true, NULL, r);
}

int fakedb__query_partiql(fakedb__store *db, json_object *req, bool scan, const fakedb__pq_select *pq,
                          fakedb__reply *r)
{
    return query_or_scan(db, req, scan, pq, r);
}
