/* test_log.c: the default stderr sink: logfmt and JSON lines with their quoting and
 * escaping, level names, whole lines from many threads at once, and the time stamps of
 * ddb_log_to_stderr_with on a clock of the caller's. */
#include <check.h>

#include "dl_check.h"
#include <fcntl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Points stderr at a temporary file while a test logs; returns what was written. */
static int g_saved = -1;
static char g_path[64];

static void capture_begin(void)
{
    snprintf(g_path, sizeof g_path, "/tmp/ddb-log-XXXXXX");
    int fd = mkstemp(g_path);
    ck_assert_int_ge(fd, 0);
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_APPEND);
    g_saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
}

static char *capture_end(void)
{
    dup2(g_saved, STDERR_FILENO);
    close(g_saved);
    FILE *f = fopen(g_path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    size_t got = fread(p, 1, (size_t)n, f);
    p[got] = '\0';
    fclose(f);
    unlink(g_path);
    return p;
}

START_TEST(level_names)
{
    ck_assert_str_eq(ddb_log_level_name(DDB_LOG_TRACE), "trace");
    ck_assert_str_eq(ddb_log_level_name(DDB_LOG_DEBUG), "debug");
    ck_assert_str_eq(ddb_log_level_name(DDB_LOG_INFO), "info");
    ck_assert_str_eq(ddb_log_level_name(DDB_LOG_WARN), "warn");
    ck_assert_str_eq(ddb_log_level_name(DDB_LOG_ERROR), "error");
    ck_assert_str_eq(ddb_log_level_name(DDB_LOG_OFF), "off");
    ck_assert_str_eq(ddb_log_level_name(0), "unknown");
    ck_assert_str_eq(ddb_log_level_name(99), "unknown");
}
END_TEST

START_TEST(logfmt_line)
{
    ddb_log_field f[] = { { "lock", "nightly-report" }, { "table", "my table" },
                          { "empty", "" }, { "odd key=", "a\"b\\c\nd" }, { "null", NULL } };
    capture_begin();
    ddb_log_to_stderr(NULL, DDB_LOG_WARN, 42, "dynalock.lock", "lease lost", f, 5);
    ddb_log_to_stderr(NULL, DDB_LOG_INFO, 0, NULL, "plain", NULL, 0);
    char *out = capture_end();
    char *nl = strchr(out, '\n');
    ck_assert_ptr_nonnull(nl);
    *nl = '\0';
    ck_assert_msg(strncmp(out, "ts=", 3) == 0, "%s", out);
    /* ts=YYYY-MM-DDTHH:MM:SS.mmmZ */
    ck_assert_int_eq(out[13], 'T');
    ck_assert_int_eq(out[26], 'Z');
    ck_assert_str_eq(out + 27,
                     " level=warn event=42 category=dynalock.lock msg=\"lease lost\""
                     " lock=nightly-report table=\"my table\" empty=\"\""
                     " odd_key_=\"a\\\"b\\\\c\\nd\" null=\"\"");
    char *second = nl + 1;
    ck_assert_ptr_nonnull(strstr(second, " level=info msg=plain\n"));
    ck_assert_ptr_null(strstr(second, "event="));
    ck_assert_ptr_null(strstr(second, "category="));
    ck_assert_ptr_null(strchr(strchr(second, '\n') + 1, '\n'));
    free(out);
}
END_TEST

/* ts= is the given clock's wall time, read at each line: a fake clock's, moved between
 * two lines, in both formats; without a clock (NULL options), the system's time. */
START_TEST(clocked_lines)
{
    ddb_clock *clock = ddb_fake_clock_new(INT64_C(1767225600000) + 1234);
    ck_assert_ptr_nonnull(clock);
    ddb_log_stderr_options text = { .format = DDB_LOG_LOGFMT, .clock = clock };
    ddb_log_stderr_options json = { .format = DDB_LOG_JSON, .clock = clock };
    capture_begin();
    ddb_log_to_stderr_with(&text, DDB_LOG_INFO, 0, NULL, "one", NULL, 0);
    ck_assert_int_eq(ddb_fake_clock_advance(clock, 86400000 + 61001), 0);
    ddb_log_to_stderr_with(&json, DDB_LOG_WARN, 0, "c", "two", NULL, 0);
    ddb_log_to_stderr_with(NULL, DDB_LOG_INFO, 0, NULL, "three", NULL, 0);
    char *out = capture_end();
    const char *want = "ts=2026-01-01T00:00:01.234Z level=info msg=one\n"
                       "{\"ts\":\"2026-01-02T00:01:02.235Z\",\"level\":\"warn\","
                       "\"category\":\"c\",\"msg\":\"two\"}\n";
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);
    /* The third line, on the system's clock: not the fake clock's day. */
    const char *third = out + strlen(want);
    ck_assert_msg(strncmp(third, "ts=", 3) == 0 && strstr(third, " level=info msg=three\n"),
                  "%s", third);
    ck_assert_msg(strncmp(third, "ts=2026-01-02T00:01", 19) != 0, "%s", third);
    free(out);
    ddb_clock_unref(clock);
}
END_TEST

