"""An installed dynalock_fakedb (run.sh copies this file out of the tree and runs it
with no -p): pytest found the plugin through its pytest11 entry point, and it works."""
import os


def test_plugin_loaded_by_entry_point(request, fakedb_client):
    plugin = request.config.pluginmanager.get_plugin("dynalock_fakedb")
    assert plugin is not None, "the pytest11 entry point did not register the plugin"
    assert os.environ["PYTHONPATH"] in plugin.__file__
    fakedb_client.create_table(TableName="Tbl", BillingMode="PAY_PER_REQUEST",
                               KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                               AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
    assert fakedb_client.list_tables()["TableNames"] == ["Tbl"]
