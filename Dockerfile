# jsctl in a container: a static binary (CGO_ENABLED=0) on Alpine, run as a
# non-root user. Alpine rather than an image without a shell because
# `jsctl consume --exec CMD` runs CMD through sh -c; add your handler in an
# image of your own built FROM this one (docs/consume.md, "Kubernetes").
#
#   docker build -t jsctl --build-arg VERSION=1.0.0 --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
#   docker run --rm jsctl version
FROM golang:1.26-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=
ARG COMMIT=
ARG DATE=
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w \
      -X github.com/jsctl/jsctl/commands.stampVersion=${VERSION} \
      -X github.com/jsctl/jsctl/commands.stampCommit=${COMMIT} \
      -X github.com/jsctl/jsctl/commands.stampDate=${DATE}" \
      -o /out/jsctl ./cmd/jsctl

FROM alpine:3.22
RUN adduser -D -H -u 10001 jsctl
COPY --from=build /out/jsctl /usr/local/bin/jsctl
USER 10001:10001
# consume --metrics-listen :9464 serves /metrics, /healthz and /readyz here.
EXPOSE 9464
ENTRYPOINT ["jsctl"]
CMD ["--help"]
