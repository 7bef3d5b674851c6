/* test_clock.c: ddb_clock: the system clock, the fake clock (advance wakes every due
 * wait; settle waits for the work an advance released, also through cancels set by
 * that work), custom clocks, and timers of ddb_cancel_after on each kind. */
#include <check.h>

#include "dl_check.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* ---- system clock */

START_TEST(system_reads)
{
    ddb_clock *c = ddb_clock_system();
    ck_assert(!ddb_clock_is_fake(c));
    ck_assert_ptr_eq(ddb_clock_ref(c), c);
    ddb_clock_unref(c); /* no effect */
    int64_t a = ddb_clock_mono_ns(c), b = ddb_clock_mono_ns(c);
    ck_assert_int_le(a, b);
    int64_t wall = ddb_clock_wall_ms(c);
    int64_t now_ms = (int64_t)time(NULL) * 1000;
    ck_assert_int_lt(llabs(wall - now_ms), 2000);
    ck_assert_int_eq(ddb_fake_clock_advance(c, 1), DDB_EINVAL);
    ck_assert_int_eq(ddb_fake_clock_settle(c, 1), DDB_EINVAL);
    ck_assert_int_eq(ddb_fake_clock_waiters(c), 0);
    ck_assert_int_eq(ddb_clock_mono_ns(NULL) > 0, 1);
}
END_TEST

START_TEST(system_sleep_times)
{
    ddb_clock *c = ddb_clock_system();
    int64_t t0 = ddb_clock_mono_ns(c);
    ck_assert_int_eq(ddb_clock_sleep(c, 30, NULL), 0);
    ck_assert_int_ge(ddb_clock_mono_ns(c) - t0, 30 * 1000000LL);
    ddb_cancel *k = ddb_cancel_new();
    t0 = ddb_clock_mono_ns(c);
    ck_assert_int_eq(ddb_clock_sleep(c, 20, k), 0);
    ck_assert_int_ge(ddb_clock_mono_ns(c) - t0, 20 * 1000000LL);
    ck_assert_int_eq(ddb_clock_sleep(c, -1, NULL), DDB_EINVAL);
    ddb_cancel_set(k);
    ck_assert_int_eq(ddb_clock_sleep(c, 10000, k), DDB_ECANCELED);
    ck_assert_int_eq(ddb_clock_sleep(c, 0, k), DDB_ECANCELED);
    ddb_cancel_unref(k);
}
END_TEST

typedef struct sleeper {
    ddb_clock *clock;
    int64_t ms;
    ddb_cancel *cancel;
    int rc;
    atomic_int done;
    int64_t real_ms_taken;
    bool idle_after;
    atomic_long tid; /* the sleeping thread, once it runs */
} sleeper;

static void *sleep_main(void *arg)
{
    sleeper *s = arg;
    atomic_store(&s->tid, (long)syscall(SYS_gettid));
    int64_t t0 = dl_check_mono_ms();
    s->rc = ddb_clock_sleep(s->clock, s->ms, s->cancel);
    s->real_ms_taken = dl_check_mono_ms() - t0;
    atomic_store(&s->done, 1);
    if (s->idle_after)
        ddb__clock_thread_idle(s->clock);
    return NULL;
}

/* Until the kernel says the sleeper's thread sleeps (blocked in the clock's wait), so
 * that the set that follows wakes a sleeper rather than finding a token set before the
 * wait began. */
static void wait_until_asleep(sleeper *s)
{
    while (atomic_load(&s->tid) == 0)
        sched_yield();
    ck_assert_msg(dl_check_wait_thread_sleeps(atomic_load(&s->tid), 10000),
                  "the sleeper never slept");
}

START_TEST(system_sleep_cancelled_promptly)
{
    ddb_cancel *k = ddb_cancel_new();
    sleeper s = { .clock = ddb_clock_system(), .ms = 60000, .cancel = k };
    pthread_t th;
    pthread_create(&th, NULL, sleep_main, &s);
    wait_until_asleep(&s);
    ddb_cancel_set(k);
    pthread_join(th, NULL);
    ck_assert_int_eq(s.rc, DDB_ECANCELED);
    ck_assert_int_lt(s.real_ms_taken, 5000);
    /* Waiting for the cancel alone. */
    ddb_cancel *k2 = ddb_cancel_new();
    sleeper s2 = { .clock = ddb_clock_system(), .ms = -1, .cancel = k2 };
    pthread_create(&th, NULL, sleep_main, &s2);
    wait_until_asleep(&s2);
    ddb_cancel_set(k2);
    pthread_join(th, NULL);
    ck_assert_int_eq(s2.rc, DDB_ECANCELED);
    ddb_cancel_unref(k);
    ddb_cancel_unref(k2);
}
END_TEST

