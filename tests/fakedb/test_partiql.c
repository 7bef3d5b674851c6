/* test_partiql.c: fakedb's PartiQL over HTTP: ExecuteStatement's SELECT (projections,
 * every WHERE form, Query or Scan, an index, ORDER BY, Limit and NextToken), INSERT,
 * UPDATE and DELETE with their conditions and RETURNING, `?` parameters and literals,
 * BatchExecuteStatement's and ExecuteTransaction's shapes and errors, and malformed
 * statements (a ValidationException, never a crash or a 500). */
#include "fdbt.h"

#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ExecuteStatement of stmt, with the members of `extra` (a JSON object text) added. */
static fdbt_resp es(const char *stmt, const char *extra)
{
    json_object *b = extra ? json_tokener_parse(extra) : json_object_new_object();
    ck_assert_ptr_nonnull(b);
    json_object_object_add(b, "Statement", json_object_new_string(stmt));
    fdbt_resp r = fdbt_call("ExecuteStatement", json_object_to_json_string(b));
    json_object_put(b);
    return r;
}

static void es_ok(const char *stmt)
{
    fdbt_resp r = es(stmt, NULL);
    ck_assert_msg(r.status == 200, "%s: %s", stmt, r.body);
    fdbt_free(&r);
}

static void es_fails(const char *stmt, const char *extra, const char *type, const char *msg)
{
    fdbt_resp r = es(stmt, extra);
    fdbt_expect_answer(&r, 400, type, msg, stmt);
}

static size_t count_items(const char *stmt)
{
    fdbt_resp r = es(stmt, NULL);
    ck_assert_msg(r.status == 200, "%s: %s", stmt, r.body);
    json_object *items = fdbt_get(r.json, "Items");
    ck_assert_ptr_nonnull(items);
    size_t n = json_object_array_length(items);
    fdbt_free(&r);
    return n;
}

