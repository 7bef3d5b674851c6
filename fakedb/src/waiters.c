/* waiters.c: the connections suspended until something is due -- a delay fault's end,
 * a time on fakedb's clock (a clock long poll), a new request (the console's long poll),
 * or their deadline -- and their resumption. server.c suspends them and its ticker
 * resumes them; a move of the clock (control.c) answers the clock long polls at once. It
 * calls no other file of this layer. */
#include "server.h"

#include <microhttpd.h>
#include <stdlib.h>

void fakedb__waiters_resume(fakedb__waiter *list)
{
    while (list) {
        fakedb__waiter *n = list->next;
        MHD_resume_connection(list->conn);
        free(list);
        list = n;
    }
}

fakedb__waiter *fakedb__waiters_take_due(fakedb *db, bool all, int64_t *next_deadline)
{
    int64_t mono = fakedb__mono_ms(), now = fakedb__now_ms(&db->clock);
    fakedb__waiter *due = NULL;
    for (fakedb__waiter **pp = &db->waiters; *pp;) {
        fakedb__waiter *w = *pp;
        bool answered = w->requests && __atomic_load_n(&db->recent.seq, __ATOMIC_RELAXED) > w->after_seq;
        if (all || answered || now >= w->until_ms || mono >= w->deadline_mono_ms) {
            *pp = w->next;
            *w->resumed = true;
            w->next = due;
            due = w;
        } else {
            if (next_deadline && w->deadline_mono_ms < *next_deadline)
                *next_deadline = w->deadline_mono_ms;
            pp = &w->next;
        }
    }
    return due;
}

void fakedb__wake_waiters(fakedb *db)
{
    pthread_mutex_lock(&db->wait_lock);
    fakedb__waiter *due = fakedb__waiters_take_due(db, false, NULL);
    pthread_cond_broadcast(&db->wait_cond);
    pthread_mutex_unlock(&db->wait_lock);
    fakedb__waiters_resume(due);
}
