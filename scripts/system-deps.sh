#!/usr/bin/env bash
# System packages the test suite drives for real: Chromium + ChromeDriver (page tests) and a Java
# runtime (TorchServe); libmagic (AugLy); and jemalloc for training (see the Makefile). Installed from Debian's packages when
# missing; a no-op when present.
set -euo pipefail
need=()
command -v chromium >/dev/null || need+=(chromium)
command -v chromedriver >/dev/null || need+=(chromium-driver)
command -v java >/dev/null || need+=(default-jre-headless)
# jemalloc: `make run` preloads it for the demo's training when present (glibc's heap fragments: 9 GB for QA)
ls /usr/lib/*-linux-gnu/libjemalloc.so.2 >/dev/null 2>&1 || need+=(libjemalloc2)
# libmagic: AugLy (the robustness and fairness perturbations) imports python-magic, which loads it
ls /usr/lib/*-linux-gnu/libmagic.so.1 >/dev/null 2>&1 || need+=(libmagic1)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "missing system packages: ${need[*]} (install them with your package manager)" >&2
  exit 1
fi
echo "installing system packages: ${need[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
