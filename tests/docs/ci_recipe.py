#!/usr/bin/env python3
"""Runs docs/ci.md's recipe: the shell blocks marked `<!-- ci-recipe: NAME -->`, as they
are, in a scratch checkout with GitHub Actions' conventions ($RUNNER_TEMP, $GITHUB_ENV,
$GITHUB_PATH), and checks the workflow's run: steps against them, so the page cannot drift.
Usage: ci_recipe.py SOURCE_DIR source|deb|docker   (exits 77 when a path cannot run here)
deb mode installs the fakedb package system-wide for a moment, under the lock packaging_deb
takes; DYNALOCK_DEBS_PREBUILT=DIR gives it packages already built (see deb_block)."""
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def blocks(doc):
    """{name: (argument, text)} of the marked code blocks."""
    out = {}
    for m in re.finditer(r"<!-- ci-recipe: (\S+)(?: (\S+))? -->\n```\w*\n(.*?)```", doc, re.S):
        out[m.group(1)] = (m.group(2), m.group(3))
    return out


def check_workflow(found):
    """Every line of the shell steps is in the workflow's run: steps, in order."""
    workflow = found["workflow"][1]
    runs = []
    for m in re.finditer(r"run: \|\n((?:          .*\n)+)", workflow):
        runs.append("".join(line[10:] + "\n" for line in m.group(1).splitlines()))
    wanted = [found[n][1] for n in ("deps", "build", "start", "check", "stop", "pytest-deps", "pytest")]
    missing = [w for w in wanted if w not in runs]
    for w in missing:
        print("ci.md: the workflow has no run: step that is this block:\n" + w)
    if [r for r in runs if r in wanted] != wanted:
        print("ci.md: the workflow's steps are not in the recipe's order")
        return False
    return not missing


class Runner:
    """Runs blocks one after another, as the steps of one job."""

    def __init__(self, checkout, temp):
        self.cwd = checkout
        self.temp = temp
        self.env = dict(os.environ)
        for name in list(self.env):
            if name.startswith("AWS_") or name in ("FAKEDB_BIN", "FAKEDB_ARGS", "PYTHONPATH"):
                del self.env[name]
        # Debian 12's PATH, as in the job's debian:12 container: `python3` is Debian's
        # (with its pytest and boto3), not one a developer put first.
        self.env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        for name in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "VIRTUAL_ENV"):
            self.env.pop(name, None)
        self.env.update(RUNNER_TEMP=temp, GITHUB_ENV=os.path.join(temp, "github_env"),
                        GITHUB_PATH=os.path.join(temp, "github_path"),
                        # pip, offline: Debian's setuptools builds ./python, and the
                        # virtual environment sees Debian's pytest and boto3.
                        PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="false",
                        PIP_DISABLE_PIP_VERSION_CHECK="1")
        for f in ("github_env", "github_path"):
            open(os.path.join(temp, f), "w").close()

    def run(self, name, text):
        print("== %s" % name, flush=True)
        r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=self.cwd, env=self.env)
        if r.returncode != 0:
            raise SystemExit("ci.md: block %s exited %d" % (name, r.returncode))
        # What the step left for the next ones.
        with open(self.env["GITHUB_PATH"]) as f:
            for line in f.read().split():
                if line not in self.env["PATH"].split(":"):
                    self.env["PATH"] = line + ":" + self.env["PATH"]
        with open(self.env["GITHUB_ENV"]) as f:
            for line in f.read().splitlines():
                key, _, value = line.partition("=")
                self.env[key] = value


