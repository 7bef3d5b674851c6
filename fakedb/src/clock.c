/* clock.c: the server's clock. Either the system's wall clock or a fake one that moves
 * only when told. Moving it is all this file does: expiring the items that became due
 * and answering clock long polls is the server's part (fakedb_clock_advance/set). */
#include "store.h"

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

int64_t fakedb__now_ms(fakedb__clock *c)
{
    int64_t now;
    pthread_mutex_lock(&c->lock);
    now = c->fake ? c->fake_now_ms : wall_ms();
    pthread_mutex_unlock(&c->lock);
    return now;
}

int fakedb__clock_move(fakedb__clock *c, bool relative, int64_t v)
{
    pthread_mutex_lock(&c->lock);
    if (!c->fake) {
        pthread_mutex_unlock(&c->lock);
        return FAKEDB_EINVAL;
    }
    int64_t target = relative ? c->fake_now_ms + v : v;
    if ((relative && v < 0) || target < c->fake_now_ms) {
        pthread_mutex_unlock(&c->lock);
        return FAKEDB_EINVAL;
    }
    c->fake_now_ms = target;
    pthread_mutex_unlock(&c->lock);
    return 0;
}
