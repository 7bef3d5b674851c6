/* test_legacy.c: fakedb's legacy (non-expression) parameters over HTTP: Expected (Exists,
 * Value, every ComparisonOperator) and ConditionalOperator on PutItem, UpdateItem and
 * DeleteItem; AttributeUpdates (PUT, ADD, DELETE and their errors); KeyConditions,
 * QueryFilter and ScanFilter; AttributesToGet on GetItem, BatchGetItem, Query and Scan
 * with Select; DynamoDB's validation texts, and its refusal to mix legacy and expression
 * parameters or to take expression names and values without expressions. */
#include "fdbt.h"

#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Request bodies are written with single quotes, turned into double quotes here. */
static fdbt_resp call(const char *op, const char *sq)
{
    char *body = strdup(sq);
    ck_assert_ptr_nonnull(body);
    for (char *p = body; *p; p++)
        if (*p == '\'')
            *p = '"';
    fdbt_resp r = fdbt_call(op, body);
    free(body);
    return r;
}

#define OK(op_, req_) do { \
        fdbt_resp r_ = call(op_, req_); \
        ck_assert_msg(r_.status == 200, "%s %s: %s", op_, req_, r_.body); \
        fdbt_free(&r_); \
    } while (0)

#define FAILS(op_, req_, type_, msg_) do { \
        fdbt_resp r_ = call(op_, req_); \
        fdbt_expect_answer_exact(&r_, 400, type_, msg_, req_); \
    } while (0)

#define INVALID(op, body, msg) FAILS(op, body, "ValidationException", msg)
#define CCF(op, body) FAILS(op, body, "ConditionalCheckFailedException", "The conditional request failed")

#define ITEM "{'pk':{'S':'k'},'n':{'N':'5'},'s':{'S':'hello'},'ss':{'SS':['a','b']},'ns':{'NS':['1','2']}," \
             "'l':{'L':[{'S':'x'},{'N':'1'}]},'b':{'B':'AQID'},'m':{'M':{'x':{'S':'y'}}},'t':{'BOOL':true}}"

static void setup(void)
{
    fdbt_start(NULL);
    fdbt_table("Tab", NULL, NULL);
    fdbt_table("Rng", "sk", "N");
    OK("PutItem", "{'TableName':'Tab','Item':" ITEM "}");
    const char *rows[] = {"1", "5", "9", "12", "20"};
    char body[512];
    for (int i = 0; i < 5; i++) {
        snprintf(body, sizeof body, "{'TableName':'Rng','Item':{'pk':{'S':'p'},'sk':{'N':'%s'},'v':{'N':'%d'},'w':{'S':'w%d'}%s}}",
                 rows[i], i, i, i % 2 ? ",'odd':{'BOOL':true}" : "");
        OK("PutItem", body);
    }
    OK("PutItem", "{'TableName':'Rng','Item':{'pk':{'S':'q'},'sk':{'N':'1'},'v':{'N':'100'}}}");
}

static void teardown(void)
{
    fdbt_stop();
}

/* PutItem of the same item with Expected {attr: cond}: accepted or refused. */
static void expect_condition(const char *cond, bool pass)
{
    char body[2048];
    snprintf(body, sizeof body, "{'TableName':'Tab','Item':" ITEM ",'Expected':%s}", cond);
    fdbt_resp r = call("PutItem", body);
    if (pass)
        ck_assert_msg(r.status == 200, "%s: %s", cond, r.body);
    else
        ck_assert_msg(r.status == 400 && !strcmp(fdbt_error(&r), "ConditionalCheckFailedException"), "%s: %s", cond, r.body);
    fdbt_free(&r);
}

START_TEST(expected_exists_and_value)
{
    OK("PutItem", "{'TableName':'Tab','Item':{'pk':{'S':'new'}},'Expected':{'pk':{'Exists':false}}}");
    CCF("PutItem", "{'TableName':'Tab','Item':{'pk':{'S':'new'}},'Expected':{'pk':{'Exists':false}}}");
    expect_condition("{'n':{'Value':{'N':'5'}}}", true);
    expect_condition("{'n':{'Value':{'N':'5.0'}}}", true);
    expect_condition("{'n':{'Value':{'N':'6'}}}", false);
    expect_condition("{'n':{'Exists':true,'Value':{'N':'5'}}}", true);
    expect_condition("{'zz':{'Exists':true,'Value':{'N':'5'}}}", false);
    expect_condition("{'zz':{'Exists':false}}", true);
    expect_condition("{'n':{'Exists':false}}", false);
    expect_condition("{'m':{'Value':{'M':{'x':{'S':'y'}}}}}", true);
    expect_condition("{}", true);
    /* several entries: all must hold (AND by default) */
    expect_condition("{'n':{'Value':{'N':'5'}},'s':{'Value':{'S':'hello'}}}", true);
    expect_condition("{'n':{'Value':{'N':'5'}},'s':{'Value':{'S':'bye'}}}", false);
    /* UpdateItem and DeleteItem take them too */
    CCF("UpdateItem", "{'TableName':'Tab','Key':{'pk':{'S':'k'}},'Expected':{'n':{'Value':{'N':'4'}}},'AttributeUpdates':{'x':{'Value':{'S':'1'}}}}");
    CCF("DeleteItem", "{'TableName':'Tab','Key':{'pk':{'S':'k'}},'Expected':{'n':{'Exists':false}}}");
    OK("DeleteItem", "{'TableName':'Tab','Key':{'pk':{'S':'new'}},'Expected':{'pk':{'Value':{'S':'new'}}}}");
    fdbt_resp r = call("GetItem", "{'TableName':'Tab','Key':{'pk':{'S':'new'}}}");
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
}
END_TEST

