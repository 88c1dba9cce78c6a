#!/bin/sh
# make peers: the pinned packages of kernels/peers/peers.txt, from PyPI, into
# $PEERS (default .peers):
#   flashinfer/include      FlashInfer's C++ headers (decode, cascade, state merge)
#   flashinfer/csrc/xqa     TensorRT-LLM's XQA kernel sources, as FlashInfer ships them
#   flashinfer/cccl         the CCCL headers FlashInfer builds against (cub, thrust,
#                           libcudacxx: its headers need a newer one than CUDA 13.0's)
#   flashinfer/cutlass      the CUTLASS headers the wheel ships, which FlashInfer's Hopper
#                           prefill (flashinfer-cascade) builds with
#   cudnn_frontend/include  the cuDNN frontend's C++ graph API (header only; libcudnn
#                           itself comes with the CUDA toolkit or PyTorch)
#   VERSIONS                name==version of each, read by the Makefile and `list`
set -eu
cd "$(dirname "$0")/../.."
dest=${PEERS:-.peers}
pins=$(grep -v '^[[:space:]]*\(#\|$\)' kernels/peers/peers.txt)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# pure-Python or header payloads: any platform's wheel carries the same headers
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform any \
    -d "$tmp" $pins
rm -rf "$dest.new"
mkdir -p "$dest.new/flashinfer" "$dest.new/cudnn_frontend" "$tmp/fi" "$tmp/fe"
unzip -q "$tmp"/flashinfer_python-*.whl 'flashinfer/data/include/*' 'flashinfer/data/csrc/xqa/*' \
    'flashinfer/data/cccl/cub/cub/*' 'flashinfer/data/cccl/thrust/thrust/*' \
    'flashinfer/data/cutlass/include/*' 'flashinfer/data/cutlass/tools/util/include/*' \
    'flashinfer/data/cccl/libcudacxx/include/*' -d "$tmp/fi"
mv "$tmp/fi/flashinfer/data/include" "$dest.new/flashinfer/include"
mv "$tmp/fi/flashinfer/data/cccl" "$dest.new/flashinfer/cccl"
mkdir -p "$dest.new/flashinfer/csrc"
mv "$tmp/fi/flashinfer/data/csrc/xqa" "$dest.new/flashinfer/csrc/xqa"
mv "$tmp/fi/flashinfer/data/cutlass" "$dest.new/flashinfer/cutlass"
unzip -q "$tmp"/nvidia_cudnn_frontend-*.whl 'include/*' -d "$tmp/fe"
mv "$tmp/fe/include" "$dest.new/cudnn_frontend/include"
printf '%s\n' "$pins" > "$dest.new/VERSIONS"
rm -rf "$dest"
mv "$dest.new" "$dest"
echo "peers: $(tr '\n' ' ' < "$dest/VERSIONS")in $dest ($(du -sh "$dest" | cut -f1))"
