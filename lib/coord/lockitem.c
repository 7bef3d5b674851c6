/* lockitem.c: the lock item on the wire -- how an acquire, a renewal and a release
 * write it, and how a read of it is understood. Every contender reads and writes the
 * item the same way, so this is the one place that knows its format. */
#include "coord_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddb_private.h"
#include "utf8.h"

/* ------------------------------------------------------------------ reading */

void ddb__lock_item_cleanup(ddb__lock_item *li)
{
    if (!li)
        return;
    free(li->owner);
    free(li->rvn);
    free(li->holder);
    free(li->value);
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
    if (strlen(o) > DDB_LOCK_ID_MAX_BYTES || strlen(rvn) > DDB_LOCK_ID_MAX_BYTES)
        return not_a_lock(l, name, "its owner or record version is longer than 128 bytes",
                          err);
    const char *value = NULL;
    if (ddb_item_get(item, DDB__LOCK_ATTR_VALUE)) {
        value = ddb_item_get_s(item, DDB__LOCK_ATTR_VALUE);
        if (!value || strlen(value) > DDB_LEASE_VALUE_MAX_BYTES)
            return not_a_lock(l, name, "its value is not a string of at most 1024 bytes",
                              err);
    }
    const char *holder = ddb_item_get_s(item, DDB__LOCK_ATTR_HOLDER);
    out->held = true;
    out->lease_ms = lease_ms;
    out->owner = strdup(o);
    out->rvn = strdup(rvn);
    out->holder = holder ? strdup(holder) : NULL;
    out->value = value ? strdup(value) : NULL;
    if (!out->owner || !out->rvn || (holder && !out->holder) || (value && !out->value)) {
        ddb__lock_item_cleanup(out);
        return ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    }
    return 0;
}

/* A table whose key attributes are not strings answers a request on a lock's key with
 * "The provided key element does not match the schema" (reads) or "Type mismatch for
 * key" (writes, and reads on DynamoDB Local): say what it means. */
int dl_key_rule(const ddb_lock_table *l, const char *name, int rc, ddb_error *err)
{
    if (rc != DDB_EVALIDATION || !err ||
        (!strstr(err->message, "key element does not match the schema") &&
         !strstr(err->message, "Type mismatch for key")))
        return rc;
    const ddb_table *t = l->table;
    const char *sk = ddb_table_sk(t);
    char keys[600];
    if (sk)
        snprintf(keys, sizeof keys, "\"%s\" and \"%s\"", ddb_table_pk(t), sk);
    else
        snprintf(keys, sizeof keys, "\"%s\"", ddb_table_pk(t));
    return ddb__fail(err, rc,
                     "The key of lock \"%s\" does not match the key schema of table \"%s\": "
                     "the key attributes of a lock table (%s) must be strings.",
                     name, ddb_table_name(t), keys);
}

/* A parsed item as the public state, seen unchanged for unchanged_ms. A label longer
 * than a holder label can be is refused rather than cut. */
static int item_to_state(const ddb_lock_table *l, const char *name, const ddb__lock_item *li,
                         int64_t unchanged_ms, ddb_lock_state *out, ddb_error *err)
{
    memset(out, 0, sizeof *out);
    if (li->holder) {
        /* Counted in characters, as every writer counts them; a byte that is not one
         * (DynamoDB's strings are UTF-8, so never in practice) counts as one. */
        size_t n = strlen(li->holder), chars = 0;
        const unsigned char *h = (const unsigned char *)li->holder;
        for (size_t i = 0; i < n; chars++) {
            size_t k = dl__utf8_seq(h + i, n - i);
            i += k ? k : 1;
        }
        if (chars > DDB_HOLDER_LABEL_MAX || n > DDB_HOLDER_LABEL_MAX_BYTES) {
            return not_a_lock(l, name, "its holder label is longer than 256 characters",
                              err);
        }
        memcpy(out->holder_label, li->holder, n + 1);
    }
    out->exists = li->exists;
    out->is_held = li->held;
    out->lease_ms = li->held ? li->lease_ms : 0;
    out->fencing_token = li->fence;
    if (li->held) {
        /* Lengths were checked by the parse. */
        snprintf(out->owner, sizeof out->owner, "%s", li->owner);
        snprintf(out->record_version, sizeof out->record_version, "%s", li->rvn);
        out->unchanged_ms = unchanged_ms;
        if (li->value) {
            out->has_value = true;
            snprintf(out->value, sizeof out->value, "%s", li->value);
        }
    }
    return 0;
}

