/* clock.c: the server's clock. Either the system's wall clock or a fake one that moves
 * only when told (fakedb_clock_advance/set or POST /fake/clock/...); moving it expires
 * items whose time to live is due and answers clock long polls before returning. */
#include "internal.h"

#include <time.h>

int64_t fakedb__mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t fakedb__now_ms(fakedb *db)
{
    int64_t now;
    pthread_mutex_lock(&db->clock_lock);
    now = db->fake_clock ? db->fake_now_ms : wall_ms();
    pthread_mutex_unlock(&db->clock_lock);
    return now;
}

int64_t fakedb_clock_now_ms(fakedb *db)
{
    return db ? fakedb__now_ms(db) : 0;
}

static int clock_move(fakedb *db, bool relative, int64_t v)
{
    if (!db)
        return FAKEDB_EINVAL;
    pthread_mutex_lock(&db->clock_lock);
    if (!db->fake_clock) {
        pthread_mutex_unlock(&db->clock_lock);
        return FAKEDB_EINVAL;
    }
    int64_t target = relative ? db->fake_now_ms + v : v;
    if ((relative && v < 0) || target < db->fake_now_ms) {
        pthread_mutex_unlock(&db->clock_lock);
        return FAKEDB_EINVAL;
    }
    db->fake_now_ms = target;
    pthread_mutex_unlock(&db->clock_lock);
    fakedb__ttl_sweep(db);
    fakedb__wake_waiters(db);
    return 0;
}

int fakedb_clock_advance(fakedb *db, int64_t ms)
{
    return clock_move(db, true, ms);
}

int fakedb_clock_set(fakedb *db, int64_t epoch_ms)
{
    return clock_move(db, false, epoch_ms);
}
