// kernel-check's additions to the real CUDA headers in system mode (force-included).
//
// nvcc's math headers declare the integer and floating-point min/max overloads for host
// code as well as device code; clang's CUDA wrapper declares them for the device only, so
// host code that nvcc accepts (a launcher clamping a grid size with `min`) would not parse.
// These host declarations close that gap; nothing here is compiled or run.
#pragma once
#ifndef KERNEL_CHECK_SYSTEM_PRELUDE
#define KERNEL_CHECK_SYSTEM_PRELUDE 1

#define KC_HOST_MINMAX(R, A, B)               \
  __attribute__((host)) R max(A, B);          \
  __attribute__((host)) R min(A, B);
KC_HOST_MINMAX(int, int, int)
KC_HOST_MINMAX(unsigned int, unsigned int, unsigned int)
KC_HOST_MINMAX(unsigned int, int, unsigned int)
KC_HOST_MINMAX(unsigned int, unsigned int, int)
KC_HOST_MINMAX(long, long, long)
KC_HOST_MINMAX(unsigned long, unsigned long, unsigned long)
KC_HOST_MINMAX(unsigned long, long, unsigned long)
KC_HOST_MINMAX(unsigned long, unsigned long, long)
KC_HOST_MINMAX(long long, long long, long long)
KC_HOST_MINMAX(unsigned long long, unsigned long long, unsigned long long)
KC_HOST_MINMAX(unsigned long long, long long, unsigned long long)
KC_HOST_MINMAX(unsigned long long, unsigned long long, long long)
KC_HOST_MINMAX(float, float, float)
KC_HOST_MINMAX(double, double, double)
KC_HOST_MINMAX(double, float, double)
KC_HOST_MINMAX(double, double, float)
#undef KC_HOST_MINMAX

#endif  // KERNEL_CHECK_SYSTEM_PRELUDE
