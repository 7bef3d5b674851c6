/* locktable.c: the lock table's life -- made from its options, and freed, which ends
 * the leases it still holds (release.c). */
#include "coord_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddb_private.h"

/* ------------------------------------------------------------ lock table */

static bool is_lock_attribute(const char *a)
{
    static const char *const attrs[] = {DDB__LOCK_ATTR_TYPE,  DDB__LOCK_ATTR_OWNER,
                                        DDB__LOCK_ATTR_RVN,   DDB__LOCK_ATTR_FENCE,
                                        DDB__LOCK_ATTR_LEASE_MS, DDB__LOCK_ATTR_HOLDER,
                                        DDB__LOCK_ATTR_VALUE};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if (strcmp(a, attrs[i]) == 0)
            return true;
    return false;
}

ddb_lock_table *ddb_lock_table_new(ddb_table *table, const ddb_lock_table_options *o,
                                   ddb_error *err)
{
    ddb_lock_table_options defaults = {0};
    if (!o)
        o = &defaults;
    ddb_error_clear(err);
    if (!table) {
        ddb__fail(err, DDB_EINVAL, "The table of a lock table is NULL.");
        return NULL;
    }
    if (o->holder_label && dl_label_check(o->holder_label, err) != 0)
        return NULL;
    if (o->lease_value && dl_value_check(o->lease_value, err) != 0)
        return NULL;
    int64_t retention = o->ttl_retention_ms ? o->ttl_retention_ms
                                            : DDB_LOCK_TTL_RETENTION_DEFAULT_MS;
    if (retention < DDB_LOCK_TTL_RETENTION_MIN_MS) {
        ddb__fail(err, DDB_EINVAL,
                  "The time-to-live retention is %" PRId64 " ms; it must be at least %lld "
                  "ms (1 day), so that a held lock is never due.",
                  o->ttl_retention_ms, DDB_LOCK_TTL_RETENTION_MIN_MS);
        return NULL;
    }
    if (o->ttl_attribute) {
        const char *a = o->ttl_attribute;
        const char *sk = ddb_table_sk(table);
        if (!*a || strlen(a) > 255) {
            ddb__fail(err, DDB_EINVAL,
                      "The time-to-live attribute name must have from 1 to 255 bytes.");
            return NULL;
        }
        if (strcmp(a, ddb_table_pk(table)) == 0 || (sk && strcmp(a, sk) == 0)) {
            ddb__fail(err, DDB_EINVAL,
                      "The time-to-live attribute \"%s\" is a key of table \"%s\"; it must "
                      "be another attribute.",
                      a, ddb_table_name(table));
            return NULL;
        }
        if (is_lock_attribute(a)) {
            ddb__fail(err, DDB_EINVAL,
                      "The time-to-live attribute \"%s\" is an attribute of the lock item; "
                      "it must be another attribute.",
                      a);
            return NULL;
        }
    }

    if (o->list_index && (strlen(o->list_index) < 3 || strlen(o->list_index) > 255)) {
        ddb__fail(err, DDB_EINVAL,
                  "The list index name \"%s\" must have from 3 to 255 characters.",
                  o->list_index);
        return NULL;
    }

    ddb_lock_table *l = calloc(1, sizeof *l);
    if (!l) {
        ddb__fail(err, DDB_ENOMEM, "Out of memory.");
        return NULL;
    }
    l->table = table;
    l->client = ddb_table_client(table);
    l->clock = ddb_client_clock(l->client);
    l->ttl_retention_ms = retention;
    l->next_hook_id = 1;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->hooks_idle, NULL);
    if ((o->holder_label && !(l->holder_label = strdup(o->holder_label))) ||
        (o->ttl_attribute && !(l->ttl_attribute = strdup(o->ttl_attribute))) ||
        (o->list_index && !(l->list_index = strdup(o->list_index))) ||
        (o->lease_value && !(l->lease_value = strdup(o->lease_value)))) {
        ddb__fail(err, DDB_ENOMEM, "Out of memory.");
        ddb_lock_table_free(l);
        return NULL;
    }
    return l;
}

void ddb_lock_table_free(ddb_lock_table *l)
{
    if (!l)
        return;
    /* End what is still held, one at a time: ending takes it off the list. The leases
     * stay valid for their holders, whose ddb_lease_release then only frees them. */
    for (;;) {
        pthread_mutex_lock(&l->mu);
        ddb_lease *lease = l->leases;
        if (lease)
            ddb_lease_ref(lease);
        pthread_mutex_unlock(&l->mu);
        if (!lease)
            break;
        dl_lease_end(lease);
        ddb_lease_unref(lease);
    }
    dl_seen_free(l->seen);
    dl_seen_free(l->read_seen);
    for (dl_refusal_hook *h = l->hooks, *next; h; h = next) {
        next = h->next;
        free(h);
    }
    pthread_cond_destroy(&l->hooks_idle);
    pthread_mutex_destroy(&l->mu);
    free(l->holder_label);
    free(l->ttl_attribute);
    free(l->list_index);
    free(l->lease_value);
    free(l);
}

