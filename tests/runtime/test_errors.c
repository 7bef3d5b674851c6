/* test_errors.c: error codes (fixed numbers, names, texts), ddb_error filling, and the
 * mapping from DynamoDB's error types to codes. */
#include <check.h>

#include "dl_check.h"
#include <string.h>

#include "internal.h"

START_TEST(codes_are_fixed)
{
    /* Codes are never renumbered. */
    ck_assert_int_eq(DDB_EINVAL, -1);
    ck_assert_int_eq(DDB_ECANCELED, -3);
    ck_assert_int_eq(DDB_ECONDITION, -7);
    ck_assert_int_eq(DDB_ETHROTTLED, -10);
    ck_assert_int_eq(DDB_EACCESS, -16);
    ck_assert_int_eq(DDB_ELOST, -19);
    ck_assert_int_eq(DDB_EINDOUBT, -20);
}
END_TEST

START_TEST(names_and_texts)
{
    for (int code = 0; code >= DDB_EINDOUBT; code--) {
        const char *name = ddb_error_name(code);
        const char *text = ddb_error_string(code);
        ck_assert_ptr_nonnull(name);
        ck_assert_ptr_nonnull(text);
        ck_assert_msg(strncmp(name, "DDB_", 4) == 0, "%d: %s", code, name);
        ck_assert_str_ne(name, "DDB_EUNKNOWN");
        ck_assert_str_ne(text, "unknown error");
        for (int other = 0; other > code; other--) {
            ck_assert_str_ne(ddb_error_name(other), name);
            ck_assert_str_ne(ddb_error_string(other), text);
        }
    }
    ck_assert_str_eq(ddb_error_name(DDB_EINVAL), "DDB_EINVAL");
    ck_assert_str_eq(ddb_error_name(DDB_ETXCANCELED), "DDB_ETXCANCELED");
    ck_assert_str_eq(ddb_error_string(DDB_EINVAL), "invalid argument");
    ck_assert_str_eq(ddb_error_string(-1000), "unknown error");
    ck_assert_str_eq(ddb_error_name(5), "DDB_EUNKNOWN");
}
END_TEST

START_TEST(fail_and_clear)
{
    ddb_error err;
    memset(&err, 0x5a, sizeof err);
    ddb_error_clear(&err);
    ck_assert_int_eq(err.code, 0);
    ck_assert_str_eq(err.message, "");
    ck_assert_str_eq(err.aws_type, "");
    ck_assert_int_eq(err.http_status, 0);
    ck_assert_int_eq(err.retries, 0);
    ddb_error_clear(NULL);

    err.retries = 2;
    err.http_status = 400;
    ck_assert_int_eq(ddb__fail(&err, DDB_ESTATE, "the lock %s on table %s is held", "a", "T"),
                     DDB_ESTATE);
    ck_assert_int_eq(err.code, DDB_ESTATE);
    ck_assert_str_eq(err.message, "the lock a on table T is held");
    ck_assert_int_eq(err.retries, 2); /* left as it was */
    ck_assert_int_eq(err.http_status, 400);
    ck_assert_int_eq(ddb__fail(NULL, DDB_EINVAL, "x"), DDB_EINVAL);

    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ddb__fail(&err, DDB_EINVAL, "%s", big);
    ck_assert_uint_eq(strlen(err.message), DDB_ERROR_MESSAGE_MAX - 1);
}
END_TEST

/* The public ddb_error_set: code and message, every other field cleared, the code back. */
START_TEST(error_set)
{
    ddb_error err;
    memset(&err, 0x5a, sizeof err);
    ck_assert_int_eq(ddb_error_set(&err, DDB_EWORK, "the job %s failed: %d", "sweep", 3),
                     DDB_EWORK);
    ck_assert_int_eq(err.code, DDB_EWORK);
    ck_assert_str_eq(err.message, "the job sweep failed: 3");
    ck_assert_str_eq(err.aws_type, "");
    ck_assert_str_eq(err.request_id, "");
    ck_assert_int_eq(err.http_status, 0);
    ck_assert_int_eq(err.retries, 0);
    /* No message: the code's text. */
    ck_assert_int_eq(ddb_error_set(&err, DDB_EINVAL, NULL), DDB_EINVAL);
    ck_assert_str_eq(err.message, ddb_error_string(DDB_EINVAL));
    ck_assert_int_eq(ddb_error_set(NULL, DDB_ENOMEM, "x"), DDB_ENOMEM);
    /* A message too long is cut, never overflows. */
    char big[2000];
    memset(big, 'y', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ddb_error_set(&err, DDB_EINVAL, "%s", big);
    ck_assert_uint_eq(strlen(err.message), DDB_ERROR_MESSAGE_MAX - 1);
}
END_TEST

START_TEST(aws_types)
{
    struct { const char *type; int status; int code; } cases[] = {
        { "ConditionalCheckFailedException", 400, DDB_ECONDITION },
        { "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException", 400, DDB_ECONDITION },
        { "TransactionCanceledException", 400, DDB_ETXCANCELED },
        { "ResourceNotFoundException", 400, DDB_ENOTFOUND },
        { "ResourceInUseException", 400, DDB_EINUSE },
        { "ValidationException", 400, DDB_EVALIDATION },
        { "SerializationException", 400, DDB_EVALIDATION },
        { "ProvisionedThroughputExceededException", 400, DDB_ETHROTTLED },
        { "ThrottlingException", 400, DDB_ETHROTTLED },
        { "RequestLimitExceeded", 400, DDB_ETHROTTLED },
        { "LimitExceededException", 400, DDB_ETHROTTLED },
        { "AccessDeniedException", 400, DDB_EACCESS },
        { "UnrecognizedClientException", 400, DDB_EACCESS },
        { "InvalidSignatureException", 400, DDB_EACCESS },
        { "MissingAuthenticationTokenException", 403, DDB_EACCESS },
        { "IncompleteSignatureException", 400, DDB_EACCESS },
        { "ExpiredTokenException", 400, DDB_EACCESS },
        { "ThrottlingException:http://internal.amazon.com/coral/", 400, DDB_ETHROTTLED },
        { "InternalServerError", 500, DDB_ESERVICE },
        { "SomethingNew", 400, DDB_ESERVICE },
        { NULL, 403, DDB_EACCESS },
        { NULL, 429, DDB_ETHROTTLED },
        { NULL, 0, DDB_ENETWORK },
        { "", 503, DDB_ESERVICE },
        { "ConditionalCheckFailedExceptionX", 400, DDB_ESERVICE },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(ddb__code_for_aws_type(cases[i].type, cases[i].status) == cases[i].code,
                      "%s/%d", cases[i].type ? cases[i].type : "(null)", cases[i].status);
}
END_TEST

static Suite *errors_suite(void)
{
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("errors");
    tcase_add_test(tc, codes_are_fixed);
    tcase_add_test(tc, names_and_texts);
    tcase_add_test(tc, fail_and_clear);
    tcase_add_test(tc, error_set);
    tcase_add_test(tc, aws_types);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return dl_check_run(errors_suite());
}
