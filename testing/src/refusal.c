/* refusal.c: a test's way to know that a contender tried, found the lock held and was
 * turned away (and now waits for its next poll), without counting its requests, which
 * change with how a contender polls. The watch is taken before the contender starts. */
#include <dynalock/testing.h>

#include <stdlib.h>
#include <string.h>

#include "coord_internal.h"
#include "internal.h"

struct ddb_refusal_watch {
    ddb_lock_table *locks;
    char *name;
    long hook_id;
    ddb_cancel *done; /* set on the refusal; a wait can watch it and a caller's cancel */
};

static void on_refusal(void *arg, const char *name)
{
    ddb_refusal_watch *w = arg;
    if (strcmp(name, w->name) != 0)
        return;
    ddb_cancel_set(w->done);
}

ddb_refusal_watch *ddb_refusal_watch_new(ddb_lock_table *locks, const char *name,
                                             ddb_error *err)
{
    if (!locks) {
        ddb__fail(err, DDB_EINVAL, "no lock table given");
        return NULL;
    }
    if (ddb__lock_name_check(name, err) != 0)
        return NULL;
    ddb_refusal_watch *w = calloc(1, sizeof *w);
    if (!w || !(w->name = strdup(name)) || !(w->done = ddb_cancel_new())) {
        if (w) {
            free(w->name);
            free(w);
        }
        ddb__fail(err, DDB_ENOMEM, "out of memory");
        return NULL;
    }
    w->locks = locks;
    w->hook_id = ddb__lock_table_on_refusal(locks, on_refusal, w);
    if (w->hook_id < 0) {
        ddb__fail(err, (int)w->hook_id, "could not watch the lock table");
        w->hook_id = 0;
        ddb_refusal_watch_free(w);
        return NULL;
    }
    return w;
}

int ddb_refusal_watch_wait(ddb_refusal_watch *w, int64_t timeout_ms, ddb_cancel *cancel)
{
    if (!w)
        return DDB_EINVAL;
    if (!cancel) {
        int rc = ddb_cancel_wait(w->done, timeout_ms);
        return rc == 0 ? 0 : DDB_ETIMEDOUT;
    }
    /* Either token ends the wait: the refusal's, or the caller's. */
    ddb_cancel *either = ddb_cancel_new_linked2(w->done, cancel);
    if (!either)
        return DDB_ENOMEM;
    int rc = ddb_cancel_wait(either, timeout_ms);
    ddb_cancel_unref(either);
    if (ddb_refusal_watch_happened(w))
        return 0;
    return rc == 0 ? DDB_ECANCELED : DDB_ETIMEDOUT;
}

bool ddb_refusal_watch_happened(const ddb_refusal_watch *w)
{
    return w && ddb_cancel_is_set(w->done);
}

void ddb_refusal_watch_free(ddb_refusal_watch *w)
{
    if (!w)
        return;
    if (w->hook_id > 0)
        ddb__lock_table_off_refusal(w->locks, w->hook_id);
    ddb_cancel_unref(w->done);
    free(w->name);
    free(w);
}
