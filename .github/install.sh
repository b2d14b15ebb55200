#!/usr/bin/env bash
# The GitHub Action's installer (action.yml runs it; tools/e2e tests it
# against a local release).
#
#   install.sh resolve   which ckptcheck to use: a release (the version
#                        input, else the action's own tag) or a build from
#                        source (the action used at a branch or a commit);
#                        writes mode, version, asset and dir to $GITHUB_OUTPUT
#   install.sh install   download the release's binary for this runner into
#                        dir (kept there by actions/cache), check it against
#                        the release's SHA256SUMS, put it on $GITHUB_PATH
#
# Environment: CKPTCHECK_VERSION (the input), CKPTCHECK_ACTION_REF
# (github.action_ref), CKPTCHECK_ACTION_PATH (github.action_path: the
# runner checks an action out at .../OWNER/REPO/REF, a fallback where
# action_ref is empty), RUNNER_OS, RUNNER_ARCH, RUNNER_TOOL_CACHE or
# RUNNER_TEMP; for install also CKPTCHECK_RELEASE_URL (default: this
# repository's GitHub releases; any URL curl reads, file:// included).
set -euo pipefail

die() { echo "::error title=ckptcheck install::$*" >&2; exit 1; }

sha256() {
  if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1
  else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

# target prints the asset name for this runner: ckptcheck-OS-ARCH[.exe].
target() {
  local os arch ext=
  case "${RUNNER_OS:-}" in
    Linux) os=linux ;;
    macOS) os=darwin ;;
    Windows) os=windows ext=.exe ;;
    *) die "no ckptcheck release for runner OS '${RUNNER_OS:-}'" ;;
  esac
  case "${RUNNER_ARCH:-}" in
    X64) arch=amd64 ;;
    ARM64) arch=arm64 ;;
    *) die "no ckptcheck release for runner architecture '${RUNNER_ARCH:-}'" ;;
  esac
  echo "ckptcheck-$os-$arch$ext"
}

output() {
  if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "$1=$2" >> "$GITHUB_OUTPUT"; else echo "$1=$2"; fi
}

resolve() {
  local ref=${CKPTCHECK_VERSION:-}
  [ -n "$ref" ] || ref=${CKPTCHECK_ACTION_REF:-}
  [ -n "$ref" ] || ref=$(basename "${CKPTCHECK_ACTION_PATH:-}")
  # Releases are full versions; a branch, a commit or a major tag (v1)
  # names no release's files.
  if [[ ! $ref =~ ^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$ ]]; then
    echo "::notice title=ckptcheck::the action is used at '${ref:-an unknown ref}', which is no release: building ckptcheck from source with Go"
    output mode source
    return
  fi
  local version=v${ref#v} asset
  asset=$(target)
  output mode release
  output version "$version"
  output asset "$asset"
  output dir "${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-/tmp}}/ckptcheck/$version/${asset%.exe}"
}

install() {
  local version=${CKPTCHECK_VERSION:?} dir=${CKPTCHECK_DIR:?} asset
  asset=$(target)
  local exe=ckptcheck
  if [[ $asset == *.exe ]]; then exe=ckptcheck.exe; fi
  local url=${CKPTCHECK_RELEASE_URL:-https://github.com/ckptcheck/ckptcheck/releases/download}/$version
  # A cache hit: the binary checked when it was downloaded, unchanged.
  if [ -f "$dir/$exe" ] && [ -f "$dir/$exe.sha256" ] && [ "$(sha256 "$dir/$exe")" = "$(cat "$dir/$exe.sha256")" ]; then
    echo "ckptcheck $version: cached in $dir"
  else
    local tmp
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' RETURN
    curl -fsSL --retry 3 -o "$tmp/SHA256SUMS" "$url/SHA256SUMS" ||
      die "release $version has no SHA256SUMS at $url: the binary cannot be checked"
    local want
    want=$(awk -v a="$asset" '$2 == a || $2 == "*" a { print $1 }' "$tmp/SHA256SUMS")
    [ -n "$want" ] || die "release $version: SHA256SUMS lists no $asset"
    curl -fsSL --retry 3 -o "$tmp/$asset" "$url/$asset" || die "release $version has no $asset at $url"
    local got
    got=$(sha256 "$tmp/$asset")
    [ "$got" = "$want" ] || die "release $version: $asset has SHA-256 $got, SHA256SUMS says $want"
    mkdir -p "$dir"
    mv "$tmp/$asset" "$dir/$exe"
    chmod 755 "$dir/$exe"
    echo "$want" > "$dir/$exe.sha256"
    echo "ckptcheck $version: $asset, SHA-256 $want, installed in $dir"
  fi
  [ -z "${GITHUB_PATH:-}" ] || echo "$dir" >> "$GITHUB_PATH"
  "$dir/$exe" --version
}

case "${1:-}" in
  resolve) resolve ;;
  install) install ;;
  *) echo "usage: install.sh resolve|install" >&2; exit 2 ;;
esac