START_TEST(expected_every_operator)
{
    static const struct { const char *cond; bool pass; } cases[] = {
        {"{'n':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'5'}]}}", true},
        {"{'n':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'6'}]}}", false},
        {"{'n':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'5'}]}}", false},
        {"{'ss':{'ComparisonOperator':'EQ','AttributeValueList':[{'SS':['b','a']}]}}", true},
        {"{'n':{'ComparisonOperator':'NE','AttributeValueList':[{'N':'6'}]}}", true},
        {"{'n':{'ComparisonOperator':'NE','AttributeValueList':[{'N':'5'}]}}", false},
        {"{'zz':{'ComparisonOperator':'NE','AttributeValueList':[{'N':'5'}]}}", true},
        {"{'n':{'ComparisonOperator':'LE','AttributeValueList':[{'N':'5'}]}}", true},
        {"{'n':{'ComparisonOperator':'LE','AttributeValueList':[{'N':'4'}]}}", false},
        {"{'n':{'ComparisonOperator':'LT','AttributeValueList':[{'N':'10'}]}}", true},
        {"{'n':{'ComparisonOperator':'LT','AttributeValueList':[{'N':'5'}]}}", false},
        {"{'n':{'ComparisonOperator':'GE','AttributeValueList':[{'N':'5'}]}}", true},
        {"{'n':{'ComparisonOperator':'GE','AttributeValueList':[{'N':'6'}]}}", false},
        {"{'n':{'ComparisonOperator':'GT','AttributeValueList':[{'N':'-1'}]}}", true},
        {"{'n':{'ComparisonOperator':'GT','AttributeValueList':[{'N':'5'}]}}", false},
        {"{'n':{'ComparisonOperator':'GT','AttributeValueList':[{'S':'4'}]}}", false},
        {"{'s':{'ComparisonOperator':'GT','AttributeValueList':[{'S':'hella'}]}}", true},
        {"{'b':{'ComparisonOperator':'LT','AttributeValueList':[{'B':'AQIE'}]}}", true},
        {"{'zz':{'ComparisonOperator':'LT','AttributeValueList':[{'N':'5'}]}}", false},
        {"{'n':{'ComparisonOperator':'NOT_NULL'}}", true},
        {"{'zz':{'ComparisonOperator':'NOT_NULL'}}", false},
        {"{'zz':{'ComparisonOperator':'NULL'}}", true},
        {"{'n':{'ComparisonOperator':'NULL'}}", false},
        {"{'s':{'ComparisonOperator':'CONTAINS','AttributeValueList':[{'S':'ell'}]}}", true},
        {"{'s':{'ComparisonOperator':'CONTAINS','AttributeValueList':[{'S':'elo'}]}}", false},
        {"{'ss':{'ComparisonOperator':'CONTAINS','AttributeValueList':[{'S':'a'}]}}", true},
        {"{'ss':{'ComparisonOperator':'CONTAINS','AttributeValueList':[{'S':'c'}]}}", false},
        {"{'ns':{'ComparisonOperator':'CONTAINS','AttributeValueList':[{'N':'2'}]}}", true},
        {"{'l':{'ComparisonOperator':'CONTAINS','AttributeValueList':[{'S':'x'}]}}", true},
        {"{'s':{'ComparisonOperator':'NOT_CONTAINS','AttributeValueList':[{'S':'xyz'}]}}", true},
        {"{'ss':{'ComparisonOperator':'NOT_CONTAINS','AttributeValueList':[{'S':'a'}]}}", false},
        {"{'zz':{'ComparisonOperator':'NOT_CONTAINS','AttributeValueList':[{'S':'a'}]}}", false},
        {"{'s':{'ComparisonOperator':'BEGINS_WITH','AttributeValueList':[{'S':'he'}]}}", true},
        {"{'s':{'ComparisonOperator':'BEGINS_WITH','AttributeValueList':[{'S':'lo'}]}}", false},
        {"{'b':{'ComparisonOperator':'BEGINS_WITH','AttributeValueList':[{'B':'AQ=='}]}}", true},
        {"{'n':{'ComparisonOperator':'IN','AttributeValueList':[{'N':'4'},{'N':'5'}]}}", true},
        {"{'n':{'ComparisonOperator':'IN','AttributeValueList':[{'N':'1'},{'N':'2'}]}}", false},
        {"{'n':{'ComparisonOperator':'BETWEEN','AttributeValueList':[{'N':'1'},{'N':'5'}]}}", true},
        {"{'n':{'ComparisonOperator':'BETWEEN','AttributeValueList':[{'N':'6'},{'N':'9'}]}}", false},
        /* Value stands for a one-element AttributeValueList */
        {"{'n':{'ComparisonOperator':'GT','Value':{'N':'1'}}}", true},
        {"{'n':{'ComparisonOperator':'LT','Value':{'N':'1'}}}", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_condition(cases[i].cond, cases[i].pass);
}
END_TEST

START_TEST(conditional_operator)
{
    char body[1024];
    const char *two = "{'n':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'5'}]},"
                      "'s':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'bye'}]}}";
    snprintf(body, sizeof body, "{'TableName':'Tab','Item':" ITEM ",'Expected':%s,'ConditionalOperator':'OR'}", two);
    OK("PutItem", body);
    snprintf(body, sizeof body, "{'TableName':'Tab','Item':" ITEM ",'Expected':%s,'ConditionalOperator':'AND'}", two);
    CCF("PutItem", body);
    snprintf(body, sizeof body, "{'TableName':'Tab','Item':" ITEM ",'Expected':%s,'ConditionalOperator':'XOR'}", two);
    INVALID("PutItem", body, "1 validation error detected: Value 'XOR' at 'conditionalOperator' failed to satisfy constraint: Member must satisfy enum value set: [OR, AND]");
    /* ConditionalOperator needs two or more conditions to join */
    INVALID("PutItem", "{'TableName':'Tab','Item':{'pk':{'S':'k'}},'ConditionalOperator':'AND'}",
            "ConditionalOperator cannot be used without Filter or Expected");
    INVALID("DeleteItem", "{'TableName':'Tab','Key':{'pk':{'S':'k'}},'Expected':{},'ConditionalOperator':'OR'}",
            "ConditionalOperator cannot be used without Filter or Expected");
    INVALID("UpdateItem", "{'TableName':'Tab','Key':{'pk':{'S':'k'}},'Expected':{'n':{'Exists':true,'Value':{'N':'5'}}},'ConditionalOperator':'OR'}",
            "ConditionalOperator can only be used when Filter or Expected has two or more elements");
    INVALID("Scan", "{'TableName':'Rng','ConditionalOperator':'AND','AttributesToGet':['v']}",
            "ConditionalOperator cannot be used without Filter or Expected");
    INVALID("Query", "{'TableName':'Rng','ConditionalOperator':'AND'}",
            "ConditionalOperator cannot be used without Filter or Expected");
    INVALID("Query", "{'TableName':'Rng','ConditionalOperator':'OR','KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'p'}]}},"
                     "'QueryFilter':{'v':{'ComparisonOperator':'NOT_NULL'}}}",
            "ConditionalOperator can only be used when Filter or Expected has two or more elements");
    /* a failed condition leaves the item as it was */
    fdbt_resp r = call("GetItem", "{'TableName':'Tab','Key':{'pk':{'S':'k'}}}");
    ck_assert_str_eq(fdbt_str(&r, "Item.n.N"), "5");
    fdbt_free(&r);
}
END_TEST

START_TEST(expected_validation)
{
#define P "One or more parameter values were invalid: "
    static const struct { const char *cond, *msg; } cases[] = {
        {"{'a':{}}", P "Value must be provided when Exists is null for Attribute: a"},
        {"{'a':{'Exists':true}}", P "Value must be provided when Exists is true for Attribute: a"},
        {"{'a':{'Exists':false,'Value':{'S':'x'}}}", P "Value cannot be used when Exists is false for Attribute: a"},
        {"{'a':{'Value':{'S':'x'},'AttributeValueList':[{'S':'x'}],'ComparisonOperator':'EQ'}}", P "Value and AttributeValueList cannot be used together for Attribute: a"},
        {"{'a':{'Exists':true,'ComparisonOperator':'EQ','AttributeValueList':[{'S':'x'}]}}", P "Exists and ComparisonOperator cannot be used together for Attribute: a"},
        {"{'a':{'ComparisonOperator':'EQ'}}", P "Value or AttributeValueList must be used with ComparisonOperator: EQ for Attribute: a"},
        {"{'a':{'AttributeValueList':[{'S':'x'}]}}", P "AttributeValueList can only be used with a ComparisonOperator for Attribute: a"},
        {"{'a':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'x'},{'S':'y'}]}}", P "Invalid number of argument(s) for the EQ ComparisonOperator"},
        {"{'a':{'ComparisonOperator':'NULL','AttributeValueList':[{'S':'x'}]}}", P "Invalid number of argument(s) for the NULL ComparisonOperator"},
        {"{'a':{'ComparisonOperator':'BETWEEN','AttributeValueList':[{'N':'1'}]}}", P "Invalid number of argument(s) for the BETWEEN ComparisonOperator"},
        {"{'a':{'ComparisonOperator':'IN','AttributeValueList':[]}}", P "Invalid number of argument(s) for the IN ComparisonOperator"},
        {"{'a':{'ComparisonOperator':'IN'}}", P "Value or AttributeValueList must be used with ComparisonOperator: IN for Attribute: a"},
        {"{'a':{'ComparisonOperator':'BETWEEN','AttributeValueList':[{'N':'1'},{'S':'2'}]}}", P "AttributeValues inside AttributeValueList must be of same type"},
        {"{'a':{'ComparisonOperator':'BETWEEN','AttributeValueList':[{'N':'9'},{'N':'2'}]}}", "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound"},
        {"{'a':{'ComparisonOperator':'LT','AttributeValueList':[{'SS':['x']}]}}", P "ComparisonOperator LT is not valid for SS AttributeValue type"},
        {"{'a':{'ComparisonOperator':'CONTAINS','Value':{'L':[]}}}", P "ComparisonOperator CONTAINS is not valid for L AttributeValue type"},
        {"{'a':{'ComparisonOperator':'LIKE','AttributeValueList':[{'S':'x'}]}}", "1 validation error detected: Value 'LIKE' at 'expected.a.member.comparisonOperator' failed to satisfy constraint: Member must satisfy enum value set: [IN, NULL, BETWEEN, LT, NOT_CONTAINS, EQ, GT, NOT_NULL, NE, LE, BEGINS_WITH, GE, CONTAINS]"},
        {"{'a':{'Value':{'SS':[]}}}", NULL},
        {"{'a':{'Value':{'N':'x1'}}}", NULL},
    };
    char body[2048];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(body, sizeof body, "{'TableName':'Tab','Item':{'pk':{'S':'v'}},'Expected':%s}", cases[i].cond);
        INVALID("PutItem", body, cases[i].msg);
        snprintf(body, sizeof body, "{'TableName':'Tab','Key':{'pk':{'S':'v'}},'Expected':%s}", cases[i].cond);
        INVALID("DeleteItem", body, cases[i].msg);
    }
    FAILS("PutItem", "{'TableName':'Tab','Item':{'pk':{'S':'v'}},'Expected':{'a':{'Exists':'yes'}}}", "SerializationException", NULL);
    FAILS("PutItem", "{'TableName':'Tab','Item':{'pk':{'S':'v'}},'Expected':['a']}", "SerializationException", NULL);
    /* nothing was written by any of them */
    fdbt_resp r = call("GetItem", "{'TableName':'Tab','Key':{'pk':{'S':'v'}}}");
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
}
END_TEST

START_TEST(attribute_updates_actions)
{
    const char *key = "'TableName':'Tab','Key':{'pk':{'S':'u'}}";
    char body[1024];
    /* on a missing item: PUT and ADD create it, DELETE of what is not there is nothing */
    snprintf(body, sizeof body, "{%s,'AttributeUpdates':{'a':{'Value':{'S':'x'}},'c':{'Action':'ADD','Value':{'N':'5'}},"
             "'d':{'Action':'ADD','Value':{'SS':['p','q']}},'e':{'Action':'DELETE'},'f':{'Action':'DELETE','Value':{'SS':['z']}}},"
             "'ReturnValues':'UPDATED_NEW'}", key);
    fdbt_resp r = call("UpdateItem", body);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(fdbt_str(&r, "Attributes.a.S"), "x");
    ck_assert_str_eq(fdbt_str(&r, "Attributes.c.N"), "5");
    ck_assert_int_eq((int)json_object_array_length(fdbt_get(r.json, "Attributes.d.SS")), 2);
    ck_assert_ptr_null(fdbt_get(r.json, "Attributes.e"));
    fdbt_free(&r);
    /* ADD to a number and to a set, PUT over a value, DELETE of set elements */
    snprintf(body, sizeof body, "{%s,'AttributeUpdates':{'c':{'Action':'ADD','Value':{'N':'-7.5'}},'d':{'Action':'ADD','Value':{'SS':['q','r']}},"
             "'a':{'Action':'PUT','Value':{'N':'1'}},'g':{'Action':'ADD','Value':{'L':[{'S':'one'}]}}},'ReturnValues':'UPDATED_OLD'}", key);
    r = call("UpdateItem", body);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(fdbt_str(&r, "Attributes.a.S"), "x");
    ck_assert_str_eq(fdbt_str(&r, "Attributes.c.N"), "5");
    ck_assert_ptr_null(fdbt_get(r.json, "Attributes.g"));
    fdbt_free(&r);
    snprintf(body, sizeof body, "{%s,'AttributeUpdates':{'g':{'Action':'ADD','Value':{'L':[{'S':'two'}]}},'d':{'Action':'DELETE','Value':{'SS':['p','zz']}}}}", key);
    OK("UpdateItem", body);
    r = call("GetItem", "{'TableName':'Tab','Key':{'pk':{'S':'u'}}}");
    ck_assert_str_eq(fdbt_str(&r, "Item.a.N"), "1");
    ck_assert_str_eq(fdbt_str(&r, "Item.c.N"), "-2.5");
    ck_assert_int_eq((int)json_object_array_length(fdbt_get(r.json, "Item.d.SS")), 2);
    ck_assert_str_eq(fdbt_str(&r, "Item.g.L.0.S"), "one");
    ck_assert_str_eq(fdbt_str(&r, "Item.g.L.1.S"), "two");
    fdbt_free(&r);
    /* DELETE of every element removes the set; DELETE without a value the attribute */
    snprintf(body, sizeof body, "{%s,'AttributeUpdates':{'d':{'Action':'DELETE','Value':{'SS':['q','r']}},'a':{'Action':'DELETE'}},'ReturnValues':'ALL_NEW'}", key);
    r = call("UpdateItem", body);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_ptr_null(fdbt_get(r.json, "Attributes.d"));
    ck_assert_ptr_null(fdbt_get(r.json, "Attributes.a"));
    ck_assert_str_eq(fdbt_str(&r, "Attributes.c.N"), "-2.5");
    fdbt_free(&r);
    /* with Expected, the condition decides */
    snprintf(body, sizeof body, "{%s,'Expected':{'c':{'ComparisonOperator':'LT','AttributeValueList':[{'N':'0'}]}},'AttributeUpdates':{'c':{'Action':'ADD','Value':{'N':'10'}}}}", key);
    OK("UpdateItem", body);
    CCF("UpdateItem", body);
    r = call("GetItem", "{'TableName':'Tab','Key':{'pk':{'S':'u'}}}");
    ck_assert_str_eq(fdbt_str(&r, "Item.c.N"), "7.5");
    fdbt_free(&r);
    /* only DELETE actions on a missing item create nothing */
    OK("UpdateItem", "{'TableName':'Tab','Key':{'pk':{'S':'gone'}},'AttributeUpdates':{'a':{'Action':'DELETE'}}}");
    r = call("GetItem", "{'TableName':'Tab','Key':{'pk':{'S':'gone'}}}");
    ck_assert_ptr_null(fdbt_get(r.json, "Item"));
    fdbt_free(&r);
    /* no AttributeUpdates at all: the item is created with its key */
    OK("UpdateItem", "{'TableName':'Tab','Key':{'pk':{'S':'bare'}}}");
    r = call("GetItem", "{'TableName':'Tab','Key':{'pk':{'S':'bare'}}}");
    ck_assert_str_eq(fdbt_str(&r, "Item.pk.S"), "bare");
    fdbt_free(&r);
}
END_TEST

START_TEST(attribute_updates_errors)
{
    static const struct { const char *updates, *msg; } cases[] = {
        {"{'a':{'Action':'ADD'}}", P "Only DELETE action is allowed when no attribute value is specified"},
        {"{'a':{'Action':'PUT'}}", P "Only DELETE action is allowed when no attribute value is specified"},
        {"{'a':{}}", P "Only DELETE action is allowed when no attribute value is specified"},
        {"{'a':{'Action':'DELETE','Value':{'S':'1'}}}", P "DELETE action with value is not supported for the type S"},
        {"{'a':{'Action':'DELETE','Value':{'N':'1'}}}", P "DELETE action with value is not supported for the type N"},
        {"{'a':{'Action':'DELETE','Value':{'L':[]}}}", P "DELETE action with value is not supported for the type L"},
        {"{'a':{'Action':'ADD','Value':{'S':'1'}}}", P "ADD action is not supported for the type S"},
        {"{'a':{'Action':'ADD','Value':{'B':'Yg=='}}}", P "ADD action is not supported for the type B"},
        {"{'a':{'Action':'ADD','Value':{'BOOL':true}}}", P "ADD action is not supported for the type BOOL"},
        {"{'a':{'Action':'ADD','Value':{'M':{}}}}", P "ADD action is not supported for the type M"},
        {"{'a':{'Action':'SET','Value':{'S':'1'}}}", "1 validation error detected: Value 'SET' at 'attributeUpdates.a.member.action' failed to satisfy constraint: Member must satisfy enum value set: [ADD, PUT, DELETE]"},
        {"{'pk':{'Value':{'S':'other'}}}", P "Cannot update attribute pk. This attribute is part of the key"},
        {"{'pk':{'Action':'DELETE'}}", P "Cannot update attribute pk. This attribute is part of the key"},
        {"{'a':{'Value':{'SS':[]}}}", NULL},
    };
    char body[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(body, sizeof body, "{'TableName':'Tab','Key':{'pk':{'S':'k'}},'AttributeUpdates':%s}", cases[i].updates);
        INVALID("UpdateItem", body, cases[i].msg);
    }
    /* type mismatches against the stored item */
    INVALID("UpdateItem", "{'TableName':'Tab','Key':{'pk':{'S':'k'}},'AttributeUpdates':{'s':{'Action':'ADD','Value':{'N':'1'}}}}", "Type mismatch for attribute to update");
    INVALID("UpdateItem", "{'TableName':'Tab','Key':{'pk':{'S':'k'}},'AttributeUpdates':{'ss':{'Action':'ADD','Value':{'NS':['1']}}}}", "Type mismatch for attribute to update");
    INVALID("UpdateItem", "{'TableName':'Tab','Key':{'pk':{'S':'k'}},'AttributeUpdates':{'n':{'Action':'DELETE','Value':{'NS':['5']}}}}", "Type mismatch for attribute to update");
    INVALID("UpdateItem", "{'TableName':'Tab','Key':{'pk':{'S':'k'}},'AttributeUpdates':{'ss':{'Action':'DELETE','Value':{'NS':['1']}}}}", "Type mismatch for attribute to update");
    /* the item is unchanged */
    fdbt_resp r = call("GetItem", "{'TableName':'Tab','Key':{'pk':{'S':'k'}}}");
    ck_assert_str_eq(fdbt_str(&r, "Item.s.S"), "hello");
    ck_assert_str_eq(fdbt_str(&r, "Item.n.N"), "5");
    fdbt_free(&r);
}
END_TEST

static void assert_sks(const char *body, const char *want)
{
    fdbt_resp r = call("Query", body);
    ck_assert_msg(r.status == 200, "%s: %s", body, r.body);
    json_object *items = fdbt_get(r.json, "Items");
    char got[256] = "";
    for (size_t i = 0; items && i < json_object_array_length(items); i++) {
        const char *sk = json_object_get_string(fdbt_get(json_object_array_get_idx(items, i), "sk.N"));
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? "," : "", sk ? sk : "?");
    }
    ck_assert_msg(!strcmp(got, want), "%s: got %s, want %s", body, got, want);
    fdbt_free(&r);
}

