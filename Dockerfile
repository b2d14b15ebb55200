# ckptcheck as an image for CI systems that run tools as containers.
# Build it with `make image`, which puts a static linux binary and the CA
# certificates into the build context; nothing is pulled (FROM scratch).
#
#   docker run --rm -v "$PWD:/data:ro" ckptcheck:dev diff published exported
FROM scratch
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY ckptcheck /ckptcheck
# Remote sources (https, hf://, s3://) need the certificates above; the
# hub cache, if mounted, is found through HF_HOME.
ENV HF_HOME=/hf
USER 65534:65534
WORKDIR /data
ENTRYPOINT ["/ckptcheck"]
