/* settings.c: the public calls that change how a running server describes its tables,
 * beside what fakedb_options holds: the account id in ARNs (DynamoDB Local's is always
 * 000000000000) and how long tables stay CREATING, UPDATING and DELETING (Local's
 * -delayTransientStatuses). They take each store's lock, as operations do. */
#include "server.h"

#include <stdint.h>
#include <string.h>

static void set_account(void *arg, fakedb__store *st, const char *key, const char *region)
{
    (void)key, (void)region;
    pthread_mutex_lock(&st->lock);
    memcpy(st->account, arg, 13);
    pthread_mutex_unlock(&st->lock);
}

static void set_transient(void *arg, fakedb__store *st, const char *key, const char *region)
{
    (void)key, (void)region;
    pthread_mutex_lock(&st->lock);
    st->transient_ms = *(const int64_t *)arg;
    pthread_mutex_unlock(&st->lock);
}

/* Every database's (with separate databases, those made later too). */
int fakedb_account_id_set(fakedb *db, const char *account_id)
{
    if (!db || !account_id || strlen(account_id) != 12 || strspn(account_id, "0123456789") != 12)
        return FAKEDB_EINVAL;
    /* The shared store first: a database made from now on copies its settings. */
    if (db->separate_dbs)
        set_account((void *)(uintptr_t)account_id, &db->store, NULL, NULL);
    fakedb__databases_each(db, set_account, (void *)(uintptr_t)account_id);
    return FAKEDB_OK;
}

int fakedb_transient_statuses_set(fakedb *db, int64_t ms)
{
    if (!db || ms < 0)
        return FAKEDB_EINVAL;
    if (db->separate_dbs)
        set_transient(&ms, &db->store, NULL, NULL);
    fakedb__databases_each(db, set_transient, &ms);
    return FAKEDB_OK;
}
