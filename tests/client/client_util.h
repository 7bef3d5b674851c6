/* client_util.h: small builders shared by the client suites: keys, items and a check
 * runner. Header-only so that each suite stays one source file. */
#ifndef CLIENT_UTIL_H
#define CLIENT_UTIL_H

#include <check.h>

#include "dl_check.h"
#include <stdio.h>
#include <stdlib.h>

#include <dynalock/ddb.h>

#include "dl_fixture.h"

static inline ddb_item *key2(const char *pk, const char *sk)
{
    ddb_item *k = ddb_item_new();
    ck_assert_int_eq(ddb_item_set_s(k, "pk", pk), 0);
    if (sk)
        ck_assert_int_eq(ddb_item_set_s(k, "sk", sk), 0);
    return k;
}


#endif