int dl_state_of(const ddb_lock_table *l, const char *name, const ddb_item *item,
                ddb_lock_state *out, ddb_error *err)
{
    ddb__lock_item li = {0};
    int rc = ddb__lock_item_parse(l, name, item, &li, err);
    if (rc == 0)
        rc = item_to_state(l, name, &li, 0, out, err);
    ddb__lock_item_cleanup(&li);
    return rc;
}

int ddb_lock_table_get_state(ddb_lock_table *l, const char *name, ddb_lock_state *out,
                             ddb_cancel *cancel, ddb_error *err)
{
    ddb_error_clear(err);
    if (!l || !out)
        return ddb__fail(err, DDB_EINVAL, "The lock table or the state to fill is NULL.");
    memset(out, 0, sizeof *out);
    ddb_item *item;
    int rc = dl_item_read(l, name, cancel, &item, err);
    if (rc != 0)
        return rc;
    int64_t now = ddb_clock_mono_ns(l->clock);
    ddb__lock_item li = {0};
    rc = ddb__lock_item_parse(l, name, item, &li, err);
    ddb_item_free(item);
    if (rc == 0)
        rc = item_to_state(l, name, &li, dl_seen_unchanged_ms(l, name, &li, now, true), out,
                           err);
    ddb__lock_item_cleanup(&li);
    return rc;
}

/* ------------------------------------------------------------------ listing */

struct ddb_lock_list {
    ddb_lock_table *locks;
    ddb_item *values;
    const char *names[3];
    ddb_query_options q;
    ddb_pages *pages;
    size_t next;               /* the next item of the page */
    bool have_page;
    bool done;
    char name[DDB__LOCK_NAME_MAX + 1];
};

ddb_lock_list *ddb_lock_table_list(ddb_lock_table *l, const ddb_lock_list_options *o,
                                   ddb_cancel *cancel, ddb_error *err)
{
    ddb_lock_list_options defaults = {0};
    if (!o)
        o = &defaults;
    ddb_error_clear(err);
    if (!l) {
        ddb__fail(err, DDB_EINVAL, "The lock table is NULL.");
        return NULL;
    }
    if (o->page_limit < 0) {
        ddb__fail(err, DDB_EINVAL, "The page limit of a list is %d; it must be 0 or more.",
                  o->page_limit);
        return NULL;
    }
    ddb_lock_list *list = calloc(1, sizeof *list);
    if (!list || !(list->values = ddb_item_new()) ||
        ddb_item_set_s(list->values, ":t", DDB__LOCK_TYPE_VALUE) != 0) {
        ddb_lock_list_free(list);
        ddb__fail(err, DDB_ENOMEM, "Out of memory.");
        return NULL;
    }
    list->locks = l;
    list->names[0] = "#t";
    list->names[1] = DDB__LOCK_ATTR_TYPE;
    list->names[2] = NULL;
    if (l->list_index) {
        /* The index holds the lock items only, in one partition: a Query reads them and
         * nothing else. Reads of an index are eventually consistent. */
        list->q = (ddb_query_options){.index = l->list_index,
                                      .key_condition = "#t = :t",
                                      .names = list->names,
                                      .values = list->values,
                                      .limit = o->page_limit};
        list->pages = ddb_table_query(l->table, &list->q, cancel, err);
    } else {
        list->q = (ddb_query_options){.filter = "#t = :t",
                                      .names = list->names,
                                      .values = list->values,
                                      .limit = o->page_limit,
                                      .consistent_read = true};
        list->pages = ddb_table_scan(l->table, &list->q, cancel, err);
    }
    if (!list->pages) {
        ddb_lock_list_free(list);
        return NULL;
    }
    return list;
}

/* The lock name in a lock item's partition key, or NULL when the item is not a lock's. */
static const char *name_of(const ddb_lock_table *l, const ddb_item *item)
{
    const char *pk = ddb_item_get_s(item, ddb_table_pk(l->table));
    size_t prefix = strlen(DDB__LOCK_PK_PREFIX);
    if (!pk || strncmp(pk, DDB__LOCK_PK_PREFIX, prefix) != 0 ||
        strlen(pk + prefix) > DDB__LOCK_NAME_MAX)
        return NULL;
    const char *sk = ddb_table_sk(l->table);
    if (sk) {
        const char *s = ddb_item_get_s(item, sk);
        if (!s || strcmp(s, DDB__LOCK_SK_VALUE) != 0)
            return NULL;
    }
    return pk + prefix;
}

