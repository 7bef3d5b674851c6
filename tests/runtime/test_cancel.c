/* test_cancel.c: ddb_cancel: set once, fd readable once set, real-time waits, callbacks
 * (on the setting thread; on the dispatcher after a set from a signal handler), off
 * waiting for a running callback, linked tokens, and cancel-after on a fake clock. */
#include <check.h>

#include "dl_check.h"
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "internal.h"

static bool fd_readable(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

START_TEST(set_once_and_fd)
{
    ddb_cancel *c = ddb_cancel_new();
    ck_assert(!ddb_cancel_is_set(c));
    int fd = ddb_cancel_fd(c);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ddb_cancel_fd(c), fd);
    ck_assert(!fd_readable(fd));
    ddb_cancel_set(c);
    ck_assert(ddb_cancel_is_set(c));
    ck_assert(fd_readable(fd));
    ddb_cancel_set(c); /* again: nothing changes */
    ck_assert(fd_readable(fd));
    ddb_cancel_unref(c);

    /* An fd asked for after the set is readable too. */
    c = ddb_cancel_new();
    ddb_cancel_set(c);
    ck_assert(fd_readable(ddb_cancel_fd(c)));
    ddb_cancel_unref(c);

    ck_assert(!ddb_cancel_is_set(NULL));
    ck_assert_int_eq(ddb_cancel_fd(NULL), -1);
    ddb_cancel_set(NULL);
    ddb_cancel_unref(NULL);
    ck_assert_ptr_null(ddb_cancel_ref(NULL));
    ck_assert_int_eq(ddb_cancel_wait(NULL, 0), DDB_EINVAL);
    ck_assert_int_lt(ddb_cancel_on(NULL, NULL, NULL), 0);
}
END_TEST

static void *set_later(void *arg)
{
    ddb_cancel_set(arg);
    return NULL;
}

START_TEST(wait_real_time)
{
    ddb_cancel *c = ddb_cancel_new();
    int64_t t0 = dl_check_mono_ms();
    ck_assert_int_eq(ddb_cancel_wait(c, 30), DDB_ETIMEDOUT);
    ck_assert_int_ge(dl_check_mono_ms() - t0, 29);
    ck_assert_int_eq(ddb_cancel_wait(c, 0), DDB_ETIMEDOUT);
    pthread_t th;
    pthread_create(&th, NULL, set_later, c);
    t0 = dl_check_mono_ms();
    ck_assert_int_eq(ddb_cancel_wait(c, -1), 0);
    ck_assert_int_lt(dl_check_mono_ms() - t0, dl_check_bound_ms(5000));
    pthread_join(th, NULL);
    ck_assert_int_eq(ddb_cancel_wait(c, 0), 0);
    ddb_cancel_unref(c);
}
END_TEST

typedef struct rec {
    atomic_int calls;
    int order[8];
    atomic_int n;
    pthread_t thread;
} rec;

typedef struct cb_arg {
    rec *r;
    int tag;
} cb_arg;

static void record(void *arg)
{
    cb_arg *a = arg;
    int i = atomic_fetch_add(&a->r->n, 1);
    if (i < 8)
        a->r->order[i] = a->tag;
    a->r->thread = pthread_self();
    atomic_fetch_add(&a->r->calls, 1);
}

START_TEST(callbacks_run_once_in_order_on_setter)
{
    ddb_cancel *c = ddb_cancel_new();
    rec r = { 0 };
    cb_arg a1 = { &r, 1 }, a2 = { &r, 2 }, a3 = { &r, 3 };
    long id1 = ddb_cancel_on(c, record, &a1);
    long id2 = ddb_cancel_on(c, record, &a2);
    long id3 = ddb_cancel_on(c, record, &a3);
    ck_assert_int_gt(id1, 0);
    ck_assert_int_ne(id1, id2);
    ck_assert_int_ne(id2, id3);
    ddb_cancel_off(c, id2);
    ck_assert_int_eq(atomic_load(&r.calls), 0);
    ddb_cancel_set(c);
    ck_assert_int_eq(atomic_load(&r.calls), 2);
    ck_assert_int_eq(r.order[0], 1);
    ck_assert_int_eq(r.order[1], 3);
    ck_assert(pthread_equal(r.thread, pthread_self()));
    ddb_cancel_set(c);
    ck_assert_int_eq(atomic_load(&r.calls), 2);
    /* Registered after the set: called at once. */
    cb_arg a4 = { &r, 4 };
    long id4 = ddb_cancel_on(c, record, &a4);
    ck_assert_int_gt(id4, 0);
    ck_assert_int_eq(atomic_load(&r.calls), 3);
    ddb_cancel_off(c, id4);
    ddb_cancel_off(c, id1);
    ddb_cancel_off(c, 0);
    ddb_cancel_off(c, 12345);
    ddb_cancel_unref(c);
}
END_TEST

