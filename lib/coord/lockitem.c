/* lockitem.c: the lock item on the wire -- how an acquire, a renewal and a release
 * write it, and how a read of it is understood. Every contender reads and writes the
 * item the same way, so this is the one place that knows its format. */
#include "coord_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ------------------------------------------------------------------ reading */

void ddb__lock_item_cleanup(ddb__lock_item *li)
{
    if (!li)
        return;
    free(li->owner);
    free(li->rvn);
    free(li->holder);
    memset(li, 0, sizeof *li);
}

static int not_a_lock(const ddb_lock_table *l, const char *name, const char *why,
                      ddb_error *err)
{
    return ddb__fail(err, DDB_ESTATE,
                     "The item at the key of lock \"%s\" in table \"%s\" has an owner but "
                     "is not a lock (%s); give the lock another name.",
                     name, ddb_table_name(l->table), why);
}

int ddb__lock_item_parse(const ddb_lock_table *l, const char *name, const ddb_item *item,
                         ddb__lock_item *out, ddb_error *err)
{
    memset(out, 0, sizeof *out);
    if (!item)
        return 0;
    out->exists = true;
    int64_t fence = 0;
    if (ddb_item_get(item, DDB__LOCK_ATTR_FENCE) &&
        ddb_item_get_i64(item, DDB__LOCK_ATTR_FENCE, &fence) == 0)
        out->fence = fence;
    const ddb_value *owner = ddb_item_get(item, DDB__LOCK_ATTR_OWNER);
    if (!owner)
        return 0; /* free */
    const char *o = ddb_item_get_s(item, DDB__LOCK_ATTR_OWNER);
    if (!o)
        return not_a_lock(l, name, "its owner is not a string", err);
    const char *rvn = ddb_item_get_s(item, DDB__LOCK_ATTR_RVN);
    if (!rvn)
        return not_a_lock(l, name, "it has no record version rvn", err);
    int64_t lease_ms = 0;
    if (!ddb_item_get(item, DDB__LOCK_ATTR_LEASE_MS) ||
        ddb_item_get_i64(item, DDB__LOCK_ATTR_LEASE_MS, &lease_ms) != 0)
        return not_a_lock(l, name, "it has no lease duration leaseMs", err);
    if (lease_ms < 1 || lease_ms > DDB_LEASE_MAX_MS)
        return not_a_lock(l, name, "its lease duration leaseMs is out of range", err);
    const char *holder = ddb_item_get_s(item, DDB__LOCK_ATTR_HOLDER);
    out->held = true;
    out->lease_ms = lease_ms;
    out->owner = strdup(o);
    out->rvn = strdup(rvn);
    out->holder = holder ? strdup(holder) : NULL;
    if (!out->owner || !out->rvn || (holder && !out->holder)) {
        ddb__lock_item_cleanup(out);
        return ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    }
    return 0;
}

/* ------------------------------------------------------------------ writing */

/* Expression attribute names and values of one request, built up as it is composed. */
typedef struct req {
    const char *names[24];
    size_t n_names;
    ddb_item *values;
    char update[512];
    size_t update_len;
    bool failed;
} req;

static void req_name(req *r, const char *placeholder, const char *attr)
{
    r->names[r->n_names++] = placeholder;
    r->names[r->n_names++] = attr;
    r->names[r->n_names] = NULL;
}

static void req_s(req *r, const char *placeholder, const char *s)
{
    if (ddb_item_set_s(r->values, placeholder, s) != 0)
        r->failed = true;
}

static void req_i64(req *r, const char *placeholder, int64_t n)
{
    if (ddb_item_set_i64(r->values, placeholder, n) != 0)
        r->failed = true;
}

static void req_append(req *r, const char *text)
{
    size_t n = strlen(text);
    if (r->update_len + n + 1 > sizeof r->update) {
        r->failed = true;
        return;
    }
    memcpy(r->update + r->update_len, text, n + 1);
    r->update_len += n;
}

static int req_init(req *r, ddb_error *err)
{
    memset(r, 0, sizeof *r);
    r->values = ddb_item_new();
    if (!r->values)
        return ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    return 0;
}

/* Adds the time-to-live attribute to a SET clause, when the lock table writes one. */
static void req_ttl(req *r, const ddb_lock_table *l, bool first_in_set)
{
    if (!l->ttl_attribute)
        return;
    req_name(r, "#x", l->ttl_attribute);
    req_i64(r, ":x", ddb__lock_table_ttl_epoch_s(l));
    req_append(r, first_in_set ? "SET #x = :x" : ", #x = :x");
}