def scratch_checkout(src, into, copy_all):
    """The tree as a pipeline checks it out: python/ copied (pip builds in it), tests/ an
    empty folder of its own (the example test is written there), the rest linked; or
    everything copied (scripts/package.sh archives the tree it is in)."""
    os.makedirs(into)
    for entry in os.listdir(src):
        if entry.startswith("build") or entry in (".git", ".peers", "_install", "debs"):
            continue
        if entry == "tests" and not copy_all:
            os.makedirs(os.path.join(into, entry)) # the pipeline's own tests go here
            continue
        if entry == "python" or copy_all:
            if os.path.isdir(os.path.join(src, entry)):
                shutil.copytree(os.path.join(src, entry), os.path.join(into, entry), symlinks=True,
                                ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            else:
                shutil.copy2(os.path.join(src, entry), os.path.join(into, entry))
        else:
            os.symlink(os.path.join(src, entry), os.path.join(into, entry))


def deb_block(text, checkout):
    """The deb block to run. With DYNALOCK_DEBS_PREBUILT=DIR (.ci/run: the packages that
    packaging_deb built from this tree and lintian checked a moment before), its
    `scripts/package.sh` line is not run again: its arguments are checked against what
    package.sh accepts, its --out folder gets DIR's packages, and the rest runs as
    written. Otherwise the block runs as it is."""
    prebuilt = os.environ.get("DYNALOCK_DEBS_PREBUILT")
    if not prebuilt:
        return text
    lines = text.splitlines(keepends=True)
    words = lines[0].split()
    assert words[0] == "scripts/package.sh", "ci.md: the deb block does not start with scripts/package.sh"
    out, args = "build-deb", words[1:]
    while args:
        if args[0] == "--out" and len(args) > 1:
            out, args = args[1], args[2:]
        elif args[0] == "--no-lintian":
            args = args[1:]
        else:
            raise SystemExit("ci.md: scripts/package.sh takes no argument %r" % args[0])
    debs = sorted(f for f in os.listdir(prebuilt) if f.endswith(".deb"))
    if len(debs) != 4:
        raise SystemExit("ci_recipe: %s holds %d packages, not 4" % (prebuilt, len(debs)))
    os.makedirs(os.path.join(checkout, out))
    for f in debs:
        shutil.copy2(os.path.join(prebuilt, f), os.path.join(checkout, out, f))
    print("ci_recipe: %s: the packages packaging_deb built, from %s" % (lines[0].strip(), prebuilt))
    return "".join(lines[1:])


def pid_gone(pid):
    # The server was started by a block's shell that has exited: it is not our child,
    # so wait for it to go as `tail --pid` does (it polls; a test of an exit, not a sleep
    # standing in for one).
    r = subprocess.run(["timeout", "30", "tail", "--pid=%d" % pid, "-f", "/dev/null"])
    return r.returncode == 0


def serve_and_stop(runner, found, temp):
    runner.run("start", found["start"][1])
    endpoint = runner.env["AWS_ENDPOINT_URL_DYNAMODB"]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", endpoint), endpoint
    runner.run("check", found["check"][1])
    assert runner.env["AWS_REGION"] == runner.env["AWS_DEFAULT_REGION"] == "us-east-1"
    # A table through the endpoint, with the environment the steps set.
    py = shutil.which("python3", path="/usr/bin") or sys.executable
    code = ("import boto3, os\n"
            "c = boto3.client('dynamodb', endpoint_url=os.environ['AWS_ENDPOINT_URL_DYNAMODB'])\n"
            "c.create_table(TableName='Orders', BillingMode='PAY_PER_REQUEST',"
            " KeySchema=[{'AttributeName': 'id', 'KeyType': 'HASH'}],"
            " AttributeDefinitions=[{'AttributeName': 'id', 'AttributeType': 'S'}])\n"
            "assert c.list_tables()['TableNames'] == ['Orders']\n")
    if subprocess.run([py, "-c", "import boto3"], capture_output=True).returncode == 0:
        subprocess.run([py, "-c", code], env=runner.env, check=True)
    pid = int(open(os.path.join(temp, "fakedb.pid")).read())
    runner.run("stop", found["stop"][1])
    metrics = open(os.path.join(temp, "fakedb-metrics.txt")).read()
    assert "fakedb_requests_total" in metrics, metrics[:200]
    assert pid_gone(pid), "fakedb %d did not stop" % pid


def main(src, mode):
    doc = open(os.path.join(src, "docs", "ci.md"), encoding="utf-8").read()
    found = blocks(doc)
    need = {"deps", "build", "deb", "start", "check", "stop", "pytest-deps", "pytest-example",
            "pytest", "docker", "docker-stop", "workflow"}
    if need - set(found):
        print("ci.md: missing recipe blocks:", sorted(need - set(found)))
        return 1
    if not check_workflow(found):
        return 1
    if mode == "deb":
        if os.environ.get("DYNALOCK_PACKAGE_TEST") != "1":
            print("ci_recipe: skipped: set DYNALOCK_PACKAGE_TEST=1 to build and install the packages")
            return SKIP
        if os.geteuid() != 0 or not shutil.which("dpkg"):
            print("ci_recipe: skipped: needs root and dpkg")
            return SKIP
        # One package test at a time on a machine: packaging_deb's lock (tests/packaging/deb.sh).
        lock = open("/var/lock/dynalock-packaging-test.lock", "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
        if subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", "fakedb"],
                          capture_output=True, text=True).stdout.startswith("ii"):
            print("ci_recipe: skipped: fakedb is installed already")
            return SKIP
    if mode == "docker":
        if not shutil.which("docker") or subprocess.run(["docker", "info"], capture_output=True).returncode:
            print("ci_recipe: skipped: no working docker here")
            return SKIP
    if mode == "source" and os.geteuid() != 0 and not shutil.which("sudo"):
        print("ci_recipe: skipped: scripts/deps.sh needs root or sudo")
        return SKIP
    temp = tempfile.mkdtemp(prefix="ci-recipe-")
    try:
        checkout = os.path.join(temp, "checkout")
        scratch_checkout(src, checkout, mode == "deb")
        runner_temp = os.path.join(temp, "runner")
        os.makedirs(runner_temp)
        runner = Runner(checkout, runner_temp)
        if mode == "source":
            runner.run("deps", found["deps"][1])
            runner.run("build", found["build"][1])
            fakedb = shutil.which("fakedb", path=runner.env["PATH"])
            assert fakedb == os.path.join(checkout, "build-fakedb", "fakedb", "fakedb"), fakedb
            serve_and_stop(runner, found, runner_temp)
            runner.run("pytest-deps", found["pytest-deps"][1])
            path, text = found["pytest-example"]
            os.makedirs(os.path.dirname(os.path.join(checkout, path)))
            with open(os.path.join(checkout, path), "w") as f:
                f.write(text)
            runner.run("pytest", found["pytest"][1])
        elif mode == "deb":
            try:
                runner.run("deb", deb_block(found["deb"][1], checkout))
                assert shutil.which("fakedb", path=runner.env["PATH"]) == "/usr/bin/fakedb"
                serve_and_stop(runner, found, runner_temp)
            finally:
                subprocess.run(["dpkg", "--purge", "fakedb"], capture_output=True)
        elif mode == "docker":
            try:
                runner.run("docker", found["docker"][1])
                runner.run("check", found["check"][1])
            finally:
                runner.run("docker-stop", found["docker-stop"][1])
        else:
            print("ci_recipe: unknown mode", mode)
            return 64
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    print("ci_recipe: %s: the recipe ran" % mode)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