/* off from another thread waits for the running callback. */
typedef struct slow {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool started, go, finished;
    ddb_cancel *c;
    long id;
    bool finished_when_off_returned;
    atomic_int off_returned;
    atomic_long off_tid;
} slow;

static void slow_cb(void *arg)
{
    slow *s = arg;
    pthread_mutex_lock(&s->mu);
    s->started = true;
    pthread_cond_broadcast(&s->cv);
    while (!s->go)
        pthread_cond_wait(&s->cv, &s->mu);
    s->finished = true;
    pthread_mutex_unlock(&s->mu);
}

static void *setter(void *arg)
{
    slow *s = arg;
    ddb_cancel_set(s->c);
    return NULL;
}

static void *offer(void *arg)
{
    slow *s = arg;
    atomic_store(&s->off_tid, (long)syscall(SYS_gettid));
    ddb_cancel_off(s->c, s->id);
    pthread_mutex_lock(&s->mu);
    s->finished_when_off_returned = s->finished;
    pthread_mutex_unlock(&s->mu);
    atomic_store(&s->off_returned, 1);
    return NULL;
}

START_TEST(off_waits_for_running_callback)
{
    slow s = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
    s.c = ddb_cancel_new();
    s.id = ddb_cancel_on(s.c, slow_cb, &s);
    pthread_t ts, to;
    pthread_create(&ts, NULL, setter, &s);
    pthread_mutex_lock(&s.mu);
    while (!s.started)
        pthread_cond_wait(&s.cv, &s.mu);
    pthread_mutex_unlock(&s.mu);
    pthread_create(&to, NULL, offer, &s);
    /* The callback cannot finish before we let it: off must still be blocked. Wait
     * until the kernel says the thread calling off sleeps (blocked inside it), then
     * look: it has not returned. */
    ck_assert_int_eq(ddb_cancel_wait(s.c, 0), 0);
    while (atomic_load(&s.off_tid) == 0)
        sched_yield();
    ck_assert_msg(dl_check_wait_thread_sleeps(atomic_load(&s.off_tid), 10000),
                  "the thread in ddb_cancel_off never blocked");
    ck_assert_int_eq(atomic_load(&s.off_returned), 0);
    pthread_mutex_lock(&s.mu);
    s.go = true;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    pthread_join(to, NULL);
    pthread_join(ts, NULL);
    ck_assert(s.finished_when_off_returned);
    ddb_cancel_unref(s.c);
}
END_TEST

typedef struct self_off {
    ddb_cancel *c;
    long id;
    atomic_int calls;
} self_off;

static void off_self(void *arg)
{
    self_off *s = arg;
    ddb_cancel_off(s->c, s->id); /* from within: must not deadlock */
    atomic_fetch_add(&s->calls, 1);
}

START_TEST(off_from_within_callback)
{
    self_off s = { .c = ddb_cancel_new() };
    s.id = ddb_cancel_on(s.c, off_self, &s);
    ddb_cancel_set(s.c);
    ck_assert_int_eq(atomic_load(&s.calls), 1);
    ddb_cancel_unref(s.c);
}
END_TEST

static void unref_token(void *arg)
{
    ddb_cancel_unref(arg);
}

START_TEST(callback_may_drop_last_reference)
{
    ddb_cancel *c = ddb_cancel_new();
    ddb_cancel_on(c, unref_token, c); /* the callback owns the reference */
    ddb_cancel_set(c);                /* the set holds its own until it returns */

    /* Same through a link: the child's callback drops the child's last reference. */
    ddb_cancel *parent = ddb_cancel_new();
    ddb_cancel *child = ddb_cancel_new_linked(parent);
    ddb_cancel_on(child, unref_token, child);
    ddb_cancel_set(parent);
    ddb_cancel_unref(parent);
}
END_TEST

START_TEST(linked_tokens)
{
    ddb_cancel *root = ddb_cancel_new();
    ddb_cancel *mid = ddb_cancel_new_linked(root);
    ddb_cancel *leaf = ddb_cancel_new_linked(mid);
    ddb_cancel *other = ddb_cancel_new();
    ddb_cancel *either = ddb_cancel_new_linked2(other, mid);
    ddb_cancel *none = ddb_cancel_new_linked(NULL);
    int leaf_fd = ddb_cancel_fd(leaf);

    ddb_cancel_set(leaf); /* a child never sets its parent */
    ck_assert(!ddb_cancel_is_set(mid));
    ck_assert(!ddb_cancel_is_set(root));
    ddb_cancel_unref(leaf);
    leaf = ddb_cancel_new_linked(mid);
    leaf_fd = ddb_cancel_fd(leaf);
    ck_assert(!fd_readable(leaf_fd));

    ddb_cancel_set(root);
    ck_assert(ddb_cancel_is_set(mid));
    ck_assert(ddb_cancel_is_set(leaf));
    ck_assert(fd_readable(leaf_fd));
    ck_assert(ddb_cancel_is_set(either));
    ck_assert(!ddb_cancel_is_set(other));
    ck_assert(!ddb_cancel_is_set(none));

    /* Linked to a token that is set already: set at birth. */
    ddb_cancel *late = ddb_cancel_new_linked(root);
    ck_assert(ddb_cancel_is_set(late));

    /* Parent released before the children: the children keep what they need. */
    ddb_cancel_unref(root);
    ddb_cancel_unref(mid);
    ddb_cancel_unref(leaf);
    ddb_cancel_unref(late);
    ddb_cancel_unref(either);
    ddb_cancel_unref(other);
    ddb_cancel_unref(none);
}
END_TEST