int dl_item_acquire(ddb_lock_table *l, const char *name, const char *owner, const char *rvn,
                    int64_t lease_ms, const dl_seen_entry *seen, ddb_cancel *cancel,
                    ddb_item **old, ddb_error *err)
{
    *old = NULL;
    ddb_item *key = ddb__lock_key(l, name, err);
    if (!key)
        return err ? err->code : DDB_EINVAL;
    req r;
    if (req_init(&r, err) != 0) {
        ddb_item_free(key);
        return DDB_ENOMEM;
    }
    req_name(&r, "#o", DDB__LOCK_ATTR_OWNER);
    req_name(&r, "#r", DDB__LOCK_ATTR_RVN);
    req_name(&r, "#l", DDB__LOCK_ATTR_LEASE_MS);
    req_name(&r, "#t", DDB__LOCK_ATTR_TYPE);
    req_name(&r, "#f", DDB__LOCK_ATTR_FENCE);
    req_name(&r, "#h", DDB__LOCK_ATTR_HOLDER);
    req_s(&r, ":o", owner);
    req_s(&r, ":r", rvn);
    req_i64(&r, ":l", lease_ms);
    req_s(&r, ":t", DDB__LOCK_TYPE_VALUE);
    req_i64(&r, ":one", 1);
    req_append(&r, "SET #o = :o, #r = :r, #l = :l, #t = :t");
    if (l->holder_label) {
        req_s(&r, ":h", l->holder_label);
        req_append(&r, ", #h = :h");
    }
    req_ttl(&r, l, false);
    req_append(&r, " ADD #f :one");
    if (!l->holder_label)
        req_append(&r, " REMOVE #h"); /* an acquire without a label removes the one before */
    const char *condition = "attribute_not_exists(#o)";
    if (seen && seen->owner && seen->rvn) {
        condition = "attribute_not_exists(#o) OR (#o = :so AND #r = :sr)";
        req_s(&r, ":so", seen->owner);
        req_s(&r, ":sr", seen->rvn);
    }
    int rc;
    if (r.failed) {
        rc = ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    } else {
        ddb_result res = {0};
        rc = ddb_table_update_item(l->table, key, r.update,
                             &(ddb_write_options){.condition = condition,
                                                  .names = r.names,
                                                  .values = r.values,
                                                  .return_values = DDB_RETURN_ALL_OLD,
                                                  .return_old_on_condition_fail = true,
                                                  .cancel = cancel},
                             &res, NULL, err);
        if (rc == 0 || rc == DDB_ECONDITION) {
            *old = res.item;
            res.item = NULL;
        }
        ddb_result_cleanup(&res);
    }
    ddb_item_free(r.values);
    ddb_item_free(key);
    return rc;
}

int dl_item_read(ddb_lock_table *l, const char *name, ddb_cancel *cancel, ddb_item **item,
                 ddb_error *err)
{
    *item = NULL;
    ddb_item *key = ddb__lock_key(l, name, err);
    if (!key)
        return err ? err->code : DDB_EINVAL;
    ddb_result res = {0};
    int rc = ddb_table_get_item(l->table, key,
                          &(ddb_get_options){.consistent_read = true, .cancel = cancel}, &res, NULL,
                          err);
    if (rc == 0) {
        *item = res.item;
        res.item = NULL;
    }
    ddb_result_cleanup(&res);
    ddb_item_free(key);
    return rc;
}

/* What a lease's own write (renewal, release) starts from: its lock table, the key of
 * its item and an empty request. 0, or an error with nothing to free. */
static int lease_req_begin(ddb_lease *lease, ddb_lock_table **l, ddb_item **key, req *r,
                           ddb_error *err)
{
    *l = atomic_load(&lease->locks);
    if (!*l)
        return ddb__fail(err, DDB_ESTATE, "The lock table of lease \"%s\" was freed.",
                         lease->name);
    *key = dl_lock_key_table(lease->table, lease->name, err);
    if (!*key)
        return err ? err->code : DDB_EINVAL;
    if (req_init(r, err) != 0) {
        ddb_item_free(*key);
        return DDB_ENOMEM;
    }
    return 0;
}

