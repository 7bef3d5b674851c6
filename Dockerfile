# fakedb, the fake DynamoDB server, as a container image: listens on 0.0.0.0:8000 as
# DynamoDB Local does, runs as an unprivileged user, keeps its data in memory (give
# `--db /data/fakedb.sqlite` and a volume on /data to keep it), and reports its health
# from GET /fake/health. See docs/fakedb.md.
#   docker build -t fakedb .
#   docker run --rm -p 8000:8000 fakedb
# scripts/check-dockerfile.sh checks that the files copied into the final stage are
# installed by the build and that its command runs.

# ---- build: the project's own CMake build, installed into /stage
FROM debian:12 AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config libcurl4-openssl-dev libssl-dev libjson-c-dev \
      libexpat1-dev libmicrohttpd-dev libsqlite3-dev zlib1g-dev \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN cmake -S /src -B /build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
      -DDYNALOCK_BUILD_TESTS=OFF -DDYNALOCK_BUILD_BENCH=OFF \
 && cmake --build /build -j"$(nproc)" \
 && DESTDIR=/stage cmake --install /build --strip

# ---- final: the fakedb program and the libraries it needs
FROM debian:12-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libmicrohttpd12 libsqlite3-0 libjson-c5 libssl3 zlib1g \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /data --create-home fakedb
COPY --from=build /stage/usr/bin/fakedb /usr/bin/fakedb
COPY --from=build /stage/usr/share/man/man1/fakedb.1 /usr/share/man/man1/fakedb.1
USER fakedb
WORKDIR /data
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8000 && printf 'GET /fake/health HTTP/1.0\\r\\n\\r\\n' >&3 && grep -q '\"ok\":true' <&3"]
ENTRYPOINT ["/usr/bin/fakedb"]
CMD ["--host", "0.0.0.0", "--port", "8000"]
