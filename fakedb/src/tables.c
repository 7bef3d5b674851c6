/* tables.c: the table operations (CreateTable, UpdateTable, DeleteTable, DescribeTable,
 * ListTables, the time-to-live pair): they check a table's spec the way DynamoDB does
 * and keep it through schema.c and store.c. */
#include "ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GSI 20
#define MAX_LSI 5

static const char *strip_arn(const char *name)
{
    const char *p;
    if (!strncmp(name, "arn:", 4) && (p = strstr(name, ":table/")) != NULL)
        return p + 7;
    return name;
}

/* A StreamSpecification's shape: StreamEnabled (required) and StreamViewType (*view is
 * FDB_STREAM_NONE when absent). */
static int stream_spec(json_object *ss, bool *enabled, int *view, fakedb__reply *r)
{
    *enabled = false;
    *view = FDB_STREAM_NONE;
    if (!json_object_is_type(ss, json_type_object))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    json_object *en = fakedb__json_get(ss, "StreamEnabled");
    json_object *vt = fakedb__json_get(ss, "StreamViewType");
    if (vt && !json_object_is_type(vt, json_type_string))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    if (vt) {
        *view = fakedb__stream_view_parse(json_object_get_string(vt));
        if (!*view)
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at 'streamSpecification.streamViewType' failed to satisfy constraint: Member must satisfy enum value set: [NEW_IMAGE, OLD_IMAGE, NEW_AND_OLD_IMAGES, KEYS_ONLY]", json_object_get_string(vt));
    }
    if (!en)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'streamSpecification.streamEnabled' failed to satisfy constraint: Member must not be null");
    if (!json_object_is_type(en, json_type_boolean))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "%s cannot be converted to Boolean",
                                  json_object_is_type(en, json_type_string) ? "STRING_VALUE"
                                  : json_object_is_type(en, json_type_int) || json_object_is_type(en, json_type_double) ? "NUMBER_VALUE"
                                                                                                                       : "Value");
    *enabled = json_object_get_boolean(en);
    return 0;
}

int fakedb__valid_name(const char *name, const char *what, fakedb__reply *r)
{
    size_t n = strlen(name);
    if (n < 3)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must have length greater than or equal to 3", name, what);
    if (n > 255)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%.64s...' at '%s' failed to satisfy constraint: Member must have length less than or equal to 255", name, what);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+", name, what);
    }
    return 0;
}

/* ---- transient statuses (--delay-transient-statuses) ---- */

/* The status t shows now: CREATING or UPDATING until its time on the server's clock. */
static const char *table_status(fakedb__store *db, fakedb__table *t)
{
    if (t->busy && fakedb__now_ms(db->clock) < t->busy_until_ms)
        return t->busy;
    t->busy = NULL;
    return "ACTIVE";
}

static void set_busy(fakedb__store *db, fakedb__table *t, const char *status)
{
    if (db->transient_ms > 0) {
        t->busy = status;
        t->busy_until_ms = fakedb__now_ms(db->clock) + db->transient_ms;
    }
}

/* Drops the ghosts whose DELETING time is over; returns the one named `name` (or NULL). */
static fakedb__ghost *ghost_find(fakedb__store *db, const char *name)
{
    int64_t now = fakedb__now_ms(db->clock);
    fakedb__ghost *found = NULL;
    for (fakedb__ghost **pp = &db->ghosts; *pp;) {
        fakedb__ghost *g = *pp;
        if (now >= g->until_ms) {
            *pp = g->next;
            fakedb__ghost_free(g);
            continue;
        }
        if (name && !strcmp(g->name, name))
            found = g;
        pp = &g->next;
    }
    return found;
}

/* Any table of that name, whatever its status. */
static int lookup_any(fakedb__store *db, json_object *req, fakedb__table **out, fakedb__reply *r)
{
    json_object *v = fakedb__json_get(req, "TableName");
    if (!v)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null");
    if (!json_object_is_type(v, json_type_string))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "%s", json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)
                                                            ? "NUMBER_VALUE cannot be converted to String"
                                                            : "Unexpected value type in payload");
    const char *name = strip_arn(json_object_get_string(v));
    if (fakedb__valid_name(name, "tableName", r))
        return -1;
    *out = fakedb__table_find(db, name);
    if (!*out)
        return fakedb__reply_fail(r, FDB_E_NOT_FOUND, "Requested resource not found");
    return 0;
}

/* A table that takes items: a CREATING one is not found yet, as in DynamoDB. */
int fakedb__table_lookup(fakedb__store *db, json_object *req, fakedb__table **out, fakedb__reply *r)
{
    if (lookup_any(db, req, out, r))
        return -1;
    if (!strcmp(table_status(db, *out), "CREATING"))
        return fakedb__reply_fail(r, FDB_E_NOT_FOUND, "Requested resource not found");
    return 0;
}

/* ---- specs ---- */

static const char k_name_length[] =
    "Names of key attributes and attributes projected into an index must be between 1 and 255 characters, inclusive";

/* A KeySchema: one HASH element and at most one RANGE element after it (max_each 1: a
 * table or an LSI), or up to max_each of each, the HASH ones first (a GSI's
 * multi-attribute key), each attribute once and defined. */