/* ---- fake clock */

START_TEST(fake_reads_and_advances)
{
    ddb_clock *c = ddb_fake_clock_new(1700000000000);
    ck_assert(ddb_clock_is_fake(c));
    ck_assert_int_eq(ddb_clock_mono_ns(c), 0);
    ck_assert_int_eq(ddb_clock_wall_ms(c), 1700000000000);
    ck_assert_int_eq(ddb_fake_clock_advance(c, 1500), 0);
    ck_assert_int_eq(ddb_clock_mono_ns(c), 1500 * 1000000LL);
    ck_assert_int_eq(ddb_clock_wall_ms(c), 1700000001500);
    ck_assert_int_eq(ddb_fake_clock_advance(c, -1), DDB_EINVAL);
    ck_assert_int_eq(ddb_fake_clock_advance(c, 0), 0);
    ck_assert_int_eq(ddb_clock_wall_ms(c), 1700000001500);
    /* A sleep that is due at once does not block. */
    ck_assert_int_eq(ddb_clock_sleep(c, 0, NULL), 0);
    ck_assert_int_eq(ddb__clock_wait_until(c, 5, NULL), 0);
    ddb_clock *r = ddb_clock_ref(c);
    ddb_clock_unref(r);
    ck_assert_int_eq(ddb_clock_mono_ns(c), 1500 * 1000000LL); /* still alive */
    ddb_clock_unref(c);
    ddb_clock_unref(NULL);
}
END_TEST

START_TEST(fake_advance_wakes_due_waits)
{
    ddb_clock *c = ddb_fake_clock_new(0);
    sleeper s[3] = { { .clock = c, .ms = 100, .idle_after = true },
                     { .clock = c, .ms = 200, .idle_after = true },
                     { .clock = c, .ms = 300, .idle_after = true } };
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, sleep_main, &s[i]);
    ck_assert_int_eq(ddb_fake_clock_wait_for_waiters(c, 3, 10000), 0);
    ck_assert_int_eq(ddb_fake_clock_waiters(c), 3);
    ck_assert_int_eq(ddb_fake_clock_advance(c, 99), 0);
    ck_assert_int_eq(ddb_fake_clock_settle(c, 10000), 0);
    ck_assert_int_eq(ddb_fake_clock_waiters(c), 3);
    ck_assert_int_eq(atomic_load(&s[0].done), 0);
    ck_assert_int_eq(ddb_fake_clock_advance(c, 151), 0); /* now 250 */
    ck_assert_int_eq(ddb_fake_clock_settle(c, 10000), 0);
    ck_assert_int_eq(atomic_load(&s[0].done), 1);
    ck_assert_int_eq(atomic_load(&s[1].done), 1);
    ck_assert_int_eq(atomic_load(&s[2].done), 0);
    ck_assert_int_eq(ddb_fake_clock_waiters(c), 1);
    ck_assert_int_eq(ddb_fake_clock_advance(c, 50), 0);
    ck_assert_int_eq(ddb_fake_clock_settle(c, 10000), 0);
    ck_assert_int_eq(atomic_load(&s[2].done), 1);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(s[i].rc, 0);
    }
    ck_assert_int_eq(ddb_fake_clock_waiters(c), 0);
    ddb_clock_unref(c);
}
END_TEST

START_TEST(fake_wait_for_waiters_times_out)
{
    ddb_clock *c = ddb_fake_clock_new(0);
    int64_t t0 = dl_check_mono_ms();
    ck_assert_int_eq(ddb_fake_clock_wait_for_waiters(c, 1, 30), DDB_ETIMEDOUT);
    ck_assert_int_ge(dl_check_mono_ms() - t0, 29);
    ck_assert_int_eq(ddb_fake_clock_wait_for_waiters(c, 0, 0), 0);
    ck_assert_int_eq(ddb_fake_clock_settle(c, 0), 0); /* nothing released */
    ddb_clock_unref(c);
}
END_TEST

