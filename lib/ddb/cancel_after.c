/* cancel_after.c: ddb_cancel_after, a token set by a timer of a clock. The timer is the
 * clock's (clock.c), run on a scheduler (scheduler.c) whose calls this file hands to the
 * clock; the token keeps the timer as a link (cancel.c) until it is set or freed. Above
 * all three, so that none of them calls another in a circle. */
#include "internal.h"
#include "scheduler.h"

#include <stdint.h>
#include <stdlib.h>

/* The scheduler that runs the timers of a system or custom clock. */
static const ddb__timer_sched_ops k_timer_sched = {
    .make = ddb__sched_new_timers,
    .at = ddb__sched_at,
    .cancel = ddb__sched_cancel,
    .free = ddb__sched_free,
};

typedef struct timer_link {
    ddb__cancel_link link;
    ddb_clock *clock; /* referenced */
    long timer_id;    /* 0 once removed or fired */
} timer_link;

/* The token was set: its timer is not needed any more. Under the token's lock. */
static void timer_link_drop(ddb__cancel_link *l)
{
    timer_link *t = (timer_link *)l;
    if (t->timer_id > 0) {
        ddb__clock_timer_remove(t->clock, t->timer_id);
        t->timer_id = 0;
    }
}

/* The token is freed. */
static void timer_link_release(ddb__cancel_link *l)
{
    timer_link *t = (timer_link *)l;
    timer_link_drop(l);
    ddb_clock_unref(t->clock);
    free(t);
}

int ddb_cancel_after(ddb_cancel *c, ddb_clock *clock, int64_t ms)
{
    if (!c)
        return DDB_EINVAL;
    if (!clock)
        clock = ddb_clock_system();
    if (ms <= 0) {
        ddb_cancel_set(c);
        return 0;
    }
    if (ddb_cancel_is_set(c))
        return 0;
    timer_link *t = calloc(1, sizeof *t);
    if (!t)
        return DDB_ENOMEM;
    t->link.drop = timer_link_drop;
    t->link.release = timer_link_release;
    int64_t now = ddb_clock_mono_ns(clock);
    int64_t deadline = ms > (INT64_MAX - now) / 1000000 ? INT64_MAX : now + ms * 1000000;
    t->clock = ddb_clock_ref(clock);
    /* Linked before the timer exists, so that a free racing with a firing timer finds
     * the id to remove. */
    ddb__cancel_lock(c);
    ddb__cancel_link_push_locked(c, &t->link);
    long id = ddb__clock_timer_add(clock, deadline, c, &k_timer_sched);
    if (id <= 0) {
        ddb__cancel_link_pop_locked(c, &t->link);
        ddb__cancel_unlock(c);
        ddb_clock_unref(t->clock);
        free(t);
        if (id < 0)
            return (int)id;
        ddb_cancel_set(c); /* due already */
        return 0;
    }
    t->timer_id = id;
    ddb__cancel_unlock(c);
    return 0;
}