static int check_key_schema(json_object *ks, json_object *defs, const char *what, bool table_key,
                            size_t max_each, fakedb__reply *r)
{
    if (!ks || !json_object_is_type(ks, json_type_array) || json_object_array_length(ks) == 0)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", what);
    size_t n = json_object_array_length(ks);
    if (n == 2) {
        /* AWS checks the two names before the key types (dynalite's createTable tests,
         * written against AWS; the same text in a catalogue of AWS's live answers) */
        const char *a = fakedb__json_str(json_object_array_get_idx(ks, 0), "AttributeName");
        const char *b = fakedb__json_str(json_object_array_get_idx(ks, 1), "AttributeName");
        if (a && b && !strcmp(a, b) && fakedb__spec_attr_type(defs, a))
            return fakedb__reply_fail_validation(r, "Both the Hash Key and the Range Key element in the KeySchema have the same name");
    }
    if (n > 2 * max_each)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must have length less than or equal to %zu",
                                       json_object_to_json_string_ext(ks, JSON_C_TO_STRING_PLAIN), what, 2 * max_each);
    size_t n_hash = 0, n_range = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(ks, i);
        const char *an = fakedb__json_str(e, "AttributeName");
        const char *kt = fakedb__json_str(e, "KeyType");
        if (!an || !kt)
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at '%s.%zu.member.%s' failed to satisfy constraint: Member must not be null",
                                           what, i + 1, an ? "keyType" : "attributeName");
        if (strcmp(kt, "HASH") && strcmp(kt, "RANGE"))
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at '%s.%zu.member.keyType' failed to satisfy constraint: Member must satisfy enum value set: [HASH, RANGE]", kt, what, i + 1);
        if (!an[0] || strlen(an) > 255)
            return fakedb__reply_fail_validation(r, "%s", k_name_length);
        bool hash = strcmp(kt, "HASH") == 0;
        if (max_each == 1 ? (i == 0) != hash : i == 0 && !hash)
            return fakedb__reply_fail_validation(r, "Invalid KeySchema: The first KeySchemaElement is not a HASH key type");
        if (max_each > 1) {
            if (hash && n_range)
                return fakedb__reply_fail_validation(r, "Invalid KeySchema: The HASH key elements must come before the RANGE key elements");
            if ((hash ? ++n_hash : ++n_range) > max_each)
                return fakedb__reply_fail_validation(r, "Invalid KeySchema: A global secondary index key may have at most %zu %s key elements",
                                                     max_each, hash ? "HASH" : "RANGE");
            for (size_t k = 0; k < i; k++) {
                const char *prev = fakedb__json_str(json_object_array_get_idx(ks, k), "AttributeName");
                if (prev && !strcmp(prev, an))
                    return fakedb__reply_fail_validation(r, "Invalid KeySchema: The attribute %s appears more than once in the KeySchema", an);
            }
        }
        if (!fakedb__spec_attr_type(defs, an)) {
            if (table_key)
                return fakedb__reply_fail_validation(r, "Invalid KeySchema: Some index key attribute have no definition");
            char names[1024];
            fakedb__def_names(defs, names, sizeof names);
            return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [%s], AttributeDefinitions: [%s]", an, names);
        }
    }
    if (n == 2) {
        const char *a = fakedb__json_str(json_object_array_get_idx(ks, 0), "AttributeName");
        const char *b = fakedb__json_str(json_object_array_get_idx(ks, 1), "AttributeName");
        if (!strcmp(a, b))
            return fakedb__reply_fail_validation(r, "Invalid KeySchema: Some index key attribute have no definition");
    }
    return 0;
}

static int check_throughput(json_object *pt, bool on_demand, const char *what, fakedb__reply *r)
{
    if (on_demand) {
        if (pt)
            return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST");
        return 0;
    }
    if (!pt)
        return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED");
    /* Given without a unit, or with one below 1: the shape's constraints, each member
     * that fails named as DynamoDB's validation names it, read before write. */
    static const char *const members[2] = { "ReadCapacityUnits", "WriteCapacityUnits" };
    static const char *const fields[2] = { "readCapacityUnits", "writeCapacityUnits" };
    char msgs[2][600];
    int bad = 0;
    for (int i = 0; i < 2; i++) {
        json_object *u = fakedb__json_get(pt, members[i]);
        if (!u)
            snprintf(msgs[bad++], sizeof msgs[0], "Value null at '%s.%s' failed to satisfy constraint: Member must not be null", what, fields[i]);
        else if (json_object_get_int64(u) < 1)
            snprintf(msgs[bad++], sizeof msgs[0], "Value '%lld' at '%s.%s' failed to satisfy constraint: Member must have value greater than or equal to 1",
                     (long long)json_object_get_int64(u), what, fields[i]);
    }
    if (bad == 1)
        return fakedb__reply_fail_validation(r, "1 validation error detected: %s", msgs[0]);
    if (bad == 2)
        return fakedb__reply_fail_validation(r, "2 validation errors detected: %s; %s", msgs[0], msgs[1]);
    return 0;
}

static int check_projection(json_object *p, fakedb__reply *r)
{
    const char *pt = fakedb__json_str(p, "ProjectionType");
    json_object *nka = fakedb__json_get(p, "NonKeyAttributes");
    if (!p)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'projection' failed to satisfy constraint: Member must not be null");
    /* ProjectionType is optional in the API's shape, but an index needs one: the
     * service's check (DynamoDB Local's text; AWS's not verified) */
    if (!pt)
        return fakedb__reply_fail_validation(r, "Indexes must have a projection specified");
    if (pt && strcmp(pt, "ALL") && strcmp(pt, "KEYS_ONLY") && strcmp(pt, "INCLUDE"))
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at 'projection.projectionType' failed to satisfy constraint: Member must satisfy enum value set: [INCLUDE, ALL, KEYS_ONLY]", pt);
    if (nka && (!pt || strcmp(pt, "INCLUDE")))
        return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: ProjectionType is %s, but NonKeyAttributes is specified", pt ? pt : "null");
    if (pt && !strcmp(pt, "INCLUDE") && (!nka || !json_object_is_type(nka, json_type_array) || json_object_array_length(nka) == 0))
        return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: NonKeyAttributes must not be empty");
    for (size_t i = 0; nka && json_object_is_type(nka, json_type_array) && i < json_object_array_length(nka); i++) {
        const char *a = json_object_get_string(json_object_array_get_idx(nka, i));
        if (!a || !a[0] || strlen(a) > 255)
            return fakedb__reply_fail_validation(r, "%s", k_name_length);
        /* a name projected twice (DynamoDB Local's text; AWS's not verified) */
        for (size_t k = 0; k < i; k++)
            if (!strcmp(a, json_object_get_string(json_object_array_get_idx(nka, k))))
                return fakedb__reply_fail_validation(r, "Cannot have two attributes with the same name");
    }
    return 0;
}

static int check_index(json_object *ix, json_object *defs, bool global, bool on_demand,
                       const char *table_pk, const char *table_sk, fakedb__reply *r)
{
    const char *name = fakedb__json_str(ix, "IndexName");
    if (!name)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'indexName' failed to satisfy constraint: Member must not be null");
    if (fakedb__valid_name(name, "indexName", r))
        return -1;
    json_object *ks = fakedb__json_get(ix, "KeySchema");
    if (check_key_schema(ks, defs, "keySchema", false, global ? FDB_MAX_KEY_ATTRS : 1, r) || check_projection(fakedb__json_get(ix, "Projection"), r))
        return -1;
    const char *h, *rg;
    fakedb__spec_key_names(ks, &h, &rg);
    if (global) {
        if (check_throughput(fakedb__json_get(ix, "ProvisionedThroughput"), on_demand,
                             "globalSecondaryIndexes.member.provisionedThroughput", r))
            return -1;
    } else {
        if (!table_sk)
            return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Table KeySchema does not have a range key, which is required when specifying a LocalSecondaryIndex");
        if (strcmp(h, table_pk))
            return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Index KeySchema does not have the same leading hash key as table KeySchema for index: %s. index hash key: %s, table hash key: %s", name, h, table_pk);
        if (!rg)
            return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Index KeySchema must have a range key for index: %s", name);
    }
    return 0;
}

