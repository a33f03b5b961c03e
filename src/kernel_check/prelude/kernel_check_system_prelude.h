// kernel-check's additions to the real CUDA headers in system mode (force-included).
//
// nvcc's math headers declare the integer and floating-point min/max overloads for host
// code as well as device code; clang's CUDA wrapper declares them for the device only, so
// host code that nvcc accepts (a launcher clamping a grid size with `min`) would not parse.
// These host declarations close that gap; nothing here is compiled or run.
#pragma once
#ifndef KERNEL_CHECK_SYSTEM_PRELUDE
#define KERNEL_CHECK_SYSTEM_PRELUDE 1

#define KC_MINMAX(R, A, B)           \
  __attribute__((host)) R max(A, B); \
  __attribute__((host)) R min(A, B);
#include "kernel_check_minmax.h"
#undef KC_MINMAX

// The cache-hinted stores (`__stcg`, ...) are declared by CUDA for the device pass only and
// clang's CUDA intrinsics do not provide them, so the host-only pass would not see them.
template <typename T>
__attribute__((device)) void __stcg(T*, T);
template <typename T>
__attribute__((device)) void __stcs(T*, T);
template <typename T>
__attribute__((device)) void __stwt(T*, T);
template <typename T>
__attribute__((device)) void __stwb(T*, T);

#endif  // KERNEL_CHECK_SYSTEM_PRELUDE
