/* admin.c: table administration: CreateTable (keys, secondary indexes, billing, and a
 * time-to-live attribute), DescribeTable, DeleteTable, UpdateTimeToLive, and waiting
 * until a table is ACTIVE by polling on the client's clock. */
#include "client.h"

#include <stdio.h>
#include <string.h>

/* Time between DescribeTable polls while waiting for ACTIVE. */
#define POLL_MS 500

static const char *type_letter(ddb_type t)
{
    if ((int)t == 0 || t == DDB_S)
        return "S";
    if (t == DDB_N)
        return "N";
    if (t == DDB_B)
        return "B";
    return NULL;
}

static ddb_type type_from_letter(const char *s)
{
    if (!s)
        return (ddb_type)0;
    if (strcmp(s, "S") == 0)
        return DDB_S;
    if (strcmp(s, "N") == 0)
        return DDB_N;
    if (strcmp(s, "B") == 0)
        return DDB_B;
    return (ddb_type)0;
}

/* Adds an attribute definition unless the attribute is defined already. */
static int define_attr(json_object *defs, const char *name, ddb_type t, ddb_error *err)
{
    const char *letter = type_letter(t);
    if (!name || !*name || !letter)
        return ddb__fail(err, DDB_EINVAL, "a key attribute needs a name and a type of S, N or B");
    size_t n = json_object_array_length(defs);
    for (size_t i = 0; i < n; i++) {
        json_object *d = json_object_array_get_idx(defs, i), *an, *at;
        if (json_object_object_get_ex(d, "AttributeName", &an) &&
            strcmp(json_object_get_string(an), name) == 0) {
            json_object_object_get_ex(d, "AttributeType", &at);
            if (strcmp(json_object_get_string(at), letter) != 0)
                return ddb__fail(err, DDB_EINVAL, "the attribute %s is given two key types", name);
            return 0;
        }
    }
    json_object *d = json_object_new_object();
    if (!d || !ddb__jadd_str(d, "AttributeName", name) || !ddb__jadd_str(d, "AttributeType", letter) ||
        json_object_array_add(defs, d) != 0) {
        json_object_put(d);
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    return 0;
}

static json_object *key_schema(const ddb_key_schema *k)
{
    json_object *ks = json_object_new_array();
    for (int i = 0; ks && i < 2; i++) {
        const char *name = i == 0 ? k->pk : k->sk;
        if (!name)
            break;
        json_object *e = json_object_new_object();
        if (!e || !ddb__jadd_str(e, "AttributeName", name) ||
            !ddb__jadd_str(e, "KeyType", i == 0 ? "HASH" : "RANGE") || json_object_array_add(ks, e) != 0) {
            json_object_put(e);
            json_object_put(ks);
            return NULL;
        }
    }
    return ks;
}

static json_object *throughput(int64_t r, int64_t w)
{
    json_object *p = json_object_new_object();
    if (!ddb__jadd(p, "ReadCapacityUnits", json_object_new_int64(r > 0 ? r : 1)) ||
        !ddb__jadd(p, "WriteCapacityUnits", json_object_new_int64(w > 0 ? w : 1))) {
        json_object_put(p);
        return NULL;
    }
    return p;
}

static int add_indexes(json_object *req, json_object *defs, const char *field,
                       const ddb_index_def *ix, size_t n, const ddb_create_table_options *o,
                       bool global, ddb_error *err)
{
    if (n == 0)
        return 0;
    if (!ix)
        return ddb__fail(err, DDB_EINVAL, "%s has a count but no definitions", field);
    json_object *arr = json_object_new_array();
    if (!arr || json_object_object_add(req, field, arr) != 0) {
        json_object_put(arr);
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const ddb_index_def *d = &ix[i];
        if (!d->name || !*d->name || !d->key.pk)
            return ddb__fail(err, DDB_EINVAL, "index %zu of %s needs a name and a partition key", i, field);
        int rc = define_attr(defs, d->key.pk, d->key.pk_type, err);
        if (rc == 0 && d->key.sk)
            rc = define_attr(defs, d->key.sk, d->key.sk_type, err);
        if (rc != 0)
            return rc;
        const char *pt = d->projection == DDB_PROJECT_KEYS_ONLY ? "KEYS_ONLY"
                         : d->projection == DDB_PROJECT_INCLUDE ? "INCLUDE" : "ALL";
        json_object *e = json_object_new_object(), *proj = NULL;
        if (!e || json_object_array_add(arr, e) != 0) {
            json_object_put(e);
            return ddb__fail(err, DDB_ENOMEM, "out of memory");
        }
        bool ok = ddb__jadd_str(e, "IndexName", d->name) &&
                  ddb__jadd(e, "KeySchema", key_schema(&d->key)) &&
                  (proj = ddb__jadd(e, "Projection", json_object_new_object())) &&
                  ddb__jadd_str(proj, "ProjectionType", pt);
        if (ok && d->projection == DDB_PROJECT_INCLUDE) {
            json_object *inc = ddb__jadd(proj, "NonKeyAttributes", json_object_new_array());
            ok = inc != NULL;
            for (size_t k = 0; ok && d->include && d->include[k]; k++) {
                json_object *name = json_object_new_string(d->include[k]);
                ok = name && json_object_array_add(inc, name) == 0;
                if (!ok)
                    json_object_put(name);
            }
        }
        if (ok && global && o->provisioned)
            ok = ddb__jadd(e, "ProvisionedThroughput",
                           throughput(o->read_capacity, o->write_capacity)) != NULL;
        if (!ok)
            return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    return 0;
}

static bool already_enabled(const ddb_error *e)
{
    return e->code == DDB_EVALIDATION && strstr(e->message, "already enabled") != NULL;
}

static int describe(ddb_client *c, const char *name, ddb_table_info *info, ddb_cancel *cancel,
                    ddb_error *err);

/* A key type as asked: 0 means a string. */
static ddb_type or_string(ddb_type t)
{
    return t ? t : DDB_S;
}

/* A CreateTable whose answer was lost (and whose retry, if any, found the table in use):
 * DescribeTable decides. A table with the asked key schema is taken as this call's; another
 * key schema is the ResourceInUseException it would have been; no table means it was not
 * applied. The doubt stays (local kept) when the describe fails too. */
static int create_resolved(ddb_client *c, const char *name, const ddb_key_schema *key,
                           ddb_cancel *cancel, ddb_error *local)
{
    ddb_table_info info;
    ddb_error derr;
    ddb_error_clear(&derr);
    int rc = describe(c, name, &info, cancel, &derr);
    if (rc == DDB_ENOTFOUND)
        return ddb__fail(local, DDB_ENETWORK,
                         "CreateTable of %s was not applied: its answer was lost and the "
                         "table does not exist", name);
    if (rc != 0) {
        size_t n = strlen(local->message);
        snprintf(local->message + n, sizeof local->message - n,
                 "; DescribeTable, which would tell, failed too (%.120s)", derr.message);
        return DDB_EINDOUBT;
    }
    bool same = strcmp(info.pk, key->pk) == 0 && info.pk_type == or_string(key->pk_type) &&
                strcmp(info.sk, key->sk ? key->sk : "") == 0 &&
                (!key->sk || info.sk_type == or_string(key->sk_type));
    if (same) {
        ddb_error_clear(local);
        return 0;
    }
    ddb__fail(local, DDB_EINUSE, "Table already exists: %s (with another key schema)", name);
    snprintf(local->aws_type, sizeof local->aws_type, "ResourceInUseException");
    return DDB_EINUSE;
}

int ddb_client_create_table(ddb_client *c, const char *name, const ddb_key_schema *key,
                            const ddb_create_table_options *o, ddb_cancel *cancel,
                            ddb_error *err)
{
    ddb__err_reset(err);
    ddb_create_table_options zero = { 0 };
    if (!o)
        o = &zero;
    if (!c || !name || !*name || !key || !key->pk)
        return ddb__fail(err, DDB_EINVAL, "CreateTable needs a client, a name and a key schema");
    DDB__CALL_SCOPE(c->clock);
    json_object *req = json_object_new_object(), *defs = json_object_new_array();
    int rc = 0;
    if (!req || !defs || json_object_object_add(req, "AttributeDefinitions", defs) != 0) {
        json_object_put(req);
        json_object_put(defs);
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    if (!ddb__jadd_str(req, "TableName", name)) {
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = define_attr(defs, key->pk, key->pk_type, err)) != 0 ||
        (key->sk && (rc = define_attr(defs, key->sk, key->sk_type, err)) != 0))
        goto out;
    json_object *ks = key_schema(key);
    if (!ks || json_object_object_add(req, "KeySchema", ks) != 0) {
        json_object_put(ks);
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = add_indexes(req, defs, "GlobalSecondaryIndexes", o->gsi, o->n_gsi, o, true, err)) != 0 ||
        (rc = add_indexes(req, defs, "LocalSecondaryIndexes", o->lsi, o->n_lsi, o, false, err)) != 0)
        goto out;
    if (!ddb__jadd_str(req, "BillingMode", o->provisioned ? "PROVISIONED" : "PAY_PER_REQUEST") ||
        (o->provisioned && !ddb__jadd(req, "ProvisionedThroughput",
                                      throughput(o->read_capacity, o->write_capacity)))) {
        rc = ddb__fail(err, DDB_ENOMEM, "out of memory");
        goto out;
    }

    ddb__call call = { .operation = "CreateTable", .table = name };
    json_object *resp = NULL;
    ddb_error local;
    rc = ddb__client_send(c, &call, req, &resp, cancel, NULL, &local);
    json_object_put(resp);
    if (rc == DDB_EINDOUBT)
        rc = create_resolved(c, name, key, cancel, &local);
    if (rc == DDB_EINUSE && o->exist_ok)
        rc = 0;
    if (rc != 0) {
        if (err)
            *err = local;
        goto out;
    }
    if (o->wait_active || o->ttl_attribute) {
        rc = ddb_client_wait_table_active(c, name, o->wait_active ? 5 * 60 * 1000 : 60 * 1000, cancel, err);
        if (rc != 0)
            goto out;
    }
    if (o->ttl_attribute) {
        rc = ddb_client_update_ttl(c, name, o->ttl_attribute, true, cancel, &local);
        if (rc != 0 && !(o->exist_ok && already_enabled(&local))) {
            if (err)
                *err = local;
        } else {
            rc = 0;
        }
    }
out:
    json_object_put(req);
    return rc;
}

static int simple_call(ddb_client *c, const char *op, const char *table, json_object *req,
                       json_object **resp, ddb_cancel *cancel, ddb_error *err)
{
    ddb__call call = { .operation = op, .table = table };
    int rc = ddb__client_send(c, &call, req, resp, cancel, NULL, err);
    json_object_put(req);
    return rc;
}

static json_object *named(const char *table)
{
    json_object *req = json_object_new_object();
    if (req && !ddb__jadd_str(req, "TableName", table)) {
        json_object_put(req);
        return NULL;
    }
    return req;
}

int ddb_client_delete_table(ddb_client *c, const char *name, ddb_cancel *cancel, ddb_error *err)
{
    ddb__err_reset(err);
    if (!c || !name || !*name)
        return ddb__fail(err, DDB_EINVAL, "DeleteTable needs a client and a table name");
    DDB__CALL_SCOPE(c->clock);
    json_object *req = named(name), *resp = NULL;
    if (!req)
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    int rc = simple_call(c, "DeleteTable", name, req, &resp, cancel, err);
    json_object_put(resp);
    return rc;
}

static void copy_str(char *dst, size_t cap, json_object *o)
{
    const char *s = o ? json_object_get_string(o) : NULL;
    snprintf(dst, cap, "%s", s ? s : "");
}

static ddb_type attr_type(json_object *defs, const char *name)
{
    size_t n = json_object_is_type(defs, json_type_array) ? json_object_array_length(defs) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *d = json_object_array_get_idx(defs, i), *an, *at;
        if (json_object_object_get_ex(d, "AttributeName", &an) &&
            json_object_object_get_ex(d, "AttributeType", &at) &&
            strcmp(json_object_get_string(an), name) == 0)
            return type_from_letter(json_object_get_string(at));
    }
    return (ddb_type)0;
}