int ddb_lock_list_next(ddb_lock_list *list, const char **name, ddb_lock_state *out,
                       ddb_error *err)
{
    ddb_error_clear(err);
    if (!list || !name || !out)
        return ddb__fail(err, DDB_EINVAL, "The list, the name or the state to fill is NULL.");
    *name = NULL;
    memset(out, 0, sizeof *out);
    while (!list->done) {
        if (!list->have_page || list->next >= ddb_pages_count(list->pages)) {
            int more = ddb_pages_next(list->pages, err);
            if (more < 0)
                return more;
            if (more == 0) {
                list->done = true;
                break;
            }
            list->have_page = true;
            list->next = 0;
            continue;
        }
        const ddb_item *item = ddb_pages_item(list->pages, list->next++);
        const char *n = name_of(list->locks, item);
        if (!n)
            continue;
        snprintf(list->name, sizeof list->name, "%s", n);
        ddb__lock_item li = {0};
        int rc = ddb__lock_item_parse(list->locks, list->name, item, &li, err);
        if (rc == 0)
            rc = item_to_state(list->locks, list->name, &li,
                               dl_seen_unchanged_ms(list->locks, list->name, &li,
                                                    ddb_clock_mono_ns(list->locks->clock),
                                                    false),
                               out, err);
        ddb__lock_item_cleanup(&li);
        if (rc != 0)
            return rc;
        *name = list->name;
        return 1;
    }
    return 0;
}

void ddb_lock_list_free(ddb_lock_list *list)
{
    if (!list)
        return;
    ddb_pages_free(list->pages);
    ddb_item_free(list->values);
    free(list);
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

/* The write of a new holder, as an acquire makes it: owner, rvn, lease, type and label
 * (or none: an acquire without a label removes the one before), the time to live, and
 * the fencing token up by one. */
static void build_hold(req *r, const ddb_lock_table *l, const char *label, const char *value,
                       const char *owner, const char *record_version, int64_t lease_ms)
{
    req_name(r, "#o", DDB__LOCK_ATTR_OWNER);
    req_name(r, "#r", DDB__LOCK_ATTR_RVN);
    req_name(r, "#l", DDB__LOCK_ATTR_LEASE_MS);
    req_name(r, "#t", DDB__LOCK_ATTR_TYPE);
    req_name(r, "#f", DDB__LOCK_ATTR_FENCE);
    req_name(r, "#h", DDB__LOCK_ATTR_HOLDER);
    req_s(r, ":o", owner);
    req_s(r, ":r", record_version);
    req_i64(r, ":l", lease_ms);
    req_s(r, ":t", DDB__LOCK_TYPE_VALUE);
    req_i64(r, ":one", 1);
    req_append(r, "SET #o = :o, #r = :r, #l = :l, #t = :t");
    req_name(r, "#v", DDB__LOCK_ATTR_VALUE);
    if (label) {
        req_s(r, ":h", label);
        req_append(r, ", #h = :h");
    }
    if (value) {
        req_s(r, ":v", value);
        req_append(r, ", #v = :v");
    }
    req_ttl(r, l, false);
    req_append(r, " ADD #f :one");
    /* What this holder does not set, a previous one may have left. */
    if (!label || !value)
        req_append(r, !label && !value ? " REMOVE #h, #v" : !label ? " REMOVE #h" : " REMOVE #v");
}

/* The write of a release: owner, lease, label and value removed, the time to live
 * renewed. The fence stays, so the token never goes back while the item lives. */
static void build_unhold(req *r, const ddb_lock_table *l)
{
    req_name(r, "#o", DDB__LOCK_ATTR_OWNER);
    req_name(r, "#l", DDB__LOCK_ATTR_LEASE_MS);
    req_name(r, "#h", DDB__LOCK_ATTR_HOLDER);
    req_name(r, "#v", DDB__LOCK_ATTR_VALUE);
    req_append(r, "REMOVE #o, #l, #h, #v");
    if (l->ttl_attribute) {
        req_append(r, " ");
        req_ttl(r, l, true);
    }
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
    build_hold(&r, l, l->holder_label, l->lease_value, owner, rvn, lease_ms);
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
                                                  .return_old_on_condition_fail = true},
                             &res, cancel, err);
        if (rc == 0 || dl_condition_failed(rc, err)) {
            *old = res.item;
            res.item = NULL;
        }
        ddb_result_cleanup(&res);
        rc = dl_key_rule(l, name, rc, err);
    }
    ddb_item_free(r.values);
    ddb_item_free(key);
    return rc;
}

