"""Tests of dynalock_fakedb and its pytest plugin against the fakedb just built (FAKEDB_BIN):
inner test sessions run through pytester in a subprocess exercise every fixture, and
the outer tests check what those sessions leave behind (no fakedb left running)."""
import os
import socket
import urllib.error
import urllib.request

import botocore.exceptions
import pytest

from dynalock_fakedb import FakeDB, FakeDBError

# The inner session: every fixture and admin call, with boto3 as a user's tests would.
EVERY_FIXTURE = '''
import os
import boto3
import botocore.config
import botocore.exceptions
import pytest
from dynalock_fakedb import FakeDBError

TABLE = dict(TableName="Tbl", BillingMode="PAY_PER_REQUEST",
             KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
             AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
NO_RETRY = botocore.config.Config(retries={"total_max_attempts": 1})


def test_endpoint(fakedb, fakedb_endpoint):
    assert fakedb_endpoint == fakedb.endpoint
    assert fakedb_endpoint == "http://127.0.0.1:%d" % fakedb.port
    assert fakedb.health()["ok"] is True
    assert fakedb.running


def test_env(fakedb_env, fakedb):
    assert os.environ["AWS_ENDPOINT_URL_DYNAMODB"] == fakedb.endpoint
    assert os.environ["AWS_ACCESS_KEY_ID"] == fakedb_env["AWS_ACCESS_KEY_ID"] == "fake"
    assert "AWS_PROFILE" not in os.environ
    # Region and credentials from the environment alone; the endpoint named (boto3 reads
    # AWS_ENDPOINT_URL_DYNAMODB itself only from 1.28 on).
    client = boto3.client("dynamodb", endpoint_url=os.environ["AWS_ENDPOINT_URL_DYNAMODB"])
    assert client.meta.region_name == "us-east-1"
    client.create_table(**TABLE)
    assert client.list_tables()["TableNames"] == ["Tbl"]


def test_first_of_two_creates(fakedb_client):
    fakedb_client.create_table(**TABLE)
    fakedb_client.put_item(TableName="Tbl", Item={"pk": {"S": "a"}})
    assert fakedb_client.list_tables()["TableNames"] == ["Tbl"]


def test_second_of_two_sees_a_reset(fakedb_client, fakedb):
    assert fakedb_client.list_tables()["TableNames"] == []
    assert fakedb.faults() == []
    assert fakedb.stats()["requests"] == 1


def test_clock_moves_expire_a_ttl_item(fakedb, fakedb_client):
    now = fakedb.now_ms()
    fakedb_client.create_table(**TABLE)
    fakedb_client.update_time_to_live(TableName="Tbl", TimeToLiveSpecification={
        "Enabled": True, "AttributeName": "expires"})
    expires = now // 1000 + 60
    fakedb_client.put_item(TableName="Tbl", Item={"pk": {"S": "a"}, "expires": {"N": str(expires)}})
    key = {"pk": {"S": "a"}}
    assert fakedb.advance_clock(30000) == now + 30000
    assert "Item" in fakedb_client.get_item(TableName="Tbl", Key=key)
    assert fakedb.set_clock(expires * 1000) == expires * 1000
    assert "Item" not in fakedb_client.get_item(TableName="Tbl", Key=key)
    assert fakedb.now_ms() == expires * 1000
    assert fakedb.wait_clock(expires * 1000, timeout_ms=0) is True
    assert fakedb.wait_clock(expires * 1000 + 1, timeout_ms=0) is False
    with pytest.raises(FakeDBError, match="HTTP 400"):
        fakedb.set_clock(now)


def test_faults(fakedb, fakedb_client):
    fakedb_client.create_table(**TABLE)
    client = fakedb.boto3_client(config=NO_RETRY)
    fid = fakedb.add_fault(operation="PutItem", table="Tbl", error_type="ThrottlingException")
    other = fakedb.add_fault(kind="delay", operation="Scan", delay_ms=1, count=3)
    listed = {f["id"]: f for f in fakedb.faults()}
    assert set(listed) == {fid, other}
    assert listed[fid]["kind"] == "error" and listed[fid]["fired"] == 0
    assert listed[other]["kind"] == "delay" and listed[other]["count"] == 3
    with pytest.raises(botocore.exceptions.ClientError) as e:
        client.put_item(TableName="Tbl", Item={"pk": {"S": "a"}})
    assert e.value.response["Error"]["Code"] == "ThrottlingException"
    assert {f["id"]: f["fired"] for f in fakedb.faults()}[fid] == 1
    fakedb.remove_fault(fid)
    assert [f["id"] for f in fakedb.faults()] == [other]
    client.put_item(TableName="Tbl", Item={"pk": {"S": "a"}})
    fakedb.clear_faults()
    assert fakedb.faults() == []


def test_stats_and_metrics(fakedb, fakedb_resource):
    before = fakedb.metric("fakedb_requests_total", operation="PutItem", status="200")
    table = fakedb_resource.create_table(**TABLE)
    table.put_item(Item={"pk": "a"})
    table.put_item(Item={"pk": "b"})
    with pytest.raises(botocore.exceptions.ClientError):
        table.put_item(Item={"pk": "b"}, ConditionExpression="attribute_not_exists(pk)")
    stats = fakedb.stats()
    assert stats["operations"]["PutItem"] == {"requests": 3, "condition_failures": 1}
    assert stats["condition_failures"] == 1
    assert fakedb.metric("fakedb_requests_total", operation="PutItem", status="200") == before + 2
    assert fakedb.metric("fakedb_table_items", table="Tbl") == 2
    assert "# TYPE fakedb_requests_total counter" in fakedb.metrics()
'''