/* Normalises the definitions and checks that exactly the used attributes are defined. */
/* The members of each AttributeDefinition as the model requires them (AWS checks these
 * before anything else of the request, so before the key schema is matched to them). */
static int check_definition_members(json_object *defs, fakedb__reply *r)
{
    size_t n = defs && json_object_is_type(defs, json_type_array) ? json_object_array_length(defs) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *d = json_object_array_get_idx(defs, i);
        const char *an = fakedb__json_str(d, "AttributeName"), *at = fakedb__json_str(d, "AttributeType");
        if (!an || !at)
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'attributeDefinitions.%zu.member.%s' failed to satisfy constraint: Member must not be null", i + 1, an ? "attributeType" : "attributeName");
        if (strcmp(at, "S") && strcmp(at, "N") && strcmp(at, "B"))
            return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at 'attributeDefinitions.%zu.member.attributeType' failed to satisfy constraint: Member must satisfy enum value set: [B, N, S]", at, i + 1);
    }
    return 0;
}

/* After check_definition_members, which has checked each member's name and type. */
static int check_definitions(json_object *defs, json_object *used_names, fakedb__reply *r)
{
    if (!defs || !json_object_is_type(defs, json_type_array))
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'attributeDefinitions' failed to satisfy constraint: Member must not be null");
    size_t n = json_object_array_length(defs);
    for (size_t i = 0; i < n; i++) {
        const char *an = fakedb__json_str(json_object_array_get_idx(defs, i), "AttributeName");
        for (size_t k = 0; k < i; k++)
            if (!strcmp(an, fakedb__json_str(json_object_array_get_idx(defs, k), "AttributeName")))
                return fakedb__reply_fail_validation(r, "Attribute Name is duplicated: %s", an);
        if (!fakedb__json_get(used_names, an))
            return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Number of attributes in KeySchema does not exactly match number of attributes defined in AttributeDefinitions");
    }
    return 0;
}

static void note_used(json_object *used, json_object *ks)
{
    size_t n = ks && json_object_is_type(ks, json_type_array) ? json_object_array_length(ks) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *an = fakedb__json_str(json_object_array_get_idx(ks, i), "AttributeName");
        if (an)
            json_object_object_add(used, an, json_object_new_boolean(1));
    }
}

static json_object *copy_fields(json_object *src, const char *const *fields)
{
    json_object *o = json_object_new_object();
    for (size_t i = 0; fields[i]; i++) {
        json_object *v = fakedb__json_get(src, fields[i]);
        if (v)
            json_object_object_add(o, fields[i], fakedb__json_copy(v));
    }
    return o;
}

static const char *const k_index_fields[] = { "IndexName", "KeySchema", "Projection", "ProvisionedThroughput", NULL };

static int check_index_list(json_object *list, const char *what, size_t max, json_object *defs,
                            bool global, bool on_demand, const char *pk, const char *sk,
                            json_object *seen, json_object *used, fakedb__reply *r)
{
    if (!list)
        return 0;
    if (!json_object_is_type(list, json_type_array))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
    size_t n = json_object_array_length(list);
    if (n == 0)
        return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: List of %s is empty", what);
    if (n > max)
        return fakedb__reply_fail(r, FDB_E_LIMIT, "One or more parameter values were invalid: Number of %s exceeds the per-table limit of %zu", what, max);
    for (size_t i = 0; i < n; i++) {
        json_object *ix = json_object_array_get_idx(list, i);
        if (check_index(ix, defs, global, on_demand, pk, sk, r))
            return -1;
        const char *name = fakedb__json_str(ix, "IndexName");
        if (fakedb__json_get(seen, name))
            return fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Duplicate index name: %s", name);
        json_object_object_add(seen, name, json_object_new_boolean(1));
        note_used(used, fakedb__json_get(ix, "KeySchema"));
    }
    return 0;
}

static json_object *spec_indexes(json_object *list, bool on_demand)
{
    json_object *out = json_object_new_array();
    size_t n = json_object_array_length(list);
    for (size_t i = 0; i < n; i++) {
        json_object *s = copy_fields(json_object_array_get_idx(list, i), k_index_fields);
        if (on_demand)
            json_object_object_del(s, "ProvisionedThroughput");
        json_object_array_add(out, s);
    }
    return out;
}

static double seconds(int64_t ms)
{
    return (double)ms / 1000.0;
}

static json_object *throughput_json(json_object *pt)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "NumberOfDecreasesToday", json_object_new_int(0));
    json_object_object_add(o, "ReadCapacityUnits", json_object_new_int64(pt ? json_object_get_int64(fakedb__json_get(pt, "ReadCapacityUnits")) : 0));
    json_object_object_add(o, "WriteCapacityUnits", json_object_new_int64(pt ? json_object_get_int64(fakedb__json_get(pt, "WriteCapacityUnits")) : 0));
    return o;
}