START_TEST(child_freed_before_parent_set)
{
    ddb_cancel *parent = ddb_cancel_new();
    for (int i = 0; i < 100; i++) {
        ddb_cancel *child = ddb_cancel_new_linked(parent);
        ddb_cancel_unref(child);
    }
    ddb_cancel *kept = ddb_cancel_new_linked(parent);
    ddb_cancel_set(parent); /* no freed child is touched */
    ck_assert(ddb_cancel_is_set(kept));
    ddb_cancel_unref(kept);
    ddb_cancel_unref(parent);
}
END_TEST

/* Children created and freed on other threads while the parent is set. A child linked
 * to a parent already set is set from its creation; the counts say what each thread saw
 * (asserted on the test's thread, after the join). */
typedef struct churn {
    ddb_cancel *parent;
    atomic_int after_set;   /* children created once the parent was set */
    atomic_int unset_after; /* ... of which were not set: must stay 0 */
} churn;

static void *churn_children(void *arg)
{
    churn *c = arg;
    for (int i = 0; i < 300; i++) {
        bool parent_set = ddb_cancel_is_set(c->parent);
        ddb_cancel *child = ddb_cancel_new_linked(c->parent);
        if (parent_set) {
            atomic_fetch_add(&c->after_set, 1);
            if (!ddb_cancel_is_set(child))
                atomic_fetch_add(&c->unset_after, 1);
        }
        ddb_cancel_unref(child);
    }
    return NULL;
}

START_TEST(link_unlink_races_with_set)
{
    for (int round = 0; round < 5; round++) {
        churn c = {.parent = ddb_cancel_new()};
        pthread_t th[3];
        for (int i = 0; i < 3; i++)
            pthread_create(&th[i], NULL, churn_children, &c);
        ddb_cancel_set(c.parent);
        for (int i = 0; i < 3; i++)
            pthread_join(th[i], NULL);
        ck_assert_int_eq(atomic_load(&c.unset_after), 0);
        /* and a child linked now, after every thread is done, is set too */
        ddb_cancel *late = ddb_cancel_new_linked(c.parent);
        ck_assert(ddb_cancel_is_set(late));
        ddb_cancel_unref(late);
        ddb_cancel_unref(c.parent);
    }
}
END_TEST

typedef struct race {
    ddb_cancel *c;
    atomic_int registered;
    atomic_int called;
} race;

static void count_call(void *arg)
{
    race *r = arg;
    atomic_fetch_add(&r->called, 1);
}

static void *register_many(void *arg)
{
    race *r = arg;
    for (int i = 0; i < 200; i++) {
        if (ddb_cancel_on(r->c, count_call, r) > 0)
            atomic_fetch_add(&r->registered, 1);
    }
    return NULL;
}

START_TEST(every_registration_runs_exactly_once)
{
    race r = { .c = ddb_cancel_new() };
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, register_many, &r);
    ddb_cancel_set(r.c);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(atomic_load(&r.registered), 800);
    ck_assert_int_eq(atomic_load(&r.called), 800);
    ddb_cancel_unref(r.c);
}
END_TEST

/* ---- set from a signal handler */

static ddb_cancel *g_sig_token;

static void on_signal(int sig)
{
    (void)sig;
    ddb_cancel_set_from_signal(g_sig_token);
}

typedef struct sig_rec {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool ran;
    pthread_t thread;
} sig_rec;