#define KC(sk) "{'TableName':'Rng','KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'p'}]}" sk "}}"

START_TEST(key_conditions)
{
    assert_sks(KC(""), "1,5,9,12,20");
    assert_sks(KC(",'sk':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'9'}]}"), "9");
    assert_sks(KC(",'sk':{'ComparisonOperator':'LE','AttributeValueList':[{'N':'9'}]}"), "1,5,9");
    assert_sks(KC(",'sk':{'ComparisonOperator':'LT','AttributeValueList':[{'N':'9'}]}"), "1,5");
    assert_sks(KC(",'sk':{'ComparisonOperator':'GE','AttributeValueList':[{'N':'9'}]}"), "9,12,20");
    assert_sks(KC(",'sk':{'ComparisonOperator':'GT','AttributeValueList':[{'N':'9'}]}"), "12,20");
    assert_sks(KC(",'sk':{'ComparisonOperator':'BETWEEN','AttributeValueList':[{'N':'5'},{'N':'12'}]}"), "5,9,12");
    /* the sort key condition may come first; ScanIndexForward and Limit still apply */
    assert_sks("{'TableName':'Rng','KeyConditions':{'sk':{'ComparisonOperator':'GT','AttributeValueList':[{'N':'1'}]},"
               "'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'p'}]}},'ScanIndexForward':false,'Limit':2}", "20,12");
    /* KeyConditions may go with a FilterExpression */
    assert_sks("{'TableName':'Rng','KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'p'}]}},"
               "'FilterExpression':'v > :v','ExpressionAttributeValues':{':v':{'N':'2'}}}", "12,20");
    fdbt_table("Str", "sk", "S");
    OK("PutItem", "{'TableName':'Str','Item':{'pk':{'S':'p'},'sk':{'S':'apple'}}}");
    OK("PutItem", "{'TableName':'Str','Item':{'pk':{'S':'p'},'sk':{'S':'banana'}}}");
    fdbt_resp r = call("Query", "{'TableName':'Str','KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'p'}]},"
                                "'sk':{'ComparisonOperator':'BEGINS_WITH','AttributeValueList':[{'S':'ba'}]}}}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 1);
    ck_assert_str_eq(fdbt_str(&r, "Items.0.sk.S"), "banana");
    fdbt_free(&r);
}
END_TEST

START_TEST(key_conditions_errors)
{
    INVALID("Query", "{'TableName':'Rng','KeyConditions':{'sk':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'1'}]}}}",
            "Query condition missed key schema element: pk");
    INVALID("Query", "{'TableName':'Rng','KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'p'}]},'v':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'1'}]}}}",
            "Query condition missed key schema element: sk");
    INVALID("Query", "{'TableName':'Tab','KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'p'}]},'v':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'1'}]}}}",
            "Query key condition not supported");
    const char *not_indexable[] = {
        "{'ComparisonOperator':'NULL'}", "{'ComparisonOperator':'NOT_NULL'}",
        "{'ComparisonOperator':'NE','AttributeValueList':[{'S':'p'}]}",
        "{'ComparisonOperator':'CONTAINS','AttributeValueList':[{'S':'p'}]}",
        "{'ComparisonOperator':'NOT_CONTAINS','AttributeValueList':[{'S':'p'}]}",
        "{'ComparisonOperator':'IN','AttributeValueList':[{'S':'p'}]}",
    };
    char body[512];
    for (size_t i = 0; i < sizeof not_indexable / sizeof not_indexable[0]; i++) {
        snprintf(body, sizeof body, "{'TableName':'Tab','KeyConditions':{'pk':%s}}", not_indexable[i]);
        INVALID("Query", body, "Attempted conditional constraint is not an indexable operation");
    }
    INVALID("Query", "{'TableName':'Tab','KeyConditions':{'pk':{'ComparisonOperator':'GT','AttributeValueList':[{'S':'p'}]}}}",
            "Query key condition not supported");
    INVALID("Query", "{'TableName':'Tab','KeyConditions':{'pk':{'ComparisonOperator':'BEGINS_WITH','AttributeValueList':[{'S':'p'}]}}}",
            "Query key condition not supported");
    INVALID("Query", "{'TableName':'Tab','KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'1'}]}}}",
            P "Condition parameter type does not match schema type");
    INVALID("Query", KC(",'sk':{'ComparisonOperator':'BEGINS_WITH','AttributeValueList':[{'N':'1'}]}"),
            P "ComparisonOperator BEGINS_WITH is not valid for N AttributeValue type");
    INVALID("Query", KC(",'sk':{'ComparisonOperator':'BETWEEN','AttributeValueList':[{'N':'9'},{'N':'1'}]}"),
            "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound");
    INVALID("Query", KC(",'sk':{'ComparisonOperator':'EQ','AttributeValueList':[]}"),
            P "Invalid number of argument(s) for the EQ ComparisonOperator");
    INVALID("Query", KC(",'sk':{'AttributeValueList':[{'N':'1'}]}"),
            "1 validation error detected: Value null at 'keyConditions.sk.member.comparisonOperator' failed to satisfy constraint: Member must not be null");
    INVALID("Query", "{'TableName':'Rng'}", "Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.");
    INVALID("Query", "{'TableName':'Rng','KeyConditions':{}}", "Conditions can be of length 1 or 2 only");
    INVALID("Query", KC(",'sk':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'1'}]},'v':{'ComparisonOperator':'NOT_NULL'}"),
            "Conditions can be of length 1 or 2 only");
}
END_TEST

/* A filter on R's partition p (sk 1, 5, 9, 12, 20; v 0..4; w w0..w4; odd on v 1 and 3):
 * the sort keys that pass. */
static void filter_case(const char *filter, const char *extra, const char *want)
{
    char body[1024];
    snprintf(body, sizeof body, "{'TableName':'Rng','KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'p'}]}},"
             "'QueryFilter':%s%s}", filter, extra);
    assert_sks(body, want);
}

START_TEST(query_filter_every_operator)
{
    filter_case("{'v':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'2'}]}}", "", "9");
    filter_case("{'v':{'ComparisonOperator':'NE','AttributeValueList':[{'N':'2'}]}}", "", "1,5,12,20");
    filter_case("{'v':{'ComparisonOperator':'LE','AttributeValueList':[{'N':'1'}]}}", "", "1,5");
    filter_case("{'v':{'ComparisonOperator':'LT','AttributeValueList':[{'N':'1'}]}}", "", "1");
    filter_case("{'v':{'ComparisonOperator':'GE','AttributeValueList':[{'N':'3'}]}}", "", "12,20");
    filter_case("{'v':{'ComparisonOperator':'GT','AttributeValueList':[{'N':'3'}]}}", "", "20");
    filter_case("{'odd':{'ComparisonOperator':'NOT_NULL'}}", "", "5,12");
    filter_case("{'odd':{'ComparisonOperator':'NULL'}}", "", "1,9,20");
    filter_case("{'w':{'ComparisonOperator':'CONTAINS','AttributeValueList':[{'S':'3'}]}}", "", "12");
    filter_case("{'w':{'ComparisonOperator':'NOT_CONTAINS','AttributeValueList':[{'S':'3'}]}}", "", "1,5,9,20");
    /* NOT_CONTAINS finds nothing in a missing attribute */
    filter_case("{'zz':{'ComparisonOperator':'NOT_CONTAINS','AttributeValueList':[{'S':'3'}]}}", "", "");
    filter_case("{'odd':{'ComparisonOperator':'NOT_CONTAINS','AttributeValueList':[{'S':'3'}]}}", "", "5,12");
    filter_case("{'w':{'ComparisonOperator':'BEGINS_WITH','AttributeValueList':[{'S':'w'}]}}", "", "1,5,9,12,20");
    filter_case("{'v':{'ComparisonOperator':'IN','AttributeValueList':[{'N':'0'},{'N':'4'},{'N':'7'}]}}", "", "1,20");
    filter_case("{'v':{'ComparisonOperator':'BETWEEN','AttributeValueList':[{'N':'1'},{'N':'3'}]}}", "", "5,9,12");
    /* ConditionalOperator joins the filter's conditions, not the key conditions */
    filter_case("{'v':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'0'}]},'w':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'w4'}]}}",
                ",'ConditionalOperator':'OR'", "1,20");
    filter_case("{'v':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'0'}]},'w':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'w4'}]}}",
                ",'ConditionalOperator':'AND'", "");
    /* Count and ScannedCount */
    fdbt_resp r = call("Query", "{'TableName':'Rng','KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'p'}]}},"
                                "'QueryFilter':{'odd':{'ComparisonOperator':'NOT_NULL'}},'Select':'COUNT'}");
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 2);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "ScannedCount")), 5);
    fdbt_free(&r);
    INVALID("Query", "{'TableName':'Rng','KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'p'}]}},"
                     "'QueryFilter':{'sk':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'1'}]}}}",
            "QueryFilter can only contain non-primary key attributes: Primary key attribute: sk");
}
END_TEST

