#!/usr/bin/env bash
# Usage: docker_image.sh SOURCE_DIR
# Builds the fakedb image from the Dockerfile, runs it, waits for its health check to
# pass and asks /fake/health for the version, then removes the container and the image.
# Only where `docker info` works (a running daemon); else it reports a skip (77).
set -euo pipefail
src=$1
command -v docker >/dev/null 2>&1 || { echo "docker_image: no docker; skipped"; exit 77; }
docker info >/dev/null 2>&1 || { echo "docker_image: no docker daemon (docker info fails); skipped"; exit 77; }
version=$("$src/scripts/package.sh" --print-version)
tag=dynalock-fakedb-test:$$
name=dynalock-fakedb-test-$$
cleanup() { docker rm -f "$name" >/dev/null 2>&1 || true; docker rmi -f "$tag" >/dev/null 2>&1 || true; }
trap cleanup EXIT
docker build -q -t "$tag" "$src" >/dev/null
[ "$(docker run --rm "$tag" --version)" = "fakedb $version" ] || { echo "docker_image: --version" >&2; exit 1; }
[ "$(docker image inspect -f '{{.Config.User}}' "$tag")" != "" ] || { echo "docker_image: runs as root" >&2; exit 1; }
start=$(date +%s)
docker run -d --name "$name" -p 127.0.0.1::8000 "$tag" >/dev/null
# The image's health check decides when it serves: wait for docker's event saying so.
if ! timeout 120 docker events --since "$start" --filter "container=$name" \
     --filter event=health_status --format '{{.Status}}' | grep -m 1 -q 'healthy$'; then
  docker logs "$name" >&2; echo "docker_image: not healthy within 120 s" >&2; exit 1
fi
[ "$(docker inspect -f '{{.State.Health.Status}}' "$name")" = healthy ] ||
  { docker logs "$name" >&2; echo "docker_image: unhealthy" >&2; exit 1; }
port=$(docker port "$name" 8000/tcp | head -n 1 | sed 's/.*://')
[ "$(curl -sf "http://127.0.0.1:$port/fake/health")" = "{\"ok\":true,\"version\":\"$version\"}" ] ||
  { echo "docker_image: /fake/health" >&2; exit 1; }
echo "docker_image: built, healthy, fakedb $version on port 8000"
