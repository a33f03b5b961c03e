// kernel-check shim: clang's CUDA wrapper includes this cuRAND header, which a CUDA install
// without cuRAND lacks; the static analysis never needs its contents.
#pragma once