static void setup(void)
{
    fdbt_start(NULL);
    fdbt_resp r = fdbt_call("CreateTable",
        "{\"TableName\":\"Music\",\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"sk\",\"KeyType\":\"RANGE\"}],"
        "\"AttributeDefinitions\":[{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},{\"AttributeName\":\"sk\",\"AttributeType\":\"N\"},"
        "{\"AttributeName\":\"g\",\"AttributeType\":\"S\"}],\"BillingMode\":\"PAY_PER_REQUEST\","
        "\"GlobalSecondaryIndexes\":[{\"IndexName\":\"byG\",\"KeySchema\":[{\"AttributeName\":\"g\",\"KeyType\":\"HASH\"}],"
        "\"Projection\":{\"ProjectionType\":\"ALL\"}}]}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    fdbt_free(&r);
    es_ok("INSERT INTO \"Music\" VALUE {'pk': 'a', 'sk': 1, 'n': 10, 'g': 'G', 'tags': <<'x', 'y'>>, 'l': [1, 'two', {'k': 'deep'}], 'm': {'k': 'v', 'in': {'z': true}}, 'nil': null}");
    es_ok("INSERT INTO \"Music\" VALUE {'pk': 'a', 'sk': 2, 'n': 20, 'name': 'bob''s'}");
    es_ok("insert into Music value {'pk': 'a', 'sk': 3, 'n': 30, 'g': 'G'}");
    es_ok("INSERT INTO \"Music\" VALUE {'pk': 'b', 'sk': 1, 'n': -1.5e2}");
}

static void teardown(void)
{
    fdbt_stop();
}

START_TEST(select_forms)
{
    ck_assert_uint_eq(count_items("SELECT * FROM \"Music\""), 4);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE pk = 'a'"), 3);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE 'a' = pk AND sk > 1"), 2);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE pk = 'a' AND sk BETWEEN 2 AND 3"), 2);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE pk = 'a' AND sk <= 2 AND n <> 10"), 1);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE pk IN ['a', 'b'] AND sk >= 1"), 4);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE pk IN ('b')"), 1);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE pk = 'a' OR n < 0"), 4);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE NOT pk = 'a'"), 1);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE begins_with(name, 'bob')"), 1);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE contains(tags, 'y') AND attribute_exists(g)"), 1);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE attribute_not_exists(g)"), 2);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE g IS MISSING"), 2);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE g IS NOT MISSING"), 2);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE nil IS NULL"), 1);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE m.\"in\".z = true AND l[2].k = 'deep'"), 1);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE m['k'] = 'v' AND size(l) = 3"), 1);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE n = -150"), 1);
    ck_assert_uint_eq(count_items("SELECT * FROM \"Music\".\"byG\" WHERE g = 'G'"), 2);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE pk = 'zz'"), 0);
    ck_assert_uint_eq(count_items("SELECT * FROM Music -- a comment\n WHERE /* another */ pk = 'b';"), 1);

    /* a projection answers each path under its last name, as DynamoDB does */
    fdbt_resp r = es("SELECT n, l[1], m.k, nope FROM Music WHERE pk = 'a' AND sk = 1", NULL);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(fdbt_str(&r, "Items.0.n.N"), "10");
    json_object *l1 = NULL;
    ck_assert(json_object_object_get_ex(json_object_array_get_idx(fdbt_get(r.json, "Items"), 0), "l[1]", &l1));
    ck_assert_str_eq(json_object_get_string(fdbt_get(l1, "S")), "two");
    ck_assert_str_eq(fdbt_str(&r, "Items.0.k.S"), "v");
    ck_assert_int_eq(json_object_object_length(json_object_array_get_idx(fdbt_get(r.json, "Items"), 0)), 3);
    fdbt_free(&r);

    /* ORDER BY the sort key of a query */
    r = es("SELECT sk FROM Music WHERE pk = 'a' ORDER BY sk DESC", NULL);
    ck_assert_str_eq(fdbt_str(&r, "Items.0.sk.N"), "3");
    ck_assert_str_eq(fdbt_str(&r, "Items.2.sk.N"), "1");
    fdbt_free(&r);
    es_fails("SELECT * FROM Music ORDER BY sk", NULL, "ValidationException", "non-optional hash key condition");
    es_fails("SELECT * FROM Nope", NULL, "ResourceNotFoundException", "non-existent table");
    es_fails("SELECT * FROM Music.nope", NULL, "ValidationException", "does not have the specified index: nope");
    es_fails("SELECT * FROM Music WHERE pk = 1", NULL, "ValidationException", "Key attribute's data type should match");
    es_fails("SELECT * FROM Music WHERE frob(n)", NULL, "ValidationException", "Unrecognized function: frob");
    es_fails("SELECT * FROM Music.byG WHERE g = 'G'", "{\"ConsistentRead\":true}", "ValidationException", "Consistent reads are not supported");
    r = es("SELECT * FROM Music WHERE pk = 'a'", "{\"ConsistentRead\":true,\"ReturnConsumedCapacity\":\"TOTAL\"}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_ptr_nonnull(fdbt_get(r.json, "ConsumedCapacity"));
    fdbt_free(&r);
}
END_TEST