START_TEST(json_line)
{
    ddb_log_format fmt = DDB_LOG_JSON;
    ddb_log_field f[] = { { "lock", "a\"b" }, { "ctl", "\x01\t\xff" }, { "n", NULL } };
    capture_begin();
    ddb_log_to_stderr(&fmt, DDB_LOG_ERROR, 45, "dynalock.lock", "line1\nline2 \"q\"", f, 3);
    char *out = capture_end();
    size_t len = strlen(out);
    ck_assert_int_gt(len, 0);
    ck_assert_int_eq(out[len - 1], '\n');
    ck_assert_ptr_eq(strchr(out, '\n'), out + len - 1); /* one line */
    json_object *o = json_tokener_parse(out);
    ck_assert_ptr_nonnull(o);
    json_object *v;
    ck_assert(json_object_object_get_ex(o, "level", &v));
    ck_assert_str_eq(json_object_get_string(v), "error");
    ck_assert(json_object_object_get_ex(o, "event", &v));
    ck_assert_int_eq(json_object_get_int(v), 45);
    ck_assert(json_object_object_get_ex(o, "category", &v));
    ck_assert_str_eq(json_object_get_string(v), "dynalock.lock");
    ck_assert(json_object_object_get_ex(o, "msg", &v));
    ck_assert_str_eq(json_object_get_string(v), "line1\nline2 \"q\"");
    ck_assert(json_object_object_get_ex(o, "lock", &v));
    ck_assert_str_eq(json_object_get_string(v), "a\"b");
    ck_assert(json_object_object_get_ex(o, "ctl", &v));
    ck_assert_str_eq(json_object_get_string(v), "\x01\t\xef\xbf\xbd"); /* bad UTF-8 replaced */
    ck_assert(json_object_object_get_ex(o, "n", &v));
    ck_assert_ptr_null(v);
    ck_assert(json_object_object_get_ex(o, "ts", &v));
    ck_assert_int_eq(json_object_get_string_len(v), 24);
    json_object_put(o);
    free(out);
}
END_TEST

typedef struct spam {
    int id;
    ddb_log_format fmt;
} spam;

static void *spam_main(void *arg)
{
    spam *s = arg;
    char big[6000];
    memset(big, 'a' + s->id, sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char idbuf[8];
    snprintf(idbuf, sizeof idbuf, "%d", s->id);
    ddb_log_field f[] = { { "thread", idbuf }, { "payload", big } };
    for (int i = 0; i < 100; i++)
        ddb_log_to_stderr(&s->fmt, DDB_LOG_INFO, 0, "test", "spam", f, 2);
    return NULL;
}

START_TEST(concurrent_lines_do_not_interleave)
{
    spam s[8];
    pthread_t th[8];
    capture_begin();
    for (int i = 0; i < 8; i++) {
        s[i] = (spam){ i, DDB_LOG_JSON };
        pthread_create(&th[i], NULL, spam_main, &s[i]);
    }
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    char *out = capture_end();
    int lines = 0;
    char *save = NULL;
    for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_object *o = json_tokener_parse(line);
        ck_assert_msg(o != NULL, "line %d is not one JSON object", lines);
        json_object *t, *p;
        ck_assert(json_object_object_get_ex(o, "thread", &t));
        ck_assert(json_object_object_get_ex(o, "payload", &p));
        int id = atoi(json_object_get_string(t));
        const char *payload = json_object_get_string(p);
        ck_assert_int_eq(json_object_get_string_len(p), 5999);
        ck_assert(id >= 0 && id < 8);
        char want[5999];
        memset(want, 'a' + id, sizeof want);
        ck_assert(memcmp(payload, want, sizeof want) == 0);
        json_object_put(o);
        lines++;
    }
    ck_assert_int_eq(lines, 800);
    free(out);
}
END_TEST

static Suite *log_suite(void)
{
    Suite *s = suite_create("log");
    TCase *tc = tcase_create("stderr");
    tcase_add_test(tc, level_names);
    tcase_add_test(tc, logfmt_line);
    tcase_add_test(tc, json_line);
    tcase_add_test(tc, clocked_lines);
    tcase_add_test(tc, concurrent_lines_do_not_interleave);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(log_suite());
}