static void scan_count(const char *filter, const char *extra, int want)
{
    char body[1024];
    snprintf(body, sizeof body, "{'TableName':'Rng','ScanFilter':%s%s}", filter, extra);
    fdbt_resp r = call("Scan", body);
    ck_assert_msg(r.status == 200, "%s: %s", body, r.body);
    ck_assert_msg(json_object_get_int(fdbt_get(r.json, "Count")) == want, "%s: %s", body, r.body);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "ScannedCount")), 6);
    fdbt_free(&r);
}

START_TEST(scan_filter_and_validation)
{
    scan_count("{'v':{'ComparisonOperator':'GE','AttributeValueList':[{'N':'3'}]}}", "", 3);
    scan_count("{'sk':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'1'}]}}", "", 2);
    scan_count("{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'q'}]},'v':{'ComparisonOperator':'LT','AttributeValueList':[{'N':'1'}]}}",
               ",'ConditionalOperator':'OR'", 2);
    scan_count("{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'q'}]},'v':{'ComparisonOperator':'LT','AttributeValueList':[{'N':'1'}]}}",
               ",'ConditionalOperator':'AND'", 0);
    scan_count("{}", "", 6);
    /* EQ and NE take any type of value */
    scan_count("{'odd':{'ComparisonOperator':'EQ','AttributeValueList':[{'BOOL':true}]}}", "", 2);
    scan_count("{'odd':{'ComparisonOperator':'NE','AttributeValueList':[{'BOOL':true}]}}", "", 4);
    static const struct { const char *filter, *msg; } cases[] = {
        {"{'v':{'ComparisonOperator':'LT','AttributeValueList':[{'SS':['a']}]}}", P "ComparisonOperator LT is not valid for SS AttributeValue type"},
        {"{'v':{'ComparisonOperator':'CONTAINS','AttributeValueList':[{'L':[]}]}}", P "ComparisonOperator CONTAINS is not valid for L AttributeValue type"},
        {"{'v':{'ComparisonOperator':'BEGINS_WITH','AttributeValueList':[{'N':'1'}]}}", P "ComparisonOperator BEGINS_WITH is not valid for N AttributeValue type"},
        {"{'v':{'ComparisonOperator':'IN','AttributeValueList':[]}}", P "Invalid number of argument(s) for the IN ComparisonOperator"},
        {"{'v':{'ComparisonOperator':'NOT_NULL','AttributeValueList':[{'N':'1'}]}}", P "Invalid number of argument(s) for the NOT_NULL ComparisonOperator"},
        {"{'v':{'ComparisonOperator':'IN','AttributeValueList':[{'N':'1'},{'S':'1'}]}}", P "AttributeValues inside AttributeValueList must be of same type"},
        {"{'v':{'AttributeValueList':[{'N':'1'}]}}", "1 validation error detected: Value null at 'scanFilter.v.member.comparisonOperator' failed to satisfy constraint: Member must not be null"},
        {"{'v':{'ComparisonOperator':'eq','AttributeValueList':[{'N':'1'}]}}", "1 validation error detected: Value 'eq' at 'scanFilter.v.member.comparisonOperator' failed to satisfy constraint: Member must satisfy enum value set: [IN, NULL, BETWEEN, LT, NOT_CONTAINS, EQ, GT, NOT_NULL, NE, LE, BEGINS_WITH, GE, CONTAINS]"},
        {"{'v':{'ComparisonOperator':'BETWEEN','AttributeValueList':[{'S':'b'},{'S':'a'}]}}", "The BETWEEN condition was provided a range where the lower bound is greater than the upper bound"},
        {"{'v':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'abc'}]}}", NULL},
    };
    char body[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(body, sizeof body, "{'TableName':'Rng','ScanFilter':%s}", cases[i].filter);
        INVALID("Scan", body, cases[i].msg);
    }
    INVALID("Scan", "{'TableName':'Rng','ScanFilter':{'v':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'1'}]}},'ConditionalOperator':'NOR'}",
            "1 validation error detected: Value 'NOR' at 'conditionalOperator' failed to satisfy constraint: Member must satisfy enum value set: [OR, AND]");
}
END_TEST

