#!/bin/sh
# The C compiler of arm64 Lambda builds (cargo-lambda cross-compiles with zig). qdrant-edge's
# build script asks for `-march=armv8.2-a+fp16`; zig names that extension `fullfp16` and refuses
# `fp16`, so the flag is renamed here and everything else passed to zig as cargo-lambda would.
for arg do
  shift
  case "$arg" in
    -march=*+fp16*) arg=$(printf '%s' "$arg" | sed 's/+fp16/+fullfp16/') ;;
  esac
  set -- "$@" "$arg"
done
exec cargo-lambda zig cc -- -g -fno-sanitize=all -target aarch64-linux-gnu "$@"