static void sig_cb(void *arg)
{
    sig_rec *s = arg;
    pthread_mutex_lock(&s->mu);
    s->ran = true;
    s->thread = pthread_self();
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

START_TEST(set_from_signal_runs_callbacks_on_dispatcher)
{
    g_sig_token = ddb_cancel_new();
    ddb_cancel *child = ddb_cancel_new_linked(g_sig_token);
    sig_rec s = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
    ck_assert_int_gt(ddb_cancel_on(g_sig_token, sig_cb, &s), 0);
    struct sigaction sa = { .sa_handler = on_signal }, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old);
    raise(SIGUSR1);
    ck_assert(ddb_cancel_is_set(g_sig_token)); /* the flag is set in the handler */
    ck_assert(fd_readable(ddb_cancel_fd(g_sig_token)));
    pthread_mutex_lock(&s.mu);
    while (!s.ran)
        pthread_cond_wait(&s.cv, &s.mu);
    pthread_mutex_unlock(&s.mu);
    ck_assert(!pthread_equal(s.thread, pthread_self()));
    ck_assert_int_eq(ddb_cancel_wait(child, 10000), 0); /* linked: set by the dispatcher */
    sigaction(SIGUSR1, &old, NULL);
    ddb_cancel_unref(child);
    ddb_cancel_unref(g_sig_token);
}
END_TEST

START_TEST(set_from_signal_without_callbacks)
{
    ddb_cancel *c = ddb_cancel_new();
    ddb_cancel_set_from_signal(c);
    ck_assert(ddb_cancel_is_set(c));
    ck_assert_int_eq(ddb_cancel_wait(c, 0), 0);
    ddb_cancel_set_from_signal(c);
    ddb_cancel_set_from_signal(NULL);
    ddb_cancel_unref(c);
}
END_TEST

/* ---- cancel after, on a fake clock */

START_TEST(cancel_after_fake_clock)
{
    ddb_clock *clk = ddb_fake_clock_new(0);
    ddb_cancel *c = ddb_cancel_new();
    ck_assert_int_eq(ddb_cancel_after(c, clk, 1000), 0);
    ck_assert_int_eq(ddb_fake_clock_advance(clk, 999), 0);
    ck_assert(!ddb_cancel_is_set(c));
    ck_assert_int_eq(ddb_fake_clock_advance(clk, 1), 0);
    ck_assert(ddb_cancel_is_set(c));
    ddb_cancel_unref(c);

    /* Zero or negative: set at once. */
    c = ddb_cancel_new();
    ck_assert_int_eq(ddb_cancel_after(c, clk, 0), 0);
    ck_assert(ddb_cancel_is_set(c));
    ck_assert_int_eq(ddb_cancel_after(c, clk, 10), 0); /* already set: nothing to do */
    ddb_cancel_unref(c);

    /* Two timers on one token: the first fires, the second is dropped. */
    c = ddb_cancel_new();
    ck_assert_int_eq(ddb_cancel_after(c, clk, 100), 0);
    ck_assert_int_eq(ddb_cancel_after(c, clk, 200), 0);
    ddb_fake_clock_advance(clk, 150);
    ck_assert(ddb_cancel_is_set(c));
    ddb_fake_clock_advance(clk, 100);
    ddb_cancel_unref(c);

    /* A token freed before its timer: the advance does not touch it. */
    c = ddb_cancel_new();
    ck_assert_int_eq(ddb_cancel_after(c, clk, 100), 0);
    ddb_cancel_unref(c);
    ck_assert_int_eq(ddb_fake_clock_advance(clk, 1000), 0);

    /* A linked child of a timed token. */
    ddb_cancel *stop = ddb_cancel_new();
    ddb_cancel *wait = ddb_cancel_new_linked(stop);
    ck_assert_int_eq(ddb_cancel_after(wait, clk, 40000), 0);
    ddb_fake_clock_advance(clk, 40000);
    ck_assert(ddb_cancel_is_set(wait));
    ck_assert(!ddb_cancel_is_set(stop));
    ddb_cancel_unref(wait);
    ddb_cancel_unref(stop);
    ck_assert_int_eq(ddb_cancel_after(NULL, clk, 1), DDB_EINVAL);
    ddb_clock_unref(clk);
}
END_TEST

static Suite *cancel_suite(void)
{
    Suite *s = suite_create("cancel");
    TCase *tc = tcase_create("basics");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, set_once_and_fd);
    tcase_add_test(tc, wait_real_time);
    tcase_add_test(tc, callbacks_run_once_in_order_on_setter);
    tcase_add_test(tc, off_waits_for_running_callback);
    tcase_add_test(tc, off_from_within_callback);
    tcase_add_test(tc, callback_may_drop_last_reference);
    tcase_add_test(tc, every_registration_runs_exactly_once);
    suite_add_tcase(s, tc);
    tc = tcase_create("linked");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, linked_tokens);
    tcase_add_test(tc, child_freed_before_parent_set);
    tcase_add_test(tc, link_unlink_races_with_set);
    suite_add_tcase(s, tc);
    tc = tcase_create("signal");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, set_from_signal_runs_callbacks_on_dispatcher);
    tcase_add_test(tc, set_from_signal_without_callbacks);
    suite_add_tcase(s, tc);
    tc = tcase_create("after");
    tcase_add_test(tc, cancel_after_fake_clock);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(cancel_suite());
}
