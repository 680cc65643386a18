# syntax=docker/dockerfile:1
# kubeplane in a container image (docs/running-in-cluster.md):
#   docker build -t kubeplane:dev .
# The build stage needs protoc (the etcd client's gRPC code is generated at build time); the
# runtime is distroless (glibc, CA certificates, no shell) as the non-root user 65532.
FROM rust:1-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends protobuf-compiler \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p kubeplane \
 && cp target/release/kubeplane /kubeplane

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /kubeplane /usr/local/bin/kubeplane
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/kubeplane"]
CMD ["--help"]