static int64_t index_count(fakedb__store *db, fakedb__table *t, const char *iname)
{
    sqlite3_stmt *st = fakedb__stmt(db, "SELECT count(*) FROM fdb_index WHERE tid = ?1 AND iname = ?2");
    int64_t n = 0;
    if (!st)
        return 0;
    sqlite3_bind_int64(st, 1, t->id);
    sqlite3_bind_text(st, 2, iname, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return n;
}

void fakedb__table_arn(const fakedb__store *db, const fakedb__reply *r, const char *name,
                       char *out, size_t n)
{
    snprintf(out, n, "arn:aws:dynamodb:%s:%s:table/%s", r->region ? r->region : "us-east-1",
             db->account, name);
}

static json_object *describe(fakedb__store *db, const fakedb__reply *r, fakedb__table *t,
                             const char *status)
{
    json_object *d = json_object_new_object();
    json_object *spec = t->spec;
    const char *billing = fakedb__json_str(spec, "BillingMode");
    bool on_demand = billing && !strcmp(billing, "PAY_PER_REQUEST");
    char arn[400];
    fakedb__table_arn(db, r, t->name, arn, sizeof arn);
    if (!strcmp(status, "ACTIVE"))
        status = table_status(db, t);
    json_object_object_add(d, "AttributeDefinitions", fakedb__json_copy(fakedb__json_get(spec, "AttributeDefinitions")));
    json_object_object_add(d, "TableName", json_object_new_string(t->name));
    json_object_object_add(d, "KeySchema", fakedb__json_copy(fakedb__json_get(spec, "KeySchema")));
    json_object_object_add(d, "TableStatus", json_object_new_string(status));
    json_object_object_add(d, "CreationDateTime", json_object_new_double(seconds(t->created_ms)));
    json_object_object_add(d, "ProvisionedThroughput", throughput_json(fakedb__json_get(spec, "ProvisionedThroughput")));
    json_object_object_add(d, "TableSizeBytes", json_object_new_int64(t->size_bytes));
    json_object_object_add(d, "ItemCount", json_object_new_int64(t->item_count));
    json_object_object_add(d, "TableArn", json_object_new_string(arn));
    char id[64];
    snprintf(id, sizeof id, "00000000-0000-4000-8000-%012lld", (long long)t->id);
    json_object_object_add(d, "TableId", json_object_new_string(id));
    if (on_demand) {
        json_object *b = json_object_new_object();
        json_object_object_add(b, "BillingMode", json_object_new_string("PAY_PER_REQUEST"));
        json_object_object_add(b, "LastUpdateToPayPerRequestDateTime", json_object_new_double(seconds(t->created_ms)));
        json_object_object_add(d, "BillingModeSummary", b);
    }
    for (int g = 1; g >= 0; g--) {
        json_object *arr = NULL;
        for (size_t i = 0; i < t->n_idx; i++) {
            fakedb__index *ix = &t->idx[i];
            if (ix->global != (g == 1))
                continue;
            json_object *src = NULL;
            json_object *list = fakedb__json_get(spec, g ? "GlobalSecondaryIndexes" : "LocalSecondaryIndexes");
            for (size_t k = 0; list && k < json_object_array_length(list); k++) {
                json_object *e = json_object_array_get_idx(list, k);
                if (!strcmp(fakedb__json_str(e, "IndexName"), ix->name))
                    src = e;
            }
            json_object *o = json_object_new_object();
            json_object_object_add(o, "IndexName", json_object_new_string(ix->name));
            json_object_object_add(o, "KeySchema", fakedb__json_copy(fakedb__json_get(src, "KeySchema")));
            json_object_object_add(o, "Projection", fakedb__json_copy(fakedb__json_get(src, "Projection")));
            if (g) {
                bool backfilling = fakedb__index_backfilling(db, t, ix->name);
                json_object_object_add(o, "IndexStatus", json_object_new_string(strcmp(status, "CREATING") && !backfilling ? "ACTIVE" : "CREATING"));
                if (backfilling)
                    json_object_object_add(o, "Backfilling", json_object_new_boolean(1));
                json_object_object_add(o, "ProvisionedThroughput", throughput_json(fakedb__json_get(src, "ProvisionedThroughput")));
            }
            json_object_object_add(o, "IndexSizeBytes", json_object_new_int64(0));
            json_object_object_add(o, "ItemCount", json_object_new_int64(index_count(db, t, ix->name)));
            char iarn[700];
            snprintf(iarn, sizeof iarn, "%s/index/%s", arn, ix->name);
            json_object_object_add(o, "IndexArn", json_object_new_string(iarn));
            if (!arr)
                arr = json_object_new_array();
            json_object_array_add(arr, o);
        }
        json_object *gone = g ? fakedb__index_deleting(db, t) : NULL;
        if (gone) {
            if (!arr)
                arr = json_object_new_array();
            json_object_array_add(arr, fakedb__json_copy(gone));
        }
        if (arr)
            json_object_object_add(d, g ? "GlobalSecondaryIndexes" : "LocalSecondaryIndexes", arr);
    }
    if (t->stream_view) {
        json_object *ss = json_object_new_object();
        json_object_object_add(ss, "StreamEnabled", json_object_new_boolean(1));
        json_object_object_add(ss, "StreamViewType", json_object_new_string(fakedb__stream_view_name(t->stream_view)));
        json_object_object_add(d, "StreamSpecification", ss);
    }
    if (t->stream_arn) {  /* the latest stream, enabled or not */
        json_object_object_add(d, "LatestStreamArn", json_object_new_string(t->stream_arn));
        json_object_object_add(d, "LatestStreamLabel", json_object_new_string(t->stream_label));
    }
    json_object *dp = fakedb__json_get(spec, "DeletionProtectionEnabled");
    json_object_object_add(d, "DeletionProtectionEnabled", json_object_new_boolean(dp && json_object_get_boolean(dp)));
    return d;
}

/* Builds the stored spec from a CreateTable request; NULL with r filled when invalid. */
static json_object *create_spec(json_object *req, fakedb__reply *r)
{
    json_object *defs = fakedb__json_get(req, "AttributeDefinitions");
    json_object *ks = fakedb__json_get(req, "KeySchema");
    const char *billing = fakedb__json_str(req, "BillingMode");
    if (billing && strcmp(billing, "PROVISIONED") && strcmp(billing, "PAY_PER_REQUEST")) {
        fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at 'billingMode' failed to satisfy constraint: Member must satisfy enum value set: [PROVISIONED, PAY_PER_REQUEST]", billing);
        return NULL;
    }
    bool on_demand = billing && !strcmp(billing, "PAY_PER_REQUEST");
    json_object *ss = fakedb__json_get(req, "StreamSpecification");
    bool stream_on = false;
    int view = FDB_STREAM_NONE;
    if (ss && stream_spec(ss, &stream_on, &view, r))
        return NULL;
    if (defs && !json_object_is_type(defs, json_type_array)) {
        fakedb__reply_fail(r, FDB_E_SERIALIZATION, "Unexpected value type in payload");
        return NULL;
    }
    if (check_definition_members(defs, r) || check_key_schema(ks, defs, "keySchema", true, 1, r) ||
        check_throughput(fakedb__json_get(req, "ProvisionedThroughput"), on_demand, "provisionedThroughput", r))
        return NULL;
    const char *pk, *sk;
    fakedb__spec_key_names(ks, &pk, &sk);
    json_object *seen = json_object_new_object(), *used = json_object_new_object();
    note_used(used, ks);
    json_object *g = fakedb__json_get(req, "GlobalSecondaryIndexes");
    json_object *l = fakedb__json_get(req, "LocalSecondaryIndexes");
    int bad = check_index_list(g, "GlobalSecondaryIndexes", MAX_GSI, defs, true, on_demand, pk, sk, seen, used, r) ||
              check_index_list(l, "LocalSecondaryIndexes", MAX_LSI, defs, false, on_demand, pk, sk, seen, used, r) ||
              check_definitions(defs, used, r);
    json_object_put(seen);
    json_object_put(used);
    if (bad)
        return NULL;
    if (ss && stream_on && !view) {
        fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Table is being created with a stream enabled, UpdateViewType is required");
        return NULL;
    }
    if (ss && !stream_on && view) {
        fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Table is being created with a stream disabled, UpdateViewType should not be specified");
        return NULL;
    }
    json_object *tags = fakedb__tags_for_create(req, r);
    if (!tags)
        return NULL;
    json_object *spec = json_object_new_object();
    if (json_object_array_length(tags))
        json_object_object_add(spec, "Tags", tags);
    else
        json_object_put(tags);
    json_object_object_add(spec, "AttributeDefinitions", fakedb__json_copy(defs));
    json_object_object_add(spec, "KeySchema", fakedb__json_copy(ks));
    json_object_object_add(spec, "BillingMode", json_object_new_string(on_demand ? "PAY_PER_REQUEST" : "PROVISIONED"));
    if (!on_demand)
        json_object_object_add(spec, "ProvisionedThroughput", fakedb__json_copy(fakedb__json_get(req, "ProvisionedThroughput")));
    if (g)
        json_object_object_add(spec, "GlobalSecondaryIndexes", spec_indexes(g, on_demand));
    if (l)
        json_object_object_add(spec, "LocalSecondaryIndexes", spec_indexes(l, true));
    json_object *dp = fakedb__json_get(req, "DeletionProtectionEnabled");
    if (dp)
        json_object_object_add(spec, "DeletionProtectionEnabled", json_object_new_boolean(json_object_get_boolean(dp)));
    return spec;
}

static int create_locked(fakedb__store *db, const char *name, json_object *spec, int stream_view,
                         fakedb__reply *r, fakedb__table **out)
{
    if (fakedb__table_find(db, name))
        return fakedb__reply_fail(r, FDB_E_IN_USE, "Table already exists: %s", name);
    fakedb__table *t = fakedb__table_from_spec(name, spec);
    if (!t)
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    t->id = db->next_table_id++;
    t->created_ms = fakedb__now_ms(db->clock);
    if (fakedb__tx_begin(db) || fakedb__table_save(db, t) ||
        (stream_view && fakedb__stream_enable(db, t, stream_view, r->region ? r->region : "us-east-1")) || fakedb__tx_commit(db)) {
        fakedb__tx_rollback(db);
        fakedb__table_free(t);
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    }
    t->next = db->tables;
    db->tables = t;
    *out = t;
    return 0;
}

int fakedb__op_create_table(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    const char *name = fakedb__json_str(req, "TableName");
    if (!name)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null");
    if (fakedb__valid_name(name, "tableName", r))
        return -1;
    json_object *spec = create_spec(req, r);
    if (!spec)
        return -1;
    fakedb__table *t = NULL;
    pthread_mutex_lock(&db->lock);
    /* valid by now (create_spec): the view of a stream asked for, or none */
    bool stream_on = false;
    int view = FDB_STREAM_NONE;
    json_object *ss = fakedb__json_get(req, "StreamSpecification");
    if (ss)
        stream_spec(ss, &stream_on, &view, r);
    int rc = ghost_find(db, name)
        ? fakedb__reply_fail(r, FDB_E_IN_USE, "Table already exists: %s", name)
        : create_locked(db, name, spec, stream_on ? view : FDB_STREAM_NONE, r, &t);
    if (rc == 0) {
        set_busy(db, t, "CREATING");
        r->body = json_object_new_object();
        json_object_object_add(r->body, "TableDescription", describe(db, r, t, "ACTIVE"));
    }
    pthread_mutex_unlock(&db->lock);
    json_object_put(spec);
    return rc;
}

int fakedb__op_describe_table(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    fakedb__table *t;
    pthread_mutex_lock(&db->lock);
    int rc = lookup_any(db, req, &t, r);
    fakedb__ghost *g = rc && r->err.type && !strcmp(r->err.type, FDB_E_NOT_FOUND)
        ? ghost_find(db, fakedb__json_str(req, "TableName")) : NULL;
    if (rc == 0) {
        r->body = json_object_new_object();
        json_object_object_add(r->body, "Table", describe(db, r, t, "ACTIVE"));
    } else if (g) {
        memset(&r->err, 0, sizeof r->err);
        rc = 0;
        r->body = json_object_new_object();
        json_object_object_add(r->body, "Table", fakedb__json_copy(g->desc));
    } else if (r->err.type && !strcmp(r->err.type, FDB_E_NOT_FOUND)) {
        fakedb__reply_fail(r, FDB_E_NOT_FOUND, "Requested resource not found: Table: %s not found", fakedb__json_str(req, "TableName"));
    }
    pthread_mutex_unlock(&db->lock);
    return rc;
}

int fakedb__op_delete_table(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    fakedb__table *t;
    pthread_mutex_lock(&db->lock);
    int rc = lookup_any(db, req, &t, r);
    if (rc && r->err.type && !strcmp(r->err.type, FDB_E_NOT_FOUND))
        fakedb__reply_fail(r, FDB_E_NOT_FOUND, "Requested resource not found: Table: %s not found", fakedb__json_str(req, "TableName"));
    if (rc == 0) {
        json_object *dp = fakedb__json_get(t->spec, "DeletionProtectionEnabled");
        if (!strcmp(table_status(db, t), "CREATING")) {
            rc = fakedb__reply_fail(r, FDB_E_IN_USE, "Attempt to change a resource which is still in use: Table is being created: %s", t->name);
        } else if (dp && json_object_get_boolean(dp)) {
            rc = fakedb__reply_fail_validation(r, "Resource cannot be deleted as it is currently protected against deletion. Disable deletion protection first.");
        } else {
            /* described as it was (with its stream) before it goes */
            json_object *d = describe(db, r, t, "DELETING");
            if (fakedb__tx_begin(db) || fakedb__stream_disable(db, t) || fakedb__table_drop(db, t) ||
                fakedb__tx_commit(db)) {
                fakedb__tx_rollback(db);
                json_object_put(d);
                rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
                goto out;
            }
            /* DeleteTable's answer is the short description of AWS's examples, with the
             * stream that goes with the table (a DescribeTable while it is DELETING still
             * shows the whole) */
            static const char *const kept[] = { "TableName", "TableStatus", "ProvisionedThroughput",
                                                "TableSizeBytes", "ItemCount", "TableArn", "TableId",
                                                "StreamSpecification", "LatestStreamArn", "LatestStreamLabel" };
            json_object *brief = json_object_new_object();
            for (size_t i = 0; brief && d && i < sizeof kept / sizeof kept[0]; i++) {
                json_object *v = fakedb__json_get(d, kept[i]);
                if (v)
                    json_object_object_add(brief, kept[i], json_object_get(v));
            }
            json_object *pt = fakedb__json_get(brief, "ProvisionedThroughput");
            if (pt) { /* without the dates of the last changes, as in AWS's examples */
                json_object *copy = fakedb__json_copy(pt);
                json_object_object_del(copy, "LastIncreaseDateTime");
                json_object_object_del(copy, "LastDecreaseDateTime");
                json_object_object_add(brief, "ProvisionedThroughput", copy);
            }
            r->body = json_object_new_object();
            json_object_object_add(r->body, "TableDescription", brief);
            fakedb__ghost *g = db->transient_ms > 0 ? calloc(1, sizeof *g) : NULL;
            if (g && (g->name = strdup(t->name)) != NULL) {
                g->desc = fakedb__json_copy(d);
                g->until_ms = fakedb__now_ms(db->clock) + db->transient_ms;
                g->next = db->ghosts;
                db->ghosts = g;
            } else {
                free(g); /* out of memory: the table is just gone, as without the delay */
            }
            json_object_put(d);
            fakedb__table **pp = &db->tables;
            while (*pp != t)
                pp = &(*pp)->next;
            *pp = t->next;
            fakedb__table_free(t);
        }
    }
out:
    pthread_mutex_unlock(&db->lock);
    return rc;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int fakedb__op_list_tables(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    int64_t limit = 100;
    if (fakedb__json_int_param(req, "Limit", &limit, &r->err))
        return -1;
    if (limit < 1 || limit > 100)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%lld' at 'limit' failed to satisfy constraint: Member must have value %s", (long long)limit,
                                       limit < 1 ? "greater than or equal to 1" : "less than or equal to 100");
    const char *start = fakedb__json_str(req, "ExclusiveStartTableName");
    if (start && fakedb__valid_name(start, "exclusiveStartTableName", r))
        return -1;
    pthread_mutex_lock(&db->lock);
    size_t n = 0;
    ghost_find(db, NULL); /* drops the tables done DELETING */
    for (fakedb__table *t = db->tables; t; t = t->next)
        n++;
    for (fakedb__ghost *g = db->ghosts; g; g = g->next)
        n++;
    char **names = calloc(n + 1, sizeof *names);
    size_t k = 0;
    for (fakedb__table *t = db->tables; t && names; t = t->next)
        names[k] = strdup(t->name), k++;
    for (fakedb__ghost *g = db->ghosts; g && names; g = g->next)
        names[k] = strdup(g->name), k++;
    pthread_mutex_unlock(&db->lock);
    if (!names)
        return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
    for (size_t j = 0; j < n; j++)
        if (!names[j]) {
            for (size_t m = 0; m < n; m++)
                free(names[m]);
            free(names);
            return fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
        }
    qsort(names, n, sizeof *names, cmp_names);
    json_object *arr = json_object_new_array();
    const char *last = NULL;
    size_t i = 0;
    while (i < n && start && strcmp(names[i], start) <= 0)
        i++;
    for (; i < n; i++) {
        if ((int64_t)json_object_array_length(arr) == limit) {
            break;
        }
        json_object_array_add(arr, json_object_new_string(names[i]));
        last = names[i];
    }
    r->body = json_object_new_object();
    json_object_object_add(r->body, "TableNames", arr);
    if (i < n && last)
        json_object_object_add(r->body, "LastEvaluatedTableName", json_object_new_string(last));
    for (size_t j = 0; j < n; j++)
        free(names[j]);
    free(names);
    return 0;
}

/* ---- UpdateTable ---- */

static json_object *find_index_spec(json_object *list, const char *name, size_t *pos)
{
    for (size_t k = 0; list && k < json_object_array_length(list); k++) {
        json_object *e = json_object_array_get_idx(list, k);
        if (!strcmp(fakedb__json_str(e, "IndexName"), name)) {
            if (pos)
                *pos = k;
            return e;
        }
    }
    return NULL;
}

static void merge_definitions(json_object *spec, json_object *defs)
{
    json_object *cur = fakedb__json_get(spec, "AttributeDefinitions");
    for (size_t i = 0; defs && i < json_object_array_length(defs); i++) {
        json_object *d = json_object_array_get_idx(defs, i);
        const char *an = fakedb__json_str(d, "AttributeName");
        if (an && !fakedb__spec_attr_type(cur, an))
            json_object_array_add(cur, fakedb__json_copy(d));
    }
}

static void prune_definitions(json_object *spec)
{
    json_object *used = json_object_new_object();
    note_used(used, fakedb__json_get(spec, "KeySchema"));
    const char *lists[2] = { "GlobalSecondaryIndexes", "LocalSecondaryIndexes" };
    for (int l = 0; l < 2; l++) {
        json_object *list = fakedb__json_get(spec, lists[l]);
        for (size_t k = 0; list && k < json_object_array_length(list); k++)
            note_used(used, fakedb__json_get(json_object_array_get_idx(list, k), "KeySchema"));
    }
    json_object *cur = fakedb__json_get(spec, "AttributeDefinitions");
    json_object *keep = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(cur); i++) {
        json_object *d = json_object_array_get_idx(cur, i);
        if (fakedb__json_get(used, fakedb__json_str(d, "AttributeName")))
            json_object_array_add(keep, json_object_get(d));
    }
    json_object_object_add(spec, "AttributeDefinitions", keep);
    json_object_put(used);
}