static int describe(ddb_client *c, const char *name, ddb_table_info *info, ddb_cancel *cancel,
                    ddb_error *err)
{
    json_object *req = named(name), *resp = NULL;
    if (!req)
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    int rc = simple_call(c, "DescribeTable", name, req, &resp, cancel, err);
    if (rc != 0) {
        json_object_put(resp);
        return rc;
    }
    json_object *t, *v, *ks, *defs = NULL;
    if (!json_object_object_get_ex(resp, "Table", &t) || !json_object_is_type(t, json_type_object)) {
        json_object_put(resp);
        return ddb__fail(err, DDB_EPROTOCOL, "DescribeTable of %s answered without a Table", name);
    }
    memset(info, 0, sizeof *info);
    if (json_object_object_get_ex(t, "TableStatus", &v))
        copy_str(info->status, sizeof info->status, v);
    json_object_object_get_ex(t, "AttributeDefinitions", &defs);
    if (json_object_object_get_ex(t, "KeySchema", &ks) && json_object_is_type(ks, json_type_array)) {
        size_t n = json_object_array_length(ks);
        for (size_t i = 0; i < n; i++) {
            json_object *e = json_object_array_get_idx(ks, i), *an, *kt;
            if (!json_object_object_get_ex(e, "AttributeName", &an) ||
                !json_object_object_get_ex(e, "KeyType", &kt))
                continue;
            bool hash = strcmp(json_object_get_string(kt), "HASH") == 0;
            copy_str(hash ? info->pk : info->sk, hash ? sizeof info->pk : sizeof info->sk, an);
            if (hash)
                info->pk_type = attr_type(defs, info->pk);
            else
                info->sk_type = attr_type(defs, info->sk);
        }
    }
    if (json_object_object_get_ex(t, "ItemCount", &v))
        info->item_count = json_object_get_int64(v);
    json_object_put(resp);
    return 0;
}

