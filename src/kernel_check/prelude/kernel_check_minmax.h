// The min/max overloads of CUDA's math headers, listed once for both preludes: the includer
// defines KC_MINMAX(R, A, B) to declare `R max(A, B)` and `R min(A, B)` with the execution
// space it needs. A signed and an unsigned operand give the unsigned type, as in CUDA.
KC_MINMAX(float, float, float)
KC_MINMAX(double, double, double)
KC_MINMAX(double, float, double)
KC_MINMAX(double, double, float)
KC_MINMAX(int, int, int)
KC_MINMAX(unsigned int, unsigned int, unsigned int)
KC_MINMAX(unsigned int, int, unsigned int)
KC_MINMAX(unsigned int, unsigned int, int)
KC_MINMAX(long, long, long)
KC_MINMAX(unsigned long, unsigned long, unsigned long)
KC_MINMAX(unsigned long, long, unsigned long)
KC_MINMAX(unsigned long, unsigned long, long)
KC_MINMAX(long long, long long, long long)
KC_MINMAX(unsigned long long, unsigned long long, unsigned long long)
KC_MINMAX(unsigned long long, long long, unsigned long long)
KC_MINMAX(unsigned long long, unsigned long long, long long)