static int update_locked(fakedb__store *db, fakedb__table *t, json_object *req, fakedb__reply *r)
{
    json_object *spec = fakedb__json_copy(t->spec);
    const char *billing = fakedb__json_str(req, "BillingMode");
    json_object *pt = fakedb__json_get(req, "ProvisionedThroughput");
    json_object *gu = fakedb__json_get(req, "GlobalSecondaryIndexUpdates");
    json_object *ss = fakedb__json_get(req, "StreamSpecification");
    json_object *dp = fakedb__json_get(req, "DeletionProtectionEnabled");
    json_object *defs = fakedb__json_get(req, "AttributeDefinitions");
    int rc = 0, stream_view = -1; /* -1: the stream is not changed */
    char *created = NULL, *deleted = NULL;
    json_object *deleted_desc = NULL;
    /* an empty list of index updates changes nothing either */
    bool no_gsi = !gu || (json_object_is_type(gu, json_type_array) && json_object_array_length(gu) == 0);
    if (!billing && !pt && no_gsi && !ss && !dp && !fakedb__json_get(req, "SSESpecification") &&
        !fakedb__json_get(req, "ReplicaUpdates") && !fakedb__json_get(req, "TableClass")) {
        rc = fakedb__reply_fail_validation(r, "At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates or SSESpecification or ReplicaUpdates is required");
        goto out;
    }
    if ((rc = fakedb__gsi_updates_check(t, req, r)))
        goto out;
    if (billing) {
        if (strcmp(billing, "PROVISIONED") && strcmp(billing, "PAY_PER_REQUEST")) {
            rc = fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at 'billingMode' failed to satisfy constraint: Member must satisfy enum value set: [PROVISIONED, PAY_PER_REQUEST]", billing);
            goto out;
        }
        json_object_object_add(spec, "BillingMode", json_object_new_string(billing));
    }
    const char *mode = fakedb__json_str(spec, "BillingMode");
    bool on_demand = mode && !strcmp(mode, "PAY_PER_REQUEST");
    if (pt) {
        if ((rc = check_throughput(pt, on_demand, "provisionedThroughput", r)))
            goto out;
        json_object_object_add(spec, "ProvisionedThroughput", fakedb__json_copy(pt));
    } else if (billing && !on_demand && !fakedb__json_get(spec, "ProvisionedThroughput")) {
        rc = check_throughput(NULL, false, "provisionedThroughput", r);
        goto out;
    }
    if (on_demand)
        json_object_object_del(spec, "ProvisionedThroughput");
    bool stream_on = false;
    if (ss) {
        int view;
        if ((rc = stream_spec(ss, &stream_on, &view, r)))
            goto out;
        if (stream_on && !view)
            rc = fakedb__reply_fail_validation(r, "One or more parameter values were invalid: If stream is being enabled then UpdateViewType is required");
        else if (!stream_on && view)
            rc = fakedb__reply_fail_validation(r, "One or more parameter values were invalid: If stream is being disabled, then UpdateViewType must not be specified");
        else if (stream_on && t->stream_view)
            rc = fakedb__reply_fail_validation(r, "Table already has an enabled stream: TableName: %s", t->name);
        else if (!stream_on && !t->stream_view)
            rc = fakedb__reply_fail_validation(r, "Table has no stream to disable: TableName: %s", t->name);
        for (size_t i = 0; rc == 0 && gu && json_object_is_type(gu, json_type_array) && i < json_object_array_length(gu); i++) {
            json_object *u = json_object_array_get_idx(gu, i);
            if (fakedb__json_get(u, "Create") || fakedb__json_get(u, "Delete"))
                rc = fakedb__reply_fail_validation(r, "One or more parameter values were invalid: You cannot create or delete index while changing stream status");
        }
        if (rc)
            goto out;
        stream_view = view;
    }
    if (dp)
        json_object_object_add(spec, "DeletionProtectionEnabled", json_object_new_boolean(json_object_get_boolean(dp)));
    if (defs)
        merge_definitions(spec, defs);
    for (size_t i = 0; gu && i < json_object_array_length(gu); i++) {
        json_object *u = json_object_array_get_idx(gu, i);
        json_object *list = fakedb__json_get(spec, "GlobalSecondaryIndexes");
        json_object *c = fakedb__json_get(u, "Create"), *d = fakedb__json_get(u, "Delete"), *up = fakedb__json_get(u, "Update");
        if (c) {
            const char *name = fakedb__json_str(c, "IndexName");
            if ((rc = check_index(c, fakedb__json_get(spec, "AttributeDefinitions"), true, on_demand, t->pk, t->sk, r)))
                goto out;
            if (find_index_spec(list, name, NULL) || find_index_spec(fakedb__json_get(spec, "LocalSecondaryIndexes"), name, NULL)) {
                rc = fakedb__reply_fail_validation(r, "One or more parameter values were invalid: Index with name %s already exists", name);
                goto out;
            }
            if (!list) {
                list = json_object_new_array();
                json_object_object_add(spec, "GlobalSecondaryIndexes", list);
            }
            json_object *s = copy_fields(c, k_index_fields);
            if (on_demand)
                json_object_object_del(s, "ProvisionedThroughput");
            json_object_array_add(list, s);
            free(created);
            created = strdup(name);
        } else if (d) {
            const char *name = fakedb__json_str(d, "IndexName");
            size_t pos;
            if (!name || !find_index_spec(list, name, &pos)) {
                rc = fakedb__reply_fail(r, FDB_E_NOT_FOUND, "Requested resource not found: Index: %s not found", name ? name : "null");
                goto out;
            }
            json_object_array_del_idx(list, pos, 1);
            if (!deleted_desc && db->transient_ms > 0) {
                /* DELETING in DescribeTable while the table is UPDATING */
                json_object *before = describe(db, r, t, "ACTIVE");
                json_object *gl = fakedb__json_get(before, "GlobalSecondaryIndexes");
                json_object *e = find_index_spec(gl, name, NULL);
                if (e) {
                    deleted_desc = fakedb__json_copy(e);
                    json_object_object_add(deleted_desc, "IndexStatus", json_object_new_string("DELETING"));
                    json_object_object_del(deleted_desc, "Backfilling");
                }
                json_object_put(before);
            }
            if (json_object_array_length(list) == 0)
                json_object_object_del(spec, "GlobalSecondaryIndexes");
            free(deleted);
            deleted = strdup(name);
        } else if (up) {
            const char *name = fakedb__json_str(up, "IndexName");
            json_object *e = name ? find_index_spec(list, name, NULL) : NULL;
            if (!e) {
                rc = fakedb__reply_fail(r, FDB_E_NOT_FOUND, "Requested resource not found: Index: %s not found", name ? name : "null");
                goto out;
            }
            json_object *npt = fakedb__json_get(up, "ProvisionedThroughput");
            /* the throughput of an index is changed on a PROVISIONED table only */
            if ((rc = check_throughput(npt, on_demand, "provisionedThroughput", r)))
                goto out;
            if (npt)
                json_object_object_add(e, "ProvisionedThroughput", fakedb__json_copy(npt));
        }
    }
    prune_definitions(spec);
    {
        fakedb__table *nt = fakedb__table_from_spec(t->name, spec);
        if (!nt) {
            rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
            goto out;
        }
        /* swap the parsed parts into t, keeping its identity */
        fakedb__table tmp = *t;
        t->spec = nt->spec;
        t->idx = nt->idx;
        t->n_idx = nt->n_idx;
        nt->spec = tmp.spec;
        nt->idx = tmp.idx;
        nt->n_idx = tmp.n_idx;
        fakedb__table_free(nt);
    }
    if (fakedb__tx_begin(db) ||
        (deleted && fakedb__index_drop(db, t, deleted)) ||
        (created && fakedb__index_fill(db, t, fakedb__index_find(t, created))) ||
        (stream_view > 0 && fakedb__stream_enable(db, t, stream_view, r->region ? r->region : "us-east-1")) ||
        (stream_view == 0 && fakedb__stream_disable(db, t)) ||
        fakedb__table_save(db, t) || fakedb__tx_commit(db)) {
        fakedb__tx_rollback(db);
        rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
        goto out;
    }
    fakedb__gsi_update_mark(db, t, created, deleted_desc);
    r->body = json_object_new_object(); /* the caller describes t once its status is set */
out:
    json_object_put(deleted_desc);
    free(created);
    free(deleted);
    json_object_put(spec);
    return rc;
}