/* ------------------------------------------------- writes without conditions */

/* The key of lock `name` and an empty request, for a forced write. */
static int force_begin(ddb_lock_table *l, const char *name, ddb_item **key, req *r,
                       ddb_error *err)
{
    if (!l)
        return ddb__fail(err, DDB_EINVAL, "The lock table is NULL.");
    if (!(*key = ddb__lock_key(l, name, err)))
        return err ? err->code : DDB_EINVAL;
    if (req_init(r, err) != 0) {
        ddb_item_free(*key);
        return DDB_ENOMEM;
    }
    return 0;
}

int ddb_lock_force_hold(ddb_lock_table *l, const char *name, int64_t lease_ms,
                        const char *holder_label, int64_t *token, ddb_cancel *cancel,
                        ddb_error *err)
{
    ddb_error_clear(err);
    if (!l)
        return ddb__fail(err, DDB_EINVAL, "The lock table is NULL.");
    int rc = dl_lease_ms_check(lease_ms, err);
    if (rc == 0 && holder_label)
        rc = dl_label_check(holder_label, err);
    if (rc != 0)
        return rc;
    ddb_item *key;
    req r;
    if ((rc = force_begin(l, name, &key, &r, err)) != 0)
        return rc;
    char owner[DDB__LOCK_ID_LEN + 1], rvn[DDB__LOCK_ID_LEN + 1];
    ddb__lock_new_id(owner);
    ddb__lock_new_id(rvn);
    build_hold(&r, l, holder_label, NULL, owner, rvn, lease_ms);
    if (r.failed) {
        rc = ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    } else {
        ddb_result res = {0};
        rc = ddb_table_update_item(l->table, key, r.update,
                             &(ddb_write_options){.names = r.names,
                                                  .values = r.values,
                                                  .return_values = DDB_RETURN_ALL_NEW},
                             &res, cancel, err);
        rc = dl_key_rule(l, name, rc, err);
        int64_t fence = 0;
        if (rc == DDB_EINDOUBT) {
            /* The answer was lost: this call's owner id in the item means it was applied. */
            ddb__lock_item li = {0};
            ddb_error rerr;
            ddb_error_clear(&rerr);
            if (dl_item_resolve(l, name, cancel, &li, &rerr) == 0) {
                bool mine = li.held && strcmp(li.owner, owner) == 0;
                rc = mine ? 0
                          : ddb__fail(err, DDB_ESTATE,
                                      "The write of a holder of lock \"%s\" in table \"%s\" "
                                      "lost its answer and was not applied: another holder "
                                      "wrote the lock since.",
                                      name, ddb_table_name(l->table));
                if (mine && token)
                    *token = li.fence;
                ddb__lock_item_cleanup(&li);
                ddb_result_cleanup(&res);
                ddb_item_free(r.values);
                ddb_item_free(key);
                return rc;
            }
        }
        if (rc == 0 && (!res.item || ddb_item_get_i64(res.item, DDB__LOCK_ATTR_FENCE,
                                                      &fence) != 0))
            rc = ddb__fail(err, DDB_EPROTOCOL,
                           "The write of a holder of lock \"%s\" in table \"%s\" returned "
                           "no fencing token.",
                           name, ddb_table_name(l->table));
        if (rc == 0 && token)
            *token = fence;
        ddb_result_cleanup(&res);
    }
    ddb_item_free(r.values);
    ddb_item_free(key);
    return rc;
}

/* A forced release whose answer was lost: a lock free now (or no item) is what the write
 * would have left, so it is done; a holder means it was not applied, and the doubt stays
 * when the read fails too. */
static int resolve_free(ddb_lock_table *l, const char *name, ddb_cancel *cancel,
                        ddb_error *err)
{
    ddb__lock_item li = {0};
    ddb_error rerr;
    ddb_error_clear(&rerr);
    if (dl_item_resolve(l, name, cancel, &li, &rerr) != 0) {
        ddb__lock_item_cleanup(&li);
        return DDB_EINDOUBT;
    }
    bool held = li.held;
    ddb__lock_item_cleanup(&li);
    if (held)
        return ddb__fail(err, DDB_EINDOUBT,
                         "The release of lock \"%s\" in table \"%s\" lost its answer and the "
                         "lock is held now: it was not applied, or a new holder came since.",
                         name, ddb_table_name(l->table));
    ddb_error_clear(err);
    return 0;
}