START_TEST(attributes_to_get)
{
    fdbt_resp r = call("GetItem", "{'TableName':'Tab','Key':{'pk':{'S':'k'}},'AttributesToGet':['n','ss','zz']}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_int_eq(json_object_object_length(fdbt_get(r.json, "Item")), 2);
    ck_assert_str_eq(fdbt_str(&r, "Item.n.N"), "5");
    fdbt_free(&r);
    r = call("BatchGetItem", "{'RequestItems':{'Tab':{'Keys':[{'pk':{'S':'k'}}],'AttributesToGet':['s']}}}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_int_eq(json_object_object_length(fdbt_get(r.json, "Responses.Tab.0")), 1);
    ck_assert_str_eq(fdbt_str(&r, "Responses.Tab.0.s.S"), "hello");
    fdbt_free(&r);
    r = call("Query", "{'TableName':'Rng','KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'p'}]}},"
                      "'AttributesToGet':['w'],'Select':'SPECIFIC_ATTRIBUTES','Limit':1}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_int_eq(json_object_object_length(fdbt_get(r.json, "Items.0")), 1);
    ck_assert_str_eq(fdbt_str(&r, "Items.0.w.S"), "w0");
    fdbt_free(&r);
    r = call("Scan", "{'TableName':'Rng','AttributesToGet':['v','sk'],'ScanFilter':{'v':{'ComparisonOperator':'EQ','AttributeValueList':[{'N':'100'}]}}}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_int_eq(json_object_object_length(fdbt_get(r.json, "Items.0")), 2);
    ck_assert_str_eq(fdbt_str(&r, "Items.0.v.N"), "100");
    fdbt_free(&r);
    INVALID("Scan", "{'TableName':'Rng','AttributesToGet':['v'],'Select':'ALL_ATTRIBUTES'}",
            "Cannot specify the AttributesToGet when choosing to get ALL_ATTRIBUTES");
    INVALID("Scan", "{'TableName':'Rng','AttributesToGet':['v'],'Select':'COUNT'}",
            "Cannot specify the AttributesToGet when choosing to get only the Count");
    INVALID("GetItem", "{'TableName':'Tab','Key':{'pk':{'S':'k'}},'AttributesToGet':[]}",
            "1 validation error detected: Value '[]' at 'attributesToGet' failed to satisfy constraint: Member must have length greater than or equal to 1");
    INVALID("GetItem", "{'TableName':'Tab','Key':{'pk':{'S':'k'}},'AttributesToGet':['n','s','n']}",
            P "Duplicate value in attribute name: n");
    INVALID("Scan", "{'TableName':'Rng','AttributesToGet':['z','b','b','z']}", P "Duplicate value in attribute name: b");
    FAILS("GetItem", "{'TableName':'Tab','Key':{'pk':{'S':'k'}},'AttributesToGet':['n',1]}", "SerializationException", NULL);
}
END_TEST

START_TEST(mixing_is_refused)
{
#define MIX "Can not use both expression and non-expression parameters in the same request: "
    INVALID("PutItem", "{'TableName':'Tab','Item':{'pk':{'S':'x'}},'Expected':{'pk':{'Exists':false}},'ConditionExpression':'attribute_not_exists(pk)'}",
            MIX "Non-expression parameters: {Expected} Expression parameters: {ConditionExpression}");
    INVALID("DeleteItem", "{'TableName':'Tab','Key':{'pk':{'S':'x'}},'ConditionalOperator':'OR','ConditionExpression':'attribute_exists(pk)'}",
            MIX "Non-expression parameters: {ConditionalOperator} Expression parameters: {ConditionExpression}");
    INVALID("UpdateItem", "{'TableName':'Tab','Key':{'pk':{'S':'x'}},'AttributeUpdates':{'a':{'Value':{'S':'1'}}},'UpdateExpression':'SET b = :b','ExpressionAttributeValues':{':b':{'S':'2'}}}",
            MIX "Non-expression parameters: {AttributeUpdates} Expression parameters: {UpdateExpression}");
    INVALID("UpdateItem", "{'TableName':'Tab','Key':{'pk':{'S':'x'}},'AttributeUpdates':{'a':{'Value':{'S':'1'}}},'Expected':{'a':{'Exists':false}},"
                          "'UpdateExpression':'SET b = :b','ConditionExpression':'attribute_exists(pk)','ExpressionAttributeValues':{':b':{'S':'2'}}}",
            MIX "Non-expression parameters: {AttributeUpdates, Expected} Expression parameters: {UpdateExpression, ConditionExpression}");
    INVALID("UpdateItem", "{'TableName':'Tab','Key':{'pk':{'S':'x'}},'Expected':{'a':{'Exists':false}},'UpdateExpression':'REMOVE b'}",
            MIX "Non-expression parameters: {Expected} Expression parameters: {UpdateExpression}");
    INVALID("Query", "{'TableName':'Rng','KeyConditionExpression':'pk = :p','ExpressionAttributeValues':{':p':{'S':'p'}},"
                     "'QueryFilter':{'v':{'ComparisonOperator':'NOT_NULL'}}}",
            MIX "Non-expression parameters: {QueryFilter} Expression parameters: {KeyConditionExpression}");
    INVALID("Query", "{'TableName':'Rng','KeyConditionExpression':'pk = :p','ExpressionAttributeValues':{':p':{'S':'p'}},"
                     "'KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'p'}]}}}",
            MIX "Non-expression parameters: {KeyConditions} Expression parameters: {KeyConditionExpression}");
    INVALID("Scan", "{'TableName':'Rng','FilterExpression':'v > :v','ExpressionAttributeValues':{':v':{'N':'1'}},'ScanFilter':{'v':{'ComparisonOperator':'NOT_NULL'}}}",
            MIX "Non-expression parameters: {ScanFilter} Expression parameters: {FilterExpression}");
    INVALID("Scan", "{'TableName':'Rng','ProjectionExpression':'v','AttributesToGet':['v'],'ScanFilter':{'v':{'ComparisonOperator':'NOT_NULL'}}}",
            MIX "Non-expression parameters: {AttributesToGet, ScanFilter} Expression parameters: {ProjectionExpression}");
    INVALID("Query", "{'TableName':'Rng','KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'p'}]}},"
                     "'QueryFilter':{'v':{'ComparisonOperator':'NOT_NULL'}},'ConditionalOperator':'AND','KeyConditionExpression':'pk = :p',"
                     "'FilterExpression':'v > :v','ProjectionExpression':'w','ExpressionAttributeValues':{':p':{'S':'p'},':v':{'N':'1'}}}",
            MIX "Non-expression parameters: {QueryFilter, ConditionalOperator, KeyConditions} Expression parameters: {ProjectionExpression, FilterExpression, KeyConditionExpression}");
    INVALID("Scan", "{'TableName':'Rng','ConditionalOperator':'AND','FilterExpression':'v > :v','ExpressionAttributeValues':{':v':{'N':'1'},':u':{'N':'2'}}}",
            MIX "Non-expression parameters: {ConditionalOperator} Expression parameters: {FilterExpression}");
    /* KeyConditions goes with a ProjectionExpression */
    fdbt_resp r = call("Query", "{'TableName':'Rng','KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'q'}]}},'ProjectionExpression':'v'}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_int_eq(json_object_object_length(fdbt_get(r.json, "Items.0")), 1);
    ck_assert_str_eq(fdbt_str(&r, "Items.0.v.N"), "100");
    fdbt_free(&r);
    INVALID("GetItem", "{'TableName':'Tab','Key':{'pk':{'S':'k'}},'AttributesToGet':['n'],'ProjectionExpression':'n'}",
            MIX "Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression}");
    INVALID("BatchGetItem", "{'RequestItems':{'Tab':{'Keys':[{'pk':{'S':'k'}}],'AttributesToGet':['n'],'ProjectionExpression':'n'}}}",
            MIX "Non-expression parameters: {AttributesToGet} Expression parameters: {ProjectionExpression}");
}
END_TEST

START_TEST(expression_maps_without_expressions)
{
    INVALID("PutItem", "{'TableName':'Tab','Item':{'pk':{'S':'x'}},'Expected':{'pk':{'Exists':false}},'ExpressionAttributeValues':{':a':{'S':'1'}}}",
            "ExpressionAttributeValues can only be specified when using expressions: ConditionExpression is null");
    INVALID("UpdateItem", "{'TableName':'Tab','Key':{'pk':{'S':'x'}},'AttributeUpdates':{'a':{'Value':{'S':'1'}}},'ExpressionAttributeValues':{':a':{'S':'1'}}}",
            "ExpressionAttributeValues can only be specified when using expressions: UpdateExpression and ConditionExpression are null");
    INVALID("DeleteItem", "{'TableName':'Tab','Key':{'pk':{'S':'x'}},'Expected':{'pk':{'Exists':false}},'ExpressionAttributeNames':{'#a':'a'}}",
            "ExpressionAttributeNames can only be specified when using expressions");
    INVALID("Query", "{'TableName':'Rng','KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'p'}]}},'ExpressionAttributeValues':{':a':{'S':'1'}}}",
            "ExpressionAttributeValues can only be specified when using expressions: FilterExpression and KeyConditionExpression are null");
    INVALID("Scan", "{'TableName':'Rng','ScanFilter':{'v':{'ComparisonOperator':'NOT_NULL'}},'ExpressionAttributeValues':{':a':{'S':'1'}}}",
            "ExpressionAttributeValues can only be specified when using expressions: FilterExpression is null");
    INVALID("Scan", "{'TableName':'Rng','ScanFilter':{'v':{'ComparisonOperator':'NOT_NULL'}},'ExpressionAttributeNames':{'#a':'a'}}",
            "ExpressionAttributeNames can only be specified when using expressions");
}
END_TEST

START_TEST(key_conditions_on_an_index)
{
    fdbt_resp r = call("CreateTable",
        "{'TableName':'Idx','KeySchema':[{'AttributeName':'pk','KeyType':'HASH'}],"
        "'AttributeDefinitions':[{'AttributeName':'pk','AttributeType':'S'},{'AttributeName':'g','AttributeType':'S'},{'AttributeName':'gs','AttributeType':'N'}],"
        "'BillingMode':'PAY_PER_REQUEST','GlobalSecondaryIndexes':[{'IndexName':'byG','KeySchema':[{'AttributeName':'g','KeyType':'HASH'},"
        "{'AttributeName':'gs','KeyType':'RANGE'}],'Projection':{'ProjectionType':'INCLUDE','NonKeyAttributes':['v']}}]}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    fdbt_free(&r);
    OK("PutItem", "{'TableName':'Idx','Item':{'pk':{'S':'a'},'g':{'S':'x'},'gs':{'N':'3'},'v':{'N':'1'},'other':{'S':'o'}}}");
    OK("PutItem", "{'TableName':'Idx','Item':{'pk':{'S':'b'},'g':{'S':'x'},'gs':{'N':'7'},'v':{'N':'2'}}}");
    OK("PutItem", "{'TableName':'Idx','Item':{'pk':{'S':'c'},'g':{'S':'y'},'gs':{'N':'5'}}}");
    r = call("Query", "{'TableName':'Idx','IndexName':'byG','KeyConditions':{'g':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'x'}]},"
                      "'gs':{'ComparisonOperator':'GT','AttributeValueList':[{'N':'4'}]}},'QueryFilter':{'v':{'ComparisonOperator':'NOT_NULL'}}}");
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 1);
    ck_assert_str_eq(fdbt_str(&r, "Items.0.pk.S"), "b");
    ck_assert_ptr_null(fdbt_get(r.json, "Items.0.other"));
    fdbt_free(&r);
    INVALID("Query", "{'TableName':'Idx','IndexName':'byG','KeyConditions':{'pk':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'a'}]}}}",
            "Query condition missed key schema element: g");
    INVALID("Query", "{'TableName':'Idx','IndexName':'byG','KeyConditions':{'g':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'x'}]}},"
                     "'QueryFilter':{'gs':{'ComparisonOperator':'NOT_NULL'}}}",
            "QueryFilter can only contain non-primary key attributes: Primary key attribute: gs");
    INVALID("Query", "{'TableName':'Idx','IndexName':'byG','KeyConditions':{'g':{'ComparisonOperator':'EQ','AttributeValueList':[{'S':'x'}]}},"
                     "'AttributesToGet':['other']}",
            "One or more parameter values were invalid: Global secondary index byG does not project [other]");
}
END_TEST

/* Thousands of conditions in one filter: evaluated without deep recursion. */
START_TEST(many_conditions)
{
    enum { N = 20000 };
    size_t cap = (size_t)N * 96 + 256, o = 0;
    char *body = malloc(cap);
    ck_assert_ptr_nonnull(body);
    o += (size_t)snprintf(body + o, cap - o, "{\"TableName\":\"Rng\",\"ConditionalOperator\":\"OR\",\"ScanFilter\":{");
    for (int i = 0; i < N; i++)
        o += (size_t)snprintf(body + o, cap - o, "%s\"a%d\":{\"ComparisonOperator\":\"EQ\",\"AttributeValueList\":[{\"N\":\"%d\"}]}",
                              i ? "," : "", i, i);
    snprintf(body + o, cap - o, ",\"v\":{\"ComparisonOperator\":\"EQ\",\"AttributeValueList\":[{\"N\":\"100\"}]}}}");
    fdbt_resp r = fdbt_call("Scan", body);
    free(body);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_int_eq(json_object_get_int(fdbt_get(r.json, "Count")), 1);
    fdbt_free(&r);
    /* an empty AttributeUpdates is no update: the missing item is created with its key */
    OK("UpdateItem", "{'TableName':'Tab','Key':{'pk':{'S':'empty'}},'AttributeUpdates':{}}");
    r = call("GetItem", "{'TableName':'Tab','Key':{'pk':{'S':'empty'}}}");
    ck_assert_str_eq(fdbt_str(&r, "Item.pk.S"), "empty");
    fdbt_free(&r);
}
END_TEST

START_TEST(transactions_and_batches_ignore_legacy)
{
    /* The actions of TransactWriteItems and BatchWriteItem have no legacy members in
     * DynamoDB's API: ignored, as DynamoDB does with members a shape lacks. */
    OK("TransactWriteItems", "{'TransactItems':[{'Put':{'TableName':'Tab','Item':{'pk':{'S':'x'}},'Expected':{'pk':{'Exists':true,'Value':{'S':'no'}}}}}]}");
    OK("BatchWriteItem", "{'RequestItems':{'Tab':[{'PutRequest':{'Item':{'pk':{'S':'y'}},'Expected':{'pk':{'Exists':true,'Value':{'S':'no'}}}}}]}}");
    fdbt_resp r = call("BatchGetItem", "{'RequestItems':{'Tab':{'Keys':[{'pk':{'S':'x'}},{'pk':{'S':'y'}}]}}}");
    ck_assert_int_eq((int)json_object_array_length(fdbt_get(r.json, "Responses.Tab")), 2);
    fdbt_free(&r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fakedb_legacy");
    TCase *tc = tcase_create("legacy");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, expected_exists_and_value);
    tcase_add_test(tc, expected_every_operator);
    tcase_add_test(tc, conditional_operator);
    tcase_add_test(tc, expected_validation);
    tcase_add_test(tc, attribute_updates_actions);
    tcase_add_test(tc, attribute_updates_errors);
    tcase_add_test(tc, key_conditions);
    tcase_add_test(tc, key_conditions_errors);
    tcase_add_test(tc, query_filter_every_operator);
    tcase_add_test(tc, scan_filter_and_validation);
    tcase_add_test(tc, attributes_to_get);
    tcase_add_test(tc, mixing_is_refused);
    tcase_add_test(tc, expression_maps_without_expressions);
    tcase_add_test(tc, key_conditions_on_an_index);
    tcase_add_test(tc, many_conditions);
    tcase_add_test(tc, transactions_and_batches_ignore_legacy);
    suite_add_tcase(s, tc);
    return dl_check_run(s);
}