START_TEST(writes)
{
    es_fails("INSERT INTO Music VALUE {'pk': 'a', 'sk': 1}", NULL, "DuplicateItemException", "Duplicate primary key exists in table");
    es_fails("INSERT INTO Music VALUE {'pk': 'a'}", NULL, "ValidationException", "Key attribute should be present in the item: Key sk");
    es_fails("INSERT INTO Music VALUE {'pk': 'a', 'sk': '1'}", NULL, "ValidationException", "Key sk");
    es_fails("INSERT INTO Music VALUE {'pk': 'q', 'sk': 1} RETURNING ALL OLD *", NULL, "ValidationException", "RETURNING is not supported in INSERT");
    es_fails("INSERT INTO Music VALUE 'x'", NULL, "ValidationException", "wasn't well formed");

    /* UPDATE: SET, arithmetic, functions, REMOVE; the item must exist */
    fdbt_resp r = es("UPDATE Music SET n = n + 5 SET s2 = 'new', tags = set_add(tags, <<'z'>>) REMOVE nil WHERE pk = 'a' AND sk = 1 RETURNING ALL NEW *", NULL);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(fdbt_str(&r, "Items.0.n.N"), "15");
    ck_assert_str_eq(fdbt_str(&r, "Items.0.s2.S"), "new");
    ck_assert_int_eq((int)json_object_array_length(fdbt_get(r.json, "Items.0.tags.SS")), 3);
    ck_assert_ptr_null(fdbt_get(r.json, "Items.0.nil"));
    fdbt_free(&r);
    r = es("UPDATE Music SET l = list_append(l, [4]), tags = set_delete(tags, <<'x'>>) WHERE pk = 'a' AND sk = 1 RETURNING MODIFIED OLD *", NULL);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_int_eq((int)json_object_array_length(fdbt_get(r.json, "Items.0.l.L")), 3);
    fdbt_free(&r);
    r = es("UPDATE Music SET n = 0 WHERE pk = 'a' AND sk = 2", NULL);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_int_eq((int)json_object_array_length(fdbt_get(r.json, "Items")), 0);
    fdbt_free(&r);
    es_fails("UPDATE Music SET n = 1 WHERE pk = 'zz' AND sk = 1", NULL, "ConditionalCheckFailedException", "The conditional request failed");
    es_fails("UPDATE Music SET n = 1 WHERE pk = 'a' AND sk = 2 AND n = 99", NULL, "ConditionalCheckFailedException", NULL);
    r = es("UPDATE Music SET n = 1 WHERE pk = 'a' AND sk = 2 AND n = 99", "{\"ReturnValuesOnConditionCheckFailure\":\"ALL_OLD\"}");
    ck_assert_str_eq(fdbt_str(&r, "Item.n.N"), "0");
    fdbt_free(&r);
    es_fails("UPDATE Music SET n = 1 WHERE pk = 'a'", NULL, "ValidationException", "Where clause does not contain a mandatory equality on all key attributes");
    es_fails("UPDATE Music SET n = 1 WHERE pk = 'a' OR sk = 1", NULL, "ValidationException", "mandatory equality");
    es_fails("UPDATE Music SET pk = 'b' WHERE pk = 'a' AND sk = 1", NULL, "ValidationException", "This attribute is part of the key");
    es_fails("UPDATE Music SET x = set_add(y, <<'a'>>) WHERE pk = 'a' AND sk = 1", NULL, "ValidationException", "set_add must update");
    es_fails("UPDATE Music.byG SET n = 1 WHERE pk = 'a' AND sk = 1", NULL, "ValidationException", "wasn't well formed");

    /* DELETE: a missing item is no error unless WHERE asks more than the key */
    es_ok("DELETE FROM Music WHERE pk = 'zz' AND sk = 1");
    es_fails("DELETE FROM Music WHERE pk = 'zz' AND sk = 1 AND n = 1", NULL, "ConditionalCheckFailedException", NULL);
    es_fails("DELETE FROM Music WHERE pk = 'a' AND sk = 2 AND n = 1", NULL, "ConditionalCheckFailedException", NULL);
    es_fails("DELETE FROM Music WHERE pk = 'a' AND sk = 2 RETURNING ALL NEW *", NULL, "ValidationException",
             "Invalid returning clause: RETURNING ALL NEW *. Only RETURNING ALL OLD * is allowed in DELETE statements.");
    es_fails("UPDATE Music SET n = 1 SET n = 2 WHERE pk = 'a' AND sk = 1", NULL, "ValidationException",
             "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [n], path two: [n]");
    r = es("DELETE FROM Music WHERE pk = 'a' AND sk = 2 RETURNING ALL OLD *", NULL);
    ck_assert_str_eq(fdbt_str(&r, "Items.0.name.S"), "bob's");
    fdbt_free(&r);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE pk = 'a'"), 2);
    es_fails("EXISTS(SELECT * FROM Music WHERE pk = 'a' AND sk = 1)", NULL, "ValidationException", "EXISTS can only be used in ExecuteTransaction");
}
END_TEST