int ddb_lock_force_release(ddb_lock_table *l, const char *name, ddb_cancel *cancel,
                           ddb_error *err)
{
    ddb_error_clear(err);
    ddb_item *key;
    req r;
    int rc = force_begin(l, name, &key, &r, err);
    if (rc != 0)
        return rc;
    build_unhold(&r, l);
    req_name(&r, "#k", ddb_table_pk(l->table));
    if (r.failed) {
        rc = ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    } else {
        /* The one condition is that the item exists: releasing a lock without an item
         * must not make an item without a lock's attributes. */
        rc = ddb_table_update_item(l->table, key, r.update,
                             &(ddb_write_options){.condition = "attribute_exists(#k)",
                                                  .names = r.names,
                                                  .values = ddb_item_count(r.values)
                                                                ? r.values
                                                                : NULL},
                             NULL, cancel, err);
        if (rc == DDB_EINDOUBT)
            rc = resolve_free(l, name, cancel, err);
        if (rc == DDB_ECONDITION) {
            ddb_error_clear(err);
            rc = 0;
        }
        rc = dl_key_rule(l, name, rc, err);
    }
    ddb_item_free(r.values);
    ddb_item_free(key);
    return rc;
}

int ddb_lock_release_if(ddb_lock_table *l, const char *name, const char *owner,
                        int64_t fencing_token, bool *released, ddb_cancel *cancel,
                        ddb_error *err)
{
    ddb_error_clear(err);
    if (released)
        *released = false;
    if (!released)
        return ddb__fail(err, DDB_EINVAL, "The outcome to fill (released) is NULL.");
    if (fencing_token < 1)
        return ddb__fail(err, DDB_EINVAL,
                         "The fencing token %" PRId64 " is not one a holder can have (1 or "
                         "more).",
                         fencing_token);
    if (owner && !*owner)
        return ddb__fail(err, DDB_EINVAL, "The owner is empty; pass NULL for any owner.");
    ddb_item *key;
    req r;
    int rc = force_begin(l, name, &key, &r, err);
    if (rc != 0)
        return rc;
    build_unhold(&r, l);
    req_name(&r, "#f", DDB__LOCK_ATTR_FENCE);
    req_i64(&r, ":f", fencing_token);
    const char *condition = "attribute_exists(#o) AND #f = :f";
    if (owner) {
        req_s(&r, ":o", owner);
        condition = "#o = :o AND #f = :f";
    }
    if (r.failed) {
        rc = ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    } else {
        rc = ddb_table_update_item(l->table, key, r.update,
                                   &(ddb_write_options){.condition = condition,
                                                        .names = r.names,
                                                        .values = r.values},
                                   NULL, cancel, err);
        if (rc == DDB_EINDOUBT) {
            /* The answer to an attempt was lost: the item tells. Released with this token
             * means this call's write (a release keeps the token, and a new holder would
             * have raised it). */
            ddb__lock_item li = {0};
            ddb_error rerr;
            ddb_error_clear(&rerr);
            if (dl_item_resolve(l, name, cancel, &li, &rerr) == 0) {
                ddb_error_clear(err);
                rc = 0;
                *released = li.exists && !li.held && li.fence == fencing_token;
                ddb__lock_item_cleanup(&li);
            } else if (err) {
                size_t n = strlen(err->message);
                snprintf(err->message + n, sizeof err->message - n,
                         "; the read that would tell failed too (%s)", rerr.message);
            }
        } else if (rc == 0) {
            *released = true;
        } else if (rc == DDB_ECONDITION) {
            ddb_error_clear(err);
            rc = 0;
        }
        rc = dl_key_rule(l, name, rc, err);
    }
    ddb_item_free(r.values);
    ddb_item_free(key);
    return rc;
}

int ddb_lock_force_delete(ddb_lock_table *l, const char *name, ddb_cancel *cancel,
                          ddb_error *err)
{
    ddb_error_clear(err);
    if (!l)
        return ddb__fail(err, DDB_EINVAL, "The lock table is NULL.");
    ddb_item *key = ddb__lock_key(l, name, err);
    if (!key)
        return err ? err->code : DDB_EINVAL;
    int rc = ddb_table_delete_item(l->table, key, NULL, NULL, cancel, err);
    ddb_item_free(key);
    if (rc == DDB_EINDOUBT) {
        /* The answer was lost: no item now means the delete was applied. */
        ddb__lock_item li = {0};
        ddb_error rerr;
        ddb_error_clear(&rerr);
        if (dl_item_resolve(l, name, cancel, &li, &rerr) == 0 && !li.exists) {
            ddb_error_clear(err);
            rc = 0;
        }
        ddb__lock_item_cleanup(&li);
    }
    return dl_key_rule(l, name, rc, err);
}