START_TEST(fake_wait_cancelled_promptly)
{
    ddb_clock *c = ddb_fake_clock_new(0);
    ddb_cancel *k = ddb_cancel_new();
    sleeper s = { .clock = c, .ms = 1000000, .cancel = k };
    pthread_t th;
    pthread_create(&th, NULL, sleep_main, &s);
    ck_assert_int_eq(ddb_fake_clock_wait_for_waiters(c, 1, 10000), 0);
    ddb_cancel_set(k);
    pthread_join(th, NULL);
    ck_assert_int_eq(s.rc, DDB_ECANCELED);
    ck_assert_int_eq(ddb_fake_clock_waiters(c), 0);
    /* Not released by an advance: nothing for settle to wait for. */
    ck_assert_int_eq(ddb_fake_clock_settle(c, 0), 0);
    ddb_cancel_unref(k);
    ddb_clock_unref(c);
}
END_TEST

/* A periodic worker: waits `period` on the fake clock, then does some work that takes
 * real time, and waits again; `rounds` times. */
typedef struct worker {
    ddb_clock *clock;
    int64_t period_ms;
    int rounds;
    atomic_int work_done;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool hold;        /* block after waking until released */
    bool go;
    ddb_cancel *set_after_wake; /* set this token after waking (work that wakes others) */
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < w->rounds; i++) {
        if (ddb_clock_sleep(w->clock, w->period_ms, NULL) != 0)
            break;
        if (w->hold) {
            pthread_mutex_lock(&w->mu);
            while (!w->go)
                pthread_cond_wait(&w->cv, &w->mu);
            w->go = false;
            pthread_mutex_unlock(&w->mu);
        }
        struct timespec work = { 0, 20 * 1000000 }; /* the work itself takes real time */
        nanosleep(&work, NULL);
        if (w->set_after_wake)
            ddb_cancel_set(w->set_after_wake);
        atomic_fetch_add(&w->work_done, 1);
    }
    ddb__clock_thread_idle(w->clock);
    return NULL;
}

START_TEST(settle_waits_for_released_work)
{
    ddb_clock *c = ddb_fake_clock_new(0);
    worker w = { .clock = c, .period_ms = 1000, .rounds = 3 };
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    pthread_t th;
    pthread_create(&th, NULL, worker_main, &w);
    for (int round = 1; round <= 3; round++) {
        ck_assert_int_eq(ddb_fake_clock_wait_for_waiters(c, 1, 10000), 0);
        ck_assert_int_eq(atomic_load(&w.work_done), round - 1);
        ck_assert_int_eq(ddb_fake_clock_advance(c, 1000), 0);
        ck_assert_int_eq(ddb_fake_clock_settle(c, 10000), 0);
        /* The work the advance released is done, and the worker waits again (or, after
         * the last round, has gone idle). */
        ck_assert_int_eq(atomic_load(&w.work_done), round);
    }
    pthread_join(th, NULL);
    ddb_clock_unref(c);
}
END_TEST

START_TEST(settle_times_out_while_work_runs)
{
    ddb_clock *c = ddb_fake_clock_new(0);
    worker w = { .clock = c, .period_ms = 10, .rounds = 1, .hold = true };
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    pthread_t th;
    pthread_create(&th, NULL, worker_main, &w);
    ck_assert_int_eq(ddb_fake_clock_wait_for_waiters(c, 1, 10000), 0);
    ck_assert_int_eq(ddb_fake_clock_advance(c, 10), 0);
    ck_assert_int_eq(ddb_fake_clock_settle(c, 50), DDB_ETIMEDOUT);
    ck_assert_int_eq(atomic_load(&w.work_done), 0);
    pthread_mutex_lock(&w.mu);
    w.go = true;
    pthread_cond_signal(&w.cv);
    pthread_mutex_unlock(&w.mu);
    ck_assert_int_eq(ddb_fake_clock_settle(c, 10000), 0);
    ck_assert_int_eq(atomic_load(&w.work_done), 1);
    pthread_join(th, NULL);
    ddb_clock_unref(c);
}
END_TEST

/* B waits on the fake clock for a cancel only; A, released by the advance, sets that
 * cancel. Settle covers B's work too. */
typedef struct canceled_worker {
    ddb_clock *clock;
    ddb_cancel *cancel;
    atomic_int work_done;
} canceled_worker;

static void *canceled_worker_main(void *arg)
{
    canceled_worker *b = arg;
    if (ddb_clock_sleep(b->clock, -1, b->cancel) == DDB_ECANCELED) {
        struct timespec work = { 0, 30 * 1000000 };
        nanosleep(&work, NULL);
        atomic_fetch_add(&b->work_done, 1);
    }
    ddb__clock_thread_idle(b->clock);
    return NULL;
}

