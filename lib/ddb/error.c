/* error.c: the library's error codes, their names and texts, and the mapping from
 * DynamoDB's error types to them. Codes are never renumbered; texts are static. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

typedef struct code_info {
    int code;
    const char *name;
    const char *text;
} code_info;

static const code_info k_codes[] = {
    { DDB_OK, "DDB_OK", "success" },
    { DDB_EINVAL, "DDB_EINVAL", "invalid argument" },
    { DDB_ENOMEM, "DDB_ENOMEM", "out of memory" },
    { DDB_ECANCELED, "DDB_ECANCELED", "canceled" },
    { DDB_ETIMEDOUT, "DDB_ETIMEDOUT", "timed out" },
    { DDB_ENETWORK, "DDB_ENETWORK", "network failure" },
    { DDB_ESERVICE, "DDB_ESERVICE", "service error" },
    { DDB_ECONDITION, "DDB_ECONDITION", "conditional check failed" },
    { DDB_ETXCANCELED, "DDB_ETXCANCELED", "transaction canceled" },
    { DDB_ENOTFOUND, "DDB_ENOTFOUND", "resource not found" },
    { DDB_ETHROTTLED, "DDB_ETHROTTLED", "throttled" },
    { DDB_ECREDENTIALS, "DDB_ECREDENTIALS", "no credentials" },
    { DDB_EPROTOCOL, "DDB_EPROTOCOL", "protocol error" },
    { DDB_ESTATE, "DDB_ESTATE", "invalid state for this call" },
    { DDB_EVALIDATION, "DDB_EVALIDATION", "validation error" },
    { DDB_EIO, "DDB_EIO", "i/o error" },
    { DDB_EACCESS, "DDB_EACCESS", "access denied" },
    { DDB_EINUSE, "DDB_EINUSE", "resource in use" },
    { DDB_EWORK, "DDB_EWORK", "the leader's work failed" },
    { DDB_ELOST, "DDB_ELOST", "lease lost" },
    { DDB_EINDOUBT, "DDB_EINDOUBT", "outcome in doubt: the write may or may not have been applied" },
};

static const code_info *find_code(int code)
{
    for (size_t i = 0; i < sizeof k_codes / sizeof k_codes[0]; i++)
        if (k_codes[i].code == code)
            return &k_codes[i];
    return NULL;
}

const char *ddb_error_string(int code)
{
    const code_info *ci = find_code(code);
    return ci ? ci->text : "unknown error";
}

const char *ddb_error_name(int code)
{
    const code_info *ci = find_code(code);
    return ci ? ci->name : "DDB_EUNKNOWN";
}

void ddb_error_clear(ddb_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

/* The message of ddb__fail and ddb_error_set. */
__attribute__((format(printf, 3, 0)))
static void set_message(ddb_error *err, int code, const char *fmt, va_list ap)
{
    err->code = code;
    if (fmt)
        vsnprintf(err->message, sizeof err->message, fmt, ap);
    else
        snprintf(err->message, sizeof err->message, "%s", ddb_error_string(code));
}

int ddb__fail(ddb_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    va_list ap;
    va_start(ap, fmt);
    set_message(err, code, fmt, ap);
    va_end(ap);
    return code;
}

int ddb_error_set(ddb_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    memset(err, 0, sizeof *err);
    va_list ap;
    va_start(ap, fmt);
    set_message(err, code, fmt, ap);
    va_end(ap);
    return code;
}

typedef struct type_map {
    const char *type;
    int code;
} type_map;

static const type_map k_types[] = {
    { "ConditionalCheckFailedException", DDB_ECONDITION },
    { "TransactionCanceledException", DDB_ETXCANCELED },
    { "ResourceNotFoundException", DDB_ENOTFOUND },
    { "TableNotFoundException", DDB_ENOTFOUND },
    { "ResourceInUseException", DDB_EINUSE },
    { "TableAlreadyExistsException", DDB_EINUSE },
    { "TableInUseException", DDB_EINUSE },
    { "ValidationException", DDB_EVALIDATION },
    { "SerializationException", DDB_EVALIDATION },
    { "ItemCollectionSizeLimitExceededException", DDB_EVALIDATION },
    { "ProvisionedThroughputExceededException", DDB_ETHROTTLED },
    { "ThrottlingException", DDB_ETHROTTLED },
    { "Throttling", DDB_ETHROTTLED },
    { "ThrottledException", DDB_ETHROTTLED },
    { "RequestThrottledException", DDB_ETHROTTLED },
    { "RequestThrottled", DDB_ETHROTTLED },
    { "TooManyRequestsException", DDB_ETHROTTLED },
    { "RequestLimitExceeded", DDB_ETHROTTLED },
    { "BandwidthLimitExceeded", DDB_ETHROTTLED },
    { "LimitExceededException", DDB_ETHROTTLED },
    { "SlowDown", DDB_ETHROTTLED },
    { "EC2ThrottledException", DDB_ETHROTTLED },
    { "TransactionInProgressException", DDB_ETHROTTLED },
    { "ReplicatedWriteConflictException", DDB_ESERVICE },
    { "AccessDeniedException", DDB_EACCESS },
    { "UnrecognizedClientException", DDB_EACCESS },
    { "InvalidSignatureException", DDB_EACCESS },
    { "IncompleteSignatureException", DDB_EACCESS },
    { "MissingAuthenticationTokenException", DDB_EACCESS },
    { "MissingAuthenticationToken", DDB_EACCESS },
    { "ExpiredTokenException", DDB_EACCESS },
    { "InvalidClientTokenId", DDB_EACCESS },
    { "SignatureDoesNotMatch", DDB_EACCESS },
    { "NotAuthorized", DDB_EACCESS },
};

int ddb__code_for_aws_type(const char *aws_type, int http_status)
{
    if (aws_type && *aws_type) {
        /* "com.amazonaws.dynamodb.v20120810#ValidationException" or "Type:detail". */
        const char *hash = strrchr(aws_type, '#');
        const char *t = hash ? hash + 1 : aws_type;
        size_t len = strcspn(t, ":");
        for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
            if (strlen(k_types[i].type) == len && memcmp(k_types[i].type, t, len) == 0)
                return k_types[i].code;
    }
    if (http_status == 0)
        return DDB_ENETWORK;
    if (http_status == 403 || http_status == 401)
        return DDB_EACCESS;
    if (http_status == 429)
        return DDB_ETHROTTLED;
    return DDB_ESERVICE;
}