START_TEST(parameters_and_literals)
{
    es_fails("INSERT INTO Music VALUE {'pk': ?, 'sk': ?}", NULL, "ValidationException", "Number of parameters");
    fdbt_resp r = es("INSERT INTO Music VALUE {'pk': ?, 'sk': ?, 'b': ?, 'm': ?, 'e': {}, 'f': false, 'ns': <<1, 2>>}",
                     "{\"Parameters\":[{\"S\":\"p\"},{\"N\":\"7\"},{\"B\":\"AQI=\"},{\"M\":{\"x\":{\"L\":[{\"NULL\":true}]}}}]}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    fdbt_free(&r);
    r = es("SELECT * FROM Music WHERE pk = ? AND sk = ?", "{\"Parameters\":[{\"S\":\"p\"},{\"N\":\"7\"}]}");
    ck_assert_str_eq(fdbt_str(&r, "Items.0.b.B"), "AQI=");
    ck_assert_ptr_nonnull(fdbt_get(r.json, "Items.0.m.M.x.L"));
    ck_assert_int_eq(json_object_get_boolean(fdbt_get(r.json, "Items.0.f.BOOL")), 0);
    ck_assert_int_eq((int)json_object_array_length(fdbt_get(r.json, "Items.0.ns.NS")), 2);
    fdbt_free(&r);
    es_fails("SELECT * FROM Music WHERE pk = ? AND sk = ?", "{\"Parameters\":[{\"S\":\"p\"}]}", "ValidationException",
             "Number of parameters in request and statement don't match.");
    es_fails("SELECT * FROM Music WHERE pk = ?", "{\"Parameters\":[]}", "ValidationException", "at 'parameters'");
    es_fails("SELECT * FROM Music WHERE pk = ?", "{\"Parameters\":[{\"N\":\"x\"}]}", "ValidationException", "number");
    es_fails("INSERT INTO Music VALUE {'pk': 'q', 'sk': 1, 's': <<>>}", NULL, "ValidationException", "may not be empty");
    es_fails("INSERT INTO Music VALUE {'pk': 'q', 'sk': 1, 's': <<1, 'a'>>}", NULL, "ValidationException", "only strings");
    es_fails("INSERT INTO Music VALUE {'pk': 'q', 'sk': 1, 'n': 1e999}", NULL, "ValidationException", "Number overflow");
    es_fails("INSERT INTO Music VALUE {'pk': 'q', 'sk': 1, 'n': MISSING}", NULL, "ValidationException", "MISSING must be compared using IS operator");
}
END_TEST

START_TEST(paging)
{
    char stmt[160];
    for (int i = 0; i < 7; i++) {
        snprintf(stmt, sizeof stmt, "INSERT INTO Music VALUE {'pk': 'page', 'sk': %d}", i);
        es_ok(stmt);
    }
    const char *q = "SELECT sk FROM Music WHERE pk = 'page'";
    char *token = NULL;
    int seen = 0, pages = 0;
    do {
        json_object *extra = json_object_new_object();
        json_object_object_add(extra, "Limit", json_object_new_int(3));
        if (token)
            json_object_object_add(extra, "NextToken", json_object_new_string(token));
        fdbt_resp r = es(q, json_object_to_json_string(extra));
        json_object_put(extra);
        ck_assert_msg(r.status == 200, "%s", r.body);
        json_object *items = fdbt_get(r.json, "Items");
        for (size_t i = 0; i < json_object_array_length(items); i++)
            ck_assert_int_eq(atoi(json_object_get_string(fdbt_get(json_object_array_get_idx(items, i), "sk.N"))), seen++);
        free(token);
        token = fdbt_str(&r, "NextToken") ? strdup(fdbt_str(&r, "NextToken")) : NULL;
        fdbt_free(&r);
        pages++;
    } while (token && pages < 10);
    ck_assert_int_eq(seen, 7);
    ck_assert_int_eq(pages, 3);

    /* a scan pages too; a token belongs to its statement */
    fdbt_resp r = es("SELECT * FROM Music", "{\"Limit\":2}");
    ck_assert_int_eq((int)json_object_array_length(fdbt_get(r.json, "Items")), 2);
    const char *t = fdbt_str(&r, "NextToken");
    ck_assert_ptr_nonnull(t);
    char extra[1024];
    snprintf(extra, sizeof extra, "{\"NextToken\":\"%s\"}", t);
    fdbt_free(&r);
    es_fails("SELECT * FROM Music WHERE n > 0", extra, "ValidationException", "Invalid NextToken");
    r = es("SELECT * FROM Music", extra);
    ck_assert_msg(r.status == 200, "%s", r.body);
    fdbt_free(&r);
    es_fails("SELECT * FROM Music", "{\"NextToken\":\"garbage\"}", "ValidationException", "Invalid NextToken");
    es_fails("SELECT * FROM Music", "{\"Limit\":0}", "ValidationException", "limit");
}
END_TEST

START_TEST(batch)
{
    fdbt_resp r = fdbt_call("BatchExecuteStatement", "{\"Statements\":["
        "{\"Statement\":\"SELECT * FROM Music WHERE pk = 'a' AND sk = 1\"},"
        "{\"Statement\":\"SELECT n FROM Music WHERE pk = ? AND sk = ?\",\"Parameters\":[{\"S\":\"b\"},{\"N\":\"1\"}]},"
        "{\"Statement\":\"SELECT * FROM Music WHERE pk = 'zz' AND sk = 1\"},"
        "{\"Statement\":\"SELECT * FROM Music WHERE pk = 'a'\"},"
        "{\"Statement\":\"SELECT * FROM Nope WHERE pk = 'a' AND sk = 1\"},"
        "{\"Statement\":\"FROB\"}]}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(fdbt_str(&r, "Responses.0.TableName"), "Music");
    ck_assert_str_eq(fdbt_str(&r, "Responses.0.Item.n.N"), "10");
    ck_assert_str_eq(fdbt_str(&r, "Responses.1.Item.n.N"), "-150");
    ck_assert_ptr_null(fdbt_get(r.json, "Responses.1.Item.pk"));
    ck_assert_str_eq(fdbt_str(&r, "Responses.2.TableName"), "Music");
    ck_assert_ptr_null(fdbt_get(r.json, "Responses.2.Item"));
    ck_assert_str_eq(fdbt_str(&r, "Responses.3.Error.Code"), "ValidationError");
    ck_assert_str_eq(fdbt_str(&r, "Responses.3.Error.Message"), "Only single item select is supported");
    ck_assert_str_eq(fdbt_str(&r, "Responses.4.Error.Code"), "ResourceNotFound");
    ck_assert_str_eq(fdbt_str(&r, "Responses.5.Error.Message"), "Invalid operation. Only select, insert, update and delete operations are valid");
    fdbt_free(&r);

    r = fdbt_call("BatchExecuteStatement", "{\"Statements\":["
        "{\"Statement\":\"INSERT INTO Music VALUE {'pk': 'c', 'sk': 1}\"},"
        "{\"Statement\":\"INSERT INTO Music VALUE {'pk': 'a', 'sk': 1}\"},"
        "{\"Statement\":\"UPDATE Music SET n = 1 WHERE pk = 'zz' AND sk = 1\",\"ReturnValuesOnConditionCheckFailure\":\"ALL_OLD\"},"
        "{\"Statement\":\"UPDATE Music SET n = 1 WHERE pk = 'a' AND sk = 1 AND n = 5\",\"ReturnValuesOnConditionCheckFailure\":\"ALL_OLD\"},"
        "{\"Statement\":\"DELETE FROM Music WHERE pk = 'b' AND sk = 1\"}]}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(fdbt_str(&r, "Responses.0.TableName"), "Music");
    ck_assert_ptr_null(fdbt_get(r.json, "Responses.0.Error"));
    ck_assert_str_eq(fdbt_str(&r, "Responses.1.Error.Code"), "DuplicateItem");
    ck_assert_str_eq(fdbt_str(&r, "Responses.1.Error.Message"), "Duplicate primary key exists in table");
    ck_assert_str_eq(fdbt_str(&r, "Responses.2.Error.Code"), "ConditionalCheckFailed");
    ck_assert_ptr_null(fdbt_get(r.json, "Responses.2.Error.Item"));
    ck_assert_str_eq(fdbt_str(&r, "Responses.3.Error.Item.n.N"), "10");
    ck_assert_str_eq(fdbt_str(&r, "Responses.3.TableName"), "Music");
    ck_assert_ptr_null(fdbt_get(r.json, "Responses.4.Error"));
    fdbt_free(&r);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE pk = 'b'"), 0);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE pk = 'c'"), 1);

    r = fdbt_call("BatchExecuteStatement", "{\"Statements\":[{\"Statement\":\"SELECT * FROM Music WHERE pk = 'a' AND sk = 1\"},"
                                           "{\"Statement\":\"DELETE FROM Music WHERE pk = 'a' AND sk = 1\"}]}");
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    ck_assert_str_eq(fdbt_message(&r), "Read and write requests together in the same batch is not supported.");
    fdbt_free(&r);
    r = fdbt_call("BatchExecuteStatement", "{\"Statements\":[]}");
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    fdbt_free(&r);
    r = fdbt_call("BatchExecuteStatement", "{}");
    ck_assert_str_eq(fdbt_message(&r), "1 validation error detected: Value null at 'statements' failed to satisfy constraint: Member must not be null");
    fdbt_free(&r);
    r = fdbt_call("BatchExecuteStatement", "{\"Statements\":{}}");
    ck_assert_str_eq(fdbt_error(&r), "SerializationException");
    fdbt_free(&r);
    char body[4096] = "{\"Statements\":[";
    for (int i = 0; i < 26; i++)
        strcat(body, i ? ",{\"Statement\":\"SELECT * FROM Music WHERE pk = 'a' AND sk = 1\"}" : "{\"Statement\":\"SELECT * FROM Music WHERE pk = 'a' AND sk = 1\"}");
    strcat(body, "]}");
    r = fdbt_call("BatchExecuteStatement", body);
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    ck_assert_msg(strstr(fdbt_message(&r), "less than or equal to 25"), "%s", fdbt_message(&r));
    fdbt_free(&r);
}
END_TEST

START_TEST(transaction)
{
    /* all or nothing: a failed statement cancels the insert before it */
    fdbt_resp r = fdbt_call("ExecuteTransaction", "{\"TransactStatements\":["
        "{\"Statement\":\"INSERT INTO Music VALUE {'pk': 't', 'sk': 1}\"},"
        "{\"Statement\":\"INSERT INTO Music VALUE {'pk': 'a', 'sk': 1}\"},"
        "{\"Statement\":\"UPDATE Music SET n = 1 WHERE pk = 'zz' AND sk = 1\"},"
        "{\"Statement\":\"EXISTS(SELECT * FROM Music WHERE pk = 'a' AND sk = 3 AND n = 3)\"}]}");
    ck_assert_msg(r.status == 400, "%s", r.body);
    ck_assert_str_eq(fdbt_error(&r), "TransactionCanceledException");
    ck_assert_str_eq(fdbt_str(&r, "Message"), "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ValidationError, ConditionalCheckFailed, ConditionalCheckFailed]");
    ck_assert_str_eq(fdbt_str(&r, "CancellationReasons.0.Code"), "None");
    ck_assert_str_eq(fdbt_str(&r, "CancellationReasons.1.Message"), "Duplicate primary key exists in table");
    ck_assert_str_eq(fdbt_str(&r, "CancellationReasons.2.Code"), "ConditionalCheckFailed");
    ck_assert_str_eq(fdbt_str(&r, "CancellationReasons.3.Message"), "The conditional request failed.");
    fdbt_free(&r);
    ck_assert_uint_eq(count_items("SELECT * FROM Music WHERE pk = 't'"), 0);

    const char *ok = "{\"ClientRequestToken\":\"tok-1\",\"TransactStatements\":["
        "{\"Statement\":\"INSERT INTO Music VALUE {'pk': 't', 'sk': 1, 'n': 1}\"},"
        "{\"Statement\":\"UPDATE Music SET n = n + 1 WHERE pk = 'a' AND sk = 1\"},"
        "{\"Statement\":\"DELETE FROM Music WHERE pk = 'b' AND sk = ?\",\"Parameters\":[{\"N\":\"1\"}]},"
        "{\"Statement\":\"EXISTS(SELECT * FROM Music WHERE pk = 'a' AND sk = 3 AND n = 30)\"}]}";
    r = fdbt_call("ExecuteTransaction", ok);
    ck_assert_msg(r.status == 200, "%s", r.body);
    fdbt_free(&r);
    /* the same token and statements: success, not run again */
    r = fdbt_call("ExecuteTransaction", ok);
    ck_assert_msg(r.status == 200, "%s", r.body);
    fdbt_free(&r);
    r = fdbt_call("ExecuteTransaction", "{\"ClientRequestToken\":\"tok-1\",\"TransactStatements\":["
                                        "{\"Statement\":\"DELETE FROM Music WHERE pk = 't' AND sk = 1\"}]}");
    ck_assert_str_eq(fdbt_error(&r), "IdempotentParameterMismatchException");
    fdbt_free(&r);

    r = fdbt_call("ExecuteTransaction", "{\"TransactStatements\":["
        "{\"Statement\":\"SELECT n FROM Music WHERE pk = 'a' AND sk = 1\"},"
        "{\"Statement\":\"SELECT * FROM Music WHERE pk = 'b' AND sk = 1\"},"
        "{\"Statement\":\"SELECT * FROM Music WHERE pk = 't' AND sk = 1\"}]}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(fdbt_str(&r, "Responses.0.Item.n.N"), "11");
    ck_assert_ptr_null(fdbt_get(r.json, "Responses.1.Item"));
    ck_assert_str_eq(fdbt_str(&r, "Responses.2.Item.n.N"), "1");
    fdbt_free(&r);

    r = fdbt_call("ExecuteTransaction", "{\"TransactStatements\":[{\"Statement\":\"SELECT * FROM Music WHERE pk = 'a' AND sk = 1\"},"
                                        "{\"Statement\":\"DELETE FROM Music WHERE pk = 'a' AND sk = 1\"}]}");
    ck_assert_str_eq(fdbt_message(&r), "ExecuteTransaction API does not support both read and write operations in the same request.");
    fdbt_free(&r);
    r = fdbt_call("ExecuteTransaction", "{\"TransactStatements\":[{\"Statement\":\"SELECT * FROM Music WHERE pk = 'a'\"}]}");
    ck_assert_str_eq(fdbt_message(&r), "Validation failed in TransactStatements[0]: Select statements within ExecuteTransaction must specify the primary key in the where clause.");
    fdbt_free(&r);
    r = fdbt_call("ExecuteTransaction", "{\"TransactStatements\":[{\"Statement\":\"DELETE FROM Music WHERE pk = 'a' AND sk = 1 RETURNING ALL OLD *\"}]}");
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    fdbt_free(&r);
    r = fdbt_call("ExecuteTransaction", "{\"TransactStatements\":[{\"Statement\":\"DELETE FROM Music WHERE pk = 'a' AND sk = 1\"},"
                                        "{\"Statement\":\"UPDATE Music SET n = 1 WHERE pk = 'a' AND sk = 1\"}]}");
    ck_assert_str_eq(fdbt_message(&r), "Transaction request cannot include multiple operations on one item");
    fdbt_free(&r);
    r = fdbt_call("ExecuteTransaction", "{\"TransactStatements\":[{\"Statement\":\"DELETE FROM Nope WHERE pk = 'a' AND sk = 1\"}]}");
    ck_assert_str_eq(fdbt_error(&r), "ResourceNotFoundException");
    fdbt_free(&r);
    r = fdbt_call("ExecuteTransaction", "{\"TransactStatements\":[{\"Statement\":\"EXISTS(SELECT * FROM Music WHERE pk = 'a' AND sk = 1)\"}]}");
    ck_assert_str_eq(fdbt_message(&r), "Validation failed in TransactStatements[0]: EXISTS() must contain a single item read with additional condition");
    fdbt_free(&r);
    r = fdbt_call("ExecuteTransaction", "{\"TransactStatements\":[]}");
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    fdbt_free(&r);
    char *body = malloc(20000);
    strcpy(body, "{\"TransactStatements\":[");
    for (int i = 0; i < 101; i++)
        sprintf(body + strlen(body), "%s{\"Statement\":\"DELETE FROM Music WHERE pk = 'x%d' AND sk = 1\"}", i ? "," : "", i);
    strcat(body, "]}");
    r = fdbt_call("ExecuteTransaction", body);
    ck_assert_msg(strstr(fdbt_message(&r), "less than or equal to 100"), "%s", r.body);
    fdbt_free(&r);
    free(body);
}
END_TEST

START_TEST(malformed_statements)
{
    static const char *const bad[] = {
        "", ";", "SELEC * FROM Music", "SELECT * FROM", "SELECT FROM Music", "SELECT * FROM Music WHERE",
        "SELECT * FROM Music WHERE pk =", "SELECT * FROM Music WHERE pk = 'a", "SELECT * FROM \"Music",
        "SELECT * FROM Music WHERE (pk = 'a'", "SELECT * FROM Music WHERE pk = 'a' AND", "SELECT a. FROM Music",
        "SELECT a[ FROM Music", "SELECT a[x] FROM Music", "SELECT * FROM Music; SELECT * FROM Music",
        "SELECT * FROM Music /* unterminated", "INSERT INTO Music VALUE {'pk': }", "INSERT INTO Music VALUE {pk: 'a'}",
        "INSERT INTO Music VALUES ('a', 1)", "INSERT INTO Music VALUE {'pk': 'a', 'sk': 1", "UPDATE Music WHERE pk = 'a'",
        "UPDATE Music SET WHERE pk = 'a' AND sk = 1", "DELETE Music WHERE pk = 'a'", "DELETE FROM Music",
        "UPSERT INTO Music VALUE {'pk': 'a'}", "CREATE TABLE x", "SELECT * FROM Music WHERE pk IS 'a'",
        "SELECT * FROM Music WHERE pk = 'a' ORDER", "SELECT * FROM \"\"", "SELECT * FROM Music WHERE pk = #a",
        "SELECT * FROM Music WHERE pk = 'a' RETURNING ALL OLD *", "\x01\x02", "SELECT * FROM Music WHERE n = 1.2.3",
        "SELECT * FROM Music WHERE n = 'a' 'b'", "UPDATE Music SET n = 1 WHERE pk = 'a' AND sk = 1 RETURNING SOME OLD *",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fdbt_resp r = es(bad[i], NULL);
        ck_assert_msg(r.status == 400, "%s: %ld %s", bad[i], r.status, r.body);
        ck_assert_msg(!strcmp(fdbt_error(&r), "ValidationException"), "%s: %s", bad[i], r.body);
        fdbt_free(&r);
    }
    /* deep nesting is refused, not a crash */
    char deep[3000] = "SELECT * FROM Music WHERE ";
    for (int i = 0; i < 1000; i++)
        strcat(deep, "(");
    fdbt_resp r = es(deep, NULL);
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    fdbt_free(&r);
    char deepv[3000] = "INSERT INTO Music VALUE {'pk': 'a', 'sk': 9, 'x': ";
    for (int i = 0; i < 900; i++)
        strcat(deepv, "[");
    r = es(deepv, NULL);
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    fdbt_free(&r);
    /* every prefix of good statements: an answer, never a 500 */
    static const char *const good[] = {
        "UPDATE \"Music\" SET n = n + 1, l = list_append(l, [1, {'a': <<'x'>>}]) REMOVE m.k WHERE pk = 'a' AND sk = 1 AND (n > 0 OR NOT begins_with(g, 'x')) RETURNING MODIFIED NEW *",
        "SELECT n, m.\"in\".z, l[0] FROM \"Music\".\"byG\" WHERE g = 'G' AND n BETWEEN -1 AND 1e3 AND pk IN ['a', 'b'] AND m IS NOT MISSING",
    };
    for (size_t g = 0; g < 2; g++) {
        size_t n = strlen(good[g]);
        for (size_t cut = 0; cut <= n; cut++) {
            char *s = strndup(good[g], cut);
            r = es(s, NULL);
            ck_assert_msg(r.status == 200 || r.status == 400, "%s: %ld %s", s, r.status, r.body);
            fdbt_free(&r);
            free(s);
        }
    }
    r = fdbt_call("ExecuteStatement", "{}");
    ck_assert_str_eq(fdbt_message(&r), "1 validation error detected: Value null at 'statement' failed to satisfy constraint: Member must not be null");
    fdbt_free(&r);
    r = fdbt_call("ExecuteStatement", "{\"Statement\":\"SELECT * FROM Music\\u0000 WHERE pk = 'zz'\"}");
    ck_assert_str_eq(fdbt_error(&r), "ValidationException");
    fdbt_free(&r);
    r = fdbt_call("ExecuteStatement", "{\"Statement\":5}");
    ck_assert_str_eq(fdbt_error(&r), "SerializationException");
    fdbt_free(&r);
    char *huge = malloc(9000);
    memset(huge, ' ', 8999);
    memcpy(huge, "SELECT", 6);
    huge[8999] = 0;
    r = es(huge, NULL);
    ck_assert_msg(strstr(fdbt_message(&r), "less than or equal to 8192"), "%s", r.body);
    fdbt_free(&r);
    free(huge);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fakedb_partiql");
    TCase *tc = tcase_create("partiql");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, select_forms);
    tcase_add_test(tc, writes);
    tcase_add_test(tc, parameters_and_literals);
    tcase_add_test(tc, paging);
    tcase_add_test(tc, batch);
    tcase_add_test(tc, transaction);
    tcase_add_test(tc, malformed_statements);
    suite_add_tcase(s, tc);
    return dl_check_run(s);
}