START_TEST(settle_follows_cancels_set_by_released_work)
{
    ddb_clock *c = ddb_fake_clock_new(0);
    ddb_cancel *k = ddb_cancel_new();
    canceled_worker b = { .clock = c, .cancel = k };
    worker a = { .clock = c, .period_ms = 100, .rounds = 1, .set_after_wake = k };
    pthread_mutex_init(&a.mu, NULL);
    pthread_cond_init(&a.cv, NULL);
    pthread_t ta, tb;
    pthread_create(&tb, NULL, canceled_worker_main, &b);
    pthread_create(&ta, NULL, worker_main, &a);
    ck_assert_int_eq(ddb_fake_clock_wait_for_waiters(c, 2, 10000), 0);
    ck_assert_int_eq(ddb_fake_clock_advance(c, 100), 0);
    ck_assert_int_eq(ddb_fake_clock_settle(c, 10000), 0);
    ck_assert_int_eq(atomic_load(&a.work_done), 1);
    ck_assert_int_eq(atomic_load(&b.work_done), 1);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ddb_cancel_unref(k);
    ddb_clock_unref(c);
}
END_TEST

START_TEST(settle_follows_cancel_after_timers)
{
    ddb_clock *c = ddb_fake_clock_new(0);
    ddb_cancel *k = ddb_cancel_new();
    ck_assert_int_eq(ddb_cancel_after(k, c, 500), 0);
    canceled_worker b = { .clock = c, .cancel = k };
    pthread_t tb;
    pthread_create(&tb, NULL, canceled_worker_main, &b);
    ck_assert_int_eq(ddb_fake_clock_wait_for_waiters(c, 1, 10000), 0);
    ck_assert_int_eq(ddb_fake_clock_advance(c, 499), 0);
    ck_assert(!ddb_cancel_is_set(k));
    ck_assert_int_eq(ddb_fake_clock_advance(c, 1), 0);
    ck_assert(ddb_cancel_is_set(k)); /* fired inside the advance */
    ck_assert_int_eq(ddb_fake_clock_settle(c, 10000), 0);
    ck_assert_int_eq(atomic_load(&b.work_done), 1);
    pthread_join(tb, NULL);
    ddb_cancel_unref(k);
    ddb_clock_unref(c);
}
END_TEST

START_TEST(thread_idle_only_counts_released_threads)
{
    ddb_clock *c = ddb_fake_clock_new(0);
    ddb__clock_thread_idle(c); /* never released: no effect */
    ddb__clock_thread_idle(ddb_clock_system());
    ddb__clock_thread_idle(NULL);
    ck_assert_int_eq(ddb_fake_clock_settle(c, 0), 0);
    ddb_clock_unref(c);
}
END_TEST

/* ---- custom clocks: here a clock that follows a fake one, as a clock following a fake
 * server's would. */

typedef struct follow {
    ddb_clock *inner;
    atomic_int freed;
    atomic_int waits;
    ddb_cancel *freed_event; /* set when the clock frees its argument */
} follow;

static void follow_now(void *arg, int64_t *mono_ns, int64_t *wall_ms)
{
    follow *f = arg;
    *mono_ns = ddb_clock_mono_ns(f->inner);
    *wall_ms = ddb_clock_wall_ms(f->inner);
}

static int follow_wait(void *arg, int64_t deadline_mono_ns, ddb_cancel *cancel)
{
    follow *f = arg;
    atomic_fetch_add(&f->waits, 1);
    return ddb__clock_wait_until(f->inner, deadline_mono_ns, cancel);
}

static void follow_free(void *arg)
{
    follow *f = arg;
    ddb_cancel *ev = f->freed_event; /* f may be gone once the event is set */
    atomic_store(&f->freed, 1);
    ddb_cancel_set(ev);
    ddb_cancel_unref(ev); /* the clock's own reference */
}