int fakedb__op_update_table(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    fakedb__table *t;
    pthread_mutex_lock(&db->lock);
    int rc = lookup_any(db, req, &t, r);
    int index_busy = rc == 0 ? fakedb__gsi_update_busy(db, t, req, r) : 0;
    const char *status = rc == 0 && index_busy == 0 ? table_status(db, t) : "ACTIVE";
    if (index_busy < 0)
        rc = -1;
    else if (strcmp(status, "ACTIVE"))
        rc = fakedb__reply_fail(r, FDB_E_IN_USE, "Attempt to change a resource which is still in use: Table is being %s: %s",
                                !strcmp(status, "CREATING") ? "created" : "updated", t->name);
    if (rc == 0 && (rc = update_locked(db, t, req, r)) == 0) {
        set_busy(db, t, "UPDATING");
        /* described again with the statuses the update began: the table's, its indexes' */
        json_object_object_add(r->body, "TableDescription", describe(db, r, t, "ACTIVE"));
    }
    pthread_mutex_unlock(&db->lock);
    return rc;
}

/* ---- time to live ---- */

int fakedb__op_update_ttl(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    json_object *spec = fakedb__json_get(req, "TimeToLiveSpecification");
    if (!spec)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'timeToLiveSpecification' failed to satisfy constraint: Member must not be null");
    const char *attr = fakedb__json_str(spec, "AttributeName");
    json_object *en = fakedb__json_get(spec, "Enabled");
    if (!attr || !attr[0])
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must not be null");
    /* the model's TimeToLiveAttributeName: 1 to 255 characters */
    size_t chars = 0;
    for (const char *c = attr; *c; c++)
        chars += ((unsigned char)*c & 0xC0) != 0x80;
    if (chars > 255)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value '%s' at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must have length less than or equal to 255", attr);
    if (!en)
        return fakedb__reply_fail_validation(r, "1 validation error detected: Value null at 'timeToLiveSpecification.enabled' failed to satisfy constraint: Member must not be null");
    if (!json_object_is_type(en, json_type_boolean))
        return fakedb__reply_fail(r, FDB_E_SERIALIZATION, "%s cannot be converted to Boolean",
                            json_object_is_type(en, json_type_string) ? "STRING_VALUE"
                            : json_object_is_type(en, json_type_int) || json_object_is_type(en, json_type_double) ? "NUMBER_VALUE"
                                                                                                                 : "Value");
    bool enable = json_object_get_boolean(en);
    fakedb__table *t;
    pthread_mutex_lock(&db->lock);
    int rc = lookup_any(db, req, &t, r);
    if (rc == 0) {
        if (enable && t->ttl_attr) {
            rc = strcmp(t->ttl_attr, attr)
                ? fakedb__reply_fail_validation(r, "TimeToLive is active on a different AttributeName: current AttributeName is %s", t->ttl_attr)
                : fakedb__reply_fail_validation(r, "TimeToLive is already enabled");
        } else if (!enable && !t->ttl_attr) {
            rc = fakedb__reply_fail_validation(r, "TimeToLive is already disabled");
        } else if (!enable && strcmp(t->ttl_attr, attr)) {
            rc = fakedb__reply_fail_validation(r, "TimeToLive is active on a different AttributeName: current AttributeName is %s", t->ttl_attr);
        } else {
            char *old = t->ttl_attr;
            t->ttl_attr = enable ? strdup(attr) : NULL;
            if (fakedb__tx_begin(db) || fakedb__table_save(db, t) || fakedb__ttl_refresh(db, t) ||
                fakedb__tx_commit(db)) {
                fakedb__tx_rollback(db);
                free(t->ttl_attr);
                t->ttl_attr = old;
                old = NULL;
                rc = fakedb__reply_fail(r, FDB_E_INTERNAL, "Internal server error");
            }
            free(old);
        }
    }
    pthread_mutex_unlock(&db->lock);
    if (rc == 0) {
        r->body = json_object_new_object();
        json_object *o = json_object_new_object();
        json_object_object_add(o, "Enabled", json_object_new_boolean(enable));
        json_object_object_add(o, "AttributeName", json_object_new_string(attr));
        json_object_object_add(r->body, "TimeToLiveSpecification", o);
        if (enable)
            fakedb__ttl_sweep(db);
    }
    return rc;
}

int fakedb__op_describe_ttl(fakedb__store *db, json_object *req, fakedb__reply *r)
{
    fakedb__table *t;
    pthread_mutex_lock(&db->lock);
    int rc = lookup_any(db, req, &t, r);
    if (rc && r->err.type && !strcmp(r->err.type, FDB_E_NOT_FOUND))    /* as DescribeTable says it */
        fakedb__reply_fail(r, FDB_E_NOT_FOUND, "Requested resource not found: Table: %s not found", fakedb__json_str(req, "TableName"));
    if (rc == 0) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "TimeToLiveStatus", json_object_new_string(t->ttl_attr ? "ENABLED" : "DISABLED"));
        if (t->ttl_attr)
            json_object_object_add(o, "AttributeName", json_object_new_string(t->ttl_attr));
        r->body = json_object_new_object();
        json_object_object_add(r->body, "TimeToLiveDescription", o);
    }
    pthread_mutex_unlock(&db->lock);
    return rc;
}
