"""PartiQL cases for differential.py: ExecuteStatement, BatchExecuteStatement and
ExecuteTransaction against a table of their own (DiffPq, pk S + sk S)."""
P = "DiffPq"
Q = '"DiffPq"'


def es(stmt, **kw):
    return dict(Statement=stmt, **kw)


CASES = [
    ("pq-create", "CreateTable", {"TableName": P, "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                                  "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"}],
                                  "BillingMode": "PAY_PER_REQUEST"}),
    ("pq-insert", "ExecuteStatement", es(f"INSERT INTO {Q} VALUE {{'pk': 'a', 'sk': 'A', 'n': 1, 'l': [1, 'x'], 'm': {{'k': true}}, 's': <<'x', 'y'>>, 'z': null}}")),
    ("pq-insert-params", "ExecuteStatement", es(f"INSERT INTO {Q} VALUE {{'pk': ?, 'sk': ?, 'n': ?}}", Parameters=[{"S": "b"}, {"S": "A"}, {"N": "2"}])),
    ("pq-insert-dup", "ExecuteStatement", es(f"INSERT INTO {Q} VALUE {{'pk': 'a', 'sk': 'A'}}")),
    ("pq-insert-no-sk", "ExecuteStatement", es(f"INSERT INTO {Q} VALUE {{'pk': 'c'}}")),
    ("pq-insert-key-type", "ExecuteStatement", es(f"INSERT INTO {Q} VALUE {{'pk': 1, 'sk': 'A'}}")),
    ("pq-insert-returning", "ExecuteStatement", es(f"INSERT INTO {Q} VALUE {{'pk': 'c', 'sk': 'A'}} RETURNING ALL OLD *")),
    ("pq-select-key", "ExecuteStatement", es(f"SELECT * FROM {Q} WHERE pk = 'a' AND sk = 'A'")),
    ("pq-select-projection", "ExecuteStatement", es(f"SELECT n, l[1], m.k FROM {Q} WHERE pk = 'a' AND sk = 'A'")),
    ("pq-select-scan~unordered", "ExecuteStatement", es(f"SELECT * FROM {Q}")),
    ("pq-select-filter~unordered", "ExecuteStatement", es(f"SELECT pk FROM {Q} WHERE n BETWEEN 1 AND 3 AND pk IN ['a', 'b'] AND NOT contains(l, 'q')")),
    ("pq-select-missing~unordered", "ExecuteStatement", es(f"SELECT pk FROM {Q} WHERE l IS MISSING OR attribute_exists(z)")),
    ("pq-select-begins", "ExecuteStatement", es(f"SELECT pk FROM {Q} WHERE pk = 'a' AND begins_with(sk, 'A')")),
    ("pq-select-params-few", "ExecuteStatement", es(f"SELECT * FROM {Q} WHERE pk = ? AND sk = ?", Parameters=[{"S": "a"}])),
    ("pq-select-key-type", "ExecuteStatement", es(f"SELECT * FROM {Q} WHERE pk = 1")),
    ("pq-select-no-table", "ExecuteStatement", es("SELECT * FROM \"NopeNope\"")),
    ("pq-select-no-index", "ExecuteStatement", es(f"SELECT * FROM {Q}.\"idx\"")),
    ("pq-syntax", "ExecuteStatement", es(f"SELEC * FROM {Q}")),
    ("pq-syntax-where", "ExecuteStatement", es(f"SELECT * FROM {Q} WHERE")),
    ("pq-empty", "ExecuteStatement", es("")),
    ("pq-exists-alone", "ExecuteStatement", es(f"EXISTS(SELECT * FROM {Q} WHERE pk = 'a' AND sk = 'A')")),
    ("pq-bad-token", "ExecuteStatement", es(f"SELECT * FROM {Q}", NextToken="garbage")),
    ("pq-update-returning", "ExecuteStatement", es(f"UPDATE {Q} SET n = n + 1 SET t = 'x' WHERE pk = 'a' AND sk = 'A' RETURNING ALL NEW *")),
    ("pq-update-modified-old", "ExecuteStatement", es(f"UPDATE {Q} REMOVE t WHERE pk = 'a' AND sk = 'A' RETURNING MODIFIED OLD *")),
    ("pq-update-missing", "ExecuteStatement", es(f"UPDATE {Q} SET n = 5 WHERE pk = 'zz' AND sk = 'A'")),
    ("pq-update-cond-fails", "ExecuteStatement", es(f"UPDATE {Q} SET n = 5 WHERE pk = 'a' AND sk = 'A' AND n = 100")),
    ("pq-update-partial-key", "ExecuteStatement", es(f"UPDATE {Q} SET n = 5 WHERE pk = 'a'")),
    ("pq-delete-missing", "ExecuteStatement", es(f"DELETE FROM {Q} WHERE pk = 'zz' AND sk = 'A'")),
    ("pq-delete-missing-cond", "ExecuteStatement", es(f"DELETE FROM {Q} WHERE pk = 'zz' AND sk = 'A' AND n = 1")),
    ("pq-delete-returning", "ExecuteStatement", es(f"DELETE FROM {Q} WHERE pk = 'b' AND sk = 'A' RETURNING ALL OLD *")),
    ("pq-batch-reads", "BatchExecuteStatement", {"Statements": [es(f"SELECT * FROM {Q} WHERE pk = 'a' AND sk = 'A'"), es(f"SELECT * FROM {Q} WHERE pk = 'zz' AND sk = 'A'"),
                                                                  es(f"SELECT * FROM {Q} WHERE pk = 'a'"), es("SELEC")]}),
    ("pq-batch-writes", "BatchExecuteStatement", {"Statements": [es(f"INSERT INTO {Q} VALUE {{'pk': 'f', 'sk': 'A'}}"), es(f"UPDATE {Q} SET x = 1 WHERE pk = 'nope' AND sk = 'A'"),
                                                                   es("DELETE FROM \"NopeNope\" WHERE pk = 'nope' AND sk = 'A'")]}),
    ("pq-batch-dup", "BatchExecuteStatement", {"Statements": [es(f"INSERT INTO {Q} VALUE {{'pk': 'a', 'sk': 'A'}}")]}),
    ("pq-batch-mixed", "BatchExecuteStatement", {"Statements": [es(f"INSERT INTO {Q} VALUE {{'pk': 'g', 'sk': 'A'}}"), es(f"SELECT * FROM {Q} WHERE pk = 'a' AND sk = 'A'")]}),
    ("pq-batch-empty", "BatchExecuteStatement", {"Statements": []}),
    ("pq-tx-cancel", "ExecuteTransaction", {"TransactStatements": [es(f"INSERT INTO {Q} VALUE {{'pk': 'g', 'sk': 'A'}}"), es(f"INSERT INTO {Q} VALUE {{'pk': 'a', 'sk': 'A'}}"),
                                                                   es(f"UPDATE {Q} SET x = 1 WHERE pk = 'nope' AND sk = 'A'")]}),
    ("pq-tx-exists-fails", "ExecuteTransaction", {"TransactStatements": [es(f"EXISTS(SELECT * FROM {Q} WHERE pk = 'a' AND sk = 'A' AND n = 3)"), es(f"INSERT INTO {Q} VALUE {{'pk': 'h', 'sk': 'A'}}")]}),
    ("pq-tx-writes", "ExecuteTransaction", {"TransactStatements": [es(f"INSERT INTO {Q} VALUE {{'pk': 'i', 'sk': 'A'}}"), es(f"DELETE FROM {Q} WHERE pk = 'f' AND sk = 'A'")]}),
    ("pq-tx-reads", "ExecuteTransaction", {"TransactStatements": [es(f"SELECT * FROM {Q} WHERE pk = 'a' AND sk = 'A'"), es(f"SELECT * FROM {Q} WHERE pk = 'zz' AND sk = 'A'")]}),
    ("pq-tx-mixed", "ExecuteTransaction", {"TransactStatements": [es(f"SELECT * FROM {Q} WHERE pk = 'a' AND sk = 'A'"), es(f"INSERT INTO {Q} VALUE {{'pk': 'j', 'sk': 'A'}}")]}),
    ("pq-tx-select-not-key", "ExecuteTransaction", {"TransactStatements": [es(f"SELECT * FROM {Q} WHERE pk = 'a'")]}),
    ("pq-tx-empty", "ExecuteTransaction", {"TransactStatements": []}),
    ("pq-no-statement", "ExecuteStatement", {}),
    ("pq-after~unordered", "ExecuteStatement", es(f"SELECT * FROM {Q}")),
]
