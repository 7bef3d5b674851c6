/* settings.c: the public calls that change how a running server describes its tables,
 * beside what fakedb_options holds: the account id in ARNs (DynamoDB Local's is always
 * 000000000000) and how long tables stay CREATING, UPDATING and DELETING (Local's
 * -delayTransientStatuses). They take the store's lock, as operations do. */
#include "server.h"

#include <string.h>

int fakedb_account_id_set(fakedb *db, const char *account_id)
{
    if (!db || !account_id || strlen(account_id) != 12 || strspn(account_id, "0123456789") != 12)
        return FAKEDB_EINVAL;
    pthread_mutex_lock(&db->store.lock);
    memcpy(db->store.account, account_id, 13);
    pthread_mutex_unlock(&db->store.lock);
    return FAKEDB_OK;
}

int fakedb_transient_statuses_set(fakedb *db, int64_t ms)
{
    if (!db || ms < 0)
        return FAKEDB_EINVAL;
    pthread_mutex_lock(&db->store.lock);
    db->store.transient_ms = ms;
    pthread_mutex_unlock(&db->store.lock);
    return FAKEDB_OK;
}