/* The renewal's UpdateItem: a new rvn on condition that the owner is still the lease's. */
static int build_renew(ddb_lease *lease, const char *rvn, ddb_lock_table **lp, ddb_item **key,
                       req *r, ddb_error *err)
{
    int begun = lease_req_begin(lease, lp, key, r, err);
    if (begun != 0)
        return begun;
    ddb_lock_table *l = *lp;
    req_name(r, "#o", DDB__LOCK_ATTR_OWNER);
    req_name(r, "#r", DDB__LOCK_ATTR_RVN);
    req_name(r, "#l", DDB__LOCK_ATTR_LEASE_MS);
    req_s(r, ":o", lease->owner);
    req_s(r, ":r", rvn);
    req_i64(r, ":l", lease->lease_ms);
    req_append(r, "SET #r = :r, #l = :l");
    if (l->holder_label) {
        req_name(r, "#h", DDB__LOCK_ATTR_HOLDER);
        req_s(r, ":h", l->holder_label);
        req_append(r, ", #h = :h");
    }
    req_ttl(r, l, false);
    if (r->failed) {
        ddb_item_free(r->values);
        ddb_item_free(*key);
        return ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    }
    return 0;
}

/* The release's UpdateItem: removes owner, leaseMs and holder on condition that the owner
 * is still the lease's. The fence stays, so the token never goes back while the item
 * lives. */
static int build_release(ddb_lease *lease, ddb_lock_table **lp, ddb_item **key, req *r,
                         ddb_error *err)
{
    int begun = lease_req_begin(lease, lp, key, r, err);
    if (begun != 0)
        return begun;
    ddb_lock_table *l = *lp;
    req_name(r, "#o", DDB__LOCK_ATTR_OWNER);
    req_name(r, "#l", DDB__LOCK_ATTR_LEASE_MS);
    req_name(r, "#h", DDB__LOCK_ATTR_HOLDER);
    req_s(r, ":o", lease->owner);
    req_append(r, "REMOVE #o, #l, #h");
    if (l->ttl_attribute) {
        req_append(r, " ");
        req_ttl(r, l, true);
    }
    if (r->failed) {
        ddb_item_free(r->values);
        ddb_item_free(*key);
        return ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    }
    return 0;
}

/* Sends a lease's write (built by build_renew or build_release), blocking or, with fn,
 * on the client's scheduler; frees what the build made. */
static int send_lease_write(ddb_lock_table *l, ddb_item *key, req *r, bool return_old,
                            ddb_cancel *cancel, ddb_result *res, ddb__item_reply_fn fn,
                            void *arg, ddb_error *err)
{
    ddb_write_options o = {.condition = "#o = :o",
                           .names = r->names,
                           .values = r->values,
                           .return_old_on_condition_fail = return_old,
                           .cancel = cancel};
    int rc = fn ? ddb__update_item_start(l->table, key, r->update, &o, fn, arg, err)
                : ddb_table_update_item(l->table, key, r->update, &o, res, NULL, err);
    ddb_item_free(r->values);
    ddb_item_free(key);
    return rc;
}

int dl_item_renew(ddb_lease *lease, const char *rvn, ddb_cancel *cancel, ddb_item **old,
                  ddb_error *err)
{
    *old = NULL;
    ddb_lock_table *l;
    ddb_item *key;
    req r;
    int rc = build_renew(lease, rvn, &l, &key, &r, err);
    if (rc != 0)
        return rc;
    ddb_result res = {0};
    rc = send_lease_write(l, key, &r, true, cancel, &res, NULL, NULL, err);
    if (rc == DDB_ECONDITION) {
        *old = res.item;
        res.item = NULL;
    }
    ddb_result_cleanup(&res);
    return rc;
}

int dl_item_renew_start(ddb_lease *lease, const char *rvn, ddb_cancel *cancel,
                        ddb__item_reply_fn fn, void *arg, ddb_error *err)
{
    ddb_lock_table *l;
    ddb_item *key;
    req r;
    int rc = build_renew(lease, rvn, &l, &key, &r, err);
    return rc ? rc : send_lease_write(l, key, &r, true, cancel, NULL, fn, arg, err);
}

int dl_item_release(ddb_lease *lease, ddb_cancel *cancel, ddb_error *err)
{
    ddb_lock_table *l;
    ddb_item *key;
    req r;
    int rc = build_release(lease, &l, &key, &r, err);
    return rc ? rc : send_lease_write(l, key, &r, false, cancel, NULL, NULL, NULL, err);
}

int dl_item_release_start(ddb_lease *lease, ddb_cancel *cancel, ddb__item_reply_fn fn,
                          void *arg, ddb_error *err)
{
    ddb_lock_table *l;
    ddb_item *key;
    req r;
    int rc = build_release(lease, &l, &key, &r, err);
    return rc ? rc : send_lease_write(l, key, &r, false, cancel, NULL, fn, arg, err);
}