START_TEST(custom_clock)
{
    ddb_clock_ops bad = { .now_fn = follow_now };
    ck_assert_ptr_null(ddb_clock_new_custom(&bad, NULL));
    ck_assert_ptr_null(ddb_clock_new_custom(NULL, NULL));
    ddb_cancel *freed = ddb_cancel_new();
    follow f = { .inner = ddb_fake_clock_new(42000), .freed_event = ddb_cancel_ref(freed) };
    ddb_clock_ops ops = { follow_now, follow_wait, follow_free };
    ddb_clock *c = ddb_clock_new_custom(&ops, &f);
    ck_assert_ptr_nonnull(c);
    ck_assert(!ddb_clock_is_fake(c));
    ck_assert_int_eq(ddb_clock_wall_ms(c), 42000);
    ck_assert_int_eq(ddb_fake_clock_advance(c, 1), DDB_EINVAL);

    sleeper s = { .clock = c, .ms = 250 };
    pthread_t th;
    pthread_create(&th, NULL, sleep_main, &s);
    ck_assert_int_eq(ddb_fake_clock_wait_for_waiters(f.inner, 1, 10000), 0);
    ddb_fake_clock_advance(f.inner, 250);
    pthread_join(th, NULL);
    ck_assert_int_eq(s.rc, 0);
    ck_assert_int_ge(atomic_load(&f.waits), 1);

    /* A timer on a custom clock runs on the clock's timer thread. */
    ddb_cancel *k = ddb_cancel_new();
    ck_assert_int_eq(ddb_cancel_after(k, c, 1000), 0);
    ck_assert_int_eq(ddb_fake_clock_wait_for_waiters(f.inner, 1, 10000), 0);
    ck_assert(!ddb_cancel_is_set(k));
    ddb_fake_clock_advance(f.inner, 1000);
    ck_assert_int_eq(ddb_cancel_wait(k, 10000), 0);
    ck_assert_int_eq(atomic_load(&f.freed), 0);
    /* The token keeps the clock alive; the last of the two references to go (ours or
     * the timer thread's, through the token) frees it. */
    ddb_cancel_unref(k);
    ddb_clock_unref(c);
    ck_assert_int_eq(ddb_cancel_wait(freed, 10000), 0);
    ck_assert_int_eq(atomic_load(&f.freed), 1);
    ddb_cancel_unref(freed);
    ddb_clock_unref(f.inner);
}
END_TEST

START_TEST(custom_clock_timer_dropped_with_token)
{
    follow f = { .inner = ddb_fake_clock_new(0) };
    ddb_clock_ops ops = { follow_now, follow_wait, NULL };
    ddb_clock *c = ddb_clock_new_custom(&ops, &f);
    ddb_cancel *k = ddb_cancel_new();
    ck_assert_int_eq(ddb_cancel_after(k, c, 1000000), 0);
    ck_assert_int_eq(ddb_fake_clock_wait_for_waiters(f.inner, 1, 10000), 0);
    ddb_cancel_unref(k); /* the timer goes with it; its thread ends */
    ddb_clock_unref(c);  /* joins the timer thread */
    ck_assert_int_eq(ddb_fake_clock_waiters(f.inner), 0);
    ddb_clock_unref(f.inner);
}
END_TEST

START_TEST(system_cancel_after)
{
    ddb_cancel *k = ddb_cancel_new();
    int64_t t0 = dl_check_mono_ms();
    ck_assert_int_eq(ddb_cancel_after(k, NULL, 40), 0);
    ck_assert(!ddb_cancel_is_set(k));
    ck_assert_int_eq(ddb_cancel_wait(k, 10000), 0);
    ck_assert_int_ge(dl_check_mono_ms() - t0, 39);
    ddb_cancel_unref(k);
    /* An earlier timer added after a later one fires first. */
    ddb_cancel *late = ddb_cancel_new(), *early = ddb_cancel_new();
    ck_assert_int_eq(ddb_cancel_after(late, ddb_clock_system(), 60000), 0);
    ck_assert_int_eq(ddb_cancel_after(early, ddb_clock_system(), 20), 0);
    ck_assert_int_eq(ddb_cancel_wait(early, 10000), 0);
    ck_assert(!ddb_cancel_is_set(late));
    ddb_cancel_unref(late);
    ddb_cancel_unref(early);
}
END_TEST

static Suite *clock_suite(void)
{
    Suite *s = suite_create("clock");
    TCase *tc = tcase_create("system");
    tcase_add_test(tc, system_reads);
    tcase_add_test(tc, system_sleep_times);
    tcase_add_test(tc, system_sleep_cancelled_promptly);
    tcase_add_test(tc, system_cancel_after);
    suite_add_tcase(s, tc);
    tc = tcase_create("fake");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, fake_reads_and_advances);
    tcase_add_test(tc, fake_advance_wakes_due_waits);
    tcase_add_test(tc, fake_wait_for_waiters_times_out);
    tcase_add_test(tc, fake_wait_cancelled_promptly);
    tcase_add_test(tc, settle_waits_for_released_work);
    tcase_add_test(tc, settle_times_out_while_work_runs);
    tcase_add_test(tc, settle_follows_cancels_set_by_released_work);
    tcase_add_test(tc, settle_follows_cancel_after_timers);
    tcase_add_test(tc, thread_idle_only_counts_released_threads);
    suite_add_tcase(s, tc);
    tc = tcase_create("custom");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, custom_clock);
    tcase_add_test(tc, custom_clock_timer_dropped_with_token);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(clock_suite());
}