# A session whose test fails (and one that errors in its own fixture): the server it
# started is gone when the session ends. The conftest records where it ran.
RECORD_SERVER = '''
import pytest

@pytest.fixture(autouse=True)
def record(fakedb_server):
    with open("server.txt", "w") as f:
        f.write("%d %d" % (fakedb_server.process.pid, fakedb_server.port))
'''


def gone(pid, port):
    try:
        os.kill(pid, 0)
        return False
    except ProcessLookupError:
        pass
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_every_fixture(pytester):
    pytester.makepyfile(test_inner=EVERY_FIXTURE)
    result = pytester.runpytest_subprocess("-p", "dynalock_fakedb.plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=7)


def test_a_failing_test_still_stops_the_server(pytester):
    pytester.makeconftest(RECORD_SERVER)
    pytester.makepyfile(test_inner='''
import pytest

def test_fails(fakedb):
    fakedb.advance_clock(1)
    assert False, "this test fails"

@pytest.fixture
def broken():
    raise RuntimeError("a fixture that breaks")

def test_errors(fakedb, broken):
    pass
''')
    result = pytester.runpytest_subprocess("-p", "dynalock_fakedb.plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, errors=1)
    pid, port = map(int, (pytester.path / "server.txt").read_text().split())
    assert gone(pid, port), "fakedb %d still serves on port %d" % (pid, port)


def test_an_interrupted_session_still_stops_the_server(pytester):
    pytester.makeconftest(RECORD_SERVER)
    pytester.makepyfile(test_inner='''
def test_interrupted(fakedb):
    raise KeyboardInterrupt

def test_never_run(fakedb):
    pass
''')
    result = pytester.runpytest_subprocess("-p", "dynalock_fakedb.plugin", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    pid, port = map(int, (pytester.path / "server.txt").read_text().split())
    assert gone(pid, port), "fakedb %d still serves on port %d" % (pid, port)


def test_options_reach_fakedb(pytester, monkeypatch):
    # --fakedb-clock, --fakedb-arg and FAKEDB_ARGS: the clock starts where they say, and
    # fakedb refuses what it refuses (a bad --threads from FAKEDB_ARGS).
    pytester.makepyfile(test_inner='''
def test_clock(fakedb):
    assert fakedb.now_ms() == 1700000000000
    assert fakedb.args == ["--threads", "2", "--log"]
''')
    monkeypatch.setenv("FAKEDB_ARGS", "--threads 2")
    result = pytester.runpytest_subprocess("-p", "dynalock_fakedb.plugin", "-p", "no:cacheprovider",
                                           "--fakedb-clock=fake:1700000000000", "--fakedb-arg=--log")
    result.assert_outcomes(passed=1)
    monkeypatch.setenv("FAKEDB_ARGS", "--threads 0")
    result = pytester.runpytest_subprocess("-p", "dynalock_fakedb.plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fakedb exited with status 64 before serving*bad --threads*"])


def test_a_missing_binary_is_named(pytester, monkeypatch):
    pytester.makepyfile(test_inner="def test_x(fakedb):\n    pass\n")
    monkeypatch.setenv("FAKEDB_BIN", str(pytester.path / "no-such-fakedb"))
    result = pytester.runpytest_subprocess("-p", "dynalock_fakedb.plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no-such-fakedb*is not an executable file*"])
    # A test that does not ask for fakedb needs no binary at all.
    pytester.makepyfile(test_inner="def test_x():\n    pass\n")
    pytester.runpytest_subprocess("-p", "dynalock_fakedb.plugin").assert_outcomes(passed=1)


def test_fakedb_class_start_stop():
    db = FakeDB()
    with pytest.raises(FakeDBError, match="not started"):
        db.health()
    db.start()
    pid, port = db.process.pid, db.port
    assert db.health()["ok"] is True
    with pytest.raises(FakeDBError, match="already started"):
        db.start()
    assert db.stop() == 0          # SIGTERM: fakedb finishes and exits 0
    assert db.stop() is None       # idempotent
    assert gone(pid, port)
    with FakeDB(clock="system") as db2:
        assert db2.health()["ok"] is True
        with pytest.raises(FakeDBError, match="HTTP 400"):
            db2.advance_clock(1)   # a system clock does not move
    assert not db2.running


def test_admin_errors_name_the_request():
    with FakeDB() as db:
        with pytest.raises(FakeDBError, match="POST /fake/faults: HTTP 400"):
            db.add_fault(kind="no-such-kind")
        with pytest.raises(FakeDBError, match="HTTP 404"):
            db._request("GET", "/fake/nothing")


def test_credentials_guard_the_admin_api():
    with FakeDB(credentials=True, access_key="AKIDPLUGIN", secret_key="plugin-secret") as db:
        db.reset()
        assert db.stats()["requests"] == 0
        client = db.boto3_client()
        assert client.list_tables()["TableNames"] == []
        # Without the keys, /fake/ answers 403 and DynamoDB refuses the signature.
        req = urllib.request.Request(db.endpoint + "/fake/stats")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=30)
        assert e.value.code == 403
        kwargs = dict(db.client_kwargs(), aws_secret_access_key="not-the-secret")
        import boto3
        with pytest.raises(botocore.exceptions.ClientError):
            boto3.client("dynamodb", **kwargs).list_tables()