/* ------------------------------------------------------------------ fencing */

int dl_item_check(ddb_tx *tx, ddb_table *table, const char *name, const char *owner,
                  int64_t fence, ddb_tx_marker *marker, ddb_error *err)
{
    ddb_item *key = dl_lock_key_table(table, name, err);
    if (!key)
        return err ? err->code : DDB_EINVAL;
    ddb_item *values = ddb_item_new();
    int rc = values ? 0 : DDB_ENOMEM;
    if (rc == 0 && (ddb_item_set_s(values, ":o", owner) != 0 ||
                    ddb_item_set_i64(values, ":f", fence) != 0))
        rc = DDB_ENOMEM;
    if (rc == 0) {
        static const char *const names[] = {"#o", DDB__LOCK_ATTR_OWNER, "#f",
                                            DDB__LOCK_ATTR_FENCE, NULL};
        rc = ddb_tx_check(tx, table, key,
                          &(ddb_tx_options){.condition = "#o = :o AND #f = :f",
                                            .names = names,
                                            .values = values},
                          marker, err);
    } else {
        ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    }
    ddb_item_free(values);
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
                          &(ddb_get_options){.consistent_read = true}, &res, cancel,
                          err);
    if (rc == 0) {
        *item = res.item;
        res.item = NULL;
    }
    ddb_result_cleanup(&res);
    ddb_item_free(key);
    return dl_key_rule(l, name, rc, err);
}

/* ------------------------------------------------------ writes in doubt */

bool dl_condition_failed(int rc, const ddb_error *e)
{
    return rc == DDB_ECONDITION ||
           (rc == DDB_EINDOUBT && e &&
            strcmp(e->aws_type, "ConditionalCheckFailedException") == 0);
}

int dl_item_resolve(ddb_lock_table *l, const char *name, ddb_cancel *cancel,
                    ddb__lock_item *li, ddb_error *err)
{
    memset(li, 0, sizeof *li);
    ddb_item *item = NULL;
    int rc = dl_item_read(l, name, cancel, &item, err);
    if (rc == 0)
        rc = ddb__lock_item_parse(l, name, item, li, err);
    ddb_item_free(item);
    return rc;
}

int dl_item_release_owner(ddb_lock_table *l, const char *name, const char *owner,
                          ddb_cancel *cancel, ddb__item_reply_fn fn, void *arg,
                          ddb_error *err)
{
    ddb_item *key;
    req r;
    int rc = force_begin(l, name, &key, &r, err);
    if (rc != 0)
        return rc;
    build_unhold(&r, l);
    req_s(&r, ":o", owner);
    ddb_write_options o = {.condition = "#o = :o", .names = r.names, .values = r.values};
    if (r.failed)
        rc = ddb__fail(err, DDB_ENOMEM, "Out of memory.");
    else if (fn)
        rc = ddb__update_item_start(l->table, key, r.update, &o, cancel, fn, arg, err);
    else
        rc = ddb_table_update_item(l->table, key, r.update, &o, NULL, cancel, err);
    ddb_item_free(r.values);
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
    /* The lease's value as it is now: ddb_lease_set_value may change it at any time. */
    req_name(r, "#v", DDB__LOCK_ATTR_VALUE);
    pthread_mutex_lock(&lease->mu);
    bool has_value = lease->value != NULL;
    if (has_value)
        req_s(r, ":v", lease->value);
    pthread_mutex_unlock(&lease->mu);
    if (has_value)
        req_append(r, ", #v = :v");
    req_ttl(r, l, false);
    if (!has_value)
        req_append(r, " REMOVE #v");
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
    build_unhold(r, *lp);
    req_s(r, ":o", lease->owner);
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
                           .return_old_on_condition_fail = return_old};
    int rc = fn ? ddb__update_item_start(l->table, key, r->update, &o, cancel, fn, arg, err)
                : ddb_table_update_item(l->table, key, r->update, &o, res, cancel, err);
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
    if (dl_condition_failed(rc, err)) {
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
