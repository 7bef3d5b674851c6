/* test_recipes.c: the recipes of docs/recipes.md that the lock layer points to instead
 * of shipping them -- a queue over a sparse index and a hi/lo sequence -- against the
 * fake server (or DynamoDB Local). */
#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_fixture.h"
#include "hilo.h"
#include "queue.h"

static char jobs[80];

static ddb_table *open_jobs(ddb_client *c)
{
    ddb_error err;
    ddb_table *t = ddb_table_open(c, jobs, "pk", "sk", &err);
    ck_assert_ptr_nonnull(t);
    return t;
}

static void setup(void)
{
    cx_setup();
    snprintf(jobs, sizeof jobs, "Jobs_%s", CX.shop);
    ddb_client *c = dl_fixture_client(&CX.fx, NULL);
    ddb_index_def gsi = recipe_queue_index();
    ddb_error err;
    ck_assert_msg(ddb_client_create_table(c, jobs, &(ddb_key_schema){.pk = "pk", .sk = "sk"},
                                   &(ddb_create_table_options){.gsi = &gsi, .n_gsi = 1,
                                                               .wait_active = true}, NULL,
                                   &err) == 0,
                  "create: %s", err.message);
    ddb_client_free(c);
}

static void teardown(void)
{
    if (CX.external) {
        ddb_client *c = dl_fixture_client(&CX.fx, NULL);
        ddb_client_delete_table(c, jobs, NULL, NULL);
        ddb_client_free(c);
    }
    cx_teardown();
}

/* Messages come out in the order they went in, each claimed once; a claimed message is
 * out of the index; done deletes it; an empty queue gives none. */
START_TEST(test_queue_order_and_claims)
{
    ddb_client *c = dl_fixture_client(&CX.fx, NULL);
    ddb_table *t = open_jobs(c);
    ddb_error err;
    const char *ids[] = {"m1", "m2", "m3"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(recipe_queue_push(t, "emails", ids[i], ids[i], &err), 0);
        ddb_fake_clock_advance(CX.fx.clock, 1);
    }
    ck_assert_int_eq(recipe_queue_push(t, "other", "x1", "x1", &err), 0);
    for (int i = 0; i < 3; i++) {
        char *id, *body;
        ck_assert_int_eq(recipe_queue_claim(t, "emails", i % 2 ? "w2" : "w1", &id, &body, &err),
                         0);
        ck_assert_ptr_nonnull(id);
        ck_assert_str_eq(id, ids[i]);
        ck_assert_str_eq(body, ids[i]);
        /* Only the worker that claimed it may finish it. */
        ck_assert_int_eq(recipe_queue_done(t, id, i % 2 ? "w1" : "w2", &err), DDB_ECONDITION);
        ck_assert_int_eq(recipe_queue_done(t, id, i % 2 ? "w2" : "w1", &err), 0);
        free(id);
        free(body);
    }
    char *id, *body;
    ck_assert_int_eq(recipe_queue_claim(t, "emails", "w1", &id, &body, &err), 0);
    ck_assert_ptr_null(id);
    ck_assert_int_eq(recipe_queue_claim(t, "other", "w1", &id, &body, &err), 0);
    ck_assert_str_eq(id, "x1");
    free(id);
    free(body);
    ddb_table_close(t);
    ddb_client_free(c);
}
END_TEST

/* Two workers (two clients) racing over the same queue never claim one message twice. */
typedef struct worker {
    ddb_client *c;
    ddb_table *t;
    const char *name;
    int claimed;
    char seen[64][8];
} worker;

static void *work_queue(void *arg)
{
    worker *w = arg;
    for (;;) {
        char *id = NULL, *body = NULL;
        ddb_error err;
        if (recipe_queue_claim(w->t, "q", w->name, &id, &body, &err) != 0 || !id)
            break;
        snprintf(w->seen[w->claimed++], 8, "%s", id);
        recipe_queue_done(w->t, id, w->name, &err);
        free(id);
        free(body);
    }
    return NULL;
}

START_TEST(test_queue_two_workers_never_share)
{
    worker w[2] = {{.name = "w1"}, {.name = "w2"}};
    for (int i = 0; i < 2; i++) {
        w[i].c = dl_fixture_client(&CX.fx, NULL);
        w[i].t = open_jobs(w[i].c);
    }
    ddb_error err;
    for (int i = 0; i < 30; i++) {
        char id[8];
        snprintf(id, sizeof id, "m%02d", i);
        ck_assert_int_eq(recipe_queue_push(w[0].t, "q", id, "b", &err), 0);
    }
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, work_queue, &w[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(w[0].claimed + w[1].claimed, 30);
    for (int a = 0; a < w[0].claimed; a++)
        for (int b = 0; b < w[1].claimed; b++)
            ck_assert_str_ne(w[0].seen[a], w[1].seen[b]);
    for (int i = 0; i < 2; i++) {
        ddb_table_close(w[i].t);
        ddb_client_free(w[i].c);
    }
}
END_TEST

/* Hi/lo: ids are unique across processes and rising in each; a block costs one request. */
START_TEST(test_hilo_unique_and_one_request_per_block)
{
    ddb_client *c1 = dl_fixture_client(&CX.fx, NULL), *c2 = dl_fixture_client(&CX.fx, NULL);
    ddb_table *t1 = open_jobs(c1), *t2 = open_jobs(c2);
    recipe_hilo s1, s2;
    recipe_hilo_init(&s1, t1, "orders", 10);
    recipe_hilo_init(&s2, t2, "orders", 10);
    long before = cx_fakedb() ? cx_requests("UpdateItem") : 0;
    int64_t seen[50];
    int64_t last1 = 0, last2 = 0;
    for (int i = 0; i < 50; i++) {
        recipe_hilo *s = (i % 3) ? &s1 : &s2;
        ck_assert_int_eq(recipe_hilo_next(s, &seen[i], NULL), 0);
        ck_assert_int_ge(seen[i], 1);
        int64_t *last = s == &s1 ? &last1 : &last2;
        ck_assert_int_gt(seen[i], *last);
        *last = seen[i];
        for (int k = 0; k < i; k++)
            ck_assert_int_ne(seen[k], seen[i]);
    }
    if (cx_fakedb()) /* s1 took 34 ids (4 blocks), s2 16 (2 blocks) */
        ck_assert_int_eq(cx_requests("UpdateItem") - before, 6);
    recipe_hilo_cleanup(&s1);
    recipe_hilo_cleanup(&s2);
    ddb_table_close(t1);
    ddb_table_close(t2);
    ddb_client_free(c1);
    ddb_client_free(c2);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("recipes");
    TCase *tc = tcase_create("recipes");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_queue_order_and_claims);
    tcase_add_test(tc, test_queue_two_workers_never_share);
    tcase_add_test(tc, test_hilo_unique_and_one_request_per_block);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(suite());
}
