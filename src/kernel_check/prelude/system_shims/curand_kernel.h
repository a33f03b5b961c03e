// kernel-check shim of cuRAND's device API, for a CUDA install without cuRAND and for the
// hermetic mode: searched after the CUDA headers (-idirafter), so a real cuRAND wins. The
// generator states and the per-state functions kernels call, declared only (nothing here is
// compiled or run); it needs the CUDA vector types, which both modes declare before it.
#pragma once

struct curandStateXORWOW {
  unsigned int d, v[5];
  int boxmuller_flag, boxmuller_flag_double;
  float boxmuller_extra;
  double boxmuller_extra_double;
};
struct curandStatePhilox4_32_10 {
  uint4 ctr, output;
  uint2 key;
  unsigned int STATE;
  int boxmuller_flag, boxmuller_flag_double;
  float boxmuller_extra;
  double boxmuller_extra_double;
};
struct curandStateMRG32k3a {
  unsigned int s1[3], s2[3];
  int boxmuller_flag, boxmuller_flag_double;
  float boxmuller_extra;
  double boxmuller_extra_double;
};
typedef struct curandStateXORWOW curandStateXORWOW_t;
typedef struct curandStateXORWOW curandState_t;
typedef struct curandStateXORWOW curandState;
typedef struct curandStatePhilox4_32_10 curandStatePhilox4_32_10_t;
typedef struct curandStateMRG32k3a curandStateMRG32k3a_t;

// What every pseudo-random generator state offers.
#define KC_CURAND_STATE_API(S)                                                                           \
  __attribute__((device)) void curand_init(unsigned long long seed, unsigned long long subsequence,   \
                                           unsigned long long offset, S* state);                      \
  __attribute__((device)) unsigned int curand(S* state);                                              \
  __attribute__((device)) float curand_uniform(S* state);                                             \
  __attribute__((device)) double curand_uniform_double(S* state);                                     \
  __attribute__((device)) float curand_normal(S* state);                                              \
  __attribute__((device)) float2 curand_normal2(S* state);                                            \
  __attribute__((device)) double curand_normal_double(S* state);                                      \
  __attribute__((device)) double2 curand_normal2_double(S* state);                                    \
  __attribute__((device)) float curand_log_normal(S* state, float mean, float stddev);                \
  __attribute__((device)) float2 curand_log_normal2(S* state, float mean, float stddev);              \
  __attribute__((device)) double curand_log_normal_double(S* state, double mean, double stddev);      \
  __attribute__((device)) unsigned int curand_poisson(S* state, double lambda);                       \
  __attribute__((device)) void skipahead(unsigned long long n, S* state);                             \
  __attribute__((device)) void skipahead_sequence(unsigned long long n, S* state);
KC_CURAND_STATE_API(curandStateXORWOW_t)
KC_CURAND_STATE_API(curandStatePhilox4_32_10_t)
KC_CURAND_STATE_API(curandStateMRG32k3a_t)
#undef KC_CURAND_STATE_API

// Philox's four-at-a-time draws; MRG32k3a's subsequence skip.
__attribute__((device)) uint4 curand4(curandStatePhilox4_32_10_t* state);
__attribute__((device)) float4 curand_uniform4(curandStatePhilox4_32_10_t* state);
__attribute__((device)) double2 curand_uniform2_double(curandStatePhilox4_32_10_t* state);
__attribute__((device)) float4 curand_normal4(curandStatePhilox4_32_10_t* state);
__attribute__((device)) float4 curand_log_normal4(curandStatePhilox4_32_10_t* state, float mean, float stddev);
__attribute__((device)) uint4 curand_poisson4(curandStatePhilox4_32_10_t* state, double lambda);
__attribute__((device)) void skipahead_subsequence(unsigned long long n, curandStateMRG32k3a_t* state);