int ddb_client_describe_table(ddb_client *c, const char *name, ddb_table_info *info, ddb_cancel *cancel,
                       ddb_error *err)
{
    ddb__err_reset(err);
    if (!c || !name || !*name || !info)
        return ddb__fail(err, DDB_EINVAL, "DescribeTable needs a client, a table name and an output");
    DDB__CALL_SCOPE(c->clock);
    return describe(c, name, info, cancel, err);
}

int ddb_client_wait_table_active(ddb_client *c, const char *name, int64_t timeout_ms, ddb_cancel *cancel,
                          ddb_error *err)
{
    ddb__err_reset(err);
    if (!c || !name || !*name || timeout_ms < 0)
        return ddb__fail(err, DDB_EINVAL, "waiting for a table needs a client, a name and a timeout");
    DDB__CALL_SCOPE(c->clock);
    int64_t deadline = ddb_clock_mono_ns(c->clock) + timeout_ms * 1000000;
    int rc;
    for (;;) {
        ddb_table_info info;
        rc = describe(c, name, &info, cancel, err);
        /* A table being created may not be visible yet: keep polling. */
        if (rc != 0 && rc != DDB_ENOTFOUND)
            break;
        if (rc == 0 && strcmp(info.status, "ACTIVE") == 0)
            break;
        int64_t now = ddb_clock_mono_ns(c->clock);
        if (now >= deadline) {
            rc = ddb__fail(err, DDB_ETIMEDOUT, "the table %s was not ACTIVE within %lld ms (status %s)",
                           name, (long long)timeout_ms, rc == 0 ? info.status : "not found");
            break;
        }
        int64_t wait_ms = (deadline - now) / 1000000;
        if (wait_ms > POLL_MS)
            wait_ms = POLL_MS;
        if (wait_ms < 1)
            wait_ms = 1;
        if (ddb_clock_sleep(c->clock, wait_ms, cancel) != 0) {
            rc = ddb__fail(err, DDB_ECANCELED, "waiting for the table %s to be ACTIVE was cancelled", name);
            break;
        }
    }
    return rc;
}

int ddb_client_update_ttl(ddb_client *c, const char *table, const char *attribute, bool enabled,
                   ddb_cancel *cancel, ddb_error *err)
{
    ddb__err_reset(err);
    if (!c || !table || !*table || !attribute || !*attribute)
        return ddb__fail(err, DDB_EINVAL, "UpdateTimeToLive needs a client, a table and an attribute");
    DDB__CALL_SCOPE(c->clock);
    json_object *req = named(table), *spec = json_object_new_object(), *resp = NULL;
    if (!req || !spec || !ddb__jadd_str(spec, "AttributeName", attribute) ||
        json_object_object_add(spec, "Enabled", json_object_new_boolean(enabled)) != 0 ||
        json_object_object_add(req, "TimeToLiveSpecification", spec) != 0) {
        json_object_put(req);
        json_object_put(spec);
        return ddb__fail(err, DDB_ENOMEM, "out of memory");
    }
    int rc = simple_call(c, "UpdateTimeToLive", table, req, &resp, cancel, err);
    json_object_put(resp);
    return rc;
}
